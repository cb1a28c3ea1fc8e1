"""What the admitter's last round says, as `/explain?pod=`, `GET /admission` and the
metrics show it.

Must not: decide, read the API or the cache (the admitter hands the plan and its reads
over).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from locality.admission.model import Plan, WaitCode
from locality.config import LocalityConfig
from locality.jobs import job_key_of
from locality.model import Pod


def explained(last: Plan, pod: Pod, gate: str, locality: LocalityConfig,
              is_leader: Callable[[], bool]) -> dict[str, Any] | None:
    """The admission state of `pod`'s job in the plan `last`, None when not gated."""
    if gate not in pod.scheduling_gates:
        return None
    job = job_key_of(pod, locality)
    for waiting in last.waiting:
        if waiting.job == job:
            said = {"state": "waiting", "code": waiting.code.value, "reason": waiting.reason}
            if waiting.position is not None:
                said["queue_position"], said["queue_length"] = waiting.position
            return said
    for admission in last.admissions:
        if admission.job == job:
            return {"state": "admitting", "domain": str(admission.domain or ""),
                    "note": admission.note}
    for release in last.releases:
        if release.pod.uid == pod.uid:
            return {"state": "releasing", "reason": release.reason}
    return {"state": "not planned yet", "leader": is_leader()}


def summarised(last: Plan, leader: bool, reads: Mapping[str, Any],
               headroom: list[dict[str, Any]]) -> dict[str, Any]:
    """Every gated job of the plan `last` and its reason; reads: what the reader found
    (`observe.AdmissionReader.summary`); headroom: the nodes to come per domain."""
    return {
        "leader": leader,
        "waiting": [{"job": str(w.job), "pods": len(w.pods), "code": w.code.value,
                     "reason": w.reason,
                     "queue_position": w.position[0] if w.position else None}
                    for w in last.waiting],
        "admitting": [{"job": str(a.job), "pods": len(a.pods),
                       "domain": str(a.domain or ""), "new_nodes": a.new_nodes,
                       "note": a.note} for a in last.admissions],
        "releasing": [{"pod": r.pod.full_name, "reason": r.reason}
                      for r in last.releases],
        "preempting": [{"job": str(p.job), "domain": str(p.domain),
                        "victims": [str(v.job) for v in p.victims]}
                       for p in last.preemptions],
        **reads,
        "unknown_room": list(last.unknown_room),
        "headroom": headroom,
    }


def waiting_by_code(last: Plan) -> dict[str, int]:
    """The jobs the plan `last` leaves waiting, per reason code (every code listed)."""
    counts = {code.value: 0 for code in WaitCode}
    for waiting in last.waiting:
        counts[waiting.code.value] += 1
    return counts


def longest_gated(pods: Iterable[Pod], gate: str, now: float) -> float:
    """How long the oldest of `pods` still behind `gate` has waited (0: none)."""
    created = [pod.created_at for pod in pods if gate in pod.scheduling_gates
               and pod.created_at]
    return max(0.0, now - min(created)) if created else 0.0
