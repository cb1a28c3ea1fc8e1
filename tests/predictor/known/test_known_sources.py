"""Each known-demand source, from objects as the API serves them to KnownItems."""

from __future__ import annotations

import pytest

from bucketing.resources import Resources
from common.errors import InputError
from kube.kinds import BY_KIND
from predictor.known import batch, cron, gated, kubeflow, kueue, podgroups
from predictor.known.model import (
    COSCHEDULING_POD_GROUP,
    VOLCANO_POD_GROUP,
    count_pods,
    pod_ref,
)
from predictor.known.pods import live_pod
from tests.predictor.known.known_builders import NOW, condition, job, meta, pod, stamp, template

GPU = "nvidia.com/gpu"
HOUR = 3600.0
QUEUED = {"kueue.x-k8s.io/queue-name": "lq"}  # what Kueue's webhook finds on a job it holds
ONE_GPU = Resources.of(1, 4, 16)  # the builders' default pod: 1 GPU, 4 cores, 16 GiB


def summary(items):
    """(source, name, pods, expected is now / None / seconds ahead) per item."""
    return [(i.source, i.name, i.pods,
             None if i.expected_s is None else round(i.expected_s - NOW)) for i in items]


# ------------------------------------------------------------------------- batch/v1 Jobs

JOBS = [
    (job("a"), [("jobs", "a", 2, 0)], "suspended-parallelism-2"),
    (job("b", suspend=False), [], "running-announces-nothing"),
    (job("c", parallelism=None), [("jobs", "c", 1, 0)], "parallelism-defaults-to-1"),
    # completions 5, succeeded 4: min(parallelism 2, 5 - 4 = 1) = 1 pod left
    (job("d", completions=5, succeeded=4), [("jobs", "d", 1, 0)], "capped-by-completions-left"),
    (job("e", completions=3, succeeded=3), [], "no-completions-left"),
    (job("f", conditions=(condition("Complete"),)), [], "finished"),
    # suspended 2 h ago, window 1 h: parked, reported but never due
    (job("g", conditions=(condition("Suspended", NOW - 2 * HOUR),)), [("jobs", "g", 2, None)],
     "parked-after-the-window"),
    # Kueue suspended it (queue-name label) a minute ago: its Workload says when, so it
    # is listed of unknown time, never "due now" for the window (counted once, via kueue)
    (job("q", labels=QUEUED), [("jobs", "q", 2, None)], "queued-in-kueue-not-due"),
    # headstart's admitter suspended it to evict its gang, resuming it in 10 minutes:
    # expected then, even though it has been suspended longer than the window
    (job("h", labels={"headstart.io/suspended": str(int(NOW + 600))},
         conditions=(condition("Suspended", NOW - 2 * HOUR),)), [("jobs", "h", 2, 600)],
     "suspended-by-headstart-expected-at-its-resume-time"),
    (job("i", labels={"headstart.io/suspended": str(int(NOW - 60))}), [("jobs", "i", 2, 0)],
     "suspended-by-headstart-past-its-time-expected-now"),
]


@pytest.mark.parametrize("obj, expected", [j[:2] for j in JOBS], ids=[j[2] for j in JOBS])
def test_suspended_jobs(obj, expected):
    items = batch.job_items([batch.parse_job(obj, GPU)], NOW, HOUR)
    assert summary(items) == expected
    assert all(i.request == ONE_GPU for i in items)


def test_the_label_is_the_one_the_admitter_writes():
    from locality.suspension import SUSPENDED_LABEL
    from predictor.known.model import HEADSTART_SUSPENDED_LABEL

    assert HEADSTART_SUSPENDED_LABEL == SUSPENDED_LABEL


def test_a_job_queued_in_kueue_says_so():
    item, = batch.job_items([batch.parse_job(job("q", labels=QUEUED), GPU)], NOW, HOUR)
    assert item.reason == "queued in Kueue (LocalQueue lq): counted through its Workload only"


def test_a_jobset_child_job_has_the_jobset_key():
    child = batch.parse_job(job("js-w-0", labels={"jobset.sigs.k8s.io/jobset-name": "js"}), GPU)
    assert child.key == "jobset.x-k8s.io/JobSet/team/js"
    assert batch.parse_job(job("plain"), GPU).key == "batch/Job/team/plain"


def jobset(name, suspend=True, conditions=(), labels=None):
    replicated = [
        {"name": "driver", "template": {"spec": {"template": template(gpus=0)}}},
        {"name": "workers", "replicas": 3,
         "template": {"spec": {"parallelism": 2, "template": template(gpus=8)}}},
    ]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": meta(name, labels=labels),
            "spec": {"suspend": suspend, "replicatedJobs": replicated},
            "status": {"conditions": list(conditions)}}


JOBSETS = [
    # driver: replicas default 1 x parallelism default 1; workers: 3 replicas x 2 pods = 6
    (jobset("js"), [("jobsets", "js", 1, 0), ("jobsets", "js", 6, 0)], "suspended"),
    (jobset("js", suspend=False), [], "running"),
    (jobset("js", conditions=(condition("Completed"),)), [], "completed"),
    (jobset("js", labels=QUEUED), [("jobsets", "js", 1, None), ("jobsets", "js", 6, None)],
     "queued-in-kueue-not-due"),
    # suspended by headstart's admitter to evict its gang: due when it resumes the JobSet
    (jobset("js", labels={"headstart.io/suspended": str(int(NOW + 600))},
            conditions=(condition("Suspended", NOW - 10 * HOUR),)),
     [("jobsets", "js", 1, 600), ("jobsets", "js", 6, 600)], "suspended-by-headstart"),
]


@pytest.mark.parametrize("obj, expected", [j[:2] for j in JOBSETS], ids=[j[2] for j in JOBSETS])
def test_suspended_jobsets(obj, expected):
    items = batch.jobset_items([batch.parse_jobset(obj, GPU)], NOW, HOUR)
    assert summary(items) == expected
    assert [i.request.gpus for i in items] == [0, 8][: len(items)]


# ------------------------------------------------------------------------------ Kubeflow

def pytorchjob(name="pt", workers=4, suspend=False, conditions=(), labels=None):
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": meta(name, labels=labels),
            "spec": {"runPolicy": {"suspend": suspend},
                     "pytorchReplicaSpecs": {
                         "Master": {"template": template(gpus=1)},
                         "Worker": {"replicas": workers, "template": template(gpus=1)}}},
            "status": {"conditions": list(conditions)}}


def operator_pod(name, replica_type, job_name="pt", phase="Running"):
    return pod(name, owner=("kubeflow.org/v1", "PyTorchJob", job_name), phase=phase,
               labels={"training.kubeflow.org/job-name": job_name,
                       "training.kubeflow.org/replica-type": replica_type})


KUBEFLOW = [
    # Master 1 (default replicas) exists; Worker 4 - 2 existing = 2 missing
    (pytorchjob(), [operator_pod("m", "master"), operator_pod("w0", "worker"),
                    operator_pod("w1", "worker")], [("kubeflow", "pt", 2, 0)],
     "two-workers-missing"),
    # a finished worker still exists: it is not a worker still to be created
    (pytorchjob(workers=2), [operator_pod("m", "master"), operator_pod("w0", "worker"),
                             operator_pod("w1", "worker", phase="Succeeded")], [], "all-created"),
    # suspended: every replica, whatever pods exist: Master 1, Worker 4
    (pytorchjob(suspend=True), [], [("kubeflow", "pt", 1, 0), ("kubeflow", "pt", 4, 0)],
     "suspended"),
    (pytorchjob(conditions=(condition("Succeeded"),)), [], [], "succeeded"),
    (pytorchjob(suspend=True, labels=QUEUED), [],
     [("kubeflow", "pt", 1, None), ("kubeflow", "pt", 4, None)], "suspended-by-kueue-not-due"),
    # admitted by Kueue (resumed, label kept): the operator is creating the pods
    (pytorchjob(labels=QUEUED), [operator_pod("m", "master")], [("kubeflow", "pt", 4, 0)],
     "resumed-by-kueue"),
    # another job's pods of the same replica type do not count for this one
    (pytorchjob(workers=1), [operator_pod("x", "worker", job_name="other")],
     [("kubeflow", "pt", 1, 0), ("kubeflow", "pt", 1, 0)], "other-jobs-pods"),
    # headstart's admitter suspended it to evict its gang, resuming it in 10 minutes:
    # expected then, though suspended longer than the window
    (pytorchjob(suspend=True, labels={"headstart.io/suspended": str(int(NOW + 600))},
                conditions=(condition("Suspended", NOW - 2 * HOUR),)), [],
     [("kubeflow", "pt", 1, 600), ("kubeflow", "pt", 4, 600)],
     "suspended-by-headstart-expected-at-its-resume-time"),
]


def mpijob_v2(workers=4, suspend=False):
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": meta("mpi"),
            "spec": {"runPolicy": {"suspend": suspend}, "slotsPerWorker": 1,
                     "mpiReplicaSpecs": {
                         "Launcher": {"replicas": 1, "template": template(gpus=0)},
                         "Worker": {"replicas": workers, "template": template(gpus=1)}}},
            "status": {}}


def mpi_worker(name):
    # mpi-operator v2: the MPIJob controls its workers, labelled with job-role only.
    return pod(name, owner=("kubeflow.org/v2beta1", "MPIJob", "mpi"),
               labels={"training.kubeflow.org/job-name": "mpi",
                       "training.kubeflow.org/job-role": "worker"})


def mpi_launcher():
    # ...and the launcher is a batch Job's pod.
    return pod("mpi-launcher-x", owner=("batch/v1", "Job", "mpi-launcher"),
               labels={"training.kubeflow.org/job-name": "mpi",
                       "training.kubeflow.org/job-role": "launcher"})


@pytest.mark.parametrize("obj, pods, expected", [
    # 1 of 4 workers exists: 3 missing; the launcher, a Job's pod, is not counted as missing
    (mpijob_v2(), [mpi_launcher(), mpi_worker("w0")], [("kubeflow", "mpi", 3, 0)]),
    (mpijob_v2(), [mpi_launcher()] + [mpi_worker(f"w{i}") for i in range(4)], []),
    # suspended: every replica, the launcher too
    (mpijob_v2(suspend=True), [], [("kubeflow", "mpi", 1, 0), ("kubeflow", "mpi", 4, 0)]),
], ids=["workers-missing", "all-created", "suspended"])
def test_mpi_operator_v2_jobs(obj, pods, expected):
    parsed = kubeflow.parse_training_job(obj, BY_KIND["MPIJob"], GPU)
    counts = count_pods(pod_ref(p) for p in pods)
    assert summary(kubeflow.training_items([parsed], counts, NOW, HOUR)) == expected


@pytest.mark.parametrize("obj, pods, expected", [k[:3] for k in KUBEFLOW],
                         ids=[k[3] for k in KUBEFLOW])
def test_training_operator_jobs(obj, pods, expected):
    parsed = kubeflow.parse_training_job(obj, BY_KIND["PyTorchJob"], GPU)
    counts = count_pods(pod_ref(p) for p in pods)
    assert summary(kubeflow.training_items([parsed], counts, NOW, HOUR)) == expected


def trainjob(nodes=4, resources=True):
    trainer = {"numNodes": nodes}
    if resources:
        trainer["resourcesPerNode"] = {"requests": {"cpu": "8", "memory": "64Gi", GPU: "8"}}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": meta("tj"), "spec": {"trainer": trainer}}


def test_trainjob_counts_nodes_not_created_in_its_jobset():
    node_pod = pod("tj-node-0-0", owner=("batch/v1", "Job", "tj-node-0"),
                   labels={"jobset.sigs.k8s.io/jobset-name": "tj",
                           "jobset.sigs.k8s.io/replicatedjob-name": "node"})
    parsed = kubeflow.parse_trainjob(trainjob(), GPU)
    items = kubeflow.training_items([parsed], count_pods([pod_ref(node_pod)]), NOW, HOUR)
    # numNodes 4 - 1 node pod = 3, each 8 GPUs / 8 cores / 64 GiB
    assert summary(items) == [("kubeflow", "tj", 3, 0)]
    assert items[0].request == Resources.of(8, 8, 64)
    assert items[0].key == "jobset.x-k8s.io/JobSet/team/tj"


def test_trainjob_sized_by_its_runtime_is_not_counted():
    parsed = kubeflow.parse_trainjob(trainjob(resources=False), GPU)
    assert kubeflow.training_items([parsed], count_pods([]), NOW, HOUR) == []


# ------------------------------------------------------------------------------ CronJobs

def cronjob(schedule="0 * * * *", zone=None, suspend=False, policy=None, active=0):
    spec = {"schedule": schedule, "suspend": suspend,
            "jobTemplate": {"spec": {"parallelism": 4, "completions": 2,
                                     "template": template(gpus=2)}}}
    if zone:
        spec["timeZone"] = zone
    if policy:
        spec["concurrencyPolicy"] = policy
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("retrain"),
            "spec": spec,
            "status": {"active": [{"name": f"retrain-{i}"} for i in range(active)]}}


# NOW is 08:00:00Z sharp; the next "0 * * * *" run is 09:00Z, 3600 s ahead.
CRONS = [
    # min(parallelism 4, completions 2) = 2 pods, due in 3600 s, lead 2 h
    (cronjob(), 2 * HOUR, [("cronjobs", "retrain", 2, 3600)], "due-within-lead"),
    (cronjob(), 0.5 * HOUR, [], "not-known-yet"),
    (cronjob(suspend=True), 2 * HOUR, [], "suspended"),
    (cronjob(policy="Forbid", active=1), 2 * HOUR, [], "forbid-with-a-run-active"),
    (cronjob(policy="Replace", active=1), 2 * HOUR, [], "replace-with-a-run-active"),
    (cronjob(policy="Allow", active=1), 2 * HOUR, [("cronjobs", "retrain", 2, 3600)],
     "allow-with-a-run-active"),
    (cronjob(policy="Forbid"), 2 * HOUR, [("cronjobs", "retrain", 2, 3600)],
     "forbid-nothing-active"),
    # 10:00 in Berlin is 09:00Z in January (UTC+1): 3600 s ahead
    (cronjob("0 10 * * *", zone="Europe/Berlin"), 2 * HOUR, [("cronjobs", "retrain", 2, 3600)],
     "time-zone"),
    # 10:00Z without a zone: 7200 s ahead, beyond a 1.5 h lead
    (cronjob("0 10 * * *"), 1.5 * HOUR, [], "utc-by-default"),
    (cronjob("@hourly"), 2 * HOUR, [("cronjobs", "retrain", 2, 3600)], "descriptor"),
    (cronjob("0 0 31 2 *"), 1e9, [], "never-runs"),
]


@pytest.mark.parametrize("obj, lead, expected", [c[:3] for c in CRONS], ids=[c[3] for c in CRONS])
def test_cronjob_next_run(obj, lead, expected):
    assert summary(cron.cron_items([cron.parse_cronjob(obj, GPU)], NOW, lead)) == expected


def test_headstarts_own_cronjob_is_never_known_demand():
    """The placeholder-expiry CronJob the manifests install (part-of: headstart) would
    otherwise hold a whole node of the cheapest bucket before each 5-minute run; the same
    CronJob with another part-of value still counts."""
    own = cronjob()
    own["metadata"]["labels"] = {"app.kubernetes.io/part-of": "headstart"}
    other = cronjob()
    other["metadata"]["labels"] = {"app.kubernetes.io/part-of": "nightly-retrain"}
    items = cron.cron_items([cron.parse_cronjob(o, GPU) for o in (own, other)], NOW, 2 * HOUR)
    assert summary(items) == [("cronjobs", "retrain", 2, 3600)]


def test_cronjob_key_is_the_job_the_controller_will_create():
    item, = cron.cron_items([cron.parse_cronjob(cronjob(), GPU)], NOW, 2 * HOUR)
    # 09:00Z = NOW + 3600 = 1_800_003_600 s = 30_000_060 minutes
    assert item.key == "batch/Job/team/retrain-30000060"


@pytest.mark.parametrize("schedule", ["@every 1h", "0 0 * * * *", "nonsense", "TZ=UTC 0 * * * *"],
                         ids=["every", "six-fields", "nonsense", "tz-prefix"])
def test_unreadable_schedules_are_input_errors(schedule):
    with pytest.raises(InputError, match="cronjob team/retrain.spec.schedule"):
        cron.parse_cronjob(cronjob(schedule), GPU)


def test_unknown_time_zone_is_an_input_error():
    with pytest.raises(InputError, match="spec.timeZone: 'Mars/Olympus' is not a known"):
        cron.parse_cronjob(cronjob(zone="Mars/Olympus"), GPU)


# ----------------------------------------------------------------------------- PodGroups

def pod_group(api_version, min_member=4, min_resources=True, phase="Pending", owner=None):
    spec = {"minMember": min_member}
    if min_resources:
        spec["minResources"] = {"cpu": "16", "memory": "64Gi", GPU: "4"}
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": meta("pg", owner=owner),
            "spec": spec, "status": {"phase": phase}}


COSCHED_MEMBER = pod("m0", labels={"scheduling.x-k8s.io/pod-group": "pg"})
VOLCANO_MEMBER = pod("m0", annotations={"scheduling.k8s.io/group-name": "pg"})
PODGROUPS = [
    # minMember 4 - 1 member = 3 missing
    (COSCHEDULING_POD_GROUP, pod_group("scheduling.x-k8s.io/v1alpha1"), [COSCHED_MEMBER],
     [("podgroups", "pg", 3, 0)], "coscheduling"),
    (VOLCANO_POD_GROUP, pod_group("scheduling.volcano.sh/v1beta1"), [VOLCANO_MEMBER],
     [("podgroups", "pg", 3, 0)], "volcano"),
    # a Volcano member does not count for a coscheduling group of the same name
    (COSCHEDULING_POD_GROUP, pod_group("scheduling.x-k8s.io/v1alpha1"), [VOLCANO_MEMBER],
     [("podgroups", "pg", 4, 0)], "other-api-members"),
    (COSCHEDULING_POD_GROUP, pod_group("scheduling.x-k8s.io/v1alpha1", phase="Finished"), [],
     [], "finished"),
    (VOLCANO_POD_GROUP, pod_group("scheduling.volcano.sh/v1beta1", phase="Completed"), [], [],
     "completed"),
    (COSCHEDULING_POD_GROUP, pod_group("scheduling.x-k8s.io/v1alpha1", min_resources=False),
     [], [], "no-min-resources"),
]


@pytest.mark.parametrize("group_type, obj, pods, expected", [p[:4] for p in PODGROUPS],
                         ids=[p[4] for p in PODGROUPS])
def test_pod_groups(group_type, obj, pods, expected):
    parsed = podgroups.parse_pod_group(obj, group_type, GPU)
    items = podgroups.pod_group_items([parsed], count_pods(pod_ref(p) for p in pods), NOW)
    assert summary(items) == expected
    # minResources 4 GPUs, 16 cores, 64 GiB over minMember 4: 1 GPU, 4 cores, 16 GiB each
    assert all(i.request == ONE_GPU for i in items)


def test_a_pod_group_owned_by_a_training_job_has_its_key():
    obj = pod_group("scheduling.x-k8s.io/v1alpha1", owner=("kubeflow.org/v1", "PyTorchJob", "pt"))
    parsed = podgroups.parse_pod_group(obj, COSCHEDULING_POD_GROUP, GPU)
    assert parsed.key == "kubeflow.org/PyTorchJob/team/pt"


# --------------------------------------------------------------------------------- Kueue

def workload(name, gpus_per_pod=1, count=2, priority=0, created=NOW - 600, queue="lq",
             conditions=(), owner=("batch/v1", "Job", None), active=None, version="v1beta2"):
    owner = owner if owner is None or owner[2] else (owner[0], owner[1], name)
    spec = {"queueName": queue, "priority": priority,
            "podSets": [{"name": "main", "count": count, "template": template(gpus=gpus_per_pod)}]}
    if active is not None:
        spec["active"] = active
    return {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "Workload",
            "metadata": meta(f"job-{name}", owner=owner, created=created),
            "spec": spec, "status": {"conditions": list(conditions)}}


def cluster_queue(gpus="8", reserved_gpus="4", strategy=None):
    spec = {"resourceGroups": [{
        "coveredResources": ["cpu", "memory", GPU],
        "flavors": [{"name": "a100", "resources": [
            {"name": "cpu", "nominalQuota": "1000"}, {"name": "memory", "nominalQuota": "4Ti"},
            {"name": GPU, "nominalQuota": gpus}]}],
    }]}
    if strategy:
        spec["queueingStrategy"] = strategy
    status = {"flavorsReservation": [{"name": "a100", "resources": [
        {"name": GPU, "total": reserved_gpus}, {"name": "cpu", "total": "16"}]}]}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "cq"}, "spec": spec, "status": status}


LOCAL_QUEUE = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": meta("lq"), "spec": {"clusterQueue": "cq"}}


def kueue_items(workloads, cq=None):
    return kueue.workload_items([kueue.parse_workload(w, GPU) for w in workloads],
                                [kueue.parse_local_queue(LOCAL_QUEUE)],
                                [kueue.parse_cluster_queue(cq or cluster_queue(), GPU)], NOW)


KUEUE = [
    # quota 8 GPUs - 4 reserved = 4 of room; "big" (priority 10) goes first and takes all 4
    # (4 pods x 1 GPU); "small" (2 GPUs, older) then waits
    ([workload("small", count=2), workload("big", count=4, priority=10)], None,
     [("kueue", "job-big", 4, 0), ("kueue", "job-small", 2, None)], "priority-first"),
    # same priority: older first; "old" takes 2 of 4, "new" (2) still fits
    ([workload("new", created=NOW - 10), workload("old", created=NOW - 900)], None,
     [("kueue", "job-old", 2, 0), ("kueue", "job-new", 2, 0)], "older-first"),
    # BestEffortFIFO: "wide" (6 GPUs) does not fit 4, "narrow" (2) behind it still does
    ([workload("wide", count=6, created=NOW - 900), workload("narrow", created=NOW - 10)], None,
     [("kueue", "job-wide", 6, None), ("kueue", "job-narrow", 2, 0)], "best-effort-fifo"),
    # StrictFIFO: "narrow" waits behind "wide"
    ([workload("wide", count=6, created=NOW - 900), workload("narrow", created=NOW - 10)],
     cluster_queue(strategy="StrictFIFO"),
     [("kueue", "job-wide", 6, None), ("kueue", "job-narrow", 2, None)], "strict-fifo"),
    ([workload("w", conditions=(condition("QuotaReserved"),), count=16)], None,
     [("kueue", "job-w", 16, 0)], "quota-reserved-waiting-for-checks"),
    ([workload("w", conditions=(condition("QuotaReserved"), condition("Admitted")))], None, [],
     "admitted"),
    ([workload("w", conditions=(condition("Finished"),))], None, [], "finished"),
    ([workload("w", active=False)], None, [], "deactivated"),
    # plain pods: they exist, held by Kueue's admission gate (not observed demand), so
    # their Workload counts them like any other
    ([workload("w", owner=("v1", "Pod", "p0"))], None, [("kueue", "job-w", 2, 0)],
     "plain-pods-counted-by-their-workload"),
    ([workload("w", queue="nowhere")], None, [("kueue", "job-w", 2, None)], "unknown-queue"),
    ([workload("w", version="v1beta1")], None, [("kueue", "job-w", 2, 0)], "v1beta1"),
    # a CPU-only workload never needs GPU quota: 2 pods x 4 cores fit 1000 - 16
    ([workload("cpu", gpus_per_pod=0)], cluster_queue(gpus="0", reserved_gpus="0"),
     [("kueue", "job-cpu", 2, 0)], "cpu-only"),
]


@pytest.mark.parametrize("workloads, cq, expected", [k[:3] for k in KUEUE],
                         ids=[k[3] for k in KUEUE])
def test_kueue_admission_estimate(workloads, cq, expected):
    assert summary(kueue_items(workloads, cq)) == expected


# ------------------------------------------------------------- Kueue admission checks

PROV = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
        "metadata": {"name": "prov"},
        "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}}
MULTI = {**PROV, "metadata": {"name": "multi"},
         "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}}
OTHER = {**PROV, "metadata": {"name": "budget"}, "spec": {"controllerName": "example.com/budget"}}


def checked(*states, reserved=True):
    """A 2-pod Workload with `status.admissionChecks` of (name, state) pairs."""
    body = workload("w", conditions=(condition("QuotaReserved"),) if reserved else ())
    body["status"]["admissionChecks"] = [
        {"name": name, "state": state, "lastTransitionTime": stamp(NOW - 30), "message": ""}
        for name, state in states]
    return body


def cq_with_checks(*names, on_flavors=()):
    body = cluster_queue()
    body["spec"]["admissionChecksStrategy"] = {"admissionChecks": [
        {"name": name, "onFlavors": list(on_flavors)} for name in names]}
    return body


def check_summary(items):
    """(pods, expected is now / None, covered) per item."""
    return [(i.pods, None if i.expected_s is None else round(i.expected_s - NOW), i.covered)
            for i in items]


CHECKS = [
    # CA provisions for the ProvisioningRequest Kueue made: placeholders would launch the
    # same 2 nodes again, so listed and covered, never due
    ([checked(("prov", "Pending"))], None, [(2, None, True)], "provisioning-request-pending"),
    # provisioned, another check still pending: CA's nodes are booked for it
    ([checked(("prov", "Ready"), ("budget", "Pending"))], None, [(2, None, True)],
     "provisioning-request-ready-other-pending"),
    # a check of another controller only: the quota is reserved, due now (as before)
    ([checked(("budget", "Pending"))], None, [(2, 0, False)], "other-controller-pending"),
    # Retry: Kueue releases the quota and requeues later: unknown time
    ([checked(("budget", "Retry"))], None, [(2, None, False)], "retry"),
    ([checked(("budget", "Rejected"))], None, [], "rejected"),
    # MultiKueue: it runs in a worker cluster, never here
    ([checked(("multi", "Pending"))], None, [], "multikueue"),
    # not reserved yet, but its ClusterQueue sends every Workload to the ProvisioningRequest
    # controller: CA will provision it when it gets quota, so covered already
    ([workload("w")], cq_with_checks("prov"), [(2, None, True)], "queue-has-provisioning-check"),
    # the check applies to some flavors only: which one the Workload gets is not modelled,
    # so it is estimated as before (4 GPUs of room, 2 wanted: due now)
    ([workload("w")], cq_with_checks("prov", on_flavors=("spot",)), [(2, 0, False)],
     "provisioning-check-on-some-flavors"),
    # a check named by the Workload whose AdmissionCheck is unknown: a plain check
    ([checked(("gone", "Pending"))], None, [(2, 0, False)], "unknown-check"),
]


@pytest.mark.parametrize("workloads, cq, expected", [c[:3] for c in CHECKS],
                         ids=[c[3] for c in CHECKS])
def test_kueue_admission_checks(workloads, cq, expected):
    items = kueue.workload_items(
        [kueue.parse_workload(w, GPU) for w in workloads], [kueue.parse_local_queue(LOCAL_QUEUE)],
        [kueue.parse_cluster_queue(cq or cluster_queue(), GPU)], NOW,
        [kueue.parse_admission_check(c) for c in (PROV, MULTI, OTHER)])
    assert check_summary(items) == expected


def test_a_v1beta1_cluster_queue_lists_its_checks_by_name():
    body = cluster_queue()
    body["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    body["spec"]["admissionChecks"] = ["prov"]
    assert kueue.parse_cluster_queue(body, GPU).checks == ("prov",)


def test_a_workload_has_its_jobs_key():
    item, = kueue_items([workload("w")])
    assert item.key == "batch/Job/team/w"
    assert "position 1 in ClusterQueue cq" in item.reason


@pytest.mark.parametrize(
    "obj, message",
    [(job("x", parallelism=-1), "job team/x.spec.parallelism"),
     ({**job("x"), "spec": {"template": {"spec": {"containers": [
         {"resources": {"requests": {"cpu": "lots"}}}]}}}}, "job team/x.spec.template"),
     ({**job("x"), "metadata": {**meta("x"), "creationTimestamp": "yesterday"}},
      "creationTimestamp")],
    ids=["negative-parallelism", "bad-quantity", "bad-time"],
)
def test_bad_objects_are_input_errors_naming_them(obj, message):
    with pytest.raises(InputError, match=message):
        batch.parse_job(obj, GPU)


# ------------------------------------------------------------------------- gated pods

def gated_pod(name, *gates, node=None, phase="Pending"):
    body = pod(name, node=node, phase=phase)
    body["spec"]["schedulingGates"] = [{"name": gate} for gate in gates]
    return body


GATED = [
    (gated_pod("a", "headstart.io/placement"), [("gated", "a", 1, 0)], "headstart-placement"),
    # Kueue's topology gate: the Workload is admitted, the pod waits for its domain only
    (gated_pod("t", "kueue.x-k8s.io/topology"), [("gated", "t", 1, 0)], "kueue-topology"),
    # Kueue's admission gate: its Workload is counted by the kueue source, not here
    (gated_pod("k", "kueue.x-k8s.io/admission"), [], "kueue-admission-left-to-kueue"),
    (gated_pod("e", "example.com/x", "kueue.x-k8s.io/elastic-job"), [], "kueue-elastic-job"),
    (pod("p", node=None, phase="Pending"), [], "not-gated"),
    (gated_pod("f", "example.com/x", phase="Failed"), [], "finished"),
]


@pytest.mark.parametrize("obj, expected", [g[:2] for g in GATED], ids=[g[2] for g in GATED])
def test_gated_pods(obj, expected):
    items = gated.gated_items([live_pod(obj, GPU)], NOW)
    assert summary(items) == expected
    assert all(i.request == ONE_GPU and i.key == f"/Pod/team/{i.name}" for i in items)


def test_stamp_round_trips():
    assert stamp(NOW) == "2027-01-15T08:00:00Z"


def test_a_trainjob_headstart_suspended_is_expected_when_it_resumes_it():
    obj = trainjob()
    obj["spec"]["suspend"] = True
    obj["metadata"].setdefault("labels", {})["headstart.io/suspended"] = str(int(NOW + 600))
    parsed = kubeflow.parse_trainjob(obj, GPU)
    # suspended: all 4 nodes, due in 10 minutes (its mark), not as a suspended job's guess
    assert summary(kubeflow.training_items([parsed], count_pods([]), NOW, HOUR)) == [
        ("kubeflow", "tj", 4, 600)]
