"""Decider pieces that the HTTP tests do not pin down: the pod memo and the best node."""

from __future__ import annotations

import json

from extender.cache import ClusterCache
from extender.decide import Decider
from extender.wire import parse_extender_args
from locality.config import LocalityConfig
from locality.parse import parse_node, parse_pod
from tests.extender.builders import args_body, make_node, make_pod

LOCALITY = LocalityConfig()


def decider(nodes=(), pods=()) -> Decider:
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    cache.replace_pods([parse_pod(pod, LOCALITY) for pod in pods])
    return Decider(cache, LOCALITY)


def versioned(pod: dict, version: str) -> dict:
    pod["metadata"]["resourceVersion"] = version
    return pod


def test_the_same_pod_version_parses_once_and_a_new_version_again():
    d = decider()
    first = d.parse_pod(versioned(make_pod("w", job="j", role="worker"), "7"))
    assert d.parse_pod(versioned(make_pod("w", job="j", role="worker"), "7")) is first
    relabelled = d.parse_pod(versioned(make_pod("w", job="k", role="worker"), "8"))
    assert relabelled is not first and relabelled.labels["headstart.io/job"] == "k"


def test_prioritize_assumes_the_best_node_and_breaks_ties_by_name():
    nodes = [make_node(name) for name in ("c", "b", "a")]
    ps = make_pod("ps", cpu="2", job="j", role="ps", node="c", phase="Running")
    d = decider(nodes, [ps])
    worker = make_pod("w-0", gpus=1, job="j", role="worker")
    args = parse_extender_args(json.loads(args_body(worker, names=["a", "b", "c"])))
    hosts, scores = d.prioritize(args, now=0.0)
    # c holds the PS (counterpart, 5); a and b tie below it, so c is the unique best.
    assert dict(zip(hosts, scores, strict=True))["c"] > max(
        dict(zip(hosts, scores, strict=True))[name] for name in ("a", "b"))
    assert d.cache.assumed.by_uid["uid-team-w-0"].node_name == "c"

    other = make_pod("w-1", gpus=1, job="other", role="worker")  # no PS anywhere: a tie
    args = parse_extender_args(json.loads(args_body(other, names=["c", "b", "a"])))
    hosts, scores = d.prioritize(args, now=0.0)
    assert len(set(scores)) == 1
    assert d.cache.assumed.by_uid["uid-team-w-1"].node_name == "a"  # smallest name
