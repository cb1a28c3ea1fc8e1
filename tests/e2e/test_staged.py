"""Staged creation against the real components, as installed (issue 26): a
LeaderWorkerSet group under `startupPolicy: LeaderReady` is admitted by stage, never
deadlocked behind the gate.

The cluster: pg-a with 2 8-GPU kwok nodes, pg-b with 4. A LeaderWorkerSet `serve`
(size 4, LeaderReady; a stand-in CRD, the controller is not built here) and its group 1's
leader pod, created plainly with the labels and annotation the controller's StatefulSet
gives it. The admitter admits the leader alone (its workers come only once it is
Ready), into pg-b, the group that holds all 4 pods (best fit for the leader alone would
be pg-a), and it binds there. Then the 3 workers are created: they join pg-b and bind.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.controlplane import DATA
from tests.e2e.headstart import Extender, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node, training_pod

LOGS = ["headstart-scheduler", "headstart-extender"]
NODES = {"a-0": "pg-a", "a-1": "pg-a", "b-0": "pg-b", "b-1": "pg-b", "b-2": "pg-b",
         "b-3": "pg-b"}
LWS_LABELS = {"leaderworkerset.sigs.k8s.io/name": "serve",
              "leaderworkerset.sigs.k8s.io/group-index": "1"}


@pytest.fixture(scope="module")
def staged_cluster(e2e_clusters):
    spec, port = headstart_cluster(crds=(DATA / "leaderworkerset-minimal-crd.yaml",))
    cluster = e2e_clusters.start(spec, "staged")
    for name, group in NODES.items():
        cluster.kube.create("/api/v1/nodes", kwok_node(name, memory="768Gi", group=group))
    extender = Extender(cluster, port=port).start()
    extender.wait_ready()
    cluster.wait("the extender's cache to hold the nodes", lambda: extender.readyz()["nodes"]
                 == len(NODES) + 1 or NotYet(extender.readyz()["nodes"]), 30, LOGS)
    yield cluster
    cluster.stop()


def group_pod(namespace: str, worker: int) -> dict[str, Any]:
    pod = training_pod(f"serve-1-{worker}", namespace, gpus=8, cpu="8", memory="64Gi",
                       annotations={"leaderworkerset.sigs.k8s.io/size": "4"})
    pod["metadata"]["labels"] = {**LWS_LABELS,
                                 "leaderworkerset.sigs.k8s.io/worker-index": str(worker)}
    return pod


def node_of(cluster, namespace: str, name: str):
    pod = cluster.kube.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return bound_node(pod) or NotYet(pod["spec"].get("schedulingGates"))


def test_a_leader_ready_group_is_admitted_by_stage(staged_cluster, namespace, e2e_timings):
    cluster = staged_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/{namespace}/leaderworkersets", {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": "serve"},
        "spec": {"replicas": 2, "startupPolicy": "LeaderReady",
                 "leaderWorkerTemplate": {"size": 4}}})
    time.sleep(2)  # the extender's watch sees the LeaderWorkerSet before its pods
    created = time.monotonic()
    kube.create(f"/api/v1/namespaces/{namespace}/pods", group_pod(namespace, 0))
    leader = cluster.wait("the leader bound alone", lambda: node_of(
        cluster, namespace, "serve-1-0"), 60, LOGS)
    leader_s = time.monotonic() - created
    assert NODES[leader] == "pg-b", leader

    created = time.monotonic()
    for worker in (1, 2, 3):
        kube.create(f"/api/v1/namespaces/{namespace}/pods", group_pod(namespace, worker))
    workers = [cluster.wait(f"worker {worker} bound", lambda worker=worker: node_of(
        cluster, namespace, f"serve-1-{worker}"), 60, LOGS) for worker in (1, 2, 3)]
    workers_s = time.monotonic() - created
    assert {NODES[node] for node in workers} == {"pg-b"}, workers
    e2e_timings.record("staged: LeaderWorkerSet LeaderReady group",
                       leader_bound_since_created=leader_s,
                       workers_bound_since_created=workers_s)
