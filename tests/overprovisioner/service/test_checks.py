"""Sizing, problems and hits through the tick loop, against the fake API server."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import yaml

from overprovisioner.service.server import plan_document
from tests.overprovisioner.service.test_loop import (
    DEPLOY,
    NS,
    RISING,
    MemoryDemand,
    at_tick,
    make_config,
    make_loop,
)

MI = 1024**2
G5 = {"instance_type": "g5.xlarge", "placement_group": ""}
TYPES = ["g5.xlarge", "p4d.24xlarge"]


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_node(fake_kube, name, memory="15000Mi", instance_type="g5.xlarge", gpus="1",
              gpu_label=True):
    labels = {"node.kubernetes.io/instance-type": instance_type}
    if gpu_label:  # as the example EKS node groups set it (docs/install-eks.md step 1)
        labels["k8s.amazonaws.com/accelerator"] = "nvidia-a10g"
    fake_kube.create({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": rfc3339(at_tick(0))}],
                   "allocatable": {"cpu": "3920m", "memory": memory, "nvidia.com/gpu": gpus}},
    })


def make_pod(fake_kube, name, node_name="", namespace="ml", labels=None, owner=None,
             requests=None):
    metadata = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        metadata["ownerReferences"] = [{"kind": owner, "name": "x", "apiVersion": "apps/v1",
                                        "uid": "1"}]
    spec = {"containers": [{"name": "c", "image": "x:1",
                            "resources": {"requests": requests or {}}}]}
    if node_name:
        spec["nodeName"] = node_name
    fake_kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
                      "status": {"phase": "Running" if node_name else "Pending"}})


def problem_value(loop, problem, instance_type="g5.xlarge"):
    return loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_placeholder_problem",
        {"instance_type": instance_type, "placement_group": "", "problem": problem})


def test_placeholders_are_sized_from_a_ready_node(fake_kube) -> None:
    make_node(fake_kube, "g5-a")
    make_pod(fake_kube, "device-plugin-g5-a", "g5-a", owner="DaemonSet",
             requests={"cpu": "250m", "memory": "1200Mi"})
    loop = make_loop(fake_kube, make_config(), MemoryDemand(TYPES, RISING))
    report = loop.tick(at_tick(29))
    assert report.ok, report.errors
    deployment = fake_kube.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    # Allocatable 3920m / 15000Mi less the DaemonSet pod's 250m / 1200Mi.
    assert container["resources"]["requests"] == {
        "cpu": "3670m", "memory": str(13800 * MI), "nvidia.com/gpu": "1"}
    (g5,) = [b for b in plan_document(report, loop)["buckets"]
             if b["instance_type"] == "g5.xlarge"]
    assert g5["request_source"] == "nodes" and g5["problem"] is None
    # p4d has no node: the fraction rule, said so in /plan.
    (p4d,) = [b for b in plan_document(report, loop)["buckets"]
              if b["instance_type"] == "p4d.24xlarge"]
    assert p4d["request_source"] == "fraction"


def test_a_placeholder_too_big_for_its_nodes_is_reported_once_and_cleared(
        fake_kube, caplog) -> None:
    # Sizing from nodes is off: the fraction rule asks 11445Mi; kubelet reports 10000Mi.
    make_node(fake_kube, "g5-a", memory="10000Mi")
    loop = make_loop(fake_kube, make_config(placeholders={"backend": "deployment",
                                                          "size_from_nodes": False}),
                     MemoryDemand(TYPES, RISING))
    with caplog.at_level(logging.INFO, logger="headstart.overprovisioner"):
        loop.tick(at_tick(28))
        report = loop.tick(at_tick(29))
    warnings = [r for r in caplog.records if "cannot work (too_big)" in r.getMessage()]
    assert len(warnings) == 1 and "short of memory" in warnings[0].getMessage()
    assert problem_value(loop, "too_big") == 1
    (g5,) = [b for b in plan_document(report, loop)["buckets"]
             if b["instance_type"] == "g5.xlarge"]
    assert g5["problem"] == "too_big" and "g5-a" in g5["problem_detail"]
    # The node group is fixed: the node now reports enough memory.
    fake_kube.delete("v1", "Node", "g5-a")
    make_node(fake_kube, "g5-b", memory="15000Mi")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="headstart.overprovisioner"):
        loop.tick(at_tick(30))
    assert any("problem is gone" in r.getMessage() for r in caplog.records)
    assert problem_value(loop, "too_big") is None


def test_no_node_group_from_cluster_autoscalers_event(fake_kube) -> None:
    loop = make_loop(fake_kube, make_config(), MemoryDemand(TYPES, RISING))
    loop.tick(at_tick(28))
    # The ReplicaSet's placeholder pod waits; CA says no group matches its selector.
    pod = "headstart-placeholder-g5-xlarge-5d8f7c9b6-x2k4q"
    make_pod(fake_kube, pod, namespace=NS, labels={"headstart.io/placeholder": "true"})
    fake_kube.create({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "placeholder.ca1", "namespace": NS},
        "reason": "NotTriggerScaleUp", "type": "Normal",
        "message": "pod didn't trigger scale-up: 3 node(s) didn't match Pod's node "
                   "affinity/selector",
        "lastTimestamp": rfc3339(at_tick(29) - 60),
        "involvedObject": {"kind": "Pod", "namespace": NS, "name": pod},
    })
    report = loop.tick(at_tick(29))
    assert report.checks.problems[("g5.xlarge", "")].problem == "no_node_group"
    assert problem_value(loop, "no_node_group") == 1
    assert problem_value(loop, "no_node_group", "p4d.24xlarge") is None  # no event for it


def test_no_node_group_from_the_autoscaler_status(fake_kube) -> None:
    fake_kube.create({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
        "data": {"status": yaml.safe_dump({"autoscalerStatus": "Running", "nodeGroups": []})},
    })
    make_node(fake_kube, "g5-a")
    loop = make_loop(fake_kube, make_config(dry_run=True), MemoryDemand(TYPES, RISING))
    report = loop.tick(at_tick(29))
    # p4d: no node and CA manages no node group. g5: a node exists, so something makes it.
    assert set(report.checks.problems) == {("p4d.24xlarge", "")}
    make_node(fake_kube, "g5-b", gpu_label=False)
    report = loop.tick(at_tick(30))
    assert report.checks.problems[("g5.xlarge", "")].problem == "gpu_label_missing"
    assert "g5-b" in report.checks.problems[("g5.xlarge", "")].detail
    assert plan_document(report, loop)["autoscaler_status"].startswith(
        "autoscalerStatus Running")


def test_buffer_hits_are_free_nodes_taken_by_real_pods(fake_kube) -> None:
    fake_kube.serve("autoscaling.x-k8s.io/v1beta1")
    make_node(fake_kube, "g5-a")
    loop = make_loop(fake_kube, make_config(placeholders={"backend": "auto"}),
                     MemoryDemand(TYPES, RISING))
    loop.tick(at_tick(28))  # g5-a is free; the buffer asks for 2 g5.xlarge
    buffer = fake_kube.get("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer",
                           "headstart-placeholder-g5-xlarge", NS)
    assert buffer["spec"]["replicas"] == 2
    make_pod(fake_kube, "train-0", "g5-a", requests={"nvidia.com/gpu": "1"})
    loop.tick(at_tick(29))
    registry = loop.metrics.registry
    assert registry.get_sample_value(
        "headstart_overprovisioner_buffer_nodes_taken_total", G5) == 1
    # One hit x a 2-tick horizon of 300 s = 600 s avoided.
    assert registry.get_sample_value(
        "headstart_overprovisioner_pending_seconds_avoided_total") == 600


def test_a_buffer_cluster_autoscaler_does_not_provision_is_reported(fake_kube) -> None:
    fake_kube.serve("autoscaling.x-k8s.io/v1beta1")
    loop = make_loop(fake_kube, make_config(placeholders={"backend": "auto"}),
                     MemoryDemand(TYPES, RISING))
    loop.tick(at_tick(28))
    name = "headstart-placeholder-g5-xlarge"
    buffer = fake_kube.get("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer", name, NS)
    # As CA's pod-list processor writes it when the PodTemplate cannot be read.
    buffer["status"] = {"conditions": [
        {"type": "ReadyForProvisioning", "status": "True", "reason": "AttributesSetSuccessfully",
         "message": "ready", "lastTransitionTime": rfc3339(at_tick(28))},
        {"type": "Provisioning", "status": "False", "reason": "FailedToGetPodTemplate",
         "message": "capacity buffer client can't get pod template",
         "lastTransitionTime": rfc3339(at_tick(28))}]}
    fake_kube.replace(buffer)
    report = loop.tick(at_tick(29))
    problem = report.checks.problems[("g5.xlarge", "")]
    assert problem.problem == "buffer_not_processed"
    assert "FailedToGetPodTemplate" in problem.detail
    assert problem_value(loop, "buffer_not_processed") == 1
