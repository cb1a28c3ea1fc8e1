"""The overprovisioner with Karpenter (its kwok provider) as the cluster's autoscaler, as
installed on an EKS cluster that runs Karpenter instead of cluster-autoscaler.

Karpenter provisions for pending pods of any priority (there is no expendable cutoff),
picks the NodePool whose requirements and labels the pod's selector matches
(data/karpenter-nodepools.yaml: one pool per type, p4d.24xlarge's labelled pg-a), and
consolidates empty or underutilized nodes after `consolidateAfter` (30 s here).

- Forecast-sized placeholders (the history file of test_forecast_placeholders): the
  plan wants 2 p4d.24xlarge in pg-a, Karpenter launches exactly 2 nodes from the
  p4d-pg-a pool and the placeholders run there.
- Consolidation: a node that holds a placeholder is not consolidated away while the
  plan still wants it (the placeholder fills the node and pins its type, so Karpenter
  finds neither an empty node nor a cheaper replacement); watched for 90 s, three
  consolidateAfter periods.
- A real pod preempts a placeholder and binds to its node, without a launch for it.
- CapacityBuffers (backend auto; Karpenter's CapacityBuffer feature on): Karpenter
  launches the buffer's node with no placeholder pod, and /plan reports no problem
  while it does (Provisioning=False, RequiresNewCapacity is how Karpenter says it is
  launching).
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.headstart import Extender, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, phase, training_pod
from tests.e2e.placeholders import LADDER_CONFIG, NAMESPACE, placeholder_pods
from tests.e2e.test_forecast_placeholders import (
    FORECAST_CONFIG,
    GPU_TYPE,
    GROUP,
    WANTED,
    gpu_buckets,
    write_history,
)
from tests.e2e.test_overprovisioner import INSTANCE_TYPE, PLACEMENT_GROUP

NODEPOOL = "karpenter.sh/nodepool"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
LOGS = ["headstart-overprovisioner", "karpenter", "headstart-scheduler", "headstart-extender"]
CONSOLIDATE_WATCH_S = 90.0


def start(e2e_clusters, name: str, settings: dict):
    spec, port = headstart_cluster(karpenter=True)
    cluster = e2e_clusters.start(spec, name)
    Extender(cluster, port=port).start().wait_ready()
    cluster.kube.ensure_namespace(NAMESPACE)
    overprovisioner = Overprovisioner(cluster, settings)
    started = time.monotonic()
    overprovisioner.start().wait_ready()
    return cluster, overprovisioner, started


def p4d_nodes(kube) -> dict[str, dict]:
    return {n["metadata"]["name"]: n
            for n in kube.list("/api/v1/nodes", label_selector=f"{INSTANCE_TYPE}={GPU_TYPE}")}


def nodeclaims(kube) -> set[str]:
    return {c["metadata"]["name"] for c in kube.list(NODECLAIMS)}


@pytest.fixture(scope="module")
def forecasting(e2e_clusters, tmp_path_factory):
    history = tmp_path_factory.mktemp("karpenter-history") / "forecast-history.sqlite"
    write_history(history, time.time())
    settings = {**FORECAST_CONFIG,
                "forecast": {**FORECAST_CONFIG["forecast"], "history_path": str(history)}}
    cluster, overprovisioner, started = start(e2e_clusters, "karpenter-forecast", settings)
    yield cluster, overprovisioner, started
    cluster.stop()


def test_forecast_sized_placeholders_make_karpenter_launch_their_nodes(
        forecasting, e2e_timings):
    cluster, overprovisioner, started = forecasting
    kube = cluster.kube

    def forecast_plan():
        response = overprovisioner.get("/plan")
        if response.status_code != 200:
            return NotYet(response.text[:300])
        plan = response.json()
        return plan if plan["buckets"] else NotYet(plan)

    plan = cluster.wait("a plan", forecast_plan, 60, LOGS)
    assert plan["mode"] == "forecast", plan
    assert sum(b["wanted"] for b in gpu_buckets(plan)) == WANTED, plan["buckets"]

    def placeholders_running():
        pods = [p for p in placeholder_pods(kube, GPU_TYPE)
                if not p["metadata"].get("deletionTimestamp")]
        running = [p for p in pods if phase(p) == "Running"]
        return running if len(running) >= WANTED else NotYet(
            [(p["metadata"]["name"], bound_node(p), phase(p)) for p in pods])

    running = cluster.wait(f"{WANTED} p4d placeholders running", placeholders_running, 150,
                           LOGS)
    running_s = time.monotonic() - started
    on = {bound_node(p) for p in running}
    nodes = p4d_nodes(kube)
    assert len(on) == WANTED and set(nodes) == on, (on, sorted(nodes))
    for node in nodes.values():
        labels = node["metadata"]["labels"]
        assert labels[NODEPOOL] == "p4d-pg-a", labels
        assert labels[PLACEMENT_GROUP] == GROUP, labels
    assert len(nodeclaims(kube)) == WANTED, sorted(nodeclaims(kube))
    nominated = [e for p in running
                 for e in kube.events(NAMESPACE, p["metadata"]["name"], reason="Nominated")]
    assert nominated, "Karpenter recorded no Nominated event for the placeholders"
    assert not [b["problem"] for b in gpu_buckets(overprovisioner.plan()) if b["problem"]]
    e2e_timings.record("karpenter: forecast-sized placeholders",
                       running_since_overprovisioner_start=running_s, nodes=len(nodes))


def test_karpenter_does_not_consolidate_nodes_the_plan_still_holds(forecasting, e2e_timings):
    cluster, _, _ = forecasting
    kube = cluster.kube
    before = nodeclaims(kube)
    assert len(before) == WANTED
    deadline = time.monotonic() + CONSOLIDATE_WATCH_S
    while time.monotonic() < deadline:
        now = nodeclaims(kube)
        assert now == before, f"Karpenter replaced placeholder nodes: {before} -> {now}"
        disrupted = [c["metadata"]["name"] for c in kube.list(NODECLAIMS)
                     if c["metadata"].get("deletionTimestamp")]
        assert not disrupted, f"Karpenter is disrupting {disrupted}"
        time.sleep(5)
    evicted = [e for e in kube.list(f"/api/v1/namespaces/{NAMESPACE}/events")
               if e.get("reason") in ("Evicted", "DisruptionBlocked", "Disrupting")]
    assert not [e for e in evicted if e.get("reason") != "DisruptionBlocked"], evicted
    e2e_timings.record("karpenter: no consolidation of placeholder nodes",
                       watched=CONSOLIDATE_WATCH_S, nodeclaims=len(before))


def test_a_training_pod_takes_a_placeholder_node_without_a_launch(
        forecasting, namespace, e2e_timings):
    """The training pod binds to a node a placeholder held, without waiting for a launch
    and without Karpenter nominating a node for it. Afterwards Karpenter launches only
    for placeholders, and, once the plan settles, every p4d node runs the training pod or
    a placeholder the plan wants: no node is left idle. (While the pod waited behind the
    placement gate the overprovisioner counted it as announced work, so the plan may
    have asked for one more node for it: cluster-autoscaler and Karpenter ignore gated
    pods, docs/known-demand.md.)"""
    cluster, overprovisioner, _ = forecasting
    kube = cluster.kube
    held = set(p4d_nodes(kube))
    kube.ensure_namespace(namespace)
    created = time.monotonic()
    pod = training_pod("trainer-0", namespace, job="trainer", role="worker", gpus=8,
                       cpu="8", memory="32Gi", annotations={"headstart.io/job-size": "1"})
    kube.create(f"/api/v1/namespaces/{namespace}/pods", pod)
    node = cluster.wait("the training pod bound",
                        lambda: bound_node(kube.pod(namespace, "trainer-0")), 90, LOGS)
    bound_s = time.monotonic() - created
    assert node in held, f"the training pod went to {node}, not a placeholder's {held}"
    assert not kube.events(namespace, "trainer-0", reason="Nominated"), \
        "Karpenter nominated a new node for the training pod"

    def settled():
        wanted = sum(b["wanted"] for b in gpu_buckets(overprovisioner.plan()))
        running = {bound_node(p) for p in placeholder_pods(kube, GPU_TYPE)
                   if phase(p) == "Running"}
        nodes = set(p4d_nodes(kube))
        state = (wanted, sorted(running), sorted(nodes))
        return state if (len(running) == wanted and nodes == running | {node}) else NotYet(
            state)

    wanted, _, nodes = cluster.wait("every p4d node used by the trainer or a wanted placeholder",
                                    settled, 240, LOGS)
    e2e_timings.record("karpenter: training pod preempts a placeholder",
                       bound_since_created=bound_s, settled_since_created=time.monotonic()
                       - created, placeholders_wanted_after=wanted, p4d_nodes_after=len(nodes))


@pytest.fixture(scope="module")
def buffers(e2e_clusters):
    settings = {**LADDER_CONFIG, "instance_types": [GPU_TYPE],
                "placeholders": {**LADDER_CONFIG["placeholders"], "backend": "auto"}}
    cluster, overprovisioner, started = start(e2e_clusters, "karpenter-buffers", settings)
    yield cluster, overprovisioner, started
    cluster.stop()


def test_a_capacity_buffer_makes_karpenter_launch_its_node(buffers, e2e_timings):
    cluster, overprovisioner, started = buffers
    kube = cluster.kube
    node = cluster.wait("a p4d node for the buffer",
                        lambda: next(iter(p4d_nodes(kube).values()), None) or NotYet(
                            overprovisioner.plan().get("applied")), 150, LOGS)
    launched_s = time.monotonic() - started
    labels = node["metadata"]["labels"]
    assert (labels[NODEPOOL], labels[PLACEMENT_GROUP]) == ("p4d-pg-a", GROUP), labels
    plan = overprovisioner.plan()
    assert plan["applied"]["backend"] == "capacitybuffer", plan["applied"]
    assert not placeholder_pods(kube, GPU_TYPE), "a placeholder pod exists with buffers"
    assert not [b["problem"] for b in gpu_buckets(plan) if b["problem"]], gpu_buckets(plan)
    assert len(nodeclaims(kube)) == 1
    e2e_timings.record("karpenter: capacitybuffer", node_since_overprovisioner_start=launched_s)
