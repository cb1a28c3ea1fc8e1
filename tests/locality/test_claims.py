"""claims_of_job: the room a job's pods not yet placed are expected to take."""

from __future__ import annotations

import pytest

from bucketing.resources import Resources
from locality.claims import claims_of_job
from locality.columns import NodeTable
from locality.model import JobKey
from locality.placement import JobPlacement
from tests.locality.builders import make_pod, make_state

GIB = 1024**3
WORKER = Resources(1000, 8000, 64 * GIB)  # 1 GPU, 8 CPUs, 64 GiB


def claims(remaining, occupied, home, taken=None, max_per_node=None, **node_gpus_used):
    """Nodes n1..n4 (8 GPUs, 96 CPUs, 1152 GiB) in group g, n5 in group h; `name=k`
    gives node `name` k GPUs (8 CPUs, 64 GiB each) taken by bound pods."""
    states = [
        make_state(f"n{i}", gpus=8, cpu=96, memory_gib=1152, group="g" if i <= 4 else "h",
                   pods=[make_pod(f"bg-{i}", gpus=node_gpus_used[f"n{i}"],
                                  cpu=8 * node_gpus_used[f"n{i}"],
                                  memory_gib=64 * node_gpus_used[f"n{i}"], node=f"n{i}")]
                   if f"n{i}" in node_gpus_used else ())
        for i in range(1, 6)
    ]
    placement = JobPlacement(JobKey("t", "j"), (), tuple(remaining))
    found = claims_of_job(placement, occupied, home, NodeTable(states), taken or {},
                          max_per_node)
    return {name: r.gpu_milli // 1000 for name, r in sorted(found.items())}


@pytest.mark.parametrize(
    "remaining, occupied, home, used, expected",
    [
        # 10 workers: the PS node n3 first (8), then the most idle node of g, n1 (2);
        # n2 has 3 GPUs used so it comes after n1 and n4.
        (((WORKER, 10),), ["n3"], "g", {"n2": 3}, {"n1": 2, "n3": 8}),
        # n3 has 6 GPUs used: 2 fit there, then n1 takes 8.
        (((WORKER, 10),), ["n3"], "g", {"n3": 6}, {"n1": 8, "n3": 2}),
        # No home group: only the occupied node; what fits nowhere is not claimed.
        (((WORKER, 10),), ["n3"], None, {}, {"n3": 8}),
        # A node of another group the job occupies still comes first.
        (((WORKER, 3),), ["n5"], "g", {}, {"n5": 3}),
        # Nothing left to place: no claims.
        ((), ["n3"], "g", {}, {}),
    ],
    ids=["occupied-then-most-idle", "occupied-room-first", "no-home",
         "occupied-other-group", "nothing-left"],
)
def test_claims_follow_where_the_jobs_pods_are_pulled(remaining, occupied, home, used,
                                                       expected):
    assert claims(remaining, occupied, home, **used) == expected


def test_room_taken_by_assumptions_and_earlier_claims_is_not_claimed_again():
    # n3 has 5 GPUs (40 CPUs, 320 GiB) expected already: 3 workers fit there.
    taken = {"n3": Resources(5000, 40000, 320 * GIB)}
    assert claims(((WORKER, 4),), ["n3"], "g", taken) == {"n1": 1, "n3": 3}


def test_a_spread_job_claims_one_pod_per_node():
    assert claims(((WORKER, 3),), ["n3"], "g", max_per_node=1) == {
        "n1": 1, "n2": 1, "n3": 1}
