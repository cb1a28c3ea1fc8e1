"""Worker plans: the sizes the overprovisioner's KALE estimator asks of elastic jobs, as
they are written to and read from the API.

One ConfigMap (`headstart-worker-plans`, in the placeholders' namespace, which only the
overprovisioner writes) holds one plan per elastic job that names a sample-rate query
(docs/predictor.md "A job's worker count"); the extender's admitter reads it and resizes
the job toward `size` (`locality.admission.resize`); the overprovisioner keeps
placeholders for `planned` in the job's placement group. A data key is
`KIND.NAMESPACE.NAME` (all three are valid ConfigMap key characters); a value is JSON:

  {"uid": "...", "size": 10, "planned": 12, "decided": "2026-11-28T15:00:00Z",
   "validUntil": "2026-11-28T15:10:00Z", "reason": "..."}

- `uid`: the owner's uid, so a job deleted and created again under the same name never
  inherits the old job's plan;
- `size`: the workers the job's forecast sample rate needs now (within its bounds);
- `planned`: the most it needs within the horizon (one node start-up ahead), at least
  `size`: the growth the placeholders are kept for;
- `validUntil`: after it the plan is ignored and the job is sized as any elastic job
  (KOD2's rules alone): a stopped overprovisioner never keeps steering a job.

A value that does not parse is a problem (named, with its key), never a guess.

Must not: read the clock, log, or talk to the API.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

CONFIGMAP_NAME = "headstart-worker-plans"
KINDS = ("Job", "PyTorchJob")


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    """One elastic job's plan (module docstring)."""

    kind: str
    namespace: str
    name: str
    uid: str
    size: int
    planned: int
    decided_s: float
    valid_until_s: float
    reason: str

    @property
    def key(self) -> str:
        return plan_key(self.kind, self.namespace, self.name)

    def fresh(self, now_s: float) -> bool:
        return now_s < self.valid_until_s


def plan_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}.{namespace}.{name}"


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seconds(text: Any, where: str) -> float:
    if not isinstance(text, str):
        raise ValueError(f"{where}: expected an RFC 3339 time, got {text!r}")
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise ValueError(f"{where}: expected an RFC 3339 time like 2026-11-28T15:00:00Z, "
                         f"got {text!r}") from None


def encode(plans: Iterable[WorkerPlan]) -> dict[str, str]:
    """The ConfigMap's `data`: one key per plan, sorted (a stable apply)."""
    return {plan.key: json.dumps({
        "uid": plan.uid, "size": plan.size, "planned": plan.planned,
        "decided": _time(plan.decided_s), "validUntil": _time(plan.valid_until_s),
        "reason": plan.reason}, sort_keys=True) for plan in sorted(plans, key=lambda p: p.key)}


def decode(data: Mapping[str, Any] | None, where: str = CONFIGMAP_NAME
           ) -> tuple[dict[str, WorkerPlan], list[str]]:
    """The plans in a ConfigMap's `data`, and a problem per value that does not parse."""
    plans: dict[str, WorkerPlan] = {}
    problems: list[str] = []
    for key, raw in sorted((data or {}).items()):
        try:
            plans[key] = _plan(key, raw, f"{where}: data.{key}")
        except ValueError as error:
            problems.append(str(error))
    return plans, problems


def _plan(key: str, raw: Any, where: str) -> WorkerPlan:
    kind, namespace, name = (key.split(".", 2) + ["", ""])[:3]
    if kind not in KINDS or not namespace or not name:
        raise ValueError(f"{where}: the key is not KIND.NAMESPACE.NAME with KIND one of "
                         f"{', '.join(KINDS)}")
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"{where}: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object")
    counts = []
    for field in ("size", "planned"):
        count = value.get(field)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(f"{where}: {field}: expected a whole number >= 1, got {count!r}")
        counts.append(count)
    size, planned = counts
    if planned < size:
        raise ValueError(f"{where}: planned {planned} is below size {size}")
    uid = value.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ValueError(f"{where}: uid: expected the owner's uid, got {uid!r}")
    return WorkerPlan(kind, namespace, name, uid, size, planned,
                      _seconds(value.get("decided"), f"{where}: decided"),
                      _seconds(value.get("validUntil"), f"{where}: validUntil"),
                      str(value.get("reason", "")))


def target_of(plans: Mapping[str, WorkerPlan], kind: str, namespace: str, name: str,
              uid: str, now_s: float) -> WorkerPlan | None:
    """The plan that steers this owner now: fresh, and for this very object (uid)."""
    plan = plans.get(plan_key(kind, namespace, name))
    if plan is None or plan.uid != uid or not plan.fresh(now_s):
        return None
    return plan
