"""Every failure kind yields its ReasonCode (the metrics' `reason` label) and its
resolvability, through both entry points: node states (filter_nodes) and a kept table
(filter_table). The texts are pinned by test_filter.py and the wire captures, not here:
the code must not care how a reason is worded."""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.columns import NodeTable
from locality.filter import FilterResult, ReasonCode, filter_nodes, filter_table
from locality.reasons import UNKNOWN_NODE_REASON
from tests.locality.builders import context_for, make_pod, make_state

WORKER = make_pod("w", cpu=4, gpus=1, job="j", role="worker")
REQUIRED_GROUP = {"headstart.io/placement-group": "required"}
PENDING_9 = [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(9)]


def placed(pod, node):
    return replace(pod, node_name=node)


# (pod, node states, other job pods, the node judged) -> (where, label)
KINDS = [
    pytest.param(
        WORKER, [make_state("x", pods=[make_pod("bg", cpu=1, gpus=8)])], [], "x",
        # 8 GPUs - 8 used = 0 < 1
        ("failed", "insufficient_gpu"),
        id="insufficient-gpu",
    ),
    pytest.param(
        WORKER, [make_state("x", pods=[make_pod("bg", cpu=93)])], [], "x",
        # 96 CPUs - 93 used = 3 < 4
        ("failed", "insufficient_cpu"),
        id="insufficient-cpu",
    ),
    pytest.param(
        WORKER, [make_state("x", memory_gib=16, pods=[make_pod("bg", memory_gib=15.5)])], [],
        "x",
        # 16 GiB - 15.5 = 0.5 GiB < 1 GiB
        ("failed", "insufficient_memory"),
        id="insufficient-memory",
    ),
    pytest.param(
        replace(WORKER, annotations=REQUIRED_GROUP),
        [make_state("a", group="pg-a"), make_state("x", group="pg-b")],
        [placed(make_pod("ps", cpu=4, job="j", role="ps"), "a")], "x",
        ("unresolvable", "placement_group"),
        id="outside-home-group",
    ),
    pytest.param(
        replace(WORKER, annotations=REQUIRED_GROUP),
        [make_state("a", group="pg-a"), make_state("x")],
        [placed(make_pod("ps", cpu=4, job="j", role="ps"), "a")], "x",
        ("unresolvable", "placement_group"),
        id="outside-home-group-no-label",
    ),
    pytest.param(
        replace(WORKER, annotations=REQUIRED_GROUP),
        [make_state("big-1", group="pg-big"), make_state("x")], [], "x",
        ("unresolvable", "placement_group"),
        id="first-pod-no-group-label",
    ),
    pytest.param(
        replace(WORKER, annotations=REQUIRED_GROUP),
        [make_state("x", group="pg-small")], PENDING_9, "x",
        # this worker + 9 pending = 10 one-GPU pods; one 8-GPU node holds 8
        ("unresolvable", "placement_group"),
        id="first-pod-group-too-small",
    ),
    pytest.param(
        make_pod("w2", cpu=8, gpus=2, job="j", role="worker", numa="required"),
        [make_state("x", zones=[(1, 32), (1, 32)])], [], "x",
        # 2 GPUs on the node, but 1 per zone
        ("unresolvable", "numa"),
        id="numa",
    ),
]


def judge(pod, states, job_pods, candidates, columnar) -> FilterResult:
    if columnar:
        table = NodeTable(states)
        return filter_table(context_for(pod, table, job_pods), table, candidates)
    by_name = {state.name: state for state in states}
    return filter_nodes(context_for(pod, by_name, job_pods), [by_name[n] for n in candidates])


def where(result: FilterResult, name: str) -> tuple[str, ReasonCode | None]:
    if name in result.failed:
        return "failed", result.codes.get(name)
    if name in result.unresolvable:
        return "unresolvable", result.codes.get(name)
    return "passed", result.codes.get(name)


@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
@pytest.mark.parametrize(("pod", "states", "job_pods", "node", "expected"), KINDS)
def test_every_failure_kind_yields_its_code_and_label(pod, states, job_pods, node, expected,
                                                      columnar):
    result = judge(pod, states, job_pods, [state.name for state in states], columnar)
    bucket, code = where(result, node)
    assert (bucket, code) == expected  # a StrEnum equals its label string
    assert isinstance(code, ReasonCode)
    # Exactly the excluded nodes carry a code.
    assert result.codes.keys() == result.failed.keys() | result.unresolvable.keys()


def test_unknown_node_code_on_the_numpy_path():
    table = NodeTable([make_state("a")])
    result = filter_table(context_for(WORKER, table, []), table, ["a", "ghost"])
    assert where(result, "ghost") == ("failed", "unknown_node")
    assert result.failed["ghost"] == UNKNOWN_NODE_REASON
    assert result.codes == {"ghost": ReasonCode.UNKNOWN_NODE}


@pytest.mark.parametrize("columnar", [False, True], ids=["states", "table"])
def test_passing_nodes_and_pods_of_no_job_carry_no_code(columnar):
    states = [make_state("roomy"), make_state("full", pods=[make_pod("bg", cpu=1, gpus=8)])]
    names = [state.name for state in states]
    assert judge(WORKER, states, [], names, columnar).codes == {
        "full": ReasonCode.INSUFFICIENT_GPU}
    plain = make_pod("plain", cpu=4, gpus=1)  # no job: passes everywhere
    assert judge(plain, states, [], names, columnar).codes == {}

