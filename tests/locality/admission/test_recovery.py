"""A gang after admission, as a table: whole, short, or evicted whole with a backoff."""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.admission.config import AdmissionConfig
from locality.admission.model import Domain, WaitCode, Waiting
from locality.admission.record import GangRecord, GangState
from locality.admission.recovery import (
    Eviction,
    Transition,
    backoff_seconds,
    ready_timeout_of,
    recovery,
)
from locality.model import JobKey
from tests.locality.builders import make_pod

JOB = JobKey("ns", "a")
PG_A = Domain("placement-group", "pg-a")
NOW = 10_000.0
TIMEOUT = 900.0
READY = 1200.0


def pod(name, node=None, owned=True, **changes):
    made = replace(make_pod(name, job="a", gpus=8, node=node),
                   controller=("Job", "a") if owned else None)
    return replace(made, **changes)


def record(state, since, size=2, evictions=0):
    return GangRecord(JOB, state, PG_A, size=size, since=since, evictions=evictions, name="a")


CONFIG = AdmissionConfig(bind_timeout_seconds=TIMEOUT, ready_timeout_seconds=READY,
                         backoff_base_seconds=60.0, backoff_max_seconds=3600.0)


def act(state, since, pods, size=2, evictions=0, config=CONFIG, nodes=None, waiting=()):
    return recovery([record(state, since, size, evictions)], lambda key: pods, NOW, config,
                    nodes, waiting)


BOUND = [pod("a-0", node="n1", ready=True), pod("a-1", node="n2", ready=True)]
HALF = [pod("a-0", node="n1", ready=True), pod("a-1")]
UNREADY = [BOUND[0], replace(BOUND[1], ready=False)]  # bound, one never Ready


@pytest.mark.parametrize(("state", "since", "pods", "expected"), [
    (GangState.ADMITTED, NOW - 10, HALF, None),  # within the timeout: nothing yet
    (GangState.ADMITTED, NOW - 10, BOUND, GangState.RUNNING),
    (GangState.ADMITTED, NOW - TIMEOUT, HALF, "evict"),  # 1 of 2 bound after 900 s
    (GangState.RUNNING, NOW - 5000, BOUND, None),
    (GangState.RUNNING, NOW - 5000, [BOUND[0]], GangState.RECOVERING),  # a member gone
    (GangState.RUNNING, NOW - 5000, [BOUND[0], replace(BOUND[1], deleting=True)],
     GangState.RECOVERING),  # Terminating is no member
    (GangState.RECOVERING, NOW - 10, BOUND, GangState.RUNNING),  # the replacement bound
    (GangState.RECOVERING, NOW - 10, HALF, None),
    (GangState.RECOVERING, NOW - TIMEOUT - 1, HALF, "evict"),
    (GangState.WAITING, NOW - 5000, HALF, None),
    (GangState.EVICTED, NOW - 5000, HALF, None),
    # Bound is not running: Running once every member is Ready too.
    (GangState.ADMITTED, NOW - TIMEOUT, UNREADY, None),  # bound in time, Ready to come
    (GangState.ADMITTED, NOW - READY + 1, UNREADY, None),
    (GangState.ADMITTED, NOW - READY, UNREADY, "evict-unready"),  # 1 of 2 Ready at 1200 s
    (GangState.RUNNING, NOW - 5000, UNREADY, GangState.RECOVERING),  # a crash loop
    (GangState.RECOVERING, NOW - READY, UNREADY, "evict-unready"),
    (GangState.RECOVERING, NOW - 10, BOUND, GangState.RUNNING),
], ids=["admitted-in-time", "admitted-whole", "admitted-too-long", "running-whole",
        "running-lost-a-member", "running-member-terminating", "recovering-refilled",
        "recovering-in-time", "recovering-too-long", "waiting-untouched", "evicted-untouched",
        "bound-not-ready-in-bind-time", "bound-not-ready-in-ready-time",
        "not-ready-too-long", "running-member-unready", "recovering-unready-too-long",
        "recovering-ready-again"])
def test_recovery(state, since, pods, expected):
    actions = act(state, since, pods)
    if expected is None:
        assert actions == []
    elif expected == "evict":
        (eviction,) = actions
        assert isinstance(eviction, Eviction)
        assert [p.name for p in eviction.pods] == ["a-0", "a-1"]  # bound and pending alike
        assert eviction.requeue_at == NOW + 60  # first eviction: the base backoff
        assert "1 of 2 bound" in eviction.message
    elif expected == "evict-unready":
        (eviction,) = actions
        assert isinstance(eviction, Eviction) and eviction.counted and not eviction.final
        assert [p.name for p in eviction.pods] == ["a-0", "a-1"]
        assert "not Ready 1200 s after" in eviction.message and "1 of 2 Ready" in eviction.message
        assert eviction.requeue_at == NOW + 60
    else:
        (transition,) = actions
        assert isinstance(transition, Transition) and transition.state is expected


def test_pods_nothing_recreates_are_left_alone():
    pods = [pod("a-0", node="n1", owned=False), pod("a-1")]
    (eviction,) = act(GangState.ADMITTED, NOW - TIMEOUT, pods)
    assert [p.name for p in eviction.pods] == ["a-1"]
    assert [p.name for p in eviction.kept] == ["a-0"]
    assert "without a controlling owner left alone" in eviction.message
    # Only such pods: no eviction at all (it could only lose them).
    alone = [pod("a-0", node="n1", owned=False), pod("a-1", owned=False)]
    assert act(GangState.ADMITTED, NOW - TIMEOUT, alone) == []


def test_a_finished_gang_that_loses_a_pod_is_left_alone():
    # Both pods succeeded; one's node is deleted and PodGC removes it: no loss.
    done = [pod("a-0", node="n1", terminal=True, succeeded=True)]
    assert act(GangState.RUNNING, NOW - 5000, done) == []
    assert act(GangState.RECOVERING, NOW - TIMEOUT - 1, done) == []


def test_a_gang_that_finished_before_it_was_seen_running_is_running():
    # Both pods bound and succeeded within one round of admission (kwok, short jobs).
    done = [pod(f"a-{i}", node=f"n{i}", terminal=True, succeeded=True) for i in range(2)]
    (transition,) = act(GangState.ADMITTED, NOW - 1, done)
    assert transition.state is GangState.RUNNING


@pytest.mark.parametrize(("evictions", "seconds"), [
    (1, 60), (2, 120), (3, 240), (7, 3600), (20, 3600),  # 60 x 2^6 = 3,840 > the cap
    (5000, 3600),  # a gang evicted thousands of times: still the cap, no float overflow
])
def test_backoff_doubles_up_to_its_cap(evictions, seconds):
    assert backoff_seconds(evictions, 60.0, 3600.0) == seconds


def test_a_second_eviction_waits_twice_as_long():
    (eviction,) = act(GangState.ADMITTED, NOW - TIMEOUT, HALF, evictions=1)
    assert eviction.requeue_at == NOW + 120
    assert "eviction 2" in eviction.message


def elastic_pods(placed, size, minimum=1):
    """An elastic Indexed Job's pods: index -> node (None: unbound); its owner at `size`."""
    from locality.elastic import Bounds, ElasticOwner
    from locality.owners import INDEX_ANNOTATION

    owner = ElasticOwner("Job", "ns", "a", size, Bounds(minimum, 8))
    return [pod(f"a-{i}", node=node, elastic=owner,
                annotations={INDEX_ANNOTATION: str(i)}) for i, node in placed.items()]


def test_an_elastic_gang_whose_new_workers_found_no_room_is_resized_back_not_evicted():
    grown = elastic_pods({0: "n1", 1: "n2", 2: None, 3: None}, size=4)
    (action,) = act(GangState.RECOVERING, NOW - TIMEOUT - 1, grown, size=4)
    assert (action.before, action.after, action.owner.name) == (4, 2, "a")
    assert "resized back to the 2 bound" in action.reason
    # Within the timeout: nothing yet.
    assert act(GangState.RECOVERING, NOW - 10, grown, size=4) == []


def test_a_pytorchjob_is_resized_back_to_its_bound_workers_not_counting_its_master():
    from locality.elastic import Bounds, ElasticOwner

    # Master + 3 workers after a scale-out from 1: workers 1 and 2 found no room. The
    # master (replica index 0 too) is no worker: back to 1 worker, not 2.
    owner = ElasticOwner("PyTorchJob", "ns", "a", 3, Bounds(1, 3), others=1)
    grown = [pod(f"a-{kind}-{i}", node=node, elastic=owner, labels={
        "headstart.io/job": "a", "training.kubeflow.org/replica-type": kind,
        "training.kubeflow.org/replica-index": str(i)})
        for kind, i, node in (("master", 0, "n1"), ("worker", 0, "n2"),
                              ("worker", 1, None), ("worker", 2, None))]
    (action,) = act(GangState.RECOVERING, NOW - TIMEOUT - 1, grown, size=4)
    assert (action.before, action.after) == (3, 1)
    assert "resized back to the 1 bound" in action.reason


@pytest.mark.parametrize("placed,minimum", [
    ({0: None, 1: "n2", 2: "n3", 3: None}, 1),  # a low index unbound: a replacement
    ({0: "n1", 1: None, 2: None, 3: None}, 2),  # fewer bound than its minimum
])
def test_otherwise_an_elastic_gang_is_evicted_whole(placed, minimum):
    (action,) = act(GangState.RECOVERING, NOW - TIMEOUT - 1,
                    elastic_pods(placed, size=4, minimum=minimum), size=4)
    assert isinstance(action, Eviction)


@pytest.mark.parametrize(("annotation", "timeout", "problem"), [
    (None, READY, None),
    ("1800", 1800.0, None),
    ("900", 900.0, None),  # the bind timeout: the least a job may ask for
    ("899", READY, "from 900 (admission.bind_timeout_seconds)"),  # below binding: refused
    ("3601", READY, "to 3600 (admission.ready_timeout_max_seconds)"),
    ("10m", READY, "not a number of seconds"),
    ("nan", READY, "not a number of seconds"),
], ids=["none", "within-bounds", "at-bind-timeout", "below-bind", "above-max", "duration",
        "nan"])
def test_a_jobs_ready_timeout_is_taken_within_the_admins_bounds(annotation, timeout, problem):
    annotations = {} if annotation is None else {"headstart.io/ready-timeout": annotation}
    pods = [pod("a-0", annotations=annotations)]
    got, why = ready_timeout_of(pods, CONFIG)
    assert got == timeout
    assert (why is None) if problem is None else (problem in why)


def test_a_jobs_own_ready_timeout_decides_its_eviction():
    slow = [replace(p, annotations={"headstart.io/ready-timeout": "3000"}) for p in UNREADY]
    assert act(GangState.ADMITTED, NOW - 2999, slow) == []
    (eviction,) = act(GangState.ADMITTED, NOW - 3000, slow)
    assert "not Ready 3000 s after" in eviction.message
    # A value outside the bounds shortens nothing: the admin's default applies.
    bad = [replace(p, annotations={"headstart.io/ready-timeout": "5"}) for p in UNREADY]
    assert act(GangState.ADMITTED, NOW - TIMEOUT, bad) == []


def test_the_eviction_past_the_requeue_limit_is_the_last():
    limited = replace(CONFIG, requeue_limit=2)
    (second,) = act(GangState.ADMITTED, NOW - READY, UNREADY, evictions=1, config=limited)
    assert not second.final and second.requeue_at == NOW + 120
    (third,) = act(GangState.ADMITTED, NOW - READY, UNREADY, evictions=2, config=limited)
    assert third.final and "past admission.requeue_limit 2" in third.message
    assert "not admitted again" in third.message


LOST = [pod("a-0", node="n1", ready=True), pod("a-1", node="gone", ready=True)]
NO_ROOM = Waiting(JOB, (pod("a-2"),), WaitCode.NO_FIT, "its job was admitted into "
                  "placement-group=pg-a, which holds 0 of these 1 pods now")


def test_a_member_on_a_node_that_is_gone_is_lost_at_once():
    # Its pod stays bound to the deleted node until PodGC: no longer counted as bound.
    (transition,) = act(GangState.RUNNING, NOW - 5000, LOST, nodes={"n1", "n2"})
    assert transition.state is GangState.RECOVERING and "1 of 2 bound" in transition.message
    assert act(GangState.RUNNING, NOW - 5000, LOST) == []  # nodes unknown: as before


@pytest.mark.parametrize("state", [GangState.RUNNING, GangState.RECOVERING,
                                   GangState.ADMITTED])
def test_a_gang_whose_domain_cannot_replace_a_lost_member_is_evicted_at_once(state):
    survivors = [BOUND[0]]  # a-1 lost; its replacement a-2 waits, its domain full
    (eviction,) = act(state, NOW - 10, survivors, nodes={"n1", "n2"}, waiting=(NO_ROOM,))
    assert isinstance(eviction, Eviction)
    assert eviction.requeue_at == NOW and not eviction.counted and not eviction.final
    assert [p.name for p in eviction.pods] == ["a-0"]
    assert "cannot replace now" in eviction.message


def test_a_replacement_that_fits_or_waits_for_other_reasons_evicts_nothing():
    survivors = [BOUND[0]]
    held = replace(NO_ROOM, code=WaitCode.HELD)
    (transition,) = act(GangState.RUNNING, NOW - 10, survivors, waiting=(held,))
    assert transition.state is GangState.RECOVERING
    # No survivor holds room (every member lost): admitted afresh, nothing to evict.
    assert act(GangState.RECOVERING, NOW - 10, [pod("a-2")], waiting=(NO_ROOM,)) == []


def room(*free_gpus):
    """pg-a's room this round: one node per entry with that many GPUs free."""
    from bucketing.resources import Resources
    from locality.admission.snapshot import DomainRoom, LevelRoom

    nodes = tuple(Resources.of(gpus, 32, 256) for gpus in free_gpus)
    return {"placement-group": LevelRoom("placement-group", {
        "pg-a": DomainRoom("pg-a", "headstart.io/placement-group", nodes)})}


@pytest.mark.parametrize(("free", "evicted"), [
    ((), True),  # pg-a full: nothing can take the lost 8-GPU pod
    ((4,), True),  # half a node free: still not
    ((8,), False),  # a free node: the replacement will bind there
], ids=["full", "too-little", "a-free-node"])
def test_a_lost_node_is_judged_against_its_domains_room_at_once(free, evicted):
    # No replacement pod yet (PodGC has not deleted the lost one): the domain's room
    # decides, so the survivors do not hold their GPUs while PodGC and the bind timeout
    # run.
    actions = recovery([record(GangState.RUNNING, NOW - 5000)], lambda key: LOST, NOW,
                       CONFIG, {"n1"}, (), room(*free))
    (action,) = actions
    if evicted:
        assert isinstance(action, Eviction) and not action.counted
        assert action.requeue_at == NOW and "lost with their node" in action.message
    else:
        assert isinstance(action, Transition) and action.state is GangState.RECOVERING


def test_an_elastic_gang_whose_new_worker_finds_no_room_is_resized_back_at_once():
    # Grown 2 -> 3: index 2 waits, its domain full (no_fit). Its minimum (1) is bound,
    # and the missing worker is its newest: resized back to 2 now, not evicted, and
    # not after the bind timeout either.
    grown = elastic_pods({0: "n1", 1: "n2", 2: None}, size=3)
    blocked = Waiting(JOB, (grown[2],), WaitCode.NO_FIT, "pg-a holds 0 of these 1 pods")
    (action,) = act(GangState.RECOVERING, NOW - 10, grown, size=3, waiting=(blocked,))
    assert (action.before, action.after) == (3, 2)
    # Below its minimum once the newest goes: evicted at once instead.
    short = elastic_pods({0: "n1", 1: None}, size=2, minimum=2)
    blocked = Waiting(JOB, (short[1],), WaitCode.NO_FIT, "no room")
    (eviction,) = act(GangState.RUNNING, NOW - 10, short, waiting=(blocked,))
    assert isinstance(eviction, Eviction) and not eviction.counted
