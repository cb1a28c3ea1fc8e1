"""A gang after admission against the real components, as installed, with real owners
(batch/v1 Indexed Jobs run by kube-controller-manager's Job controller, with a
podFailurePolicy that ignores `DisruptionTarget`, as docs/extender.md recommends) and
real faults. The extender runs its shipped config with a 20 s bind timeout and a 5 s
backoff, and one node group that never delivers (no autoscaler runs here).

The cluster: pg-a and pg-b, 2 8-GPU kwok nodes each; pg-c, 1 node, plus a node group
`ghost` the admitter is told can add 2 more there.

- A running 2-node job in pg-a loses a Node (deleted): kube-controller-manager's PodGC
  deletes the pod bound there and the Job controller replaces it; pg-a has no room for
  the replacement, so the gang is Recovering, then, 20 s on, evicted whole (the
  surviving pod too) and admitted again, whole, in pg-b: Running there with one
  eviction on its record.
- A 3-node job pinned to pg-c is admitted there counting on the ghost group's nodes,
  which never come. Its pods pend (the extender passes no pg-c node while the group
  cannot hold the rest of the job), and 20 s after admission the whole gang is
  evicted: nothing of it is bound, its record says Evicted with a requeueAt, and the
  Job controller's new pods wait behind the gate.
- The same with a plain Job (no podFailurePolicy, backoffLimit 0: one evicted pod would
  fail it for good): the admitter suspends the Job instead, the Job controller deletes
  its pods counting no failure, and after the backoff the admitter resumes it; the Job
  is not Failed, its status says Suspended then Resumed, and its new pods are gated.
- The bound on that right: with the extender's token, the shipped
  ValidatingAdmissionPolicy `headstart-extender-job-edits` refuses suspending a Job
  Kueue manages, a suspension without headstart's label (or with a label that is not a
  time), resuming a Job headstart did not suspend, and a resize along with a
  suspension; it accepts suspending a plain Job with the label and releasing it.

Each gang here is a batch/v1 Job's, so every eviction above goes by suspension.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e import installed
from tests.e2e.headstart import extender_on
from tests.e2e.jobs import patch_job_as_extender
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_gang import gang, gang_state, indexed_job, pods_of, run_job

LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]
GROUP_KEY = "headstart.io/placement-group"
NODES = {"a-0": "pg-a", "a-1": "pg-a", "b-0": "pg-b", "b-1": "pg-b", "c-0": "pg-c"}
TIMEOUT_S = 20
BACKOFF_S = 5
P4D = {"node.kubernetes.io/instance-type": "p4d.24xlarge"}


@pytest.fixture(scope="module")
def recovery_cluster(e2e_clusters):
    admission = dict(installed.shipped_config("extender")["admission"])
    admission.update(bind_timeout_seconds=TIMEOUT_S, backoff_base_seconds=BACKOFF_S,
                     autoscaler={"status": "", "node_groups": [
                         {"name": "ghost", "instance_type": "p4d.24xlarge", "domain": "pg-c",
                          "max_size": 3}]})
    cluster, extender, _ = extender_on(e2e_clusters, "gang-recovery", [
        kwok_node(name, memory="768Gi", group=group, labels=P4D) for name, group in NODES.items()
    ], LOGS, settings={"admission": admission})
    yield cluster, extender
    cluster.stop()


def tolerant_job(name: str, size: int, **kwargs: Any) -> dict[str, Any]:
    """An Indexed Job whose evicted or garbage-collected pods do not count as failures,
    and whose pods run until deleted (kwok completes Job pods otherwise)."""
    job = indexed_job(name, size, **kwargs)
    job["spec"]["template"]["metadata"]["annotations"]["e2e/runs-until-deleted"] = "true"
    job["spec"]["podFailurePolicy"] = {"rules": [{
        "action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    return job


def live(cluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return [p for p in pods_of(cluster, namespace, job)
            if not p["metadata"].get("deletionTimestamp")]


def bound_groups(cluster, namespace: str, job: str, size: int):
    pods = live(cluster, namespace, job)
    nodes = [bound_node(p) for p in pods]
    if len(pods) != size or not all(nodes):
        return NotYet(f"{sum(map(bool, nodes))} of {size} bound ({len(pods)} live pods)")
    return sorted({NODES[node] for node in nodes})


def test_a_gang_that_loses_a_node_is_evicted_whole_and_runs_again_elsewhere(
        recovery_cluster, namespace, e2e_timings):
    cluster, _ = recovery_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, tolerant_job("lose", 2, node_selector=None))
    assert cluster.wait("the job bound whole", lambda: bound_groups(
        cluster, namespace, "lose", 2), 90, LOGS) in (["pg-a"], ["pg-b"])
    cluster.wait("its Gang Running", lambda: gang_state(
        cluster, namespace, "lose", "Running"), 30, LOGS)
    first_group = NODES[bound_node(live(cluster, namespace, "lose")[0])]
    lost = sorted(bound_node(p) for p in live(cluster, namespace, "lose"))[0]
    kube.delete(f"/api/v1/nodes/{lost}")
    deleted = time.monotonic()
    cluster.wait("its Gang Recovering", lambda: gang_state(
        cluster, namespace, "lose", "Recovering"), 120, LOGS)
    recovering_s = time.monotonic() - deleted
    other = "pg-b" if first_group == "pg-a" else "pg-a"
    assert cluster.wait("the job bound whole in the other group", lambda: bound_groups(
        cluster, namespace, "lose", 2), 120 + TIMEOUT_S, LOGS) == [other]
    whole_again_s = time.monotonic() - deleted
    record = cluster.wait("its Gang Running again", lambda: gang_state(
        cluster, namespace, "lose", "Running"), 30, LOGS)
    assert record["status"]["evictions"] == 1
    assert record["status"]["domain"] == f"placement-group={other}"
    evicted = [e for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
               if e["reason"] == "HeadstartSuspended"]
    assert evicted, "no HeadstartSuspended event"
    job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/lose")
    assert not job["status"].get("failed"), job["status"]  # ignored: DisruptionTarget
    e2e_timings.record("gang recovery: node lost, evicted whole, runs elsewhere",
                       recovering_since_node_deleted=recovering_s,
                       whole_again_since_node_deleted=whole_again_s,
                       eviction_event=evicted[-1]["message"][:160])
    kube.create("/api/v1/nodes", kwok_node(lost, memory="768Gi", group=NODES[lost],
                                           labels=P4D))
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/lose?propagationPolicy=Background")


def test_a_gang_not_whole_in_time_leaves_nothing_bound(recovery_cluster, namespace,
                                                        e2e_timings):
    cluster, _ = recovery_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, tolerant_job("ghostly", 3, node_selector={GROUP_KEY: "pg-c"}))
    record = cluster.wait("its Gang Admitted counting on the ghost group", lambda: gang_state(
        cluster, namespace, "ghostly", "Admitted"), 60, LOGS)
    assert record["status"]["newNodes"] == 2, record["status"]
    admitted = time.monotonic()
    record = cluster.wait("its Gang Evicted", lambda: gang_state(
        cluster, namespace, "ghostly", "Evicted"), TIMEOUT_S + 30, LOGS)
    evicted_s = time.monotonic() - admitted
    assert record["status"]["evictions"] == 1 and record["status"]["requeueAt"]

    def nothing_bound():
        pods = pods_of(cluster, namespace, "ghostly")
        bound = [p["metadata"]["name"] for p in pods if bound_node(p)]
        return not bound or NotYet(f"still bound: {bound}")

    cluster.wait("nothing of the gang bound", nothing_bound, 30, LOGS)
    # The Job controller's new pods come back behind the gate, and the record keeps the
    # eviction (the next one waits twice as long).
    cluster.wait("the Job's new pods, gated", lambda: len(live(cluster, namespace, "ghostly"))
                 == 3 or NotYet(len(live(cluster, namespace, "ghostly"))), 60, LOGS)
    assert all(bound_node(p) is None for p in live(cluster, namespace, "ghostly"))
    assert gang(cluster, namespace, "ghostly")["status"].get("evictions", 0) >= 1
    e2e_timings.record("gang recovery: not whole in time, nothing left bound",
                       evicted_since_admitted=evicted_s, timeout_s=TIMEOUT_S,
                       message=record["status"]["message"][:160])
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/ghostly?"
                "propagationPolicy=Background")


def test_a_plain_jobs_gang_is_suspended_not_failed_and_resumed(recovery_cluster, namespace,
                                                               e2e_timings):
    cluster, _ = recovery_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    job = indexed_job("plain", 3, node_selector={GROUP_KEY: "pg-c"})
    job["spec"]["template"]["metadata"]["annotations"]["e2e/runs-until-deleted"] = "true"
    assert job["spec"]["backoffLimit"] == 0 and "podFailurePolicy" not in job["spec"]
    run_job(cluster, namespace, job)
    cluster.wait("its Gang Admitted", lambda: gang_state(
        cluster, namespace, "plain", "Admitted"), 60, LOGS)
    admitted = time.monotonic()
    record = cluster.wait("its Gang Evicted", lambda: gang_state(
        cluster, namespace, "plain", "Evicted"), TIMEOUT_S + 30, LOGS)
    evicted_s = time.monotonic() - admitted
    uid = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/plain")["metadata"]["uid"]
    assert record["status"]["suspendedJobs"] == [{"kind": "Job", "name": "plain", "uid": uid}]

    def resumed():
        job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/plain")
        conditions = {c["type"]: c for c in job["status"].get("conditions") or ()}
        suspended = conditions.get("Suspended")
        if job["spec"].get("suspend") or suspended is None or suspended["status"] != "False":
            return NotYet(f"suspend={job['spec'].get('suspend')}, Suspended={suspended}")
        return job

    job = cluster.wait("the Job suspended, then resumed by the admitter", resumed,
                       BACKOFF_S + 60, LOGS)
    resumed_s = time.monotonic() - admitted
    assert job["status"]["conditions"][-1]["reason"] == "JobResumed" or any(
        c["reason"] == "JobResumed" for c in job["status"]["conditions"]), job["status"]
    assert "Failed" not in {c["type"] for c in job["status"]["conditions"]}, job["status"]
    assert not job["status"].get("failed"), job["status"]
    assert "headstart.io/suspended" not in (job["metadata"].get("labels") or {})
    reasons = [e["reason"] for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
               if e["involvedObject"].get("name") == "plain"]
    assert "HeadstartSuspended" in reasons and "HeadstartResumed" in reasons, reasons
    assert "HeadstartEvicted" not in {e["reason"] for e in kube.list(
        f"/api/v1/namespaces/{namespace}/events")}
    cluster.wait("the Job's new pods, gated", lambda: len(live(cluster, namespace, "plain"))
                 == 3 or NotYet(len(live(cluster, namespace, "plain"))), 60, LOGS)
    assert all(bound_node(p) is None for p in live(cluster, namespace, "plain"))
    e2e_timings.record("gang recovery: a plain Job suspended, not failed, resumed",
                       evicted_since_admitted=evicted_s, resumed_since_admitted=resumed_s,
                       timeout_s=TIMEOUT_S, backoff_s=BACKOFF_S)
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/plain?"
                "propagationPolicy=Background")


def test_the_extender_may_only_suspend_and_release_as_the_policy_says(recovery_cluster,
                                                                     namespace):
    cluster, _ = recovery_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    for name, labels in (("plain", {}), ("queued", {"kueue.x-k8s.io/queue-name": "q"}),
                         ("paused", {})):
        job = indexed_job(name, 1, node_selector={GROUP_KEY: "pg-c"})
        job["metadata"]["labels"] = labels
        job["spec"]["suspend"] = name == "paused"  # its owner suspended it
        run_job(cluster, namespace, job)
    mark = {"headstart.io/suspended": str(int(time.time()) + 60)}
    refused = {
        "suspending a Job Kueue manages": ("queued", {
            "metadata": {"labels": mark}, "spec": {"suspend": True}}),
        "suspending without the label": ("plain", {"spec": {"suspend": True}}),
        "a label that is not a time": ("plain", {
            "metadata": {"labels": {"headstart.io/suspended": "soon"}},
            "spec": {"suspend": True}}),
        "resuming a Job headstart did not suspend": ("paused", {"spec": {"suspend": False}}),
        "a resize along with a suspension": ("plain", {
            "metadata": {"labels": mark}, "spec": {"suspend": True, "parallelism": 2}}),
        "another label along with a suspension": ("plain", {
            "metadata": {"labels": {**mark, "team": "x"}}, "spec": {"suspend": True}}),
    }
    for what, (name, patch) in refused.items():
        code, err = patch_job_as_extender(cluster, namespace, name, patch)
        assert code in (403, 422) and "headstart-extender-job-edits" in err, (what, code, err)
    code, err = patch_job_as_extender(cluster, namespace, "plain", {
        "metadata": {"labels": mark}, "spec": {"suspend": True}})
    assert code == 200, err
    code, err = patch_job_as_extender(cluster, namespace, "plain", {
        "metadata": {"labels": {"headstart.io/suspended": None}}, "spec": {"suspend": False}})
    assert code == 200, err
    job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/plain")
    assert job["spec"]["suspend"] is False
    assert "headstart.io/suspended" not in (job["metadata"].get("labels") or {})
    for name in ("plain", "queued", "paused"):
        kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}?"
                    "propagationPolicy=Background")

