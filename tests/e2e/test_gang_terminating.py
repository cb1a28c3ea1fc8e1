"""A gang restarted while its old pods are still Terminating, against the real components
as installed, with a real owner: a batch/v1 Indexed Job (no podFailurePolicy, so the
Job controller replaces a pod as soon as it is Terminating, its default
podReplacementPolicy) whose pods keep running while Terminating (kwok stage: the
annotation e2e/held-terminating, and a 300 s grace period: a container slow to stop).

The cluster: pg-a and pg-b, 2 8-GPU nodes each. A 2-pod job runs whole in one group;
both its pods are deleted and held Terminating there, still on their nodes. The Job
controller's 2 new pods are a new attempt: Terminating pods neither count toward the
gang's size nor fix its domain (the rule of issue 26), so the new attempt is admitted
whole where there is room, the other group, while the old pods still run Terminating;
it used to join the old, full group with no room check and wait there.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_gang import gang_state, indexed_job, pods_of, run_job

LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]
NODES = {"a-0": "pg-a", "a-1": "pg-a", "b-0": "pg-b", "b-1": "pg-b"}
HELD = "e2e/held-terminating"
P4D = {"node.kubernetes.io/instance-type": "p4d.24xlarge"}


@pytest.fixture(scope="module")
def terminating_cluster(e2e_clusters):
    cluster, extender, _ = extender_on(e2e_clusters, "gang-terminating", [
        kwok_node(name, memory="768Gi", group=group, labels=P4D)
        for name, group in NODES.items()], LOGS)
    yield cluster
    cluster.stop()


def slow_job(name: str, size: int) -> dict[str, Any]:
    job = indexed_job(name, size)
    # Without a podFailurePolicy a deleted pod counts as a failure: room for two.
    job["spec"]["backoffLimit"] = 4
    # A real grace period (the e2e pods have 0, so a deleted one goes as soon as the Job
    # controller drops its tracking finalizer): the pod stays, Terminating, on its node.
    job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 300
    annotations = job["spec"]["template"]["metadata"]["annotations"]
    annotations["e2e/runs-until-deleted"] = "true"
    annotations[HELD] = "true"
    return job


def split(cluster, namespace: str, job: str) -> tuple[list[dict], list[dict]]:
    """(the job's live pods, its Terminating ones)."""
    pods = pods_of(cluster, namespace, job)
    return ([p for p in pods if not p["metadata"].get("deletionTimestamp")],
            [p for p in pods if p["metadata"].get("deletionTimestamp")])


def groups_bound(pods: list[dict], size: int):
    nodes = [bound_node(p) for p in pods]
    if len(pods) != size or not all(nodes):
        return NotYet(f"{sum(map(bool, nodes))} of {size} bound ({len(pods)} pods)")
    return sorted({NODES[node] for node in nodes})


def test_a_restarted_gang_is_admitted_afresh_while_its_old_pods_terminate(
        terminating_cluster, namespace, e2e_timings):
    cluster = terminating_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, slow_job("restart", 2))
    [first] = cluster.wait("the job bound whole", lambda: groups_bound(
        split(cluster, namespace, "restart")[0], 2), 90, LOGS)
    cluster.wait("its Gang Running", lambda: gang_state(
        cluster, namespace, "restart", "Running"), 30, LOGS)
    old = {p["metadata"]["name"]: p["metadata"]["uid"]
           for p in split(cluster, namespace, "restart")[0]}
    for name in old:
        kube.delete(f"/api/v1/namespaces/{namespace}/pods/{name}")
    deleted = time.monotonic()
    other = "pg-b" if first == "pg-a" else "pg-a"

    def new_attempt_bound():
        live, terminating = split(cluster, namespace, "restart")
        fresh = [p for p in live if p["metadata"]["uid"] not in old.values()]
        return groups_bound(fresh, 2)

    assert cluster.wait("the new attempt bound whole in the other group",
                        new_attempt_bound, 90, LOGS) == [other]
    bound_s = time.monotonic() - deleted
    # The old pods are still there, Terminating, on their nodes in the first group.
    _, terminating = split(cluster, namespace, "restart")
    assert {p["metadata"]["uid"] for p in terminating} == set(old.values()), terminating
    assert {NODES[bound_node(p)] for p in terminating} == {first}
    assert all(p["status"]["phase"] == "Running" for p in terminating)
    record = cluster.wait("its Gang Running in the other group", lambda: gang_state(
        cluster, namespace, "restart", "Running"), 30, LOGS)
    assert record["status"]["domain"] == f"placement-group={other}", record["status"]
    e2e_timings.record("gang restarted while its old pods terminate",
                       new_attempt_bound_since_delete=bound_s)
    # Let every pod go (the old ones finish terminating; the job is deleted).
    for pod in pods_of(cluster, namespace, "restart"):
        kube.patch(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}",
                   {"metadata": {"annotations": {HELD: None}}})
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/restart?"
                "propagationPolicy=Background")
    cluster.wait("the old pods gone", lambda: not split(cluster, namespace, "restart")[1]
                 or NotYet("still Terminating"), 60, LOGS)
