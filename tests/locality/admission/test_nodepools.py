"""Karpenter NodePools as node groups: the shipped example pools, limits, and the pools
whose room cannot be known."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from bucketing.resources import Resources
from extender.admission.observe import catalog_shapes
from locality.admission.assign import plan
from locality.admission.gather import gather
from locality.admission.nodepools import (
    NODEPOOL_LABEL,
    UNLIMITED_NODES,
    nodepool_groups,
    what_counts,
)
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from locality.config import LocalityConfig, TopologyLevel
from locality.constraints import Taint, Toleration
from locality.model import Node
from tests.locality.admission.test_assign import (
    CONFIG,
    LOCALITY,
    NOW,
    PG,
    constrained,
    job,
    nodes,
)

EXAMPLE = Path(__file__).parents[3] / "manifests/overlays/eks/examples/karpenter-nodepools.yaml"
SHAPES = catalog_shapes(LocalityConfig())


def example_pools():
    return [doc for doc in yaml.safe_load_all(EXAMPLE.read_text()) if doc]


def pool(name="gpu", types=("p4d.24xlarge",), labels=None, limits=None, taints=(),
         status=None, requirements=None):
    reqs = requirements if requirements is not None else (
        [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)}])
    body = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": labels or {}},
                                  "spec": {"requirements": reqs, "taints": list(taints)}}}}
    if limits is not None:
        body["spec"]["limits"] = limits
    if status is not None:
        body["status"] = status
    return body


def test_the_shipped_example_pools_are_groups_in_their_placement_group():
    found = nodepool_groups(example_pools(), (), LOCALITY, SHAPES)
    assert found.unknown == ()
    by_name = {g.name: g for g in found.groups}
    assert set(by_name) == {"g5-xlarge-pg-a/g5.xlarge", "p4d-24xlarge-pg-a/p4d.24xlarge"}
    p4d = by_name["p4d-24xlarge-pg-a/p4d.24xlarge"]
    # Limit 32 GPUs, 8 per p4d.24xlarge (the aws catalog's allocatable): 4 nodes.
    assert (p4d.level, p4d.domain, p4d.can_add) == (PG, "pg-a", 4)
    assert p4d.allocatable == SHAPES["p4d.24xlarge"]
    assert p4d.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"),)
    assert p4d.labels[NODEPOOL_LABEL] == "p4d-24xlarge-pg-a"
    assert p4d.labels["topology.kubernetes.io/zone"] == "us-east-1a"  # one value: a label
    assert p4d.labels["node.kubernetes.io/instance-type"] == "p4d.24xlarge"
    assert by_name["g5-xlarge-pg-a/g5.xlarge"].can_add == 16  # 16 GPUs, 1 each


def test_limits_count_what_the_pool_has_launched():
    # status.resources says 3 p4d nodes' GPUs are in use of 32: 1 more node fits; a CPU
    # limit of 300 with 288 used allows none (96 per node): the least wins.
    body = pool(limits={"nvidia.com/gpu": "32"}, status={"resources": {"nvidia.com/gpu": "24"}})
    [group] = nodepool_groups([body], (), LOCALITY, SHAPES).groups
    assert group.can_add == 1
    body = pool(limits={"nvidia.com/gpu": "32", "cpu": "300"},
                status={"resources": {"nvidia.com/gpu": "24", "cpu": "288"}})
    assert nodepool_groups([body], (), LOCALITY, SHAPES).groups[0].can_add == 0
    # No status yet: its own nodes (label karpenter.sh/nodepool) are counted instead.
    mine = Node("n1", {NODEPOOL_LABEL: "gpu"}, Resources.of(8, 96, 1000), None, "p4d.24xlarge")
    body = pool(limits={"nvidia.com/gpu": "16", "nodes": "5"})
    [group] = nodepool_groups([body], [mine], LOCALITY, SHAPES).groups
    assert group.can_add == 1
    assert group.allocatable == Resources.of(8, 96, 1000)  # a node of the type, not the catalog
    assert nodepool_groups([pool()], (), LOCALITY, SHAPES).groups[0].can_add == UNLIMITED_NODES


def test_pools_whose_room_cannot_be_known_are_named_with_why():
    by_family = pool("family", requirements=[
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p4d"]}])
    unknown_type = pool("custom", types=("x9.mystery",))
    not_ready = pool("broken", status={"conditions": [{"type": "Ready", "status": "False"}]})
    malformed = {"metadata": {"name": "bad"}, "spec": {"template": {"spec": {
        "requirements": "not a list"}}}}
    found = nodepool_groups([by_family, unknown_type, not_ready, malformed], (), LOCALITY,
                            SHAPES)
    assert found.groups == ()
    assert len(found.unknown) == 4
    family, custom, broken, bad = found.unknown
    assert family.startswith("NodePool family: its instance types are not listed")
    assert custom == "NodePool custom: no x9.mystery node and no catalog entry to size one"
    assert broken.startswith("NodePool broken: Karpenter does not report it Ready")
    assert bad == "NodePool bad: spec.template.spec.requirements: expected a list"


def test_a_pool_that_fixes_no_domain_adds_nodes_to_the_cluster_only():
    two_zones = pool(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p4d.24xlarge"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a", "b"]}])
    [group] = nodepool_groups([two_zones], (), LOCALITY, SHAPES).groups
    assert (group.level, group.domain) == (CLUSTER_LEVEL, CLUSTER_LEVEL)
    assert "topology.kubernetes.io/zone" not in group.labels
    # With a zone level configured, a single zone fixes the domain at that level.
    zone = TopologyLevel("zone", ("topology.kubernetes.io/zone",))
    zoned = LocalityConfig(topology_levels=(TopologyLevel("placement-group"), zone))
    one_zone = copy.deepcopy(two_zones)
    one_zone["spec"]["template"]["spec"]["requirements"][1]["values"] = ["a"]
    [group] = nodepool_groups([one_zone], (), zoned, SHAPES).groups
    assert (group.level, group.domain) == ("zone", "a")


def test_a_job_is_admitted_into_the_pool_that_can_launch_its_nodes():
    # One free p4d node in pg-b; the example pools launch p4d.24xlarge in pg-a (at most
    # 4). A 3-node job of 8-GPU pods that tolerates the GPU taint: pg-a, 3 new nodes.
    found = nodepool_groups(example_pools(), (), LOCALITY, SHAPES)
    tolerating = constrained(job("big", 3), tolerations=(Toleration("nvidia.com/gpu", "Exists"),))
    gathered = gather(tolerating, {}, lambda key: tolerating, LOCALITY, CONFIG)
    states = nodes("pg-b", 1, instance_type="p4d.24xlarge")
    rooms = {level: level_room(states, level, LOCALITY, found.groups, None, SHAPES)
             for level in (PG, CLUSTER_LEVEL)}
    result = plan(gathered.jobs, rooms, gathered.reservations, NOW, CONFIG)
    [admission] = result.admissions
    assert (str(admission.domain), admission.new_nodes) == (f"{PG}=pg-a", 3)
    # Without the toleration no pool node may take it: it could never fit (inadmissible).
    gathered = gather(job("big", 3), {}, lambda key: job("big", 3), LOCALITY, CONFIG)
    result = plan(gathered.jobs, rooms, gathered.reservations, NOW, CONFIG)
    assert [w.code.value for w in result.waiting] == ["inadmissible"]


def test_only_what_the_groups_are_computed_from_replans():
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-28T10:00:00Z"}
    first = pool(limits={"nvidia.com/gpu": "32"},
                 status={"resources": {"nvidia.com/gpu": "8"}, "conditions": [ready]})
    first["metadata"]["resourceVersion"] = "100"
    # Karpenter rewrote the status (a heartbeat, a new resourceVersion): same groups.
    rewritten = copy.deepcopy(first)
    rewritten["metadata"]["resourceVersion"] = "101"
    rewritten["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-28T10:05:00Z"
    assert what_counts(rewritten) == what_counts(first)
    # A node launched (usage), a limit raised, the pool not Ready: the groups change.
    launched = copy.deepcopy(first)
    launched["status"]["resources"]["nvidia.com/gpu"] = "16"
    raised = copy.deepcopy(first)
    raised["spec"]["limits"]["nvidia.com/gpu"] = "64"
    failing = copy.deepcopy(first)
    failing["status"]["conditions"][0]["status"] = "False"
    for changed in (launched, raised, failing):
        assert what_counts(changed) != what_counts(first)
        assert (nodepool_groups([changed], (), LOCALITY, SHAPES)
                != nodepool_groups([first], (), LOCALITY, SHAPES))
