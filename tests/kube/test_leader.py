"""Leader election against the fake API server: never two leaders, prompt hand-over."""

from __future__ import annotations

import logging
import time

import pytest

from kube.leader import LeaderElector
from overprovisioner.config import LeaderElectionConfig

# The library's limits: lease > renew deadline > 1.2 x retry, all whole seconds >= 1.
FAST = LeaderElectionConfig(lease_duration_s=3, renew_deadline_s=2, retry_period_s=1)


def wait_for(condition, timeout_s: float, check=None) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check is not None:
            check()
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_two_electors_never_both_lead_and_hand_over_on_stop(fake_kube) -> None:
    electors = [
        LeaderElector(fake_kube.api_client(), "headstart", FAST, identity=name)
        for name in ("replica-a", "replica-b")
    ]

    def never_both() -> None:
        assert sum(e.is_leader() for e in electors) <= 1

    for elector in electors:
        elector.start()
    try:
        assert wait_for(lambda: any(e.is_leader() for e in electors), 6, never_both)
        # Both keep campaigning for a while: still exactly one leader throughout.
        wait_for(lambda: False, 2.5, never_both)
        (leader,) = [e for e in electors if e.is_leader()]
        (follower,) = [e for e in electors if e is not leader]
        lease = fake_kube.get("coordination.k8s.io/v1", "Lease", "headstart-overprovisioner",
                              "headstart")
        assert lease["spec"]["holderIdentity"] == leader.identity
        leader.stop()
        assert not leader.is_leader()
        # Released: the follower takes over within a couple of retry periods, well
        # before the 3 s lease would have expired on its own... plus one retry.
        assert wait_for(follower.is_leader, 4, never_both)
    finally:
        for elector in electors:
            elector.stop()


def test_leader_writes_only_lease_calls(fake_kube) -> None:
    elector = LeaderElector(fake_kube.api_client(), "headstart", FAST, identity="solo")
    elector.start()
    try:
        assert wait_for(elector.is_leader, 5)
    finally:
        elector.stop()
    paths = {path for _, path, _ in fake_kube.requests}
    assert paths <= {
        "/apis/coordination.k8s.io/v1/namespaces/headstart/leases",
        "/apis/coordination.k8s.io/v1/namespaces/headstart/leases/headstart-overprovisioner",
    }
    methods = {method for method, _, _ in fake_kube.requests}
    assert methods <= {"GET", "POST", "PUT"}


def test_a_leader_cut_off_from_the_api_stops_leading_before_the_lease_expires(fake_kube) -> None:
    elector = LeaderElector(fake_kube.api_client(), "headstart", FAST, identity="cut-off")
    elector.start()
    try:
        assert wait_for(elector.is_leader, 5)
        fake_kube.fail_next("*", "/leases/", 503, count=1000)
        # Renewals fail from now on: no longer the leader within the 2 s renew deadline
        # (plus one 1 s retry period of slack), i.e. before the 3 s lease runs out for a
        # follower that saw the last renewal.
        assert wait_for(lambda: not elector.is_leader(), 3.5)
    finally:
        elector.stop(release=False)


def test_a_leader_that_sees_another_holder_stops_writing_at_once(fake_kube) -> None:
    # Someone else holds the Lease now (a takeover after a partition, or an operator's
    # edit). The library keeps its own renew loop going until the renew deadline; the
    # loop must stop writing as soon as the other holder is seen, not 2 s later.
    elector = LeaderElector(fake_kube.api_client(), "headstart", FAST, identity="old")
    elector.start()
    try:
        assert wait_for(elector.is_leader, 5)
        lease = fake_kube.get("coordination.k8s.io/v1", "Lease", "headstart-overprovisioner",
                              "headstart")
        lease["spec"]["holderIdentity"] = "usurper"
        fake_kube.replace(lease)

        def seen() -> bool:
            record = elector._election.observed_record
            return record is not None and record.holder_identity == "usurper"

        assert wait_for(seen, 3)
        assert not elector.is_leader()
    finally:
        elector.stop(release=False)


def test_a_hung_lease_call_times_out_and_the_replica_leads_again(fake_kube) -> None:
    # One Lease call hangs (a half-open connection). Without a client-side timeout the
    # election thread would wait for it for good: with one replica, nobody would write.
    elector = LeaderElector(fake_kube.api_client(), "headstart", FAST, identity="solo")
    elector.start()
    try:
        assert wait_for(elector.is_leader, 5)
        fake_kube.fail_next("*", "/leases/", "timeout", count=1, delay_s=20)
        assert wait_for(lambda: not elector.is_leader(), 5)
        # The call gives up after the 2 s renew deadline; the next round wins the Lease back.
        assert wait_for(elector.is_leader, 10)
    finally:
        elector.stop(release=False)


@pytest.mark.parametrize(
    "holder, seen_s_ago, vacant",
    [
        (None, 0.0, False),          # the Lease not read yet: assume someone leads
        ("", 0.0, True),             # released: the holder was cleared
        ("other", 1.0, False),       # renewed 1 s ago, lease 3 s: a live leader
        ("other", 5.0, True),        # silent for 5 s > the 3 s lease: nobody leads
    ],
    ids=["unread", "released", "live-leader", "expired"],
)
def test_lease_vacant(fake_kube, holder, seen_s_ago, vacant) -> None:
    from types import SimpleNamespace

    elector = LeaderElector(fake_kube.api_client(), "headstart", FAST, identity="standby")
    record = None if holder is None else SimpleNamespace(holder_identity=holder)
    elector._election = SimpleNamespace(
        observed_record=record,
        observed_time_milliseconds=(time.time() - seen_s_ago) * 1000)
    assert elector.lease_vacant() is vacant


def test_a_standby_never_sees_a_live_leaders_lease_as_vacant(fake_kube) -> None:
    electors = [LeaderElector(fake_kube.api_client(), "headstart", FAST, identity=name)
                for name in ("replica-a", "replica-b")]
    for elector in electors:
        elector.start()
    try:
        assert wait_for(lambda: any(e.is_leader() for e in electors), 6)
        (follower,) = [e for e in electors if not e.is_leader()]
        assert wait_for(lambda: follower._election is not None
                        and follower._election.observed_record is not None, 4)
        # over more than a lease duration, the leader keeps renewing
        assert not wait_for(lambda: any(e.lease_vacant() for e in electors), 4)
    finally:
        for elector in electors:
            elector.stop()


def test_a_leader_says_it_leads_once_not_at_every_renewal(fake_kube, caplog) -> None:
    # The library logs each renewal at INFO; a user's logs get one line when leading
    # starts, however many renewals follow.
    caplog.set_level(logging.INFO)
    elector = LeaderElector(fake_kube.api_client(), "headstart", FAST, identity="solo")
    elector.start()

    def renewals() -> int:
        return sum(1 for method, _, _ in fake_kube.requests if method == "PUT")

    try:
        assert wait_for(lambda: elector.is_leader() and renewals() >= 3, 30)
    finally:
        elector.stop()
    said = [record.getMessage() for record in caplog.records]
    assert sum("solo started leading" in line for line in said) == 1, said
    assert not [line for line in said if "successfully acquired" in line]
