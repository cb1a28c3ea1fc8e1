"""The dead-man's switch: which placeholder objects outlived their reason, and to what size.

Decides (pure: objects and the time in, replica counts out):
- an object's *validity*: its `headstart.io/valid-until` annotation, stamped at every
  write as now + `placeholders.expire_after` (objects.py); a replica-bearing object
  (Deployment, CapacityBuffer) without a readable stamp was written by an older
  version or by hand and promises nothing, so it counts as expired;
- the *floor* an expired object shrinks to: per instance type, the type's configured
  min (`limits`, summed over its groups and backends), held first by the objects still
  valid or renewed this tick, then by the expired ones in name order; an object is only
  ever scaled down, never up, and an object already at or below its share is left alone.

Who acts on it is the loop's business (loop.py): the leader after its own writes (the
objects its apply did not renew), and a standby only when the Lease is held by nobody.

Must not: call the API, read the clock, log, or mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from overprovisioner.service.objects import (
    CAPACITY_BUFFERS,
    DEPLOYMENT,
    VALID_UNTIL,
    bucket_of,
)
from overprovisioner.service.observe import parse_time

Key = tuple[str, str, str | None, str]
REPLICA_KINDS = (DEPLOYMENT, *CAPACITY_BUFFERS)


def valid_until(obj: Mapping[str, Any]) -> float | None:
    """The object's `headstart.io/valid-until` in Unix seconds, None when absent or unreadable."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return parse_time(annotations.get(VALID_UNTIL))


def expired(obj: Mapping[str, Any], now_s: float) -> bool:
    """True once the object's validity has passed (or it never had one)."""
    until = valid_until(obj)
    return until is None or until <= now_s


def shrink_to_floor(
    objects: Mapping[Key, Mapping[str, Any]],
    now_s: float,
    floors: Mapping[str, int],
    renewed: frozenset[Key] = frozenset(),
) -> dict[Key, int]:
    """Replica counts to write: for each expired Deployment or CapacityBuffer not in
    `renewed` whose spec.replicas exceeds its share of the type's floor, that share.

    floors: per instance type, the placeholders kept whatever happens (a type absent
    here has floor 0)."""
    holding: dict[str, int] = {}
    stale: list[tuple[Key, str, int]] = []
    for key in sorted(objects, key=lambda k: (k[3], k[0], k[1])):
        if (key[0], key[1]) not in REPLICA_KINDS:
            continue
        obj = objects[key]
        instance_type = bucket_of(obj)[0]
        replicas = int((obj.get("spec") or {}).get("replicas") or 0)
        if key in renewed or not expired(obj, now_s):
            holding[instance_type] = holding.get(instance_type, 0) + replicas
        else:
            stale.append((key, instance_type, replicas))
    result: dict[Key, int] = {}
    for key, instance_type, replicas in stale:
        share = max(0, min(replicas, floors.get(instance_type, 0) - holding.get(instance_type, 0)))
        holding[instance_type] = holding.get(instance_type, 0) + share
        if share < replicas:
            result[key] = share
    return result
