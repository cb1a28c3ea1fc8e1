"""The fixture itself works: a pending GPU pod makes cluster-autoscaler (kwok provider)
launch a node of the pod's instance type, kwok makes it Ready, the pod runs there."""

from __future__ import annotations

import time

import pytest

from tests.e2e.controlplane import ClusterSpec
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, phase, training_pod

INSTANCE_TYPE = "node.kubernetes.io/instance-type"


@pytest.fixture(scope="module")
def cluster(e2e_clusters):
    cluster = e2e_clusters.start(ClusterSpec(autoscaler=True), "smoke")
    yield cluster
    cluster.stop()


def test_a_pending_gpu_pod_gets_a_node_of_its_type_and_runs(cluster, namespace, e2e_timings):
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    pod = training_pod("gpu-pod", namespace, gpus=8, cpu="8", memory="64Gi",
                       scheduler="default-scheduler",
                       node_selector={INSTANCE_TYPE: "p4d.24xlarge"})
    created = time.monotonic()
    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)

    def unschedulable():
        conditions = (kube.pod(namespace, "gpu-pod").get("status") or {}).get("conditions") or []
        return any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for c in conditions) or NotYet(conditions)

    cluster.wait("the pod to be Unschedulable (no p4d node yet)", unschedulable, 60,
                 ["kube-scheduler"])
    unschedulable_s = time.monotonic() - created
    # cluster-autoscaler holds GPU pods back for 30 s before it scales up for them.
    node_name = cluster.wait(
        "the pod to be bound to a new node", lambda: bound_node(kube.pod(namespace, "gpu-pod")),
        150, ["cluster-autoscaler", "kube-scheduler", "kwok"])
    bound_s = time.monotonic() - created
    cluster.wait("the pod to be Running",
                 lambda: phase(kube.pod(namespace, "gpu-pod")) == "Running", 60, ["kwok"])
    running_s = time.monotonic() - created

    node = kube.get(f"/api/v1/nodes/{node_name}")
    labels, annotations = node["metadata"]["labels"], node["metadata"]["annotations"]
    assert labels[INSTANCE_TYPE] == "p4d.24xlarge"
    assert labels["headstart.io/placement-group"] == "pg-a"
    assert annotations["cluster-autoscaler.kwok.nodegroup/name"] == "p4d.24xlarge"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    scale_ups = cluster.wait(  # CA records its event asynchronously
        "cluster-autoscaler's TriggeredScaleUp event",
        lambda: kube.events(namespace, "gpu-pod", reason="TriggeredScaleUp"), 30,
        ["cluster-autoscaler"])
    assert "p4d.24xlarge" in scale_ups[-1]["message"], scale_ups
    e2e_timings.record("smoke: GPU pod -> CA node -> Running",
                       unschedulable=unschedulable_s, bound=bound_s, running=running_s)
