"""Remembered packing trials (`locality.admission.trials`): a round with the memo and the
ranked search decides exactly what a round that packs every domain for every job
decides, over rounds whose nodes, node groups, taints and jobs change, and packs a
question only once while its room holds."""

from __future__ import annotations

from dataclasses import replace
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from locality.admission.assign import plan
from locality.admission.config import NodeGroup
from locality.admission.gather import LWS_SIZE_ANNOTATION, gather
from locality.admission.model import Domain
from locality.admission.snapshot import CLUSTER_LEVEL, level_room
from locality.admission.trials import RoundBins, Search, TrialMemo
from locality.constraints import PodConstraints, Toleration
from tests.locality.admission.test_assign import (
    CONFIG,
    LOCALITY,
    NOW,
    PG,
    TAINT,
    dressed,
    job,
    nodes,
)

GROUPS = ("pg-a", "pg-b", "pg-c")


def one_round(pods, states, groups, memo):
    def of_job(key):
        return [p for p in pods if p.labels.get("headstart.io/job") == key.name]

    gathered = gather(pods, {}, of_job, LOCALITY, CONFIG)
    rooms = {level: level_room(states, level, LOCALITY, groups) for level in (PG, CLUSTER_LEVEL)}
    return plan(gathered.jobs, rooms, gathered.reservations, NOW, CONFIG, gathered.releases,
                memo=memo)


node_layout = st.lists(  # per group: (nodes, GPUs used on each, tainted)
    st.tuples(st.integers(0, 4), st.integers(0, 8), st.booleans()),
    min_size=len(GROUPS), max_size=len(GROUPS))
job_specs = st.lists(  # (pods, GPUs per pod, policy, tolerates the taint, priority, the
    # first stage of a LeaderWorkerSet group 2 pods larger)
    st.tuples(st.integers(1, 6), st.sampled_from([1, 2, 4, 8]),
              st.sampled_from(["required", "preferred"]), st.booleans(), st.integers(0, 2),
              st.booleans()),
    min_size=1, max_size=8)


def cluster(layout):
    states = []
    for group, (count, used, tainted) in zip(GROUPS, layout, strict=True):
        made = nodes(group, count, used=used)
        states += dressed(made, taints=(TAINT,)) if tainted else made
    return states


def jobs(specs):
    pods = []
    for index, (count, gpus, policy, tolerates, priority, staged) in enumerate(specs):
        made = job(f"j{index}", count, gpus=gpus, group=policy, priority=priority,
                   created=NOW - 1000 + index)
        if staged:
            made = [replace(p, annotations={**p.annotations, LWS_SIZE_ANNOTATION: str(count + 2)})
                    for p in made]
        if tolerates:
            made = [replace(p, constraints=PodConstraints(
                tolerations=(Toleration(TAINT.key, "Equal", TAINT.value, TAINT.effect),)))
                for p in made]
        pods += made
    return pods


def every_domain(bins, level, values, asked, within=None):
    """`RoundBins.search` as the loop it replaces: every domain packed, ranked as its
    docstring says."""
    best = most = None
    for value in values:
        if within is not None and value not in within:
            continue
        domain = Domain(level, value)
        trial = bins.trial(domain, asked)
        if trial.placed == asked.pods:
            rank = (trial.new_nodes, trial.free_gpu_milli, value)
            if best is None or rank < best[0]:
                best = (rank, domain)
        rank = (-trial.placed, bins[domain].opened + trial.new_nodes, value)
        if most is None or rank < most[0]:
            most = (rank, domain, trial.placed)
    return Search(best, most)


@settings(max_examples=60, deadline=None)
@given(rounds=st.lists(st.tuples(node_layout, job_specs, st.integers(0, 3)),
                       min_size=2, max_size=4))
def test_a_memo_kept_across_rounds_decides_what_packing_every_trial_decides(rounds):
    memo = TrialMemo()
    for layout, specs, group_max in rounds:
        groups = (NodeGroup("p4d-a", "p4d", "pg-a", group_max),)
        states, pods = cluster(layout), jobs(specs)
        with patch.object(RoundBins, "search", every_domain):
            reference = one_round(pods, states, groups, TrialMemo(capacity=0))
        assert one_round(pods, states, groups, memo) == reference
        # Asked again of the same cluster: every answer from memory, the same plan.
        packed = memo.misses
        assert one_round(pods, states, groups, memo) == reference
        assert memo.misses == packed


def test_jobs_of_one_shape_try_each_domain_once_then_only_the_ones_that_changed():
    states = nodes("pg-a", 4) + nodes("pg-b", 4) + nodes("pg-c", 4)
    pods = [pod for index in range(10)
            for pod in job(f"j{index}", 2, created=NOW - 100 + index)]
    # 6 of the 10 fit (12 nodes, 2 per job), 4 wait; the first of those holds its room
    # and the 3 after it ask whether the held room would hold them. A loop over every
    # domain for every job: 10 x 3 + 3 = 33 packs. The search asks the 3 domains once,
    # then only the domain each admission changed (6) and the one the hold changed (1),
    # plus the 3 checks and whether the shape could ever fit (pg-a empty, once): 14.
    every = TrialMemo(capacity=0)
    result = one_round(pods, states, (), every)
    assert len(result.admissions) == 6
    assert every.misses == 3 + 6 + 1 + 3 + 1
    # With the memo 9 are packed: the hold took nothing (all full), so that room and the
    # held one are rooms packed before, and pg-a empty is the room it had at the start.
    memo = TrialMemo()
    assert one_round(pods, states, (), memo) == result
    assert (memo.misses, memo.hits) == (9, 5)


def test_a_node_tainted_between_rounds_is_not_answered_from_memory():
    pods = job("a", 2)
    memo = TrialMemo()
    before = one_round(pods, nodes("pg-a", 2), (), memo)
    assert [str(a.domain) for a in before.admissions] == [f"{PG}=pg-a"]
    # Same free room, row for row, but a taint the job does not tolerate: a new answer.
    after = one_round(pods, dressed(nodes("pg-a", 2), taints=(TAINT,)), (), memo)
    assert after.admissions == ()
    assert after == one_round(pods, dressed(nodes("pg-a", 2), taints=(TAINT,)), (),
                              TrialMemo(capacity=0))


def test_the_memo_keeps_at_most_its_capacity():
    memo = TrialMemo(capacity=4)
    pods = [pod for index in range(6) for pod in job(f"j{index}", 1, gpus=index + 1)]
    one_round(pods, nodes("pg-a", 3) + nodes("pg-b", 3) + nodes("pg-c", 3), (), memo)
    assert memo.misses > 4
    assert len(memo._answers) == 4
