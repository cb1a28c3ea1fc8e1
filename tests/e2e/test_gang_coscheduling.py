"""Bound all or nothing: the shipped headstart-scheduler (scheduler-plugins' kube-scheduler
with Coscheduling) and the PodGroup the admitter gives each gang, against the same
scheduler as the without-coscheduling component installs it (the control).

The cluster: pg-a, 2 8-GPU kwok nodes. A pod outside headstart is bound to a-1 holding
host port 9000 (no GPU: the admitter and the extender see a-1 as free, they do not
model host ports; kube-scheduler's NodePorts does). A 2-pod Indexed Job whose pods use
host port 9000 is admitted whole into pg-a; only a-0 can take one of its pods.

- With Coscheduling (shipped): the gang's PodGroup (minMember 2, owned by its Gang)
  exists and both pods carry its label; pod 0 is assumed on a-0 and waits in Permit,
  pod 1 fits nowhere, and the waiting pod is rejected: for 20 s no pod of the job is
  ever bound. Once the port holder goes, both bind.
- Without it (the control): pod 0 binds to a-0 and holds its 8 GPUs while pod 1 pends.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import GPU_TOLERATION, bound_node, kwok_node
from tests.e2e.test_gang import gang_state, pods_of, run_job
from tests.e2e.test_gang_recovery import tolerant_job

LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]
NODES = {"a-0": "pg-a", "a-1": "pg-a"}
PORT = 9000
WATCH_S = 20.0
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"


def cluster_with(e2e_clusters, name: str, coscheduling: bool):
    cluster, extender, _ = extender_on(e2e_clusters, name, [
        kwok_node(node, memory="768Gi", group=group) for node, group in NODES.items()], LOGS,
        coscheduling=coscheduling)
    return cluster, extender


@pytest.fixture(scope="module")
def coscheduling_cluster(e2e_clusters):
    cluster, extender = cluster_with(e2e_clusters, "coscheduling", True)
    yield cluster, extender
    cluster.stop()


@pytest.fixture(scope="module")
def control_cluster(e2e_clusters):
    cluster, extender = cluster_with(e2e_clusters, "without-coscheduling", False)
    yield cluster, extender
    cluster.stop()


def port_holder(namespace: str) -> dict[str, Any]:
    """A pod of no job bound to a-1 at creation, holding host port 9000."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "port-holder", "namespace": namespace},
            "spec": {"nodeName": "a-1", "terminationGracePeriodSeconds": 0,
                     "tolerations": [GPU_TOLERATION],
                     "containers": [{"name": "c", "image": "x",
                                     "ports": [{"containerPort": PORT, "hostPort": PORT}],
                                     "resources": {"requests": {"cpu": "1"}}}]}}


def port_job(name: str) -> dict[str, Any]:
    job = tolerant_job(name, 2, node_selector=None)
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": PORT, "hostPort": PORT}]
    return job


def start_blocked_job(cluster, namespace: str) -> None:
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/api/v1/namespaces/{namespace}/pods", port_holder(namespace))
    cluster.wait("the port holder running", lambda: (kube.get(
        f"/api/v1/namespaces/{namespace}/pods/port-holder").get("status") or {}).get(
        "phase") == "Running" or NotYet("not running"), 30, LOGS)
    run_job(cluster, namespace, port_job("ported"))
    cluster.wait("its Gang Admitted", lambda: gang_state(
        cluster, namespace, "ported", "Admitted"), 60, LOGS)


def bound(cluster, namespace: str) -> list[str]:
    return sorted(node for p in pods_of(cluster, namespace, "ported")
                  if (node := bound_node(p)))


def test_a_gang_that_cannot_bind_whole_binds_nothing(coscheduling_cluster, namespace,
                                                      e2e_timings):
    cluster, _ = coscheduling_cluster
    kube = cluster.kube
    start_blocked_job(cluster, namespace)
    group = kube.get(PODGROUPS.format(namespace=namespace) + "/ported")
    assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 300}
    gang = kube.get(f"/apis/headstart.io/v1alpha1/namespaces/{namespace}/gangs/ported")
    assert [o["uid"] for o in group["metadata"]["ownerReferences"]] == [gang["metadata"]["uid"]]
    pods = pods_of(cluster, namespace, "ported")
    assert [p["metadata"]["labels"].get("scheduling.x-k8s.io/pod-group") for p in pods] == \
        ["ported", "ported"]
    deadline = time.monotonic() + WATCH_S
    while time.monotonic() < deadline:
        assert bound(cluster, namespace) == [], "a pod of the gang bound alone"
        time.sleep(0.5)
    events = kube.list(f"/api/v1/namespaces/{namespace}/events")
    rejected = [e["message"] for e in events if e["reason"] == "FailedScheduling"
                and e["involvedObject"]["name"].startswith("ported")]
    assert rejected, "kube-scheduler never tried the gang"
    kube.delete(f"/api/v1/namespaces/{namespace}/pods/port-holder")
    freed = time.monotonic()
    nodes = cluster.wait("the gang bound whole once the port is free", lambda: bound(
        cluster, namespace) if len(bound(cluster, namespace)) == 2 else NotYet(
        bound(cluster, namespace)), 120, LOGS)
    assert nodes == ["a-0", "a-1"]
    e2e_timings.record("coscheduling: nothing bound while the gang cannot bind whole",
                       watched_s=WATCH_S, bound_whole_since_port_freed=time.monotonic() - freed,
                       a_rejection=rejected[-1][:160])


def test_without_coscheduling_one_pod_binds_alone(control_cluster, namespace, e2e_timings):
    cluster, _ = control_cluster
    start_blocked_job(cluster, namespace)
    started = time.monotonic()
    nodes = cluster.wait("pod 0 bound alone", lambda: bound(cluster, namespace) or NotYet(
        "none bound"), 60, LOGS)
    assert nodes == ["a-0"]
    bound_s = time.monotonic() - started
    time.sleep(5)
    assert bound(cluster, namespace) == ["a-0"]  # the other still pends, a-0's GPUs held
    e2e_timings.record("without coscheduling: one pod of the gang bound alone",
                       bound_alone_after_s=bound_s)
