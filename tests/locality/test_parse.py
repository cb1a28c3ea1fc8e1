"""The edge: real captured Pods and Nodes, a v1alpha2 NodeResourceTopology, bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from bucketing.resources import GIB, Resources
from common.errors import InputError
from locality.config import LocalityConfig
from locality.model import NodeTopology, NumaZone
from locality.numa import NumaDemand, TopologyManagerPolicy, TopologyManagerScope
from locality.parse import parse_node, parse_node_topology, parse_pod

CAPTURES = Path(__file__).resolve().parents[2].parent / "shared" / "extender-captures"
CONFIG = LocalityConfig()


def capture(name: str) -> dict:
    path = CAPTURES / name
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    return json.loads(path.read_text())


def test_captured_gpu_pod():
    pod = parse_pod(capture("filter-nodecachecapable-true.request.json")["Pod"], CONFIG)
    assert (pod.namespace, pod.name) == ("ext-test", "ext-cache-1")
    assert pod.uid == "ecc9e48a-eff0-4f71-bd1c-81d9574f279f"
    # requests: cpu 1, nvidia.com/gpu 1 (a whole GPU, and a device of that kind)
    assert pod.request == Resources(1000, 1000, 0, (("nvidia.com/gpu", 1000),))
    assert pod.labels == {"run": "ext-cache-1"}
    assert (pod.node_name, pod.priority, pod.is_placeholder, pod.terminal) == (
        None, 0, False, False,
    )


def test_captured_nodes_with_the_clusters_group_label():
    items = capture("filter-nodecachecapable-false.request.json")["Nodes"]["items"]
    config = LocalityConfig(placement_group_labels=("example.com/placement-group",))
    nodes = {node.name: node for node in (parse_node(item, config) for item in items)}
    assert nodes["cpu-a-1"].allocatable == Resources.of(0, 8, 32)
    assert nodes["gpu-a-1"].allocatable == Resources(
        8000, 96_000, 1152 * GIB, (("nvidia.com/gpu", 8000),))
    assert nodes["gpu-a-1"].placement_group == "pg-a"
    assert nodes["cpu-a-1"].instance_type == "m5.2xlarge"
    # With the default keys the capture's example.com label is no placement group.
    assert parse_node(items[0], CONFIG).placement_group is None


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param({"topology.k8s.aws/network-node-layer-3": "nn-3",
                      "cloud.google.com/gce-topology-block": "b"}, "nn-3", id="aws-before-gce"),
        pytest.param({"headstart.io/placement-group": "hs",
                      "cloud.google.com/gke-placement-group": "gke"}, "hs", id="headstart-first"),
        pytest.param({"cloud.google.com/gce-topology-block": "block-7"}, "block-7", id="gce-only"),
        pytest.param({}, None, id="none"),
    ],
)
def test_placement_group_first_label_wins(labels, expected):
    node = {"metadata": {"name": "n", "labels": labels}, "status": {"allocatable": {"cpu": "1"}}}
    assert parse_node(node, CONFIG).placement_group == expected


def _node_with(spec: dict, conditions: list) -> dict:
    return {"metadata": {"name": "n"}, "spec": spec,
            "status": {"allocatable": {"cpu": "1"}, "conditions": conditions}}


READY = {"type": "Ready", "status": "True"}
PRESSURE_OK = {"type": "MemoryPressure", "status": "False"}


@pytest.mark.parametrize(
    ("spec", "conditions", "expected"),
    [
        pytest.param({}, [PRESSURE_OK, READY], (True, (), True), id="ready-untainted"),
        pytest.param({}, [], (True, (), True), id="no-conditions-counts-as-ready"),
        pytest.param({}, [{"type": "Ready", "status": "False"}], (False, (), False),
                     id="not-ready"),
        pytest.param({}, [{"type": "Ready", "status": "Unknown"}], (False, (), False),
                     id="ready-unknown"),
        pytest.param({"unschedulable": True}, [READY], (True, (), False), id="cordoned"),
        pytest.param({"taints": [{"key": "ToBeDeletedByClusterAutoscaler",
                                  "value": "1700000000", "effect": "NoSchedule"}]},
                     [READY], (True, ("ToBeDeletedByClusterAutoscaler",), False),
                     id="cluster-autoscaler-scale-down"),
        pytest.param({"taints": [{"key": "node.kubernetes.io/unreachable",
                                  "effect": "NoExecute"}]},
                     [READY], (True, ("node.kubernetes.io/unreachable",), False),
                     id="unreachable-noexecute"),
        # The CA's soft candidate taint only steers; job pods tolerate the GPU taint.
        pytest.param({"taints": [{"key": "DeletionCandidateOfClusterAutoscaler",
                                  "effect": "PreferNoSchedule"},
                                 {"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
                     [READY], (True, (), True), id="soft-and-gpu-taints-do-not-block"),
        pytest.param({"taints": [{"key": "node.kubernetes.io/not-ready",
                                  "effect": "PreferNoSchedule"}]},
                     [READY], (True, (), True), id="prefer-no-schedule-never-blocks"),
        # A malformed (unhashable) effect is no hard effect; it once raised TypeError.
        pytest.param({"taints": [{"key": "ToBeDeletedByClusterAutoscaler",
                                  "effect": ["NoSchedule"]}]},
                     [READY], (True, (), True), id="malformed-effect-ignored"),
    ],
)
def test_node_readiness_and_taints(spec, conditions, expected):
    node = parse_node(_node_with(spec, conditions), CONFIG)
    assert (node.ready, node.blocking_taints, node.takes_new_pods) == expected


def test_placeholder_pod():
    pod = {
        "metadata": {
            "name": "ph-1", "namespace": "headstart", "uid": "u1",
            "labels": {"headstart.io/placeholder": "true",
                       "headstart.io/placement-group": "pg-b",
                       "headstart.io/job": "would-be-ignored"},
        },
        "spec": {"nodeName": "gpu-b-1", "priority": -5,
                 "priorityClassName": "headstart-placeholder",
                 "containers": [{"name": "pause", "resources": {"requests": {"cpu": "90"}}}]},
        "status": {"phase": "Running"},
    }
    pod["metadata"]["ownerReferences"] = [REPLICASET]
    parsed = parse_pod(pod, CONFIG)
    assert (parsed.is_placeholder, parsed.placement_group, parsed.priority, parsed.node_name) == (
        True, "pg-b", -5, "gpu-b-1",
    )


@pytest.mark.parametrize(
    ("status", "terminal", "succeeded"),
    [
        pytest.param({"phase": "Pending"}, False, False, id="pending"),
        pytest.param({"phase": "Running"}, False, False, id="running"),
        pytest.param({"phase": "Succeeded"}, True, True, id="succeeded"),
        pytest.param({"phase": "Failed"}, True, False, id="failed"),
        pytest.param({}, False, False, id="no-phase-yet"),
    ],
)
def test_pod_phase(status, terminal, succeeded):
    parsed = parse_pod({**POD, "status": status}, CONFIG)
    assert (parsed.terminal, parsed.succeeded) == (terminal, succeeded)


@pytest.mark.parametrize(("conditions", "ready"), [
    pytest.param([{"type": "PodScheduled", "status": "True"},
                  {"type": "Ready", "status": "True"}], True, id="ready"),
    pytest.param([{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
                 False, id="crash-loop-or-pulling"),
    pytest.param([{"type": "PodScheduled", "status": "True"}], False, id="not-said-yet"),
    pytest.param(None, False, id="no-conditions"),
])
def test_pod_readiness(conditions, ready):
    parsed = parse_pod({**POD, "status": {"phase": "Running", "conditions": conditions}},
                       CONFIG)
    assert parsed.ready is ready


def test_a_malformed_condition_is_named():
    with pytest.raises(InputError, match=r"pod.status.conditions\[0\]: expected an object"):
        parse_pod({**POD, "status": {"conditions": ["Ready"]}}, CONFIG)


# A realistic object as NFD's topology updater publishes it (two NUMA nodes, GPUs
# per zone from the device plugin, a memory resource and costs we do not use).
NRT = {
    "apiVersion": "topology.node.k8s.io/v1alpha2",
    "kind": "NodeResourceTopology",
    "metadata": {"name": "gpu-a-1", "ownerReferences": [{"kind": "Node", "name": "gpu-a-1"}]},
    "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"},
                   {"name": "topologyManagerScope", "value": "container"}],
    "zones": [
        {
            "name": "node-0", "type": "Node",
            "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 21}],
            "resources": [
                {"name": "cpu", "capacity": "48", "allocatable": "46", "available": "30500m"},
                {"name": "memory", "capacity": "540Gi", "allocatable": "530Gi",
                 "available": "400Gi"},
                {"name": "nvidia.com/gpu", "capacity": "4", "allocatable": "4", "available": "1"},
            ],
        },
        {
            "name": "node-1", "type": "Node",
            "resources": [
                {"name": "cpu", "capacity": "48", "allocatable": "48"},
                {"name": "nvidia.com/gpu", "capacity": "4", "allocatable": "4", "available": "4"},
            ],
        },
        {"name": "socket-0", "type": "Socket", "resources": []},
    ],
}


def test_node_resource_topology_v1alpha2():
    assert parse_node_topology(NRT, CONFIG) == NodeTopology(
        "gpu-a-1",
        (
            NumaZone("node-0", cpu_free_milli=30_500, gpu_free_milli=1_000,
                     cpu_capacity_milli=48_000, gpu_capacity_milli=4_000),
            # no `available` for cpu: allocatable 48 stands in
            NumaZone("node-1", cpu_free_milli=48_000, gpu_free_milli=4_000,
                     cpu_capacity_milli=48_000, gpu_capacity_milli=4_000),
        ),
        # From the attributes NFD's topology updater publishes.
        TopologyManagerPolicy.SINGLE_NUMA_NODE, TopologyManagerScope.CONTAINER,
    )


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        pytest.param(["node-1", "node-0"], ["node-0", "node-1"], id="numa-id-order"),
        pytest.param(["node-10", "node-2"], ["node-2", "node-10"], id="numeric-not-text"),
        pytest.param(["zone-b", "node-1", "zone-a"], ["node-1", "zone-b", "zone-a"],
                     id="other-names-after-in-listed-order"),
    ],
)
def test_zones_come_out_in_numa_id_order(names, expected):
    # kubelet breaks ties between fitting zones towards the lower NUMA id, and
    # NodeTopology.zone_for takes the first zone that fits, so the order is the rule.
    obj = copy.deepcopy(NRT)
    obj["zones"] = [{"name": name, "type": "Node", "resources": []} for name in names]
    assert [zone.name for zone in parse_node_topology(obj, CONFIG).zones] == expected


def _broken(path: list, value):
    obj = copy.deepcopy(NRT)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


def container(requests=None, limits=None):
    return {"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}}}


WHOLE = {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "2"}
HALF = {"cpu": "1500m", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("containers", "init_containers", "pinned"),
    [
        # Guaranteed (limits = requests for cpu and memory), 8 whole CPUs: pinned.
        pytest.param([container(WHOLE, WHOLE)], [], 8000, id="guaranteed-whole-cpus"),
        # Limits only: the API server defaults requests to them, still Guaranteed.
        pytest.param([container(None, WHOLE)], [], 8000, id="limits-only"),
        # Requests without cpu/memory limits: Burstable, kubelet pins nothing.
        pytest.param([container(WHOLE, {"nvidia.com/gpu": "2"})], [], 0, id="burstable"),
        pytest.param([container(WHOLE, {**WHOLE, "memory": "32Gi"})], [], 0,
                     id="memory-limit-above-request-burstable"),
        # Guaranteed, but 1.5 CPUs is not whole: that container gets shared CPUs (8 + 0).
        pytest.param([container(WHOLE, WHOLE), container(HALF, HALF)], [], 8000,
                     id="fractional-container-not-pinned"),
        # Pod scope: app containers summed (8 + 8 = 16), max with an init container's 20.
        pytest.param([container(WHOLE, WHOLE)] * 2,
                     [container({"cpu": "20", "memory": "1Gi"}, {"cpu": "20", "memory": "1Gi"})],
                     20000, id="init-container-peak"),
        # One init container without limits makes the whole pod Burstable.
        pytest.param([container(WHOLE, WHOLE)], [container({"cpu": "1"}, None)], 0,
                     id="burstable-init-container"),
    ],
)
def test_pinned_cpus_only_for_guaranteed_whole_cpus(containers, init_containers, pinned):
    obj = {"metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": containers, "initContainers": init_containers}}
    pod = parse_pod(obj, CONFIG)
    assert pod.pinned_cpu_milli == pinned
    assert pod.numa_request.pod == (pod.request.gpu_milli, pinned)


POD = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}}


@pytest.mark.parametrize(
    ("parser", "obj", "message"),
    [
        pytest.param(parse_pod, [], "pod: expected a JSON object", id="pod-not-object"),
        pytest.param(parse_pod, {"spec": {}}, "pod.metadata: missing", id="pod-no-metadata"),
        pytest.param(parse_pod, {**POD, "metadata": {"namespace": "ns"}},
                     "pod.metadata.name: expected a non-empty string", id="pod-no-name"),
        pytest.param(parse_pod, {**POD, "metadata": {"name": "p", "labels": {"a": 1}}},
                     "pod.metadata.labels.a: expected a string value", id="pod-label-int"),
        pytest.param(parse_pod, {**POD, "spec": {"containers": [
            {"resources": {"requests": {"cpu": "lots"}}}]}},
            "pod.spec.containers[0].resources.requests.cpu", id="pod-bad-quantity"),
        pytest.param(parse_pod, {**POD, "spec": {"initContainers": ["busybox"]}},
                     "pod.spec.initContainers[0]: expected an object", id="pod-container-str"),
        pytest.param(parse_pod, {**POD, "spec": {"containers": [], "priority": "high"}},
                     "pod.spec.priority: expected an integer", id="pod-priority-string"),
        pytest.param(parse_pod, {**POD, "spec": {"containers": [], "preemptionPolicy": "Maybe"}},
                     "pod.spec.preemptionPolicy: expected PreemptLowerPriority or Never",
                     id="pod-preemption-policy"),
        pytest.param(parse_node, {"metadata": {"name": "n"}, "status": {"allocatable": []}},
                     "node.status.allocatable: expected a map", id="node-allocatable-list"),
        pytest.param(parse_node, {"metadata": {"name": "n"},
                                  "status": {"allocatable": {"memory": "-1Gi"}}},
                     "node.status.allocatable.memory: '-1Gi' is negative", id="node-negative"),
        pytest.param(parse_node, _node_with({"taints": {"key": "k"}}, []),
                     "node.spec.taints: expected a list", id="node-taints-object"),
        pytest.param(parse_node, _node_with({}, ["Ready"]),
                     "node.status.conditions[0]: expected an object", id="node-condition-str"),
        pytest.param(parse_node_topology, _broken(["zones"], {}),
                     "nodeResourceTopology.zones: expected a list", id="nrt-zones-object"),
        pytest.param(parse_node_topology,
                     _broken(["zones", 1, "resources", 1, "available"], "four"),
                     "nodeResourceTopology.zones[1].resources[1].available: 'four'",
                     id="nrt-bad-available"),
        pytest.param(parse_node_topology, _broken(["zones", 0, "name"], None),
                     "nodeResourceTopology.zones[0].name: expected a non-empty string",
                     id="nrt-zone-no-name"),
    ],
)
def test_malformed_objects_name_the_field(parser, obj, message):
    with pytest.raises(InputError) as raised:
        parser(obj, CONFIG)
    assert message in str(raised.value)


def test_caller_prefix_in_pod_errors():
    with pytest.raises(InputError, match=r"^Pod\.spec: missing"):
        parse_pod({"metadata": {"name": "p"}}, CONFIG, where="Pod")
    # Errors from pod_effective_request carry the caller's prefix too.
    bad = {**POD, "spec": {"containers": [{"resources": {"limits": {"cpu": "x"}}}]}}
    with pytest.raises(InputError, match=r"^Pod\.spec\.containers\[0\]\.resources\.limits"):
        parse_pod(bad, CONFIG, where="Pod")


@pytest.mark.parametrize(
    ("fields", "policy", "scope"),
    [
        pytest.param({}, "none", "container", id="nothing-published-kubelet-defaults"),
        pytest.param({"topologyPolicies": ["SingleNUMANodePodLevel"]},
                     "single-numa-node", "pod", id="deprecated-field"),
        pytest.param({"topologyPolicies": ["RestrictedContainerLevel"],
                      "attributes": [{"name": "topologyManagerPolicy", "value": "best-effort"}]},
                     "best-effort", "container", id="attributes-win"),
        pytest.param({"attributes": [{"name": "topologyManagerPolicy", "value": "strict"},
                                     {"name": "topologyManagerScope", "value": "pod"}]},
                     "none", "pod", id="unknown-value-keeps-the-default"),
    ],
)
def test_topology_manager_settings(fields, policy, scope):
    obj = {key: value for key, value in NRT.items()
           if key not in ("attributes", "topologyPolicies")} | fields
    topology = parse_node_topology(obj, CONFIG)
    assert (topology.policy.value, topology.scope.value) == (policy, scope)


def test_zone_gpus_summed_over_gpu_resources_and_flagged_when_absent():
    amd = copy.deepcopy(NRT)
    amd["zones"][0]["resources"][2]["name"] = "amd.com/gpu"  # 1 free of 4
    topology = parse_node_topology(amd, CONFIG)
    assert [z.gpu_free_milli for z in topology.zones] == [1000, 4000]
    no_gpus = copy.deepcopy(NRT)
    for zone in no_gpus["zones"]:
        zone["resources"] = [r for r in zone["resources"] if r["name"] != "nvidia.com/gpu"]
    assert parse_node_topology(no_gpus, CONFIG).gpu_reported is False


def gpu_container(gpus, cpu, restart_policy=None, guaranteed=True):
    resources = {"cpu": cpu, "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    spec = {"name": "c", "resources": {"requests": resources,
                                       "limits": resources if guaranteed else {}}}
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    return spec


@pytest.mark.parametrize(
    ("containers", "init_containers", "demand"),
    [
        # Two app containers: 2 GPUs + 8 CPUs and 1 GPU + 4 CPUs; pod scope sums them.
        pytest.param([gpu_container(2, "8"), gpu_container(1, "4")], [],
                     NumaDemand((3000, 12000), (), ((2000, 8000), (1000, 4000))),
                     id="per-container-and-summed"),
        # An init container (4 GPUs) is checked alone; a sidecar (restartPolicy Always)
        # runs beside the app containers, first. Pod scope: max(1 + 1, 4) = 4 GPUs.
        pytest.param([gpu_container(1, "2")],
                     [gpu_container(4, "2"), gpu_container(1, "1", "Always")],
                     NumaDemand((4000, 3000), ((4000, 2000),), ((1000, 1000), (1000, 2000))),
                     id="init-and-sidecar"),
        # Burstable: no CPU is pinned, the GPUs still are aligned.
        pytest.param([gpu_container(2, "8", guaranteed=False)], [],
                     NumaDemand((2000, 0), (), ((2000, 0),)), id="burstable-gpus-only"),
    ],
)
def test_numa_demand(containers, init_containers, demand):
    obj = {"metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": containers, "initContainers": init_containers}}
    assert parse_pod(obj, CONFIG).numa_request == demand


def test_pod_claims_and_pod_group():
    obj = {
        "metadata": {"name": "p", "namespace": "ns",
                     "annotations": {"scheduling.k8s.io/group-name": "pg-volcano"}},
        "spec": {"containers": [], "resourceClaims": [
            {"name": "gpus", "resourceClaimTemplateName": "eight-gpus"},
            {"name": "nic", "resourceClaimName": "shared-nic"},
            {"name": "later", "resourceClaimTemplateName": "one-gpu"},
        ]},
        # The claim controller generated the first template's claim; not yet the third's.
        "status": {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "p-gpus-x7"}]},
    }
    pod = parse_pod(obj, CONFIG)
    assert pod.claims == (("claim", "p-gpus-x7"), ("claim", "shared-nic"),
                          ("template", "one-gpu"))
    assert pod.pod_group == ("scheduling.volcano.sh", "pg-volcano")
    obj["metadata"] = {"name": "p", "namespace": "ns",
                       "labels": {"scheduling.x-k8s.io/pod-group": "pg-coscheduling"}}
    assert parse_pod(obj, CONFIG).pod_group == ("scheduling.x-k8s.io", "pg-coscheduling")


def test_node_devices_and_domains():
    obj = {
        "metadata": {"name": "gb200-7", "labels": {
            "topology.k8s.aws/network-node-layer-1": "nn-1",
            "topology.k8s.aws/network-node-layer-2": "nn-2",
            "topology.k8s.aws/network-node-layer-3": "nn-3",
            "nvidia.com/gpu.clique": "cluster-uuid.3",
        }},
        "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "2",
                                   "nvidia.com/mig-1g.10gb": "14"}},
    }
    node = parse_node(obj, CONFIG)
    # Whole GPUs: 2 (the MIG slices are a kind of their own, not GPUs).
    assert node.allocatable.gpu_milli == 2000
    assert node.allocatable.devices == (("nvidia.com/gpu", 2000),
                                        ("nvidia.com/mig-1g.10gb", 14000))
    # layer-3 is the placement-group level's on EKS (a placement-group label would win).
    assert node.domains == (("block", "nn-1"), ("subblock", "nn-2"),
                            ("placement-group", "nn-3"), ("nvlink", "cluster-uuid.3"))
    assert node.placement_group == "nn-3"
    gke = {"metadata": {"name": "a4x-1", "labels": {
        "cloud.google.com/gce-topology-block": "b-1",
        "cloud.google.com/gce-topology-subblock": "sb-2"}}}
    node = parse_node(gke, CONFIG)
    # The block label is the block level's: no placement-group domain, but the legacy
    # placement group (the required policy's) still falls back to it.
    assert node.domains == (("block", "b-1"), ("subblock", "sb-2"))
    assert node.placement_group == "b-1"


@pytest.mark.parametrize(("policy", "preempts"), [
    (None, True), ("PreemptLowerPriority", True), ("Never", False)])
def test_preemption_policy(policy, preempts):
    spec = {"containers": []} | ({"preemptionPolicy": policy} if policy else {})
    assert parse_pod({**POD, "spec": spec}, CONFIG).preempts is preempts


REPLICASET = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ph-5d8f7c9b6",
              "uid": "rs-1", "controller": True}


@pytest.mark.parametrize(("namespace", "priority_class", "owner", "placeholder"), [
    # the overprovisioner's namespace (no tenant creates pods there), its PriorityClass,
    # a ReplicaSet of its Deployment
    ("headstart", "headstart-placeholder", REPLICASET, True),
    # anyone may write the label: elsewhere, at another class, or made by hand (or by
    # another controller), it makes no placeholder
    ("team", "headstart-placeholder", REPLICASET, False),
    ("headstart", "high", REPLICASET, False),
    ("headstart", None, REPLICASET, False),
    ("headstart", "headstart-placeholder", None, False),
    ("headstart", "headstart-placeholder", {**REPLICASET, "kind": "StatefulSet"}, False),
    ("headstart", "headstart-placeholder", {**REPLICASET, "controller": False}, False),
], ids=["placeholder", "other-namespace", "other-class", "no-class", "made-by-hand",
        "other-controller", "not-controller"])
def test_a_placeholder_is_one_only_as_the_overprovisioner_makes_it(
        namespace, priority_class, owner, placeholder):
    raw = {"metadata": {"name": "p", "namespace": namespace,
                        "labels": {"headstart.io/placeholder": "true",
                                   "headstart.io/placement-group": "pg-a"}},
           "spec": {"containers": []}}
    if priority_class:
        raw["spec"]["priorityClassName"] = priority_class
    if owner:
        raw["metadata"]["ownerReferences"] = [owner]
    pod = parse_pod(raw, CONFIG)
    assert pod.is_placeholder is placeholder
    assert pod.placement_group == ("pg-a" if placeholder else None)


def test_a_pods_inter_pod_rules_are_read_at_the_edge():
    spec = {**POD["spec"], "containers": [{"name": "w", "ports": [{"hostPort": 8080}]}]}
    assert parse_pod({**POD, "spec": spec}, CONFIG).rules.per_node == 1
    assert parse_pod(POD, CONFIG).rules.per_node is None
