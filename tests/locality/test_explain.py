"""explain: the same verdicts and terms as filter and score, best first, JSON-ready."""

from __future__ import annotations

import json
from dataclasses import replace

from locality.explain import explain
from locality.filter import filter_nodes
from locality.score import score_nodes
from tests.locality.builders import context_for, make_pod, make_state

PS = make_pod("ps", cpu=4, job="j", role="ps", node="a-ps", group="required")
W = make_pod("w", cpu=4, gpus=1, job="j", role="worker", group="required", packing="Tight")
STATES = [
    make_state("b-1", group="pg-b"),
    make_state("a-ps", group="pg-a", pods=[PS]),
    make_state("a-full", group="pg-a", pods=[make_pod("x", gpus=8)]),
    make_state("a-2", group="pg-a"),
]


def test_explain_agrees_with_filter_and_score():
    context = context_for(W, STATES, job_pods=[PS, W])
    explanation = explain(context, STATES)
    result = filter_nodes(context, STATES)
    scores = score_nodes(context, STATES)
    assert [row.name for row in explanation.nodes] == ["a-ps", "a-2", "a-full", "b-1"]
    for row in explanation.nodes:
        assert row.passed == (row.name in result.passed)
        assert row.reason == {**result.failed, **result.unresolvable}.get(row.name)
        assert row.code == result.codes.get(row.name)
        assert row.score == scores[row.name]
    assert not explanation.nodes[-1].resolvable  # b-1: outside the required group
    assert explanation.nodes[-1].code == "placement_group"
    assert explanation.nodes[-2].resolvable  # a-full: only out of GPUs
    assert explanation.nodes[-2].code == "insufficient_gpu"
    assert (explanation.job, explanation.role, explanation.home_group) == ("ns/j", "worker", "pg-a")
    assert (explanation.placed_pods, explanation.remaining_pods) == (1, 1)
    # The placed PS is in pg-a: the topology term aims at it (STATES have no other level).
    assert explanation.topology_targets == (("placement-group", ("pg-a",)),)
    assert explanation.topology_level == "placement-group"
    assert explanation.policy_problems == (
        "annotation headstart.io/packing='Tight' is not pack or spread; using pack",
    )


def test_as_json_is_serialisable_with_totals():
    context = context_for(W, STATES, job_pods=[PS, W])
    data = json.loads(json.dumps(explain(context, STATES).as_json()))
    first = data["nodes"][0]
    # a-ps: node 5 (the PS) + group 3 = 8
    assert first["name"] == "a-ps"
    assert first["score"] == {"node": 5, "group": 3, "numa": 0, "placeholder": 0, "total": 8}
    assert (first["reason"], first["code"]) == (None, None)
    # a-full: out of GPUs; the code serialises as the metrics' label string
    assert data["nodes"][2]["code"] == "insufficient_gpu"


def test_pod_of_no_job():
    pod = replace(make_pod("plain"), labels={})
    explanation = explain(context_for(pod, STATES), STATES)
    assert explanation.job is None
    assert all(row.passed and row.score.total == 0 for row in explanation.nodes)
