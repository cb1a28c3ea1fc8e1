"""Two overprovisioner replicas: only the Lease holder writes; when it dies (kill -9, no
Lease release) the other takes over once the Lease expires, and the two never write in
the same period. Who wrote what is read from the API server's audit log, where each
replica has its own user name."""

from __future__ import annotations

import time

import pytest

from tests.e2e.controlplane import ClusterSpec
from tests.e2e.headstart import Overprovisioner
from tests.e2e.kube import NotYet
from tests.e2e.placeholders import LADDER_CONFIG, NAMESPACE, placeholder_deployments

LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/headstart-overprovisioner"
LEASE_DURATION_S = 15  # leader_election defaults: lease 15 s, renew deadline 10 s, retry 2 s
RETRY_PERIOD_S = 2
DRIFTED = "headstart-placeholder-m5-4xlarge"
DEPLOYMENT = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{DRIFTED}"


@pytest.fixture
def cluster(e2e_clusters):
    cluster = e2e_clusters.start(ClusterSpec(), "leader-election")
    cluster.kube.ensure_namespace(NAMESPACE)
    yield cluster
    cluster.stop()


def holder(cluster) -> str | None:
    lease = cluster.kube.get(LEASE, missing_ok=True) or {}
    return (lease.get("spec") or {}).get("holderIdentity")


def scale_and_wait_for_revert(cluster, logs) -> float:
    """`kubectl scale` a placeholder Deployment to 3 and wait until the leader takes it
    back to the planned 1; the seconds that took."""
    assert cluster.kube.patch(DEPLOYMENT, {"spec": {"replicas": 3}})["spec"]["replicas"] == 3
    scaled = time.monotonic()

    def reverted():
        replicas = cluster.kube.get(DEPLOYMENT)["spec"]["replicas"]
        return replicas == 1 or NotYet(f"replicas {replicas}")

    cluster.wait(f"the leader to set {DRIFTED} back to 1 replica", reverted, 60, logs)
    return time.monotonic() - scaled


def test_a_killed_leader_is_replaced_within_the_lease_and_the_two_never_both_write(
        cluster, e2e_timings):
    logs = ["overprovisioner-a", "overprovisioner-b"]
    first = Overprovisioner(cluster, LADDER_CONFIG, name="overprovisioner-a").start()
    first.wait_ready()
    cluster.wait("overprovisioner-a to hold the Lease",
                 lambda: holder(cluster) == "overprovisioner-a" or NotYet(holder(cluster)),
                 60, logs)
    cluster.wait("the 3 placeholder Deployments",
                 lambda: len(placeholder_deployments(cluster.kube)) == 3, 60, logs)
    second = Overprovisioner(cluster, LADDER_CONFIG, name="overprovisioner-b").start()
    second.wait_ready()
    assert second.plan()["leader"] is False
    revert_by_first_s = scale_and_wait_for_revert(cluster, logs)

    killed = time.time()
    first.kill()
    cluster.wait("overprovisioner-b to take the Lease",
                 lambda: holder(cluster) == "overprovisioner-b" or NotYet(holder(cluster)),
                 LEASE_DURATION_S + 30, logs)
    took_over = time.time()
    cluster.wait("overprovisioner-b to report itself leader",
                 lambda: second.plan()["leader"] is True, 30, logs)
    revert_by_second_s = scale_and_wait_for_revert(cluster, logs)

    log = cluster.writes()
    by_first = [w for w in log if w.user == "overprovisioner-a"]
    by_second = [w for w in log if w.user == "overprovisioner-b"]
    timeline = "\n".join(str(w) for w in log)
    # The follower wrote nothing (not even the Lease) while the leader lived, and the
    # dead leader nothing after: every write of one precedes every write of the other.
    assert by_first and by_second, timeline
    assert max(w.time for w in by_first) < killed <= min(w.time for w in by_second), timeline
    # Each drift was taken back by the leader of the time.
    for writer in (by_first, by_second):
        assert any(w.resource == "deployments" and w.name == DRIFTED and w.verb == "patch"
                   for w in writer), timeline
    # The successor waited for the Lease to expire (it never took a live one), then took
    # it within one retry period or so.
    last_renewal = max(w.time for w in by_first if w.resource == "leases")
    acquired = min(w.time for w in by_second if w.resource == "leases")
    waited_s = acquired - last_renewal
    assert LEASE_DURATION_S - 1 <= waited_s <= LEASE_DURATION_S + 2 * RETRY_PERIOD_S + 3, \
        timeline
    e2e_timings.record(
        "leader election: kill -9 the leader",
        takeover_since_kill=took_over - killed, lease_acquired_after_last_renewal=waited_s,
        revert_by_leader_a=revert_by_first_s, revert_by_leader_b=revert_by_second_s,
        writes_a=len(by_first), writes_b=len(by_second))
