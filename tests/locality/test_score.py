"""score_nodes: the arithmetic of each term, spread, neutral scores for pods of no job."""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.score import MAX_SCORE, ScoreBreakdown, best_node, score_nodes, score_totals
from tests.locality.builders import context_for, make_pod, make_state

# Nodes: 8 GPUs, 96 CPUs, 768 GiB. The job: PS on a-ps, worker w1 on a-w, both in
# pg-a (the home group); the pod scored is worker w2: 1 GPU, 4 CPUs, 1 GiB.
PS = make_pod("ps", cpu=4, job="j", role="ps", node="a-ps")
W1 = make_pod("w1", cpu=4, gpus=1, job="j", role="worker", node="a-w")
# Pinned (Guaranteed, whole CPUs): its 4 CPUs must share its GPU's zone, so a-numa-split
# (zone 0: 1 GPU but 2 CPUs; zone 1: no GPU) has no zone for it.
W2 = make_pod("w2", cpu=4, gpus=1, job="j", role="worker", pinned=True)
HALF = make_pod("other", cpu=48, gpus=4, memory_gib=384)
PLACEHOLDER = make_pod("ph", cpu=90, gpus=8, memory_gib=700, placeholder=True)

STATES = [
    make_state("a-ps", group="pg-a", pods=[PS]),
    make_state("a-w", group="pg-a", pods=[W1]),
    make_state("a-empty", group="pg-a"),
    make_state("a-half", group="pg-a", pods=[HALF]),
    make_state("a-held", group="pg-a", pods=[PLACEHOLDER]),
    make_state("a-numa", group="pg-a", zones=[(4, 48), (4, 48)]),
    make_state("a-numa-split", group="pg-a", zones=[(1, 2), (0, 46)]),
    make_state("b-empty", group="pg-b"),
    make_state("b-held", group="pg-b", pods=[PLACEHOLDER]),
    make_state("loose"),
]

PACK = {
    # counterpart (the PS) on the node: node 5 + group 3
    "a-ps": ScoreBreakdown(5, 3, 0, 0),
    # another worker of the job, not the PS: 4 + group 3
    "a-w": ScoreBreakdown(4, 3, 0, 0),
    # idle after w2: gpu 7/8=.875, cpu 92/96=.958, mem 767/768=.999; mean .944,
    # x3 = 2.83 -> 3; + group 3
    "a-empty": ScoreBreakdown(3, 3, 0, 0),
    # gpu 3/8=.375, cpu 44/96=.458, mem 383/768=.499; mean .444, x3 = 1.33 -> 1
    "a-half": ScoreBreakdown(1, 3, 0, 0),
    # the placeholder's capacity counts as free (idle 3) and is paid for (+1)
    "a-held": ScoreBreakdown(3, 3, 0, 1),
    # zone node-0 holds 1 GPU and 4 CPUs: numa +1
    "a-numa": ScoreBreakdown(3, 3, 1, 0),
    # no zone holds 1 GPU and 4 CPUs together: numa 0 (NUMA preferred: not filtered)
    "a-numa-split": ScoreBreakdown(3, 3, 0, 0),
    # outside the home group: no group term
    "b-empty": ScoreBreakdown(3, 0, 0, 0),
    # placeholders in the wrong group earn nothing
    "b-held": ScoreBreakdown(3, 0, 0, 0),
    "loose": ScoreBreakdown(3, 0, 0, 0),
}

SPREAD = {
    # spread inverts only the node term: counterpart 0, job pods 1, else 2 + idle
    "a-ps": ScoreBreakdown(0, 3, 0, 0),
    "a-w": ScoreBreakdown(1, 3, 0, 0),
    "a-empty": ScoreBreakdown(5, 3, 0, 0),  # 2 + 3
    "a-half": ScoreBreakdown(3, 3, 0, 0),  # 2 + 1
    "a-held": ScoreBreakdown(5, 3, 0, 1),
    "a-numa": ScoreBreakdown(5, 3, 1, 0),
    "a-numa-split": ScoreBreakdown(5, 3, 0, 0),
    "b-empty": ScoreBreakdown(5, 0, 0, 0),
    "b-held": ScoreBreakdown(5, 0, 0, 0),
    "loose": ScoreBreakdown(5, 0, 0, 0),
}

GROUP_NONE = {name: replace(terms, group=0) for name, terms in PACK.items()}
# Under placement-group policy none a placeholder anywhere is capacity to use.
GROUP_NONE["b-held"] = ScoreBreakdown(3, 0, 0, 1)

NUMA_NONE = {name: replace(terms, numa=0) for name, terms in PACK.items()}


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({}, PACK, id="pack-preferred"),
        pytest.param({"headstart.io/packing": "spread"}, SPREAD, id="spread"),
        pytest.param({"headstart.io/placement-group": "none"}, GROUP_NONE, id="group-none"),
        pytest.param({"headstart.io/numa": "none"}, NUMA_NONE, id="numa-none"),
    ],
)
def test_score_terms(annotations, expected):
    pod = replace(W2, annotations=annotations)
    context = context_for(pod, STATES, job_pods=[PS, W1, pod])
    assert score_nodes(context, STATES) == expected
    # The fast path gives the same totals.
    assert score_totals(context, STATES) == [
        (name, terms.total) for name, terms in expected.items()
    ]


def test_max_score_is_ten():
    # PS node (5) in the home group (3), a NUMA zone fits (1), placeholders held (1).
    ps = replace(PS, node_name="best")
    state = make_state("best", group="pg-a", pods=[ps, PLACEHOLDER], zones=[(1, 4)])
    context = context_for(W2, [state], job_pods=[ps, W2])
    assert score_nodes(context, [state])["best"].total == MAX_SCORE == 10


@pytest.mark.parametrize(
    ("role", "expected_node_term"),
    [
        pytest.param("ps", 5, id="ps-scores-the-workers-node-as-counterpart"),
        # no PS placed yet: any pod of the job is the counterpart
        pytest.param("Worker", 5, id="worker-before-its-ps-joins-a-sibling"),
        pytest.param("evaluator", 5, id="other-role-counts-any-job-pod"),
    ],
)
def test_counterpart_by_role(role, expected_node_term):
    # Only worker w1 is placed (on a-w); the pod scored has `role`.
    pod = make_pod("new", cpu=4, job="j", role=role)
    state = make_state("a-w", group="pg-a", pods=[W1])
    context = context_for(pod, [state], job_pods=[W1, pod])
    assert score_nodes(context, [state])["a-w"].node == expected_node_term


def test_cpu_only_ps_prefers_a_gpu_node_its_workers_can_join():
    # The job: this PS + 4 pending 1-GPU workers, so GPU counts in the idle measure.
    # gpu node: gpu 8/8=1, cpu 92/96=.958, mem 767/768=.999 -> mean .986 x3 = 2.96 -> 3
    # cpu node: gpu 0 allocatable -> 0, .958, .999 -> mean .652 x3 = 1.96 -> 2
    ps = make_pod("ps", cpu=4, job="j", role="ps")
    workers = [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(4)]
    states = [make_state("gpu", group="pg-a"), make_state("cpu", gpus=0, group="pg-a")]
    context = context_for(ps, states, job_pods=[ps, *workers])
    scores = score_nodes(context, states)
    assert (scores["gpu"].node, scores["cpu"].node) == (3, 2)


def test_first_pod_group_term_goes_to_groups_that_hold_the_job():
    # 12 one-GPU pods: pg-small (one 8-GPU node) cannot hold them, pg-big (two) can.
    pods = [make_pod(f"w{i}", cpu=4, gpus=1, job="j", role="worker") for i in range(12)]
    states = [
        make_state("small", group="pg-small"),
        make_state("big-1", group="pg-big"),
        make_state("big-2", group="pg-big"),
    ]
    context = context_for(pods[0], states, job_pods=pods)
    scores = score_nodes(context, states)
    assert {name: terms.group for name, terms in scores.items()} == {
        "small": 0, "big-1": 3, "big-2": 3,
    }


def test_pods_of_no_job_score_zero_everywhere():
    pod = make_pod("plain", cpu=1)
    context = context_for(pod, STATES)
    assert set(score_nodes(context, STATES).values()) == {ScoreBreakdown(0, 0, 0, 0)}
    assert {total for _, total in score_totals(context, STATES)} == {0}


@pytest.mark.parametrize(
    ("totals", "expected"),
    [
        pytest.param([("b", 3), ("a", 7), ("c", 5)], "a", id="highest"),
        pytest.param([("b", 7), ("a", 7)], "a", id="tie-by-name"),
        pytest.param([], None, id="empty"),
    ],
)
def test_best_node(totals, expected):
    assert best_node(totals) == expected
