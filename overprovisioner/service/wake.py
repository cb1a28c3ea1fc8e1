"""Watch headstart's placeholder pods and tell the loop soon after one is preempted.

Decides: what counts as a preemption, and how the watch is wired.
- A placeholder pod is preempted when kube-scheduler has set its `DisruptionTarget`
  condition to True with reason `PreemptionByScheduler`: the scheduler patches that
  condition onto each victim before deleting it (kubernetes pkg/scheduler/framework/
  preemption/preemption.go, `prepareCandidate`), so both the MODIFIED and the DELETED
  event carry it. Deletions by headstart itself (a smaller plan) or a node drain carry
  no such reason and wake nothing.
- The watch is `kube.informer.ListWatch` (resume, 410 relist, backoff), on
  the placeholder namespace with the placeholder label selector; each pod's uid wakes
  the loop once, and the loop debounces (`OverprovisionerLoop.wake_debounced`).

Must not: plan or write; the callback runs in the informer's thread and must be quick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kube.informer import ListWatch
from overprovisioner.service.objects import PLACEHOLDER

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
MAX_REMEMBERED = 10_000  # uids of preempted pods seen; a bound, not a tuning knob


def preempted_by_scheduler(pod: Mapping[str, Any]) -> bool:
    """True when kube-scheduler marked this pod as a preemption victim."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == DISRUPTION_TARGET:
            return (condition.get("status") == "True"
                    and condition.get("reason") == PREEMPTION_BY_SCHEDULER)
    return False


class PreemptionSignal:
    """Calls `on_preempted()` once per preempted placeholder pod (by uid)."""

    def __init__(self, on_preempted: Callable[[], None]) -> None:
        self.on_preempted = on_preempted
        self._seen: dict[str, None] = {}  # insertion-ordered: the oldest are dropped first

    def __call__(self, event_type: str, pod: Mapping[str, Any]) -> None:
        if not preempted_by_scheduler(pod):
            return
        metadata = pod.get("metadata") or {}
        uid = metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}"
        if uid in self._seen:
            return
        self._seen[uid] = None
        if len(self._seen) > MAX_REMEMBERED:
            del self._seen[next(iter(self._seen))]
        self.on_preempted()


def placeholder_pod_watch(api_client: Any, config: Any, recorder_config: Any,
                          on_preempted: Callable[[], None]) -> ListWatch:
    """A list+watch of the placeholder pods of `config.placeholders.namespace` that calls
    `on_preempted` for each newly preempted one (watch events only: a relist wakes
    nothing)."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    signal = PreemptionSignal(on_preempted)

    def sink(op: str, pod: Any) -> None:
        if op != "replace":
            signal(op, pod)

    return ListWatch(
        "placeholders", core.list_namespaced_pod, lambda obj: obj, sink,
        recorder_config.watch_settings(),
        list_kwargs={"namespace": config.placeholders.namespace,
                     "label_selector": f"{PLACEHOLDER}=true"},
    )
