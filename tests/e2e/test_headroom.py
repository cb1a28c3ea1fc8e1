"""The overprovisioner running a HEADROOM (config `headroom:`, the line `headstart
simulate` prints when a headroom beats predictive) against a real cluster-autoscaler:
p4d.24xlarge keeps a static 2 (in its placement group pg-a) and m5.4xlarge a
proportional headroom (one per 4 of its nodes, at least 1). The plan is in mode
`headroom`, the Deployments ask for those counts, CA launches the nodes, the
placeholders run there, and the proportional count follows the m5 nodes that exist.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.headstart import Overprovisioner
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, phase
from tests.e2e.placeholders import (
    LADDER_CONFIG,
    placeholder_deployments,
    placeholder_pods,
)
from tests.e2e.test_overprovisioner import INSTANCE_TYPE, PLACEMENT_GROUP, start_cluster

GPU_TYPE, CPU_TYPE, GROUP = "p4d.24xlarge", "m5.4xlarge", "pg-a"
HEADROOM = f"per-type:{GPU_TYPE}=static:2+{CPU_TYPE}=proportional:4,min=1"
# No m5 node at first: max(1, ceil(0 / 4)) = 1; with the one node CA then launches for
# it, ceil(1 / 4) = 1 still. p4d: 2, in pg-a (its only group).
WANTED = {GPU_TYPE: 2, CPU_TYPE: 1}
CONFIG = {**LADDER_CONFIG, "instance_types": [CPU_TYPE, GPU_TYPE], "headroom": HEADROOM}
assert CONFIG["limits"]["placement_groups"] == {GPU_TYPE: [GROUP]}


@pytest.fixture(scope="module")
def headroom(e2e_clusters):
    cluster = start_cluster(e2e_clusters, "headroom")
    overprovisioner = Overprovisioner(cluster, CONFIG)
    started = time.monotonic()
    overprovisioner.start().wait_ready()
    yield cluster, overprovisioner, started
    cluster.stop()


def wanted(plan, instance_type):
    return sum(b["wanted"] for b in plan["buckets"] if b["instance_type"] == instance_type)


def test_a_headroom_config_makes_cluster_autoscaler_launch_its_nodes(headroom, e2e_timings):
    cluster, overprovisioner, started = headroom
    kube = cluster.kube
    logs = ["headstart-overprovisioner", "cluster-autoscaler", "headstart-scheduler"]

    def planned():
        response = overprovisioner.get("/plan")  # 503 until the first tick is planned
        if response.status_code != 200:
            return NotYet(response.text[:300])
        plan = response.json()
        return plan if plan["buckets"] else NotYet(plan)

    plan = cluster.wait("a plan", planned, 60, logs)
    assert (plan["mode"], plan["model"]) == ("headroom", HEADROOM), plan
    assert {t: wanted(plan, t) for t in WANTED} == WANTED, plan["buckets"]
    assert [b["placement_group"] for b in plan["buckets"]
            if b["instance_type"] == GPU_TYPE and b["wanted"]] == [GROUP], plan["buckets"]

    def deployments_asking():
        asked: dict[str, int] = {}
        for d in placeholder_deployments(kube):
            kind = d["metadata"]["labels"].get("headstart.io/instance-type")
            asked[kind] = asked.get(kind, 0) + d["spec"]["replicas"]
        return asked if asked == WANTED else NotYet(asked)

    cluster.wait("the placeholder Deployments", deployments_asking, 30, logs)

    def placeholders_running():
        found = {}
        for kind, count in WANTED.items():
            pods = [p for p in placeholder_pods(kube, kind)
                    if not p["metadata"].get("deletionTimestamp") and bound_node(p)
                    and phase(p) == "Running"]
            if len(pods) < count:
                return NotYet({kind: [(p["metadata"]["name"], bound_node(p)) for p in pods]})
            found[kind] = pods
        return found

    # CA holds GPU pods back ~30 s before scaling up for them (a hard-coded buffer).
    running = cluster.wait("the placeholders running", placeholders_running, 180,
                           logs + ["kwok"])
    running_s = time.monotonic() - started
    for kind, count in WANTED.items():
        nodes = kube.list("/api/v1/nodes", label_selector=f"{INSTANCE_TYPE}={kind}")
        assert {bound_node(p) for p in running[kind]} == {
            n["metadata"]["name"] for n in nodes}, f"{kind}: a node no placeholder runs on"
        assert len(nodes) == count, [n["metadata"]["name"] for n in nodes]
        for node in nodes:
            assert node["metadata"]["annotations"]["cluster-autoscaler.kwok.nodegroup/name"] \
                == kind, "the node was not made by cluster-autoscaler"
            if kind == GPU_TYPE:
                assert node["metadata"]["labels"].get(PLACEMENT_GROUP) == GROUP

    # Later ticks count the m5 node that now exists: ceil(1 / 4) = 1, the same plan.
    time.sleep(3 * 5.0)
    plan = overprovisioner.plan()
    assert plan["mode"] == "headroom", plan
    assert {t: wanted(plan, t) for t in WANTED} == WANTED, plan["buckets"]
    e2e_timings.record("overprovisioner headroom: static 2 p4d in pg-a, proportional m5",
                       running_since_overprovisioner_start=running_s)
