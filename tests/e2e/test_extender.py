"""The extender registered with a real kube-scheduler (the shipped headstart-scheduler
configuration) on kwok nodes: where pods land, what a refused pod's event says, and what
happens while the extender is down (`ignorable: false`)."""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.headstart import extender_on_nodes
from tests.e2e.jobs import create_job, delete_pods, release_when_known, wait_all_bound
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, training_pod

SCHEDULER_LOGS = ["headstart-scheduler", "headstart-extender"]
# Two placement groups of 8-GPU nodes: pg-a holds 16 GPUs, pg-b 32; one node has no group.
NODES = {"a-0": "pg-a", "a-1": "pg-a", "b-0": "pg-b", "b-1": "pg-b", "b-2": "pg-b",
         "b-3": "pg-b", "nogroup-0": None}


@pytest.fixture(scope="module")
def extender_cluster(e2e_clusters):
    cluster, extender, _ = extender_on_nodes(e2e_clusters, "extender", NODES, SCHEDULER_LOGS)
    yield cluster, extender
    cluster.stop()


@pytest.fixture
def job_namespace(extender_cluster, namespace):
    cluster, _ = extender_cluster
    cluster.kube.ensure_namespace(namespace)
    yield namespace
    delete_pods(cluster, namespace)  # frees the nodes for the next test


def test_a_job_that_requires_one_placement_group_lands_in_the_only_group_that_holds_it(
        extender_cluster, job_namespace, e2e_timings):
    """1 PS + 12 workers x 2 GPUs = 24 GPUs, policy required: pg-a (16 GPUs) cannot hold
    it, pg-b (32) can, so every pod must land in pg-b (kube-scheduler alone would use
    pg-a's and the group-less node too)."""
    cluster, extender = extender_cluster
    names = create_job(cluster, job_namespace, "fits-b", workers=12, worker_gpus=2,
                       placement_group="required")
    release_when_known(cluster, extender, job_namespace, names)
    released = time.monotonic()
    where = wait_all_bound(cluster, job_namespace, names, 120, SCHEDULER_LOGS)
    bound_s = time.monotonic() - released

    assert {NODES[node] for node in where.values()} == {"pg-b"}, where
    used = sorted(set(where.values()))
    e2e_timings.record("extender: 13-pod job into pg-b", all_bound=bound_s,
                       nodes_used=len(used), fewest_possible=3)


def test_a_job_no_group_can_hold_stays_pending_with_the_extenders_reasons(
        extender_cluster, job_namespace):
    """1 PS + 20 workers x 2 GPUs = 40 GPUs, policy required: no group holds 40 GPUs, so
    the extender fails every node and the PS's FailedScheduling event carries its
    reasons, counted per reason as kube-scheduler does."""
    cluster, extender = extender_cluster
    names = create_job(cluster, job_namespace, "too-big", workers=20, worker_gpus=2,
                       placement_group="required")
    release_when_known(cluster, extender, job_namespace, names)
    ps = names[0]

    def failed_scheduling():
        events = cluster.kube.events(job_namespace, ps, reason="FailedScheduling")
        return events[-1]["message"] if events else NotYet("no FailedScheduling event")

    message = cluster.wait(f"a FailedScheduling event for {ps}", failed_scheduling, 60,
                           SCHEDULER_LOGS)
    assert re.search(r"2 placement group pg-a can hold \d+ of the job's 21 remaining pods "
                     r"\(policy required\)", message), message
    assert re.search(r"4 placement group pg-b can hold \d+ of the job's 21 remaining pods "
                     r"\(policy required\)", message), message
    assert "1 node has no placement-group label (placement-group policy required)" in message, \
        message
    assert bound_node(cluster.kube.pod(job_namespace, ps)) is None


def test_pods_wait_while_the_extender_is_down_and_place_once_it_is_back(
        extender_cluster, job_namespace, e2e_timings):
    """With the extender killed its job admitter is gone too: the pod, gated at creation
    by the shipped policy, waits behind `headstart.io/placement`. Lifted by hand (as on a
    cluster without the policy), `ignorable: false` still holds: kube-scheduler must not
    place the pod without the extender; it reports the failed call and retries, and the
    pod binds once the extender answers again."""
    cluster, extender = extender_cluster
    path = f"/api/v1/namespaces/{job_namespace}/pods/while-down"
    extender.kill()
    try:
        pod = training_pod("while-down", job_namespace, job="solo", role="worker", gpus=1)
        cluster.kube.create(f"/api/v1/namespaces/{job_namespace}/pods", pod)
        created = cluster.kube.get(path)
        assert {"name": "headstart.io/placement"} in created["spec"].get("schedulingGates", []), (
            "the shipped MutatingAdmissionPolicy did not gate the pod")
        time.sleep(5)
        assert bound_node(cluster.kube.get(path)) is None
        cluster.kube.patch(path, {"spec": {"schedulingGates": None}})

        def extender_error():
            events = cluster.kube.events(job_namespace, "while-down", reason="FailedScheduling")
            return events[-1]["message"] if events else NotYet("no FailedScheduling event")

        message = cluster.wait("a FailedScheduling event naming the extender call",
                               extender_error, 60, ["headstart-scheduler"])
        assert f"127.0.0.1:{extender.port}/filter" in message, message
        assert "connection refused" in message, message
        cluster.wait("kube-scheduler to try again (and fail again) without the extender",
                     lambda: attempts(cluster, job_namespace, "while-down") >= 2 or NotYet(
                         attempts(cluster, job_namespace, "while-down")),
                     60, ["headstart-scheduler"])
        assert bound_node(cluster.kube.pod(job_namespace, "while-down")) is None
    finally:
        restarted = time.monotonic()
        extender.start()
    extender.wait_ready()
    ready_s = time.monotonic() - restarted
    node = cluster.wait("the pod to bind once the extender is back",
                        lambda: bound_node(cluster.kube.pod(job_namespace, "while-down")),
                        60, SCHEDULER_LOGS)
    assert node in NODES, node
    e2e_timings.record("extender: killed, pod waits, restarted", extender_ready=ready_s,
                       bound_after_restart=time.monotonic() - restarted)


def attempts(cluster, namespace: str, pod: str) -> int:
    """Failed scheduling attempts recorded in the pod's events (repeats are counted on
    one event: `count`, or `series.count` for events.k8s.io events)."""
    return sum(max(event.get("count") or 0, (event.get("series") or {}).get("count") or 0, 1)
               for event in cluster.kube.events(namespace, pod, reason="FailedScheduling"))
