"""The cache's incremental updates give what a full rebuild from the same objects gives."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.resources import Resources
from extender.cache import ClusterCache
from locality.config import LocalityConfig
from locality.model import JobKey, Role
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
