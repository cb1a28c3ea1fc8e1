"""What the suspension scenarios share (test_jobset_, test_kubeflow_, test_trainjob_ and
test_mpi_operator_suspension.py): one 8-GPU node in pg-c, a node group `ghost` the
admitter is told can add 2 more there, which never come, so an admitted gang is never
whole; the shipped extender with a 20 s bind timeout and a 5 s backoff."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e import installed
from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_gang import gang_state
from tests.e2e.test_gang_recovery import P4D

TIMEOUT_S = 20
BACKOFF_S = 5
MARK = "headstart.io/suspended"
GATE = "headstart.io/placement"


def ghost_cluster(e2e_clusters: Any, name: str, logs: Sequence[str], crds: Sequence[Path]
                  ) -> tuple[Any, Any]:
    """(cluster, extender): c-0 in pg-c, the ghost group, these CRDs installed."""
    admission = dict(installed.shipped_config("extender")["admission"])
    admission.update(bind_timeout_seconds=TIMEOUT_S, backoff_base_seconds=BACKOFF_S,
                     autoscaler={"status": "", "node_groups": [
                         {"name": "ghost", "instance_type": "p4d.24xlarge", "domain": "pg-c",
                          "max_size": 3}]})
    cluster, extender, _ = extender_on(
        e2e_clusters, name, [kwok_node("c-0", memory="768Gi", group="pg-c", labels=P4D)],
        logs, settings={"admission": admission}, crds=tuple(crds))
    return cluster, extender


def conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An object's status conditions by type."""
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


def headstart_events(kube: Any, namespace: str) -> list[tuple[str, str]]:
    """(involved kind, reason) of every Headstart* Event in the namespace."""
    return [(e["involvedObject"]["kind"], e["reason"])
            for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
            if e["reason"].startswith("Headstart")]


@dataclass(frozen=True)
class Cycle:
    """A suspension and its release, as `evicted_then_resumed` saw them."""

    job: dict[str, Any]
    """The object once resumed."""
    evicted_s: float
    """From its Gang Admitted to Evicted."""
    resumed_s: float
    """From its Gang Admitted to the object resumed."""


def evicted_then_resumed(cluster: Any, namespace: str, kind: str, name: str, path: str,
                         live: Callable[[], list[dict[str, Any]]],
                         suspend_of: Callable[[dict[str, Any]], Any], resumed_reason: str,
                         logs: Sequence[str], children: Sequence[str] = (),
                         first_pods: int | None = None) -> Cycle:
    """Drive one never-whole gang of `kind` `name` (the object at `path`, `live()` its
    pods not being deleted, `suspend_of(object)` its suspend field) through eviction by
    suspension and its release, asserting on the way: its Gang goes Admitted, then
    Evicted naming the object; the object is suspended, then resumed with
    `resumed_reason` and not failed, headstart's mark gone; the Events name the object
    only (none of `children`, the kinds below it, and no pod evicted); its controller
    makes 3 new pods, each behind the placement gate and unbound. `first_pods`: how
    many pods it has once admitted, when checked."""
    kube = cluster.kube
    cluster.wait("its Gang Admitted", lambda: gang_state(
        cluster, namespace, name, "Admitted"), 90, logs)
    admitted = time.monotonic()
    first = {p["metadata"]["uid"] for p in live()}
    if first_pods is not None:
        assert len(first) == first_pods, first
    record = cluster.wait("its Gang Evicted", lambda: gang_state(
        cluster, namespace, name, "Evicted"), TIMEOUT_S + 30, logs)
    evicted_s = time.monotonic() - admitted
    found = kube.get(path)
    assert record["status"]["suspendedJobs"] == [
        {"kind": kind, "name": name, "uid": found["metadata"]["uid"]}]

    def suspended_then_resumed() -> Any:
        job = kube.get(path)
        seen = conditions(job).get("Suspended")
        if suspend_of(job) or seen is None or seen["status"] != "False":
            return NotYet(f"suspend={suspend_of(job)}, Suspended={seen}")
        return job

    job = cluster.wait(f"the {kind} suspended by the admitter, then resumed",
                       suspended_then_resumed, BACKOFF_S + 90, logs)
    resumed_s = time.monotonic() - admitted
    assert conditions(job)["Suspended"]["reason"] == resumed_reason, job["status"]
    assert conditions(job).get("Failed", {}).get("status") != "True", job["status"]
    assert MARK not in (job["metadata"].get("labels") or {})
    reasons = headstart_events(kube, namespace)
    assert (kind, "HeadstartSuspended") in reasons, reasons
    assert (kind, "HeadstartResumed") in reasons, reasons
    assert not [r for r in reasons if r[1] == "HeadstartEvicted" or r[0] in children], \
        reasons
    # The controller made new pods (the first ones were deleted), and they are gated.
    pods = cluster.wait(f"the {kind}'s 3 new pods", lambda: (
        pods := live(),
        pods if len(pods) == 3 and not first & {p["metadata"]["uid"] for p in pods}
        else NotYet(f"{len(pods)} live"))[1], 60, logs)
    assert all(bound_node(p) is None for p in pods)
    assert all({"name": GATE} in (p["spec"].get("schedulingGates") or [])
               for p in pods), [p["spec"].get("schedulingGates") for p in pods]
    return Cycle(job, evicted_s, resumed_s)
