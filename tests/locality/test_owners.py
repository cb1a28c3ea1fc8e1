"""Owner objects as job sizes: Kubeflow replica specs, JobSet replicated jobs (in
stages when they depend on each other), TrainJobs through their JobSet, and counts that
do not parse as a reason."""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.owners import parse_owner, with_owner_size
from tests.locality.builders import make_pod


def pytorchjob(name="pt", **replicas):
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"pytorchReplicaSpecs": {k: v for k, v in replicas.items()}}}


def jobset(name="js", *replicated):
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"replicatedJobs": list(replicated)}}


def rjob(name, replicas=None, parallelism=None, depends=()):
    entry = {"name": name, "template": {"spec": {}}}
    if replicas is not None:
        entry["replicas"] = replicas
    if parallelism is not None:
        entry["template"]["spec"]["parallelism"] = parallelism
    if depends:
        entry["dependsOn"] = [{"name": d, "status": "Complete"} for d in depends]
    return entry


def pod(labels):
    return replace(make_pod("p", namespace="ns"), labels=labels)


KF = {"training.kubeflow.org/job-name": "pt"}


def js_pod(part):
    return {"jobset.sigs.k8s.io/jobset-name": "js", "jobset.sigs.k8s.io/replicatedjob-name": part}


def owners(*objects):
    table: dict = {}
    for obj in objects:
        version = obj.get("apiVersion", "").rpartition("/")[2]
        owner = parse_owner(obj, obj["kind"], version=version)
        table.setdefault(owner.key, {})[owner.source] = owner
    return table


def mpijob_v2(workers, policy=None, name="pt"):
    """An mpi-operator v2 MPIJob (kubeflow.org/v2beta1)."""
    spec = {"slotsPerWorker": 8,
            "mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": workers}}}
    if policy is not None:
        spec["launcherCreationPolicy"] = policy
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def mpi_pod(role):
    # mpi-operator v2 labels its pods with job-name and job-role (no replica-type).
    return {"training.kubeflow.org/job-name": "pt", "training.kubeflow.org/job-role": role}


@pytest.mark.parametrize(("policy", "role", "size"), [
    # AtStartup (the default): the launcher is created with the workers: 1 + 4.
    (None, "worker", 5),
    (None, "launcher", 5),
    ("AtStartup", "worker", 5),
    # WaitForWorkersReady: the launcher comes once the workers are Ready, so a worker
    # must not wait for it (4), and the launcher counts both stages (5).
    ("WaitForWorkersReady", "worker", 4),
    ("WaitForWorkersReady", "launcher", 5),
])
def test_mpi_operator_v2_size(policy, role, size) -> None:
    resolved = with_owner_size(pod(mpi_pod(role)), owners(mpijob_v2(4, policy)))
    assert (resolved.owner_size, resolved.owner_wait) == (size, None)


def test_mpi_operator_v2_bad_policy_is_a_reason() -> None:
    resolved = with_owner_size(pod(mpi_pod("worker")), owners(mpijob_v2(4, "Later")))
    assert resolved.owner_size is None
    assert "launcherCreationPolicy: expected AtStartup or WaitForWorkersReady, got 'Later'" in (
        resolved.owner_wait)


def test_an_mpijob_listed_at_two_versions_is_one_owner() -> None:
    # A cluster converting between v1 and v2beta1 lists the same object twice: one size.
    v1 = {**mpijob_v2(4), "apiVersion": "kubeflow.org/v1"}
    resolved = with_owner_size(pod(mpi_pod("worker")), owners(v1, mpijob_v2(4)))
    assert (resolved.owner_size, resolved.owner_wait) == (5, None)


@pytest.mark.parametrize(("objects", "labels", "size"), [
    # Master (replicas defaults to 1) + 7 workers + 2 PS = 10.
    ((pytorchjob(Master={}, Worker={"replicas": 7}, PS={"replicas": 2}),), KF, 10),
    # 4 Jobs x parallelism 2 = 8 node pods.
    ((jobset("js", rjob("node", 4, 2)),), js_pod("node"), 8),
    # launcher 1 + node 4: both start at once (no dependsOn).
    ((jobset("js", rjob("launcher"), rjob("node", 4)),), js_pod("node"), 5),
    # Staged: an initializer pod (stage 0) counts only its stage: 1.
    ((jobset("js", rjob("init"), rjob("node", 4, depends=("init",))),), js_pod("init"), 1),
    # A node pod (stage 1) counts its stage and the ones before: 1 + 4 = 5.
    ((jobset("js", rjob("init"), rjob("node", 4, depends=("init",))),), js_pod("node"), 5),
    # The JobSet wins over the TrainJob of the same name (its pods carry the JobSet's label).
    ((jobset("js", rjob("node", 3)),
      {"kind": "TrainJob", "metadata": {"name": "js", "namespace": "ns"},
       "spec": {"trainer": {"numNodes": 9}}}), js_pod("node"), 3),
    # Owner not seen: no size here (the job settles).
    ((), KF, None),
], ids=["pytorchjob-sum", "jobset-replicas-x-parallelism", "jobset-parallel-parts",
        "jobset-stage-0", "jobset-stage-1", "jobset-over-trainjob", "not-seen"])
def test_owner_size(objects, labels, size) -> None:
    resolved = with_owner_size(pod(labels), owners(*objects))
    assert (resolved.owner_size, resolved.owner_wait) == (size, None)


@pytest.mark.parametrize(("objects", "labels", "reason"), [
    ((pytorchjob(Worker={"replicas": "4"}),), KF,
     "its owner's replica counts do not parse: PyTorchJob ns/pt: spec.pytorchReplicaSpecs."
     "Worker.replicas: expected a whole number >= 0, got '4'"),
    ((jobset("js", rjob("node", depends=("nowhere",))),), js_pod("node"),
     "dependsOn names unknown 'nowhere'"),
    (({"kind": "TrainJob", "metadata": {"name": "js", "namespace": "ns"}, "spec": {}},),
     js_pod("node"), "its TrainJob ns/js is seen but not the JobSet it creates"),
    ((pytorchjob(Worker={}), {**pytorchjob(Worker={}), "kind": "TFJob"}), KF,
     "PyTorchJob and TFJob are both named ns/pt"),
], ids=["replicas-a-string", "unknown-dependency", "trainjob-without-jobset", "two-kinds"])
def test_owner_without_a_size_says_why(objects, labels, reason) -> None:
    resolved = with_owner_size(pod(labels), owners(*objects))
    assert resolved.owner_size is None
    assert reason in resolved.owner_wait


def batch_job(name="train", mode="Indexed", parallelism=4, completions=4):
    spec = {"parallelism": parallelism}
    if mode is not None:
        spec["completionMode"] = mode
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def indexed_pod(job="train", index=True):
    made = replace(make_pod("p", namespace="ns"), controller=("Job", job))
    if index:
        made = replace(made, annotations={"batch.kubernetes.io/job-completion-index": "0"})
    return made


@pytest.mark.parametrize(("job", "size"), [
    (batch_job(), 4),  # Indexed, completions = parallelism: a gang of 4
    (batch_job(completions=8), None),  # later indexes start as earlier ones end: no gang
    (batch_job(completions=None), None),
    (batch_job(mode=None), None),  # NonIndexed (the default)
], ids=["indexed-gang", "more-completions", "no-completions", "non-indexed"])
def test_an_indexed_job_sizes_its_pods_without_labels(job, size) -> None:
    resolved = with_owner_size(indexed_pod(), owners(job))
    assert (resolved.owner_size, resolved.owner_wait) == (size, None)


def test_a_job_pod_without_its_index_names_no_owner() -> None:
    """A NonIndexed Job's pods carry no completion index: not sized, not a job here."""
    resolved = with_owner_size(indexed_pod(index=False), owners(batch_job()))
    assert resolved.owner_size is None


def test_an_indexed_jobs_bad_parallelism_is_a_reason() -> None:
    resolved = with_owner_size(indexed_pod(), owners(batch_job(parallelism="4")))
    assert "spec.parallelism" in resolved.owner_wait


def lws(size=4, policy=None, name="serve"):
    spec = {"replicas": 2, "leaderWorkerTemplate": {"size": size}}
    if policy is not None:
        spec["startupPolicy"] = policy
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def lws_pod(worker, group="1", name="serve"):
    return pod({"leaderworkerset.sigs.k8s.io/name": name,
                "leaderworkerset.sigs.k8s.io/group-index": group,
                "leaderworkerset.sigs.k8s.io/worker-index": str(worker)})


@pytest.mark.parametrize("policy,worker,size", [
    (None, 0, 4), (None, 3, 4),  # LeaderCreated: leader and workers are one gang of 4
    ("LeaderCreated", 0, 4),
    ("LeaderReady", 0, 1),  # the leader alone first: its workers come once it is Ready
    ("LeaderReady", 2, 4),  # the workers: the whole group
])
def test_a_leaderworkerset_group_is_a_gang_staged_by_its_startup_policy(policy, worker, size):
    assert with_owner_size(lws_pod(worker), owners(lws(4, policy))).owner_size == size


def test_each_leaderworkerset_group_is_its_own_job_led_by_worker_zero():
    from locality.config import LocalityConfig
    from locality.jobs import identify
    from locality.model import JobKey, Role

    config = LocalityConfig()
    leader, worker = identify(lws_pod(0), config), identify(lws_pod(2), config)
    assert leader.key == worker.key == JobKey("ns", "serve-1")
    assert (leader.role, worker.role) == (Role.CHIEF, Role.WORKER)
    assert identify(lws_pod(0, group="0"), config).key == JobKey("ns", "serve-0")


def test_a_leaderworkerset_with_a_bad_startup_policy_says_why():
    sized = with_owner_size(lws_pod(0), owners(lws(4, "Eventually")))
    assert sized.owner_size is None
    assert "startupPolicy: expected LeaderCreated or LeaderReady, got 'Eventually'" in \
        sized.owner_wait
