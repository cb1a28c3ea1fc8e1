"""Gang-aware preemption as tables: a job that fits nowhere evicts whole lower-priority
gangs inside one domain, the fewest and lowest first, and no job after it takes that room.

Nodes are 8-GPU nodes; every gang pod takes a whole node (8 GPUs), so a gang of n pods
holds n nodes. Gangs run at priority 0 unless a row says otherwise.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.admission.model import Domain, WaitCode
from locality.admission.record import GangRecord, GangState
from locality.model import JobKey, NodeState
from tests.locality.admission.test_assign import PG, PG_KEY, decide, job
from tests.locality.builders import make_pod, make_state


def gang(name, group, first, count, priority=0, owned=True, deleting=False, gpus=8):
    """`count` pods of gang `name` bound to nodes `group`-`first`.. (one per node)."""
    return [replace(make_pod(f"{name}-{i}", job=name, gpus=gpus, node=f"{group}-{first + i}"),
                    priority=priority, controller=("Job", name) if owned else None,
                    deleting=deleting)
            for i in range(count)]


def cluster(layout, bound):
    """layout: {group: node count}; bound: the gangs' pods, charged to their nodes."""
    states = []
    for group, count in layout.items():
        for index in range(count):
            name = f"{group}-{index}"
            here = [pod for pod in bound if pod.node_name == name]
            state = make_state(name, gpus=8, group=group, pods=here)
            states.append(NodeState(replace(state.node, instance_type="p4d"),
                                    state.requested, state.placeholder_requested))
    return states


def running(pods, state=GangState.RUNNING):
    """The gang records of `pods`' jobs, each in the group of its first pod's node."""
    found = {}
    for pod in pods:
        key = JobKey("ns", pod.labels["headstart.io/job"])
        group = pod.node_name.rsplit("-", 1)[0]
        found.setdefault(key, GangRecord(key, state, Domain(PG, group), PG_KEY, name=key.name))
    return found


def preempting(result):
    return {str(p.job): (str(p.domain), sorted(str(v.job) for v in p.victims))
            for p in result.preemptions}


def codes(result):
    return {str(w.job): w.code for w in result.waiting}


TWO_GROUPS = {"pg-a": 2, "pg-b": 2}


@pytest.mark.parametrize(("low", "expected"), [
    pytest.param(
        # Equal gangs: the victim is exactly one whole gang (name breaks the tie).
        gang("l1", "pg-a", 0, 2) + gang("l2", "pg-b", 0, 2),
        {"ns/high": (f"{PG}=pg-a", ["ns/l1"])}, id="one-whole-gang-of-two"),
    pytest.param(
        # l1 at priority 5, l2 at 0: the lower priority goes.
        gang("l1", "pg-a", 0, 2, priority=5) + gang("l2", "pg-b", 0, 2),
        {"ns/high": (f"{PG}=pg-b", ["ns/l2"])}, id="lowest-priority-first"),
    pytest.param(
        # pg-a holds two 1-pod gangs, pg-b one 2-pod gang: same GPUs, fewer victims.
        gang("a1", "pg-a", 0, 1) + gang("a2", "pg-a", 1, 1) + gang("b", "pg-b", 0, 2),
        {"ns/high": (f"{PG}=pg-b", ["ns/b"])}, id="fewest-gangs"),
])
def test_victims_are_whole_gangs_in_one_domain(low, expected):
    result = decide(job("high", 2, priority=10), cluster(TWO_GROUPS, low),
                    extra=low, records=running(low))
    assert preempting(result) == expected
    assert codes(result) == {"ns/high": WaitCode.PREEMPTING}
    assert not result.admissions


def test_the_victims_are_the_fewest_needed_not_the_first_tried():
    """The 1-pod gang at priority 0 is tried first, but the 2-pod gang at priority 1 frees
    enough alone: only it goes (Kueue's minimal set)."""
    low = gang("small", "pg-a", 0, 1) + gang("big", "pg-a", 1, 2, priority=1)
    result = decide(job("high", 2, priority=10), cluster({"pg-a": 3}, low), extra=low,
                    records=running(low))
    assert preempting(result) == {"ns/high": (f"{PG}=pg-a", ["ns/big"])}


@pytest.mark.parametrize(("high", "low"), [
    pytest.param(job("high", 2, priority=0), gang("l1", "pg-a", 0, 2), id="equal-priority"),
    pytest.param([replace(p, preempts=False) for p in job("high", 2, priority=10)],
                 gang("l1", "pg-a", 0, 2), id="preemption-policy-never"),
    pytest.param(job("high", 2, priority=10), gang("l1", "pg-a", 0, 2, owned=False),
                 id="victim-pods-nothing-recreates"),
])
def test_no_preemption(high, low):
    result = decide(high, cluster({"pg-a": 2}, low), extra=low, records=running(low))
    assert not result.preemptions
    assert codes(result) == {"ns/high": WaitCode.NO_FIT}


def test_a_preemption_under_way_is_waited_for_never_widened():
    """l1 was evicted for `high` (record Evicted, its pods Terminating): `high` waits for
    them to go and no other gang is evicted, though l2 is lower priority too."""
    low = gang("l1", "pg-a", 0, 2, deleting=True) + gang("l2", "pg-b", 0, 2)
    records = {**running(low[:2], state=GangState.EVICTED), **running(low[2:])}
    result = decide(job("high", 2, priority=10), cluster(TWO_GROUPS, low), extra=low,
                    records=records)
    assert preempting(result) == {"ns/high": (f"{PG}=pg-a", [])}
    assert codes(result) == {"ns/high": WaitCode.PREEMPTING}


def test_no_job_after_the_preemptor_takes_its_room():
    """pg-a: one free node and gang l1 on the other. `high` needs both: it evicts l1, and
    `late` (priority 0, one node) does not take the free node meanwhile."""
    low = gang("l1", "pg-a", 1, 1)
    pods = job("high", 2, priority=10) + job("late", 1, created=1)
    result = decide(pods, cluster({"pg-a": 2}, low), extra=low, records=running(low))
    assert preempting(result) == {"ns/high": (f"{PG}=pg-a", ["ns/l1"])}
    assert codes(result) == {"ns/high": WaitCode.PREEMPTING, "ns/late": WaitCode.NO_FIT}


def test_a_gang_is_the_victim_of_one_job_per_round():
    """Two high jobs, one low gang: the first (older) takes it; the second finds none."""
    low = gang("l1", "pg-a", 0, 2)
    pods = job("h1", 2, priority=10, created=1) + job("h2", 2, priority=10, created=2)
    result = decide(pods, cluster({"pg-a": 2}, low), extra=low, records=running(low))
    assert preempting(result) == {"ns/h1": (f"{PG}=pg-a", ["ns/l1"])}
    assert codes(result) == {"ns/h1": WaitCode.PREEMPTING, "ns/h2": WaitCode.NO_FIT}


def test_placeholders_go_first():
    """pg-a: a placeholder's node and gang l1's node; `high` needs one node: it is
    admitted onto the placeholder's room, no gang is preempted."""
    placeholder = replace(make_pod("ph", gpus=8, node="pg-a-0", placeholder=True,
                                   placeholder_group="pg-a"))
    low = gang("l1", "pg-a", 1, 1)
    result = decide(job("high", 1, priority=10), cluster({"pg-a": 2}, low + [placeholder]),
                    extra=low, records=running(low))
    assert not result.preemptions
    assert [str(a.domain) for a in result.admissions] == [f"{PG}=pg-a"]


def test_a_preferred_job_the_cluster_holds_is_released_not_preempting():
    """pg-a and pg-b each have one free node and one low gang node: no group holds the
    2-node job, the cluster does: `preferred` is released there, nothing evicted."""
    low = gang("l1", "pg-a", 1, 1) + gang("l2", "pg-b", 1, 1)
    result = decide(job("high", 2, priority=10, group="preferred"),
                    cluster(TWO_GROUPS, low), extra=low,
                    records=running(low))
    assert not result.preemptions
    assert [a.domain for a in result.admissions] == [None]


def test_an_inadmissible_job_preempts_nothing():
    """A 3-pod job never fits the one 2-node group (no node group adds any): no victim."""
    low = gang("l1", "pg-a", 0, 2)
    result = decide(job("high", 3, priority=10), cluster({"pg-a": 2}, low), extra=low,
                    records=running(low))
    assert not result.preemptions
    assert codes(result) == {"ns/high": WaitCode.INADMISSIBLE}


@pytest.mark.parametrize("seed", range(8))
def test_the_room_check_and_the_rounds_memory_change_no_decision(seed):
    # Random groups of busy nodes, gangs of three priorities, and waiting jobs of a few
    # shapes (several alike, so the memory answers some): the plan with the necessary-
    # room check and the memory of unsatisfied shapes equals the plan without them.
    import random
    from unittest.mock import patch

    from locality.admission import gang_preemption

    rng = random.Random(seed)
    layout = {f"pg-{g}": rng.randint(2, 6) for g in range(4)}
    bound, at = [], {group: 0 for group in layout}
    for index in range(12):
        group = rng.choice(list(layout))
        count = rng.randint(1, 2)
        if at[group] + count > layout[group]:
            continue
        bound += gang(f"run-{index}", group, at[group], count,
                      priority=rng.choice((0, 5, 10)), gpus=rng.choice((4, 8)))
        at[group] += count
    pods = []
    for index in range(10):
        size = rng.choice((1, 2, 3, 7))
        pods += [replace(p, priority=rng.choice((5, 10, 20)))
                 for p in job(f"w-{index}", size, gpus=rng.choice((4, 8)))]
    states = cluster(layout, bound)
    shipped = decide(pods, states, extra=bound, records=running(bound))
    with patch.multiple(gang_preemption, ROOM_CHECK=False, MEMORY=False):
        reference = decide(pods, states, extra=bound, records=running(bound))
    assert shipped == reference
    assert (preempting(shipped), codes(shipped)) == (preempting(reference), codes(reference))
