"""Gang-aware priority against the real components, as installed, with real owners.

The cluster: pg-a and pg-b, 2 8-GPU kwok nodes each. Two low-priority Indexed Jobs of 2
8-GPU pods fill both groups and run (their pods run until deleted; a podFailurePolicy
ignores `DisruptionTarget`, as docs/extender.md recommends). A high-priority 2-pod
job then fits nowhere: the admitter evicts exactly one low gang, whole, by suspending
its Job (its Gang `Evicted`, eviction count 0; the Job resumed at once, as the victim
waits for room with no backoff), the high job binds whole in that
gang's group, the other low gang's pods are untouched (same uids, bound where they
were), and the evicted gang's new pods, created by the Job controller, wait behind the
gate. kube-scheduler's per-node preemption never runs on a gang member: the extender's
preempt verb would refuse it, and the admitter admits the job only once the room is
free.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_gang import gang, gang_state, pods_of, run_job
from tests.e2e.test_gang_recovery import tolerant_job

LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]
NODES = {"a-0": "pg-a", "a-1": "pg-a", "b-0": "pg-b", "b-1": "pg-b"}
GATE = "headstart.io/placement"
CLASSES = {"e2e-low": 100, "e2e-high": 1000}


@pytest.fixture(scope="module")
def priority_cluster(e2e_clusters):
    cluster, extender, _ = extender_on(e2e_clusters, "gang-priority", [
        kwok_node(name, memory="768Gi", group=group) for name, group in NODES.items()], LOGS)
    create_priority_classes(cluster)
    yield cluster, extender
    cluster.stop()


def create_priority_classes(cluster) -> None:
    """The scenarios' PriorityClasses (`CLASSES`)."""
    for name, value in CLASSES.items():
        cluster.kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": False})


def prioritized(name: str, size: int, priority_class: str | None) -> dict[str, Any]:
    """`tolerant_job` in any placement group, of `priority_class` (None: the default)."""
    job = tolerant_job(name, size, node_selector=None)
    if priority_class is not None:
        job["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    return job


def running_pods(cluster, namespace: str, job: str, size: int):
    """{uid: node} of the job's live pods once all `size` are bound."""
    pods = [p for p in pods_of(cluster, namespace, job)
            if not p["metadata"].get("deletionTimestamp")]
    bound = {p["metadata"]["uid"]: bound_node(p) for p in pods}
    if len(pods) != size or not all(bound.values()):
        return NotYet(f"{sum(map(bool, bound.values()))} of {size} bound ({len(pods)} live)")
    return bound


def test_a_high_priority_job_preempts_exactly_one_whole_gang(priority_cluster, namespace,
                                                               e2e_timings):
    cluster, _ = priority_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    before = {}
    for job in ("low-1", "low-2"):
        run_job(cluster, namespace, prioritized(job, 2, "e2e-low"))
    for job in ("low-1", "low-2"):
        before[job] = cluster.wait(f"{job} bound whole", lambda job=job: running_pods(
            cluster, namespace, job, 2), 90, LOGS)
        cluster.wait(f"{job}'s Gang Running", lambda job=job: gang_state(
            cluster, namespace, job, "Running"), 30, LOGS)
    assert {NODES[n] for n in before["low-1"].values()} != \
        {NODES[n] for n in before["low-2"].values()}

    created = time.monotonic()
    run_job(cluster, namespace, prioritized("high", 2, "e2e-high"))
    high = cluster.wait("the high job bound whole", lambda: running_pods(
        cluster, namespace, "high", 2), 120, LOGS)
    bound_s = time.monotonic() - created
    high_groups = {NODES[n] for n in high.values()}
    assert len(high_groups) == 1, high

    states = {job: ((gang(cluster, namespace, job) or {}).get("status") or {})
              for job in ("low-1", "low-2")}
    victims = [job for job, status in states.items() if status.get("state") == "Evicted"]
    assert len(victims) == 1, states
    victim = victims[0]
    survivor = "low-2" if victim == "low-1" else "low-1"
    assert high_groups == {NODES[n] for n in before[victim].values()}
    assert states[victim].get("evictions", 0) == 0, states[victim]
    assert states[victim]["message"].startswith(f"preempted whole by {namespace}/high"), \
        states[victim]
    # The survivor was never touched: the same pods, bound where they were, Running.
    assert running_pods(cluster, namespace, survivor, 2) == before[survivor]
    assert states[survivor]["state"] == "Running"

    # Every pod of the victim's earlier attempt is gone; its new pods wait gated.
    def victim_waits():
        pods = pods_of(cluster, namespace, victim)
        old = [p for p in pods if p["metadata"]["uid"] in before[victim]]
        gated = [p for p in pods if not p["metadata"].get("deletionTimestamp")
                 and {"name": GATE} in (p["spec"].get("schedulingGates") or [])]
        return (not old and len(gated) == 2) or NotYet(
            f"{len(old)} old pods left, {len(gated)} gated")

    cluster.wait("the victim's new pods gated", victim_waits, 60, LOGS)
    events = kube.list(f"/api/v1/namespaces/{namespace}/events")
    suspended = [e["involvedObject"]["name"] for e in events
                 if e["reason"] == "HeadstartSuspended"]
    assert suspended == [victim], suspended
    assert not [e for e in events if e["reason"] == "HeadstartEvicted"]
    job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{victim}")
    assert not job["status"].get("failed"), job["status"]  # a suspension counts none
    assert job["spec"]["suspend"] is False
    e2e_timings.record("gang priority: one whole gang preempted", victim=victim,
                       high_bound_since_created=bound_s)
    for name in ("low-1", "low-2", "high"):
        kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}?"
                    "propagationPolicy=Background")
