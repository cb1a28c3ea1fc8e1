"""preemption_verdict: which of kube-scheduler's preemption candidates the extender keeps."""

from __future__ import annotations

import pytest

from locality.filter import ReasonCode
from locality.preempt_verb import preemption_verdict
from tests.locality.builders import context_for, make_pod, make_state

PS_A = make_pod("ps", cpu=4, job="j", role="ps", node="a-1")
WORKER = make_pod("w", cpu=4, gpus=4, job="j", role="worker", group="required")
BATCH = make_pod("batch", cpu=4, gpus=4, node="a-1")  # a real pod, lower priority
HOLDER = make_pod("holder", cpu=4, gpus=8, placeholder=True, node="a-1")


def state(name, group, pods=(), zones=None):
    return make_state(name, group=group, pods=[PS_A, *pods] if name == "a-1" else pods,
                      zones=zones)


CASES = [
    pytest.param(
        # 8 GPUs - 4 (batch) - 4 (a second batch pod) = 0 free; evicting one frees 4 >= 4.
        state("a-1", "pg-a", [BATCH, make_pod("batch-2", cpu=4, gpus=4, node="a-1")]),
        [BATCH], 0, (None, None), id="victims-free-the-room",
    ),
    pytest.param(
        # 8 - 4 - 4 = 0 free; the victim named is a 1-GPU pod: 1 < 4 still.
        state("a-1", "pg-a", [BATCH, make_pod("small", cpu=1, gpus=4, node="a-1")]),
        [make_pod("tiny", cpu=1, gpus=1, node="a-1")], 0, ("insufficient GPU (pod requests 4)",
                                                          ReasonCode.INSUFFICIENT_GPU),
        id="victims-that-do-not-free-enough-drop-the-node",
    ),
    pytest.param(
        # Same room, but kube-scheduler named a victim the cache does not know yet: its
        # dry run counted what that pod frees, so a room failure keeps the node.
        state("a-1", "pg-a", [BATCH, make_pod("small", cpu=1, gpus=4, node="a-1")]),
        [], 1, (None, None), id="unknown-victims-keep-a-room-failure",
    ),
    pytest.param(
        state("b-1", "pg-b", [HOLDER]), [HOLDER], 0,
        ("job ns/j is in placement group pg-a (policy required); node is in placement group pg-b",
         ReasonCode.PLACEMENT_GROUP),
        id="outside-the-jobs-required-group",
    ),
    pytest.param(
        # Zones (free GPUs, free CPUs, GPU capacity, CPU capacity): the placeholder holds
        # every GPU; once it goes, zone 0 has capacity 4 >= 4: kept.
        state("a-1", "pg-a", [HOLDER], zones=[(0, 48, 4, 48), (0, 48, 4, 48)]),
        [HOLDER], 0, (None, None), id="numa-judged-on-the-zones-the-victims-empty",
    ),
    pytest.param(
        # Zones of 2 GPUs capacity can never hold 4 under single-numa-node.
        state("a-1", "pg-a", [HOLDER], zones=[(0, 48, 2, 48)] * 4),
        [HOLDER], 0, ("numa", ReasonCode.NUMA), id="numa-rules-the-node-out",
    ),
]


@pytest.mark.parametrize(("candidate", "victims", "unknown", "expected"), CASES)
def test_preemption_verdict(candidate, victims, unknown, expected):
    home = state("a-1", "pg-a")
    context = context_for(WORKER, [home, candidate], job_pods=[PS_A])
    reason, code = preemption_verdict(context, candidate, victims, unknown)
    if expected[1] is ReasonCode.NUMA:
        assert code is ReasonCode.NUMA and reason
    else:
        assert (reason, code) == expected
