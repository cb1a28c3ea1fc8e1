"""Decider pieces that the HTTP tests do not pin down: the pod memo, and what the
extender records of placements (binds only, never its own top score)."""

from __future__ import annotations

import json

from extender.cache import ClusterCache
from extender.decide import Decider
from extender.inflight import PendingBinds
from extender.wire import BindingArgs, parse_extender_args
from locality.config import LocalityConfig
from locality.parse import parse_node, parse_pod
from tests.extender.builders import args_body, make_node, make_pod

LOCALITY = LocalityConfig()


def decider(nodes=(), pods=(), bind: bool = False) -> Decider:
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    cache.replace_pods([parse_pod(pod, LOCALITY) for pod in pods])
    return Decider(cache, LOCALITY, PendingBinds(0.25, 90.0) if bind else None)


def versioned(pod: dict, version: str) -> dict:
    pod["metadata"]["resourceVersion"] = version
    return pod


def test_the_same_pod_version_parses_once_and_a_new_version_again():
    d = decider()
    first = d.parse_pod(versioned(make_pod("w", job="j", role="worker"), "7"))
    assert d.parse_pod(versioned(make_pod("w", job="j", role="worker"), "7")) is first
    relabelled = d.parse_pod(versioned(make_pod("w", job="k", role="worker"), "8"))
    assert relabelled is not first and relabelled.labels["headstart.io/job"] == "k"


def prioritized(d: Decider, pod: dict, names: list[str], now: float = 0.0) -> dict[str, int]:
    args = parse_extender_args(json.loads(args_body(pod, names=names)))
    hosts, scores = d.prioritize(args, now)
    return dict(zip(hosts, scores, strict=True))


def test_prioritize_records_no_placement_only_a_pending_bind():
    ps = make_pod("ps", cpu="2", job="j", role="ps", node="c", phase="Running")
    d = decider([make_node(name) for name in ("a", "b", "c")], [ps], bind=True)
    worker = make_pod("w-0", gpus=1, job="j", role="worker")
    scores = prioritized(d, worker, ["a", "b", "c"])
    assert scores["c"] > max(scores["a"], scores["b"])  # c holds the PS (counterpart)
    # The top score is not where the pod goes: kube-scheduler adds its plugins' scores
    # and breaks ties at random. Nothing is assumed; the pod waits for its bind.
    assert len(d.cache.assumed) == 0
    assert len(d.pending) == 1


def test_a_bind_records_the_node_kube_scheduler_chose_not_the_top_score():
    ps = make_pod("ps", cpu="2", job="j", role="ps", node="c", phase="Running")
    d = decider([make_node(name) for name in ("a", "b", "c")], [ps], bind=True)
    worker = make_pod("w-0", gpus=1, job="j", role="worker")
    prioritized(d, worker, ["a", "b", "c"])
    d.bind_arrived(BindingArgs("w-0", "team", "uid-team-w-0", "a"), now=0.001)
    assert d.cache.assumed.by_uid["uid-team-w-0"].node_name == "a"
    assert len(d.pending) == 0
    # The next worker is pulled to both job nodes: c (the PS, counterpart) and a.
    scores = prioritized(d, make_pod("w-1", gpus=1, job="j", role="worker"), ["a", "b"])
    assert scores["a"] > scores["b"]


def test_a_bind_for_a_pod_the_cache_has_not_seen_uses_the_answered_pod():
    d = decider([make_node("a")], [], bind=True)  # the pod watch has not delivered w-0
    prioritized(d, make_pod("w-0", gpus=1, job="j", role="worker"), ["a"])
    d.bind_arrived(BindingArgs("w-0", "team", "uid-team-w-0", "a"), now=0.001)
    assert d.cache.assumed.by_uid["uid-team-w-0"].request.gpu_milli == 1000


def test_a_bind_the_watch_already_shows_records_nothing():
    bound = make_pod("w-0", gpus=1, job="j", role="worker", node="a", phase="Running")
    d = decider([make_node("a")], [bound], bind=True)
    d.bind_arrived(BindingArgs("w-0", "team", "uid-team-w-0", "a"), now=0.0)
    assert len(d.cache.assumed) == 0  # the cache counts it already: no double count


def test_a_failed_bind_forgets_the_placement():
    d = decider([make_node("a")], [make_pod("w-0", gpus=1, job="j", role="worker")], bind=True)
    args = BindingArgs("w-0", "team", "uid-team-w-0", "a")
    d.bind_arrived(args, now=0.0)
    assert len(d.cache.assumed) == 1
    d.bind_failed(args)
    assert len(d.cache.assumed) == 0


def test_without_the_bind_verb_nothing_is_pending_or_awaited():
    d = decider([make_node("a")], [])
    pod = make_pod("w-0", gpus=1, job="j", role="worker")
    prioritized(d, pod, ["a"])
    assert d.pending is None
    assert d.bind_wait_deadline(d.parse_pod(pod), now=0.0) is None
    assert len(d.cache.assumed) == 0
