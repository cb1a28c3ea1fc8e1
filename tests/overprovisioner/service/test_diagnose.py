"""Problems of a bucket (pure): CA's scale-up events, its status ConfigMap, the fit check."""

from __future__ import annotations

import pytest
import yaml

from bucketing.resources import Resources
from overprovisioner.planner.sizing import NodeRoom
from overprovisioner.service.diagnose import (
    AutoscalerStatus,
    ScaleUpEvent,
    classify_not_triggered,
    diagnose,
    latest_scale_up_events,
    parse_autoscaler_status,
    scale_up_reasons,
)

MI = 1024**2
NOW = 1_700_000_000.0
G5 = ("g5.xlarge", "")

# Messages as cluster-autoscaler writes them (processors/status/
# eventing_scale_up_processor.go: "pod didn't trigger scale-up: " + ReasonsMessage, one
# "<count> <reason>" per reason, counts of node groups; buffers: the fake-pods processor).
NO_GROUP = ("pod didn't trigger scale-up: 4 node(s) didn't match Pod's node "
            "affinity/selector, 1 node(s) had untolerated taint {nvidia.com/gpu: present}")
TOO_BIG = ("pod didn't trigger scale-up: 3 node(s) didn't match Pod's node affinity/selector, "
           "1 Insufficient memory")
AT_MAX = "pod didn't trigger scale-up: 3 node(s) didn't match Pod's node affinity/selector, " \
         "1 max node group size reached"
BUFFER_TOO_BIG = ("capacity buffer 2 fake pods didn't trigger scale-up: 1 Insufficient "
                  "nvidia.com/gpu,1 Insufficient nvidia.com/gpu")


@pytest.mark.parametrize(
    "message, expected",
    [
        (NO_GROUP, "no_node_group"),
        (TOO_BIG, "too_big"),
        (AT_MAX, "group_at_max"),
        (BUFFER_TOO_BIG, "too_big"),
        # No node group considered at all (none exists, or none is autoscaled).
        ("pod didn't trigger scale-up: ", "no_node_group"),
        ("pod didn't trigger scale-up: max total nodes in cluster reached", "group_at_max"),
        # The matching group is in backoff: CA may scale later, not a placeholder problem.
        ("pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector, "
         "1 in backoff after failed scale-up", None),
    ],
    ids=["no-group", "insufficient", "at-max", "buffer-insufficient", "empty", "cluster-max",
         "backoff"],
)
def test_classify_not_triggered(message, expected) -> None:
    assert classify_not_triggered(message) == expected


def test_scale_up_reasons_keeps_counts() -> None:
    assert scale_up_reasons(TOO_BIG) == [
        (3, "node(s) didn't match Pod's node affinity/selector"), (1, "Insufficient memory")]


def configmap(status_text: str) -> dict:
    return {"metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
            "data": {"status": status_text}}


YAML_STATUS = yaml.safe_dump({
    "time": "2026-05-01 10:00:00 +0000 UTC", "autoscalerStatus": "Running",
    "clusterWide": {"health": {"status": "Healthy"}},
    "nodeGroups": [{"name": "eks-gpu-g5", "health": {"status": "Healthy", "minSize": 0,
                                                     "maxSize": 4, "cloudProviderTarget": 0}}],
})
LEGACY_STATUS = ("Cluster-autoscaler status at 2023-01-01 10:00:00 +0000 UTC:\n"
                 "Cluster-wide:\n  Health:      Healthy (ready=3 unready=0)\n")


@pytest.mark.parametrize(
    "document, found, running, groups",
    [
        (None, False, None, None),
        (configmap(YAML_STATUS), True, True, 1),
        (configmap(yaml.safe_dump({"autoscalerStatus": "Running"})), True, True, 0),
        (configmap(yaml.safe_dump({"autoscalerStatus": "Initializing"})), True, False, 0),
        (configmap(LEGACY_STATUS), True, None, None),
    ],
    ids=["absent", "running-one-group", "running-no-group", "initializing", "legacy-text"],
)
def test_parse_autoscaler_status(document, found, running, groups) -> None:
    status = parse_autoscaler_status(document)
    assert (status.found, status.running, status.node_groups) == (found, running, groups)


def event(reason, message, kind, name, at):
    return {"reason": reason, "message": message, "lastTimestamp": at,
            "involvedObject": {"kind": kind, "name": name}, "metadata": {"name": "e"}}


# Karpenter's FailedScheduling messages, one error per NodePool joined (provisioning/
# scheduling/scheduler.go addToNewNodeClaim, nodeclaim.go InstanceTypeFilterError).
KARPENTER_AT_LIMITS = (
    'Failed to schedule pod, all available instance types exceed limits for nodepool '
    '(NodePool=p4d-pg-a); incompatible with nodepool "m5-4xlarge", did not tolerate taint '
    '(taint=nvidia.com/gpu=present:NoSchedule)')
KARPENTER_TOO_BIG = (
    'Failed to schedule pod, no instance type has enough resources, requirements=..., '
    'resources={"cpu":"200","nvidia.com/gpu":"8"}')
KARPENTER_NO_POOL = (
    'Failed to schedule pod, incompatible with nodepool "m5-4xlarge", did not tolerate taint '
    '(taint=nvidia.com/gpu=present:NoSchedule); incompatible requirements, key '
    'headstart.io/placement-group, headstart.io/placement-group In [pg-b] not in '
    'headstart.io/placement-group In [pg-a]')


def test_karpenter_events_count_and_kube_schedulers_do_not() -> None:
    pods = {"headstart-placeholder-p4d-1": G5}
    events = [
        event("FailedScheduling", KARPENTER_NO_POOL, "Pod", "headstart-placeholder-p4d-1",
              "2023-11-14T22:11:00Z"),
        # Later, kube-scheduler's own FailedScheduling: about the nodes there are now, not
        # about new ones; Karpenter's verdict stands.
        event("FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
              "Pod", "headstart-placeholder-p4d-1", "2023-11-14T22:12:00Z"),
    ]
    latest = latest_scale_up_events(events, pods, {}, NOW, 900.0)
    assert latest[G5].message == KARPENTER_NO_POOL and latest[G5].source == "Karpenter"
    problems = diagnose([G5], REQUEST, [], {}, latest, AutoscalerStatus(), NOW)
    assert problems[G5].problem == "no_node_group"
    assert problems[G5].detail.startswith("no node of this type exists and Karpenter: ")


def test_latest_scale_up_event_per_bucket() -> None:
    pods = {"headstart-placeholder-g5-xlarge-abc-1": G5}
    buffers = {"headstart-placeholder-g5-xlarge": G5}
    events = [
        event("NotTriggerScaleUp", TOO_BIG, "Pod", "headstart-placeholder-g5-xlarge-abc-1",
              "2023-11-14T22:10:00Z"),
        # Later: CA scaled up for the buffer's fake pods; this one is the verdict.
        event("TriggeredScaleUp", "capacity buffer 1 fake pods triggered scale-up: ...",
              "CapacityBuffer", "headstart-placeholder-g5-xlarge", "2023-11-14T22:12:00Z"),
        # Too old (NOW = 2023-11-14T22:13:20Z; 3 hours before).
        event("NotTriggerScaleUp", NO_GROUP, "Pod", "headstart-placeholder-g5-xlarge-abc-1",
              "2023-11-14T19:00:00Z"),
        event("Scheduled", "", "Pod", "headstart-placeholder-g5-xlarge-abc-1",
              "2023-11-14T22:13:00Z"),
        event("NotTriggerScaleUp", NO_GROUP, "Pod", "someone-elses-pod", "2023-11-14T22:13:00Z"),
    ]
    latest = latest_scale_up_events(events, pods, buffers, NOW, 900.0)
    assert list(latest) == [G5] and latest[G5].reason == "TriggeredScaleUp"


def node(instance_type="g5.xlarge", memory_mi=15000):
    return NodeRoom("n1", instance_type, "", Resources(1000, 3920, memory_mi * MI), Resources(),
                    True, NOW - 3600)


REQUEST = {"g5.xlarge": Resources(1000, 3000, 14307 * MI)}
RUNNING_NO_GROUPS = AutoscalerStatus(True, True, 0, "autoscalerStatus Running, 0 node group(s)")
RUNNING_GROUPS = AutoscalerStatus(True, True, 3, "autoscalerStatus Running, 3 node group(s)")


@pytest.mark.parametrize(
    "rooms, nodes, scale_up, status, expected",
    [
        # A node of the type has less memory than asked: too big, whatever CA says.
        ([node(memory_mi=14000)], {G5: 1}, None, RUNNING_GROUPS, "too_big"),
        # No node of the type; CA: the only matching group is too small.
        ([], {}, ScaleUpEvent("NotTriggerScaleUp", TOO_BIG, NOW), RUNNING_GROUPS, "too_big"),
        # No node of the type; CA: every group rejects it on selector or taint.
        ([], {}, ScaleUpEvent("NotTriggerScaleUp", NO_GROUP, NOW), RUNNING_GROUPS,
         "no_node_group"),
        # A node of the type exists: whatever CA says about selectors, a group makes it.
        ([node()], {G5: 1}, ScaleUpEvent("NotTriggerScaleUp", NO_GROUP, NOW), RUNNING_GROUPS,
         None),
        # No node of the type and CA runs with no node group at all.
        ([], {}, None, RUNNING_NO_GROUPS, "no_node_group"),
        # No node, no event yet, CA has groups: cannot tell, no problem reported.
        ([], {}, None, RUNNING_GROUPS, None),
        # CA's status absent: cannot tell either.
        ([], {}, None, AutoscalerStatus(), None),
        ([], {}, ScaleUpEvent("NotTriggerScaleUp", AT_MAX, NOW), RUNNING_GROUPS, "group_at_max"),
        # The latest verdict is a scale-up: fine.
        ([], {}, ScaleUpEvent("TriggeredScaleUp", "pod triggered scale-up", NOW),
         RUNNING_GROUPS, None),
        # Karpenter (no CA status ConfigMap): it nominated a NodeClaim for the pod.
        ([], {}, ScaleUpEvent("Nominated", "Pod should schedule on: nodeclaim/p4d-x", NOW),
         AutoscalerStatus(), None),
        # Karpenter: the matching pool is at its limits; another pool is incompatible.
        ([], {}, ScaleUpEvent("FailedScheduling", KARPENTER_AT_LIMITS, NOW), AutoscalerStatus(),
         "group_at_max"),
        ([], {}, ScaleUpEvent("FailedScheduling", KARPENTER_TOO_BIG, NOW), AutoscalerStatus(),
         "too_big"),
        ([], {}, ScaleUpEvent("FailedScheduling", KARPENTER_NO_POOL, NOW), AutoscalerStatus(),
         "no_node_group"),
    ],
    ids=["node-too-small", "ca-insufficient", "ca-no-group", "node-exists", "ca-has-no-groups",
         "unknown", "no-status", "at-max", "triggered", "karpenter-nominated",
         "karpenter-limits", "karpenter-too-big", "karpenter-no-pool"],
)
def test_diagnose(rooms, nodes, scale_up, status, expected) -> None:
    scale_ups = {G5: scale_up} if scale_up else {}
    problems = diagnose([G5], REQUEST, rooms, nodes, scale_ups, status, NOW)
    assert (problems[G5].problem if G5 in problems else None) == expected


def buffer(replicas=2, created="2023-11-14T22:00:00Z", conditions=None):
    body = {"metadata": {"name": "headstart-placeholder-g5-xlarge",
                         "creationTimestamp": created},
            "spec": {"podTemplateRef": {"name": "headstart-placeholder-g5-xlarge"},
                     "replicas": replicas}}
    if conditions is not None:
        body["status"] = {"conditions": conditions}
    return body


READY = {"type": "ReadyForProvisioning", "status": "True", "reason": "AttributesSetSuccessfully",
         "message": "ready"}
INJECTED = {"type": "Provisioning", "status": "True", "reason": "FakePodsInjected"}


@pytest.mark.parametrize(
    "body, words",
    [
        # NOW is 22:13:20; created 22:00:00, 800 s ago (> the 300 s grace).
        (buffer(), "--capacity-buffer-controller-enabled"),
        (buffer(conditions=[READY]), "--capacity-buffer-pod-injection-enabled"),
        (buffer(conditions=[READY, INJECTED]), None),
        # Created 22:12:00, 80 s ago: CA may not have got to it yet.
        (buffer(created="2023-11-14T22:12:00Z"), None),
        # Nothing asked: CA has nothing to do.
        (buffer(replicas=0), None),
        # CA says why, at once.
        (buffer(created="2023-11-14T22:13:00Z",
                conditions=[READY, {"type": "Provisioning", "status": "False",
                                    "reason": "FailedToGetPodTemplate", "message": "not found"}]),
         "FailedToGetPodTemplate"),
        (buffer(conditions=[{**READY, "status": "False", "reason": "error",
                             "message": "podTemplateRef not found"}]), "podTemplateRef"),
        # Karpenter launching for the buffer: Provisioning False, RequiresNewCapacity,
        # nothing failed (the condition is there from the first minute of every launch).
        (buffer(conditions=[READY, {
            "type": "Provisioning", "status": "False", "reason": "RequiresNewCapacity",
            "message": "2/2 virtual pods required new capacity, 0 failed"}]), None),
        (buffer(conditions=[READY, {
            "type": "Provisioning", "status": "False", "reason": "RequiresNewCapacity",
            "message": "2/2 virtual pods required new capacity, 1 failed"}]),
         "could not place 1 of the buffer's 2 virtual pods"),
    ],
    ids=["no-controller", "no-injection", "provisioning", "young", "zero-replicas",
         "template-missing", "not-ready", "karpenter-launching", "karpenter-failed"],
)
def test_buffer_not_processed(body, words) -> None:
    problems = diagnose([G5], REQUEST, [], {}, {}, RUNNING_GROUPS, NOW, {G5: body})
    if words is None:
        assert problems == {}
    else:
        assert problems[G5].problem == "buffer_not_processed" and words in problems[G5].detail


def gpu_node(name="n1", labeled=False, gpus=0):
    """A g5.xlarge node whose device plugin has registered `gpus` GPUs so far."""
    return NodeRoom(name, "g5.xlarge", "", Resources(gpus * 1000, 3920, 15000 * MI),
                    Resources(), True, NOW - 60, labeled)


@pytest.mark.parametrize(
    "rooms, status, expected",
    [
        # CA runs; the node's GPUs are not registered yet and it has no GPU label: CA
        # takes it for a node without GPUs and scales up again.
        ([gpu_node()], RUNNING_GROUPS, "gpu_label_missing"),
        ([gpu_node(gpus=1)], RUNNING_GROUPS, "gpu_label_missing"),
        # Labelled (k8s.amazonaws.com/accelerator or a peer): fine.
        ([gpu_node(labeled=True)], RUNNING_GROUPS, None),
        # No CA status (Karpenter, which does not use the label): nothing said.
        ([gpu_node()], AutoscalerStatus(), None),
    ],
    ids=["unregistered-unlabeled", "registered-unlabeled", "labeled", "no-ca"],
)
def test_gpu_nodes_without_the_autoscalers_gpu_label(rooms, status, expected) -> None:
    problems = diagnose([G5], REQUEST, rooms, {G5: 1}, {}, status, NOW)
    assert (problems[G5].problem if G5 in problems else None) == expected
    if expected:
        assert "n1" in problems[G5].detail and "k8s.amazonaws.com/accelerator" in (
            problems[G5].detail)


def test_parse_node_reads_the_gpu_label() -> None:
    from overprovisioner.service.observe import parse_node

    def node(labels):
        return {"metadata": {"name": "n", "labels": {
                    "node.kubernetes.io/instance-type": "g5.xlarge", **labels}},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi"}}}

    assert parse_node(node({"k8s.amazonaws.com/accelerator": "nvidia-a10g"}),
                      "headstart.io/placement-group").gpu_labeled
    assert not parse_node(node({}), "headstart.io/placement-group").gpu_labeled
