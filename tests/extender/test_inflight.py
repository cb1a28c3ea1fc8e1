"""PendingBinds: which binds in flight a request waits for, and until when."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bucketing.resources import Resources
from extender.inflight import PendingBinds
from locality.model import JobKey, Pod

WAIT = 0.25  # bind_wait_seconds
TTL = 90.0  # assumed_ttl_seconds


def pod(uid: str) -> Pod:
    return Pod("team", uid, uid, {}, {}, Resources(1000, 1000, 0))


def pending(*answered: tuple[str, str, float]) -> PendingBinds:
    """(job, pod uid, answered at) in order."""
    binds = PendingBinds(WAIT, TTL)
    for job, uid, at in answered:
        binds.answered(pod(uid), JobKey("team", job), at)
    return binds


@pytest.mark.parametrize(
    "answered, asking, now, expected",
    [
        ((), "x", 0.0, None),
        # Another pod's bind is due: wait until its deadline, 1.0 + 0.25 = 1.25.
        ((("a", "a0", 1.0),), "a1", 1.1, 1.25),
        # Another job's too: its pod takes room and claims nodes this pod is judged on.
        ((("a", "a0", 1.0),), "b0", 1.1, 1.25),
        # Its own earlier answer (it is scheduled again) is no reason to wait.
        ((("a", "a0", 1.0),), "a0", 1.1, None),
        # Two in flight: until the later deadline, 1.05 + 0.25 = 1.3.
        ((("a", "a0", 1.0), ("b", "b0", 1.05)), "c0", 1.1, 1.3),
        # a0 is overdue (1.25 <= 1.3): job a's binds are held, do not wait for a again.
        ((("a", "a0", 1.0), ("a", "a1", 1.2)), "a2", 1.3, None),
        # ... but still wait for job b's, answered 1.2: until 1.45.
        ((("a", "a0", 1.0), ("b", "b0", 1.2)), "c0", 1.3, 1.45),
    ],
    ids=["nothing", "same-job", "other-job", "itself", "latest-of-two", "held-job",
         "held-job-skipped"],
)
def test_wait_deadline(answered, asking, now, expected):
    assert pending(*answered).wait_deadline(asking, now) == expected


def grouped(uid: str, min_member: int | None) -> Pod:
    """A pod of PodGroup team/g (its minMember as the PodGroup watch shows it)."""
    return replace(pod(uid), pod_group=("team", "g"), group_min_member=min_member)


@pytest.mark.parametrize("min_member, answered, expected", [
    (4, 3, None),   # 3 of 4 answered: Permit holds their binds until this one passes
    (4, 4, 1.25),   # all answered: the binds come together, worth the wait
    (None, 3, 1.25),  # the PodGroup not seen: no knowing, wait as for any job
], ids=["held", "complete", "unknown-min-member"])
def test_a_gangs_binds_held_by_permit_are_not_waited_for(min_member, answered, expected):
    binds = PendingBinds(WAIT, TTL)
    for index in range(answered):
        binds.answered(grouped(f"g{index}", min_member), JobKey("team", "g"), 1.0)
    assert binds.wait_deadline("g9", 1.1) == expected
    # Another job's pod in flight is still waited for beside a held gang.
    binds.answered(pod("b0"), JobKey("team", "b"), 1.05)
    assert binds.wait_deadline("c0", 1.1) == 1.3


def test_a_bind_ends_its_wait_and_drops_its_jobs_overdue_pods():
    binds = pending(("a", "a0", 1.0), ("a", "a1", 1.3), ("b", "b0", 1.3))
    # a0 overdue since 1.25: a1's bind at 1.4 means job a is not held; a0 is lost.
    assert binds.bound("a1", 1.4).pod.uid == "a1"
    assert binds.wait_deadline("c0", 1.4) == 1.55  # only b0 left: 1.3 + 0.25
    assert len(binds) == 1
    assert binds.bound("a0", 1.4) is None  # gone already


def test_entries_expire_after_the_ttl_and_a_pod_answered_again_is_replaced():
    binds = pending(("a", "a0", 0.0), ("a", "a1", 50.0))
    binds.answered(pod("a1"), JobKey("team", "a"), 60.0)
    assert len(binds) == 2
    binds.expire(90.0)  # a0 answered at 0 + 90 s ttl
    assert len(binds) == 1 and binds.wait_deadline("x", 60.1) == 60.25
