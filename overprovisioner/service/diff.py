"""Does an object need writing: the desired placeholder object against the observed one.

Decides: a write is skipped when the observed object already has the desired spec hash
and every desired field (quantities compared by value, since the API server rewrites
`33285996544` as `32505856Ki`), so applying the same plan twice writes nothing; the
`headstart.io/valid-until` stamp is renewed only once it is old enough.

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bucketing.resources import parse_resource_quantity
from common.errors import InputError
from overprovisioner.service.expiry import valid_until
from overprovisioner.service.objects import SPEC_HASH, VALID_UNTIL, DesiredObject


def needs_write(desired: DesiredObject, current: Mapping[str, Any],
                renew_slack_s: float = 0.0) -> bool:
    """True unless `current` already has the desired spec hash and every desired field.

    The `headstart.io/valid-until` stamp is the exception: it moves every tick, and
    writing every placeholder object every tick only to move it would be one PATCH per
    object per tick. `current`'s stamp is good enough while it is at most
    `renew_slack_s` before the desired one (the Applier passes half of
    `placeholders.expire_after`, so an object is renewed about every other tick at the
    defaults and never comes closer than half that to expiring)."""
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    if annotations.get(SPEC_HASH) != desired.spec_hash:
        return True
    # List items carry no apiVersion/kind (as on a real server); the key already matched them.
    body = {k: v for k, v in desired.body.items() if k not in ("apiVersion", "kind")}
    wanted_until = valid_until(desired.body)
    if wanted_until is not None:
        metadata = dict(body.get("metadata") or {})
        metadata["annotations"] = {k: v for k, v in (metadata.get("annotations") or {}).items()
                                   if k != VALID_UNTIL}
        body["metadata"] = metadata
    if not _contains(current, body, in_resources=False):
        return True
    if wanted_until is None:
        return False
    current_until = valid_until(current)
    return current_until is None or current_until < wanted_until - renew_slack_s


def _contains(observed: Any, desired: Any, in_resources: bool) -> bool:
    if isinstance(desired, Mapping):
        if not isinstance(observed, Mapping):
            return False
        return all(
            key in observed and _contains(observed[key], value, in_resources or key == "resources")
            for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(observed, list) and len(observed) == len(desired)
            and all(_contains(o, d, in_resources) for o, d in zip(observed, desired, strict=True))
        )
    if in_resources and isinstance(desired, str) and isinstance(observed, str):
        return _same_quantity(observed, desired)
    return observed == desired


def _same_quantity(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return parse_resource_quantity(a, "") == parse_resource_quantity(b, "")
    except InputError:  # not a quantity (or a negative one): a plain string, unequal
        return False
