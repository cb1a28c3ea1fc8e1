"""A gang after admission against the real components, as installed, with real owners
(batch/v1 Indexed Jobs run by kube-controller-manager's Job controller, with a
podFailurePolicy that ignores `DisruptionTarget`, as docs/extender.md recommends) and
real faults. The extender runs its shipped config with a 90 s bind and ready timeout and a 5 s
backoff, and one node group that never delivers (no autoscaler runs here).

The cluster: pg-a and pg-b, 2 8-GPU kwok nodes each; pg-c, 1 node, plus a node group
`ghost` the admitter is told can add 2 more there.

- A running 2-node job in pg-a loses a Node (deleted): the admitter counts the member
  bound there lost at once; kube-controller-manager's PodGC deletes its pod and the Job
  controller replaces it; pg-a has no room for the replacement, so the gang is evicted
  whole at once (fail fast: the surviving pod too, no bind timeout waited out, no
  eviction counted) and admitted again, whole, in pg-b, within 120 s of the loss.
- A running 2-node job in pg-d (3 nodes) loses a Node: its replacement binds on pg-d's
  free node, the surviving pod untouched, nothing evicted.
- A 2-node job whose pods run but never become Ready (kwok's stage for pods annotated
  e2e/never-ready: a crash loop) is Admitted, never Running, and evicted whole
  `ready_timeout_seconds` after admission, its record saying why.
- A 3-node job pinned to pg-c is admitted there counting on the ghost group's nodes,
  which never come. Its pods pend (the extender passes no pg-c node while the group
  cannot hold the rest of the job), and 90 s after admission the whole gang is
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
NODES = {"a-0": "pg-a", "a-1": "pg-a", "b-0": "pg-b", "b-1": "pg-b", "c-0": "pg-c",
         "d-0": "pg-d", "d-1": "pg-d", "d-2": "pg-d"}
# Well past PodGC's 40 s: a gang that loses a node is Recovering from the loss, and its
# replacement can only come once PodGC has deleted the lost pod (59 s after the loss in
# one run alone on the machine; a 60 s timeout evicted it in a run beside others).
TIMEOUT_S = 90
READY_TIMEOUT_S = 90
BACKOFF_S = 5
P4D = {"node.kubernetes.io/instance-type": "p4d.24xlarge"}


@pytest.fixture(scope="module")
def recovery_cluster(e2e_clusters):
    admission = dict(installed.shipped_config("extender")["admission"])
    admission.update(bind_timeout_seconds=TIMEOUT_S, backoff_base_seconds=BACKOFF_S,
                     ready_timeout_seconds=READY_TIMEOUT_S,
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


def test_a_gang_that_loses_a_node_its_domain_cannot_replace_runs_again_elsewhere_at_once(
        recovery_cluster, namespace, e2e_timings):
    cluster, _ = recovery_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, tolerant_job("lose", 2, node_selector=None))
    assert cluster.wait("the job bound whole", lambda: bound_groups(
        cluster, namespace, "lose", 2), 90, LOGS) in (["pg-a"], ["pg-b"])
    cluster.wait("its Gang Running", lambda: gang_state(
        cluster, namespace, "lose", "Running"), 30, LOGS)
    first = live(cluster, namespace, "lose")
    first_group = NODES[bound_node(first[0])]
    lost = sorted(bound_node(p) for p in first)[0]
    kube.delete(f"/api/v1/nodes/{lost}")
    deleted = time.monotonic()
    other = "pg-b" if first_group == "pg-a" else "pg-a"
    old = {p["metadata"]["uid"] for p in first}

    def anew():
        pods = live(cluster, namespace, "lose")
        if old & {p["metadata"]["uid"] for p in pods}:
            return NotYet("a pod of the first attempt is still there")
        return bound_groups(cluster, namespace, "lose", 2)

    # PodGC takes about 40 s to delete the lost pod; the rest at once, not after the
    # bind timeout: the job back, whole, within the 120 s a user expects.
    assert cluster.wait("the job bound whole in the other group", anew, 120, LOGS) == [other]
    whole_again_s = time.monotonic() - deleted
    record = cluster.wait("its Gang Running again", lambda: gang_state(
        cluster, namespace, "lose", "Running"), 30, LOGS)
    assert not record["status"].get("evictions"), record["status"]  # fail fast: uncounted
    assert record["status"]["domain"] == f"placement-group={other}"
    evicted = [e for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
               if e["reason"] == "HeadstartSuspended"]
    assert evicted and "cannot replace now" in evicted[-1]["message"], evicted
    job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/lose")
    assert not job["status"].get("failed"), job["status"]  # ignored: DisruptionTarget
    e2e_timings.record("gang recovery: node lost, domain full, evicted at once, runs elsewhere",
                       whole_again_since_node_deleted=whole_again_s,
                       eviction_event=evicted[-1]["message"][:160])
    kube.create("/api/v1/nodes", kwok_node(lost, memory="768Gi", group=NODES[lost],
                                           labels=P4D))
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/lose?propagationPolicy=Background")


def test_a_gang_that_loses_a_node_its_domain_can_replace_stays_and_evicts_nothing(
        recovery_cluster, namespace, e2e_timings):
    cluster, _ = recovery_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, tolerant_job("stay", 2, node_selector={GROUP_KEY: "pg-d"}))
    assert cluster.wait("the job bound whole", lambda: bound_groups(
        cluster, namespace, "stay", 2), 90, LOGS) == ["pg-d"]
    cluster.wait("its Gang Running", lambda: gang_state(
        cluster, namespace, "stay", "Running"), 30, LOGS)
    before = {p["metadata"]["uid"]: bound_node(p) for p in live(cluster, namespace, "stay")}
    lost = sorted(before.values())[0]
    survivor = next(uid for uid, node in before.items() if node != lost)
    kube.delete(f"/api/v1/nodes/{lost}")
    deleted = time.monotonic()

    def replaced():
        pods = live(cluster, namespace, "stay")
        uids = {p["metadata"]["uid"] for p in pods}
        if len(pods) != 2 or set(before) <= uids or not all(map(bound_node, pods)):
            return NotYet(f"{len(pods)} live pods, {sum(map(bool, map(bound_node, pods)))} bound")
        return pods

    pods = cluster.wait("the replacement bound beside the survivor", replaced, 120, LOGS)
    whole_again_s = time.monotonic() - deleted
    assert survivor in {p["metadata"]["uid"] for p in pods}  # untouched
    assert {NODES[bound_node(p)] for p in pods} == {"pg-d"}
    record = cluster.wait("its Gang Running again", lambda: gang_state(
        cluster, namespace, "stay", "Running"), 30, LOGS)
    assert not record["status"].get("evictions"), record["status"]
    events = kube.list(f"/api/v1/namespaces/{namespace}/events")
    assert not [e for e in events if e["reason"] in ("HeadstartSuspended", "HeadstartEvicted")]
    e2e_timings.record("gang recovery: node lost, replaced in its domain",
                       whole_again_since_node_deleted=whole_again_s)
    kube.create("/api/v1/nodes", kwok_node(lost, memory="768Gi", group=NODES[lost],
                                           labels=P4D))
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/stay?propagationPolicy=Background")


def test_a_gang_that_never_becomes_ready_is_evicted_after_the_ready_timeout(
        recovery_cluster, namespace, e2e_timings):
    cluster, _ = recovery_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    job = tolerant_job("crash", 2, node_selector={GROUP_KEY: "pg-d"})
    job["spec"]["template"]["metadata"]["annotations"]["e2e/never-ready"] = "true"
    run_job(cluster, namespace, job)
    admitted = cluster.wait("its Gang Admitted", lambda: gang_state(
        cluster, namespace, "crash", "Admitted"), 60, LOGS)
    started = time.monotonic()
    cluster.wait("the job bound whole", lambda: bound_groups(
        cluster, namespace, "crash", 2), 60, LOGS)
    # Bound but not Ready: still Admitted until the ready timeout, never Running.
    assert gang_state(cluster, namespace, "crash", "Admitted")
    record = cluster.wait("its Gang Evicted", lambda: gang_state(
        cluster, namespace, "crash", "Evicted"), READY_TIMEOUT_S + 60, LOGS)
    evicted_s = time.monotonic() - started
    status = record["status"]
    assert status["evictions"] == 1, status
    assert f"not Ready {READY_TIMEOUT_S} s after it was admitted (0 of 2 Ready)" in \
        status["message"], status
    assert admitted["status"]["domain"] == "placement-group=pg-d"
    e2e_timings.record("gang recovery: never Ready, evicted after the ready timeout",
                       evicted_since_admitted_seen=evicted_s, message=status["message"][:160])
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/crash?propagationPolicy=Background")


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

