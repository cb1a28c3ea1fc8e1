"""The cache's incremental updates give what a full rebuild from the same objects gives."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.resources import Resources
from extender.cache import ClusterCache
from locality.config import LocalityConfig
from locality.model import JobKey, Role
from locality.numa import NumaFit, pod_numa_demand
from locality.parse import parse_node, parse_node_topology, parse_pod
from locality.placement import Assumption
from tests.extender.builders import make_node, make_nrt, make_pod

LOCALITY = LocalityConfig()
GPU = 1000


def node(name, **kwargs):
    return parse_node(make_node(name, **kwargs), LOCALITY)


def pod(name, **kwargs):
    return parse_pod(make_pod(name, **kwargs), LOCALITY)


def rebuilt(nodes, pods, topologies) -> ClusterCache:
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes(nodes)
    cache.replace_pods(pods)
    cache.replace_topologies(topologies)
    return cache


def columns(cache: ClusterCache) -> dict[str, list]:
    table = cache.table()
    order = np.argsort(np.array(table.names))
    return {
        "names": sorted(table.names),
        "free_gpu": table.free_gpu[order].tolist(),
        "free_cpu": table.free_cpu[order].tolist(),
        "groups": [table.states[row].placement_group for row in order],
        "topology": sorted(table.names[row] for row in table.topology_rows),
    }


def test_events_in_any_order_match_a_rebuild_and_the_table_follows():
    cache = rebuilt([node("a", group="g1"), node("b", group="g1")], [], [])
    cache.table()  # a first snapshot, so the later ones are incremental
    # A pod arrives before its node (watches are independent), then the node.
    cache.apply_pod(pod("early", gpus=2, node="c", phase="Running"))
    cache.apply_node(node("c", group="g2"))
    cache.apply_pod(pod("p1", gpus=3, node="a", phase="Running"))
    cache.apply_pod(pod("p1", gpus=3, node="b", phase="Running"))  # moved (re-created)
    cache.apply_pod(pod("p2", gpus=1, node="b", phase="Running"))
    cache.table()
    cache.apply_pod(pod("p2", gpus=1, node="b", phase="Succeeded"))  # finished: frees
    cache.apply_topology(parse_node_topology(make_nrt("a", [(8, 4)]), LOCALITY))
    cache.apply_node(node("b", group="g3"))  # relabelled
    cache.delete_pod(pod("gone", node="a"))  # never seen: harmless
    cache.apply_node(node("d"))
    cache.delete_node("d")

    final = rebuilt(
        [node("a", group="g1"), node("b", group="g3"), node("c", group="g2")],
        [pod("early", gpus=2, node="c", phase="Running"),
         pod("p1", gpus=3, node="b", phase="Running"),
         pod("p2", gpus=1, node="b", phase="Succeeded")],
        [parse_node_topology(make_nrt("a", [(8, 4)]), LOCALITY)],
    )
    assert columns(cache) == columns(final)
    # b: 8 GPUs - 3 (p1; p2 finished) = 5; c: 8 - 2 (early) = 6; a: 8 (p1 moved away).
    assert columns(cache)["free_gpu"] == [8 * GPU, 5 * GPU, 6 * GPU]


def test_pods_are_indexed_by_job_and_unindexed_when_deleted():
    worker = pod("w-0", gpus=1, job="j", role="worker")
    cache = rebuilt([node("a")], [worker, pod("other", gpus=1)], [])
    assert [p.name for p in cache.pods_of_job(JobKey("team", "j"))] == ["w-0"]
    cache.delete_pod(worker)
    assert cache.pods_of_job(JobKey("team", "j")) == []
    assert cache.pods_of_job(None) == []


def test_jobs_short_of_their_declared_size():
    size = {LOCALITY.job_size_annotation: "3"}
    j = JobKey("team", "j")
    w0 = pod("w-0", gpus=1, job="j", role="worker", annotations=size)
    w1 = pod("w-1", gpus=1, job="j", role="worker", annotations=size, phase="Failed")
    cache = rebuilt([node("a")], [w0, pod("unsized", job="u", role="worker")], [])
    assert cache.jobs_short_of_size() == [j]  # 1 of 3 known; u declares no size
    cache.apply_pod(w1)
    assert cache.jobs_short_of_size() == [j]  # a Failed pod is to be replaced
    cache.apply_pod(pod("w-2", gpus=1, job="j", role="worker", annotations=size))
    cache.apply_pod(pod("w-3", gpus=1, job="j", role="worker", annotations=size))
    assert cache.jobs_short_of_size() == []  # w-0, w-2, w-3: 3 of 3
    cache.delete_pod(w0)
    assert cache.jobs_short_of_size() == [j]
    cache.replace_pods([])
    assert cache.jobs_short_of_size() == []


@pytest.mark.parametrize(
    "event",
    ["bound", "deleted", "finished"],
    ids=["bound", "deleted", "finished"],
)
def test_an_assumption_is_dropped_when_the_watch_shows_the_pod(event):
    worker = pod("w-0", gpus=1, job="j", role="worker")
    cache = rebuilt([node("a")], [worker], [])
    assumption = Assumption(JobKey("team", "j"), worker.uid, "w-0", Role.WORKER, "a",
                            Resources.of(gpus=1), expires_at=1e9)
    cache.set_assumed(cache.assumed.assume(assumption))
    assert len(cache.assumed) == 1
    if event == "bound":
        cache.apply_pod(pod("w-0", gpus=1, job="j", role="worker", node="a", phase="Running"))
    elif event == "deleted":
        cache.delete_pod(worker)
    else:
        cache.apply_pod(pod("w-0", gpus=1, job="j", role="worker", phase="Failed"))
    assert len(cache.assumed) == 0


def test_a_relist_replaces_everything_and_keeps_ready():
    cache = rebuilt([node("a"), node("b")], [pod("p", gpus=2, node="a", phase="Running")], [])
    assert cache.ready()
    cache.replace_nodes([node("b")])
    cache.replace_pods([])
    assert sorted(cache.table().names) == ["b"]
    assert cache.nodes["b"].free_gpu_milli == 8 * GPU
    assert cache.pod_count() == 0


def test_status_only_updates_change_nothing_the_decisions_read():
    cache = rebuilt([node("a", group="g1")], [pod("p", gpus=2, node="a", phase="Running")], [])
    table, version = cache.table(), cache.version
    cache.apply_node(node("a", group="g1"))  # a heartbeat: same labels and allocatable
    cache.apply_pod(pod("p", gpus=2, node="a", phase="Running"))  # a status update
    assert cache.version == version and cache.table() is table
    cache.apply_node(node("a", group="g2"))  # a label the decisions read
    assert cache.version == version + 1
    assert cache.table().states[0].placement_group == "g2"


def _draining(obj):
    obj["spec"]["taints"] = [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]
    return obj


def _not_ready(obj):
    obj["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    return obj


@pytest.mark.parametrize("change", [_draining, _not_ready], ids=["draining", "not-ready"])
def test_a_node_that_stops_taking_pods_is_seen_by_the_watch(change):
    # Only the taint or the Ready condition changes: labels and allocatable stay.
    cache = rebuilt([node("a")], [], [])
    version = cache.version
    cache.apply_node(parse_node(change(make_node("a")), LOCALITY))
    assert cache.version == version + 1
    assert not cache.nodes["a"].node.takes_new_pods
    assert not cache.table().states[0].node.takes_new_pods


# ---- NUMA zones: bound GPU pods stay charged until the node's NRT object changes -------

TWO_ZONES = [(48, 4), (48, 4)]  # (CPUs, GPUs) per zone, as NFD published it


def nrt(zones=TWO_ZONES, name="a"):
    return parse_node_topology(make_nrt(name, zones), LOCALITY)


def w(name, gpus=4, phase="Running", on="a", **kwargs):
    return pod(name, gpus=gpus, cpu="8", node=on, phase=phase, **kwargs)


def placeholder_w(name, **kwargs):
    """`w` as the overprovisioner's Deployment makes it: the label, its namespace, the
    placeholder PriorityClass, a ReplicaSet as controller."""
    raw = make_pod(name, gpus=4, cpu="8", node="a", phase="Running", namespace="headstart",
                   labels={"headstart.io/placeholder": "true"}, **kwargs)
    raw["spec"]["priorityClassName"] = "headstart-placeholder"
    raw["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                           "name": "ph-rs", "uid": "rs", "controller": True}]
    return parse_pod(raw, LOCALITY)


@pytest.mark.parametrize(
    ("listed", "events", "zone_gpus", "charged"),
    [
        # zone_gpus: free GPUs per zone in the cache's view of node a afterwards.
        pytest.param([], [("pod", w("w0"))], [0, 4], ["team/w0"], id="bind-takes-node-0"),
        pytest.param([], [("pod", w("w0")), ("pod", w("w1"))], [0, 0],
                     ["team/w0", "team/w1"], id="second-bind-takes-node-1"),
        # The updater republished the same zones (it has not counted w0 yet): keep it.
        pytest.param([], [("pod", w("w0")), ("nrt", nrt())], [0, 4], ["team/w0"],
                     id="unchanged-nrt-keeps-the-charge"),
        # New zones count w0 (node-0 at 0 GPUs): charging it again would take node-1 too.
        pytest.param([], [("pod", w("w0")), ("nrt", nrt([(40, 0), (48, 4)]))], [0, 4], [],
                     id="changed-nrt-ends-the-charge"),
        pytest.param([], [("pod", w("w0")), ("pod", w("w0", phase="Succeeded"))], [4, 4], [],
                     id="finished-pod-uncharged"),
        pytest.param([], [("pod", w("w0")), ("delete", w("w0"))], [4, 4], [],
                     id="deleted-pod-uncharged"),
        pytest.param([], [("pod", w("w0")), ("pod", w("w0", labels={"x": "y"}))], [0, 4],
                     ["team/w0"], id="relabelled-pod-keeps-its-charge"),
        pytest.param([], [("pod", w("w0")), ("nrt-deleted", "a")], [], [],
                     id="nrt-deleted-no-zones"),
        # Pods bound before the first list: the NRT listed with them counts them.
        pytest.param([w("w0")], [], [4, 4], [], id="first-list-not-charged"),
        pytest.param([w("w0", phase="Pending", on=None)], [("relist", [w("w0")])], [0, 4],
                     ["team/w0"], id="relist-shows-a-new-binding"),
        pytest.param([w("w0", phase="Pending", on=None)],
                     [("pod", w("w0")), ("relist", [w("w0")])], [0, 4], ["team/w0"],
                     id="relist-keeps-a-charge"),
        # Re-created under the same name (new uid) while the pod watch was down.
        pytest.param([w("w0", on="b")], [("relist", [w("w0", uid="new-uid")])], [0, 4],
                     ["team/w0"], id="relist-shows-a-re-created-pod-bound"),
        # A relisted NRT: changed zones end the charge, identical ones keep it.
        pytest.param([], [("pod", w("w0")), ("nrt-relist", [nrt([(40, 0), (48, 4)])])],
                     [0, 4], [], id="changed-nrt-relist-ends-the-charge"),
        pytest.param([], [("pod", w("w0")), ("nrt-relist", [nrt()])], [0, 4], ["team/w0"],
                     id="unchanged-nrt-relist-keeps-the-charge"),
        # The pod watch was down while w0 was bound and node a's NRT changed: that change
        # most likely counts w0 (node-0 at 0 GPUs), so the relist does not charge w0 again
        # (which would take node-1 too).
        pytest.param([w("w0", phase="Pending", on=None)],
                     [("nrt", nrt([(40, 0), (48, 4)])), ("relist", [w("w0")])], [0, 4], [],
                     id="relist-after-nrt-change-in-the-gap-not-charged"),
        # A pod event after the NRT change shows the watch was live then: the binding
        # the relist shows came later, so it is charged (to node-1, the only zone left).
        pytest.param([w("w0", phase="Pending", on=None)],
                     [("nrt", nrt([(40, 0), (48, 4)])), ("pod", w("x", gpus=0, on=None)),
                      ("relist", [w("w0", on="a"), w("x", gpus=0, on=None)])],
                     [0, 0], ["team/w0"], id="relist-after-live-pod-event-charged"),
        pytest.param([], [("pod", w("cpu", gpus=0))], [4, 4], [], id="cpu-only-not-charged"),
        # Guaranteed with 8 whole CPUs: pinned in node-0, so charged though it has no GPU.
        pytest.param([], [("pod", w("ps", gpus=0, guaranteed=True))], [4, 4], ["team/ps"],
                     id="pinned-cpu-only-charged"),
        pytest.param([], [("pod", placeholder_w("ph"))],
                     [4, 4], [], id="placeholder-not-charged"),
        # The label outside the placeholders' namespace (a tenant's pod): charged.
        pytest.param([], [("pod", w("ph", labels={"headstart.io/placeholder": "true"}))],
                     [0, 4], ["team/ph"], id="forged-placeholder-label-charged"),
    ],
)
def test_bound_gpu_pods_hold_their_zone_until_the_nrt_changes(listed, events, zone_gpus,
                                                               charged):
    cache = rebuilt([node("a"), node("b")], listed, [nrt()])
    cache.table()  # a first snapshot, so the table below is the incremental one
    for kind, item in events:
        if kind == "pod":
            cache.apply_pod(item)
        elif kind == "delete":
            cache.delete_pod(item)
        elif kind == "nrt":
            cache.apply_topology(item)
        elif kind == "nrt-deleted":
            cache.delete_topology(item)
        elif kind == "nrt-relist":
            cache.replace_topologies(item)
        else:
            cache.replace_pods(item)
    topology = cache.nodes["a"].topology
    assert ([z.gpu_free_milli // GPU for z in topology.zones] if topology else []) == zone_gpus
    assert list(cache.unreflected_pods("a")) == charged
    # The numpy table sees the same zones: a 4-GPU pod fits a zone iff one has 4 free.
    table = cache.table()
    fit = table.numa_fits(pod_numa_demand(4 * GPU, 8_000))[table.index["a"]]
    assert (fit == NumaFit.ALIGNED) == (4 in zone_gpus)


@pytest.mark.parametrize(
    ("guaranteed", "zones"),
    [
        # (free CPUs, free GPUs) per zone of node a after w0 (4 GPUs, 8 CPUs) is bound.
        # Guaranteed with whole CPUs: its 8 CPUs are pinned in node-0 too (48 - 8 = 40).
        pytest.param(True, [(40, 0), (48, 4)], id="guaranteed-charges-gpus-and-cpus"),
        # Burstable: kubelet pins no CPUs and NFD never counts them: GPUs only.
        pytest.param(False, [(48, 0), (48, 4)], id="burstable-charges-gpus-only"),
    ],
)
def test_bound_pod_charges_only_the_cpus_kubelet_pins(guaranteed, zones):
    cache = rebuilt([node("a")], [], [nrt()])
    cache.apply_pod(w("w0", guaranteed=guaranteed))
    topology = cache.nodes["a"].topology
    assert [(z.cpu_free_milli // 1000, z.gpu_free_milli // GPU) for z in topology.zones] == zones


def test_identical_nrt_republish_changes_nothing():
    # NFD republishes every 60 s per node: an identical object must not dirty the table
    # (a column copy and a cold NUMA memo at the next request) nor bump the version.
    cache = rebuilt([node("a")], [], [nrt()])
    table, version = cache.table(), cache.version
    cache.apply_topology(nrt())
    assert cache.version == version
    assert cache.table() is table


def test_a_nominated_pod_counts_as_assumed_on_its_node_until_bound_or_cleared():
    # kube-scheduler nominates the node it preempted for (status.nominatedNodeName).
    cache = rebuilt([node("a"), node("b")], [], [])
    raw = make_pod("w-0", gpus=8, job="j", role="worker")
    cache.apply_pod(parse_pod(raw, LOCALITY))
    assert len(cache.assumed) == 0
    raw["status"]["nominatedNodeName"] = "a"
    cache.apply_pod(parse_pod(raw, LOCALITY))
    assumption = cache.assumed.by_uid["uid-team-w-0"]
    assert (assumption.node_name, assumption.nominated) == ("a", True)
    # It takes its room there (8 GPUs) for every other pod, at any time: no expiry.
    assert cache.assumed.requested_by_node(now=1e9)["a"].gpu_milli == 8 * GPU
    raw["status"]["nominatedNodeName"] = "b"  # nominated elsewhere
    cache.apply_pod(parse_pod(raw, LOCALITY))
    assert cache.assumed.by_uid["uid-team-w-0"].node_name == "b"
    raw["status"].pop("nominatedNodeName")  # cleared
    cache.apply_pod(parse_pod(raw, LOCALITY))
    assert len(cache.assumed) == 0
    raw["status"]["nominatedNodeName"] = "a"
    cache.apply_pod(parse_pod(raw, LOCALITY))
    raw["spec"]["nodeName"] = "a"  # bound: the node state counts it now
    cache.apply_pod(parse_pod(raw, LOCALITY))
    assert len(cache.assumed) == 0


def test_a_bind_outranks_a_nomination_and_a_relist_drops_nominations_of_deleted_pods():
    cache = rebuilt([node("a"), node("b")], [], [])
    raw = make_pod("w-0", gpus=1, job="j", role="worker")
    raw["status"]["nominatedNodeName"] = "a"
    cache.apply_pod(parse_pod(raw, LOCALITY))
    bound = Assumption(JobKey("team", "j"), "uid-team-w-0", "w-0", Role.WORKER, "b",
                       Resources(GPU, 1000, 2**30), 90.0)
    cache.set_assumed(cache.assumed.assume(bound))
    cache.apply_pod(parse_pod(raw, LOCALITY))  # the nomination is still on the pod
    assert cache.assumed.by_uid["uid-team-w-0"].node_name == "b"
    other = make_pod("w-1", gpus=1, job="j", role="worker")
    other["status"]["nominatedNodeName"] = "a"
    cache.apply_pod(parse_pod(other, LOCALITY))
    cache.replace_pods([parse_pod(raw, LOCALITY)])  # w-1 deleted while the watch was down
    assert set(cache.assumed.by_uid) == {"uid-team-w-0"}
