"""Known demand against a real API server: a Kueue Workload waiting in its queue (no Kueue
controller runs, so it is never admitted), a suspended batch Job and a CronJob whose next
run falls within `known_demand.cronjob_lead` make the overprovisioner's /plan show known
demand from each of the three sources, and its placeholders grow BEFORE any pod of that
work exists; once the work is gone (the Workload deleted) or has run (the Job resumed,
the CronJob fired; kwok completes pods owned by a Job at once), the plan and the
placeholders shrink back to nothing.

The overprovisioner plans one instance type, m5.4xlarge (CPU only: cluster-autoscaler
scales up for it after 2 s, not the 30 s it waits for GPU pods), with the cold-start
ladder at 0, so every placeholder is known demand: ladder 0 + ceil(known).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.controlplane import KUEUE_CRDS
from tests.e2e.headstart import Extender, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.placeholders import NAMESPACE, placeholder_deployments

INSTANCE_TYPE = "m5.4xlarge"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
# Each pod needs a node of its own: 12 cpu on an m5.4xlarge (15890m allocatable) leaves
# no room for a second one.
POD_CPU = "12"
KNOWN_CONFIG = {
    "catalog": "aws",
    "instance_types": [INSTANCE_TYPE],
    "tick": "5s",
    # A CronJob's run counts once due within the horizon and the lead; cron runs are
    # whole minutes apart, so both cover the 60-120 s to the run the test schedules.
    "horizon": "3m",
    "forecast": {"model": "seasonal", "cold_start_placeholders": 0},
    "limits": {"cost_cap_per_hour": None},
    "placeholders": {"namespace": NAMESPACE, "backend": "deployment"},
    "known_demand": {"cronjob_lead": "3m"},
}
# Workload 2 pods + Job 1 pod + CronJob 1 pod, a node each.
EXPECTED_BY_SOURCE = {"kueue": 2.0, "jobs": 1.0, "cronjobs": 1.0}
EXPECTED_KNOWN = 4.0  # 2 + 1 + 1


def kueue_kind(kind: str) -> dict[str, str]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind}


def pod_template(name: str, restart_policy: str = "Never") -> dict:
    return {"metadata": {"labels": {"app": name}}, "spec": {
        "restartPolicy": restart_policy, "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": POD_CPU, "memory": "8Gi"}}}]}}


def job_spec(name: str, suspend: bool) -> dict:
    return {"suspend": suspend, "parallelism": 1, "completions": 1,
            "template": pod_template(name)}


def next_run_at_least(seconds: float) -> datetime:
    """The first whole minute (UTC) at least `seconds` from now."""
    earliest = datetime.now(UTC) + timedelta(seconds=seconds)
    return (earliest + timedelta(minutes=1)).replace(second=0, microsecond=0)


@pytest.fixture(scope="module")
def known(e2e_clusters):
    spec, port = headstart_cluster(autoscaler=True, crds=KUEUE_CRDS)
    cluster = e2e_clusters.start(spec, "known-demand")
    Extender(cluster, port=port).start().wait_ready()
    cluster.kube.ensure_namespace(NAMESPACE)
    overprovisioner = Overprovisioner(cluster, KNOWN_CONFIG).start()
    overprovisioner.wait_ready()
    yield cluster, overprovisioner
    cluster.stop()


def bucket(plan: dict) -> dict:
    [entry] = [b for b in plan["buckets"] if b["instance_type"] == INSTANCE_TYPE]
    return entry


def placeholder_replicas(kube) -> int:
    return sum(d["spec"].get("replicas", 0) for d in placeholder_deployments(kube)
               if d["metadata"]["labels"].get("headstart.io/instance-type") == INSTANCE_TYPE)


def test_known_work_grows_placeholders_before_its_pods_exist_and_they_shrink_after(
        known, namespace, e2e_timings):
    cluster, overprovisioner = known
    kube = cluster.kube
    logs = ["headstart-overprovisioner", "kube-controller-manager", "cluster-autoscaler"]
    cluster.wait("the first plan", lambda: overprovisioner.plan(), 60, logs)
    plan = overprovisioner.plan()
    assert bucket(plan)["known"] == 0.0 and placeholder_replicas(kube) == 0, bucket(plan)
    served = plan["known_demand"]["served"]
    assert served["workloads.kueue.x-k8s.io"] == "v1beta2", plan["known_demand"]
    assert served["jobs.batch"] == served["cronjobs.batch"] == "v1", served

    kube.ensure_namespace(namespace)
    kube.create(f"{KUEUE}/clusterqueues", {
        **kueue_kind("ClusterQueue"), "metadata": {"name": f"cq-{namespace}"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": "default", "resources": [
                {"name": "cpu", "nominalQuota": "100"},
                {"name": "memory", "nominalQuota": "1000Gi"}]}]}]}})
    kube.create(f"{KUEUE}/namespaces/{namespace}/localqueues", {
        **kueue_kind("LocalQueue"), "metadata": {"name": "main"},
        "spec": {"clusterQueue": f"cq-{namespace}"}})
    created = time.monotonic()
    kube.create(f"{KUEUE}/namespaces/{namespace}/workloads", {
        **kueue_kind("Workload"), "metadata": {"name": "train"},
        "spec": {"queueName": "main", "podSets": [
            {"name": "workers", "count": 2, "template": pod_template("train")}]}})
    kube.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "held"},
        "spec": job_spec("held", suspend=True)})
    run_at = next_run_at_least(60)
    kube.create(f"/apis/batch/v1/namespaces/{namespace}/cronjobs", {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
        "spec": {"schedule": f"{run_at.minute} {run_at.hour} * * *", "timeZone": "Etc/UTC",
                 "jobTemplate": {"spec": job_spec("nightly", suspend=False)}}})

    def pods_of_the_work() -> list[str]:
        return [p["metadata"]["name"]
                for p in kube.list(f"/api/v1/namespaces/{namespace}/pods")]

    def grown():
        pods = pods_of_the_work()
        assert not pods, f"the work's pods exist already: {pods}"
        entry = bucket(overprovisioner.plan())
        replicas = placeholder_replicas(kube)
        return (entry if entry["known"] == EXPECTED_KNOWN and replicas == entry["wanted"]
                else NotYet({"known_by_source": entry["known_by_source"],
                             "wanted": entry["wanted"], "replicas": replicas}))

    entry = cluster.wait("the known work in the plan and the placeholder Deployment",
                         grown, 60, logs)
    grown_s = time.monotonic() - created
    assert entry["known_by_source"] == EXPECTED_BY_SOURCE, entry
    assert entry["wanted"] == 4, entry  # ladder 0 + ceil(known 4.0)
    document = overprovisioner.plan()["known_demand"]
    counted = {(i["source"], i["name"]) for i in document["items"] if i["counted"]}
    assert counted >= {("kueue", "train"), ("jobs", "held"), ("cronjobs", "nightly")}, document
    assert document["counted_pods"] == {"kueue": 2, "jobs": 1, "cronjobs": 1}, document
    assert datetime.now(UTC) < run_at, "the CronJob ran before the plan had grown"

    def placeholders_running() -> object:
        pods = kube.list(f"/api/v1/namespaces/{NAMESPACE}/pods",
                         label_selector=f"headstart.io/instance-type={INSTANCE_TYPE}")
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return len(running) == 4 or NotYet(f"{len(running)} of {len(pods)} running")

    # cluster-autoscaler launches a node per placeholder, still before any pod of the work.
    cluster.wait("4 placeholders running on nodes cluster-autoscaler launched",
                 placeholders_running, 90, logs)
    placeholders_up_s = time.monotonic() - created
    assert not pods_of_the_work() or datetime.now(UTC) >= run_at

    # The work goes or runs: the Workload is withdrawn, the Job resumed, the CronJob fires.
    kube.delete(f"{KUEUE}/namespaces/{namespace}/workloads/train")
    kube.patch(f"/apis/batch/v1/namespaces/{namespace}/jobs/held", {"spec": {"suspend": False}})
    released = time.monotonic()

    only_cron: list[float] = []  # when the plan first had the CronJob's node alone left

    def shrunk():
        entry = bucket(overprovisioner.plan())
        replicas = placeholder_replicas(kube)
        if not only_cron and entry["known_by_source"] == {"cronjobs": 1.0} and replicas == 1:
            only_cron.append(time.monotonic() - released)
        return (entry["known"] == 0.0 and entry["wanted"] == 0 and replicas == 0
                or NotYet({"known_by_source": entry["known_by_source"],
                           "wanted": entry["wanted"], "replicas": replicas}))

    seconds_to_run = (run_at - datetime.now(UTC)).total_seconds()
    cluster.wait("the plan and the placeholders back to 0 once the work ran or went",
                 shrunk, max(seconds_to_run, 0) + 90, logs)
    shrunk_s = time.monotonic() - released
    # The CronJob's run makes a Job of its own: kube-controller-manager's CronJob
    # controller does that on its own sync, which can come a moment after the plan
    # dropped the run at its scheduled time.
    def cron_job_made() -> object:
        names = [j["metadata"]["name"]
                 for j in kube.list(f"/apis/batch/v1/namespaces/{namespace}/jobs")]
        return any(name.startswith("nightly-") for name in names) or NotYet(sorted(names))

    cluster.wait("the CronJob's Job", cron_job_made, 30, logs)
    jobs = {j["metadata"]["name"]: j
            for j in kube.list(f"/apis/batch/v1/namespaces/{namespace}/jobs")}
    # The resumed Job ran.
    assert (jobs["held"].get("status") or {}).get("succeeded") == 1, jobs["held"]
    e2e_timings.record("known demand (Workload, suspended Job, CronJob)",
                       work_created_to_plan_and_placeholders=grown_s,
                       work_created_to_placeholders_running=placeholders_up_s,
                       released_to_workload_and_job_placeholders_gone=(
                           only_cron[0] if only_cron else None),
                       released_to_placeholders_gone=shrunk_s,
                       cronjob_ran_after_released=max(seconds_to_run, 0.0))


def test_work_autoscaler_provisions_or_kueue_holds_counts_once_and_gated_pods_count(
        known, namespace, e2e_timings):
    """Announced work, exactly once (issue 18 item 6), against the real API server and
    Kueue's CRDs: a Workload behind a ProvisioningRequest admission check (on its
    ClusterQueue, or Pending in its status) is listed as covered and adds no placeholder
    (cluster-autoscaler provisions for the request itself); a Job Kueue suspended (its
    queue-name label; no Kueue controller runs, so no Workload stands for it) is listed
    but not counted as a suspended Job due now; a pod held by a scheduling gate, which
    cluster-autoscaler ignores, is counted and gets its placeholder node."""
    cluster, overprovisioner = known
    kube = cluster.kube
    logs = ["headstart-overprovisioner", "cluster-autoscaler"]
    cluster.wait("the first plan", lambda: overprovisioner.plan(), 60, logs)
    assert overprovisioner.plan()["known_demand"]["served"][
        "admissionchecks.kueue.x-k8s.io"] == "v1beta2"
    kube.ensure_namespace(namespace)
    check = f"prov-{namespace}"
    kube.create(f"{KUEUE}/admissionchecks", {
        **kueue_kind("AdmissionCheck"), "metadata": {"name": check},
        "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}})
    quota = [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "default",
              "resources": [{"name": "cpu", "nominalQuota": "100"},
                            {"name": "memory", "nominalQuota": "1000Gi"}]}]}]
    for queue, strategy in (("prov", {"admissionChecksStrategy": {
            "admissionChecks": [{"name": check}]}}), ("main", {})):
        kube.create(f"{KUEUE}/clusterqueues", {
            **kueue_kind("ClusterQueue"), "metadata": {"name": f"cq-{queue}-{namespace}"},
            "spec": {"namespaceSelector": {}, "resourceGroups": quota, **strategy}})
        kube.create(f"{KUEUE}/namespaces/{namespace}/localqueues", {
            **kueue_kind("LocalQueue"), "metadata": {"name": queue},
            "spec": {"clusterQueue": f"cq-{queue}-{namespace}"}})
    workloads = f"{KUEUE}/namespaces/{namespace}/workloads"
    kube.create(workloads, {**kueue_kind("Workload"), "metadata": {"name": "in-prov-queue"},
                            "spec": {"queueName": "prov", "podSets": [
                                {"name": "workers", "count": 2,
                                 "template": pod_template("a")}]}})
    kube.create(workloads, {**kueue_kind("Workload"), "metadata": {"name": "checking"},
                            "spec": {"queueName": "main", "podSets": [
                                {"name": "workers", "count": 1,
                                 "template": pod_template("b")}]}})
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.patch(f"{workloads}/checking/status", {"status": {
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "message": "reserved", "lastTransitionTime": stamp}],
        "admissionChecks": [{"name": check, "state": "Pending", "message": "",
                             "lastTransitionTime": stamp}]}})
    kube.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "queued", "labels": {"kueue.x-k8s.io/queue-name": "main"}},
        "spec": job_spec("queued", suspend=True)})
    created = time.monotonic()
    kube.create(f"/api/v1/namespaces/{namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "held"},
        "spec": {**pod_template("held")["spec"],
                 "schedulingGates": [{"name": "example.com/wait"}]}})

    def planned():
        document = overprovisioner.plan()["known_demand"]
        items = {i["name"]: i for i in document["items"] if i["namespace"] == namespace}
        entry = bucket(overprovisioner.plan())
        replicas = placeholder_replicas(kube)
        ready = (len(items) == 4 and entry["known_by_source"] == {"gated": 1.0}
                 and replicas == entry["wanted"] == 1)
        return (items, entry) if ready else NotYet({
            "items": sorted(items), "known_by_source": entry["known_by_source"],
            "wanted": entry["wanted"], "replicas": replicas})

    items, entry = cluster.wait("the gated pod's placeholder, and nothing for the rest",
                                planned, 60, logs)
    planned_s = time.monotonic() - created
    assert entry["known"] == 1.0, entry  # the gated pod's node alone
    for name in ("in-prov-queue", "checking"):
        assert (items[name]["source"], items[name]["covered"], items[name]["counted"]) == (
            "kueue", True, False), items[name]
    assert (items["queued"]["source"], items["queued"]["counted"]) == ("jobs", False)
    assert items["queued"]["expected_s"] is None, items["queued"]
    assert (items["held"]["source"], items["held"]["counted"]) == ("gated", True)
    # the gated pod stays unscheduled: its node comes from the placeholder, not from it
    assert not (kube.pod(namespace, "held") or {}).get("spec", {}).get("nodeName")

    kube.delete(f"/api/v1/namespaces/{namespace}/pods/held", grace_period_s=0)
    released = time.monotonic()

    def shrunk():
        entry = bucket(overprovisioner.plan())
        replicas = placeholder_replicas(kube)
        return (entry["known"] == 0.0 and replicas == 0
                or NotYet({"known": entry["known"], "replicas": replicas}))

    cluster.wait("no placeholder once the gated pod is gone", shrunk, 60, logs)
    e2e_timings.record("known demand (covered Workloads, Kueue's Job, gated pod)",
                       gated_pod_created_to_plan_and_placeholder=planned_s,
                       gated_pod_deleted_to_placeholder_gone=time.monotonic() - released)
