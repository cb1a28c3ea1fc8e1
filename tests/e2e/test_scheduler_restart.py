"""The shipped headstart-scheduler killed (`kill -9`) mid-admission and started again: a
gang admitted whole, whose pods kube-scheduler is placing, binds whole or not at all
across the restart (Coscheduling's Permit holds in memory; what survives is the
PodGroup and the pods' affinity, in the API).

The cluster and the job are test_gang_coscheduling's: pg-a, 2 8-GPU nodes, a pod
outside headstart holding host port 9000 on a-1, a 2-pod job needing that port, so one
member can be assumed on a-0 (held in Permit) while the other fits nowhere. The
scheduler is killed once it has tried the gang and started again as kubelet restarts a
container (the harness's supervisor, within a second): nothing of the gang is bound
before or for 10 s after the restart, until the port is freed; then both members bind
together.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.kube import NotYet
from tests.e2e.test_gang_coscheduling import LOGS, bound, cluster_with, start_blocked_job

SCHEDULER = "headstart-scheduler"
WATCH_S = 10.0


@pytest.fixture(scope="module")
def restart_cluster(e2e_clusters):
    cluster, extender = cluster_with(e2e_clusters, "scheduler-restart", True)
    yield cluster
    cluster.stop()


def test_the_scheduler_killed_mid_admission_leaves_the_gang_whole_or_unbound(
        restart_cluster, namespace, e2e_timings):
    cluster = restart_cluster
    kube = cluster.kube
    start_blocked_job(cluster, namespace)

    def tried():
        events = kube.list(f"/api/v1/namespaces/{namespace}/events")
        return any(e["reason"] == "FailedScheduling"
                   and e["involvedObject"]["name"].startswith("ported")
                   for e in events) or NotYet("not tried yet")

    cluster.wait("kube-scheduler to try the gang", tried, 60, LOGS)
    scheduler = cluster.processes[SCHEDULER]
    restarts = cluster.restarts.get(SCHEDULER, 0)
    scheduler.kill()
    killed = time.monotonic()
    cluster.wait("the scheduler started again", lambda: cluster.restarts.get(
        SCHEDULER, 0) > restarts or NotYet("not restarted"), 30, LOGS)
    restarted = time.monotonic()
    while time.monotonic() - restarted < WATCH_S:
        assert bound(cluster, namespace) == [], "a member bound alone across the restart"
        time.sleep(0.5)
    kube.delete(f"/api/v1/namespaces/{namespace}/pods/port-holder")
    freed = time.monotonic()
    nodes = cluster.wait("the gang bound whole", lambda: bound(cluster, namespace)
                         if len(bound(cluster, namespace)) == 2
                         else NotYet(bound(cluster, namespace)), 120, [SCHEDULER, *LOGS])
    assert nodes == ["a-0", "a-1"]
    e2e_timings.record("scheduler killed mid-admission: gang whole after restart",
                       restarted_after_kill_s=restarted - killed, watched_s=WATCH_S,
                       bound_whole_since_port_freed=time.monotonic() - freed)
