"""A batch/v1 Job, a JobSet or a PyTorchJob as headstart may suspend it: which it may
not, its mark, and the patches that suspend and release it."""

from __future__ import annotations

import pytest

from locality.owners import OWNER_APIS, parse_owner
from locality.suspension import (
    SUSPENDABLE,
    SUSPENDED_LABEL,
    job_suspension,
    release_patch,
    suspend_patch,
    suspendable,
)


def job(labels=None, owners=None, **spec):
    metadata = {"name": "train", "namespace": "team", "uid": "u-1", "labels": labels or {}}
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
            "spec": {"parallelism": 2, **spec}}


def test_a_plain_job_may_be_suspended_and_is_not_headstarts():
    seen = job_suspension(job(suspend=False))
    assert seen.key == ("Job", "team", "train") and seen.uid == "u-1"
    assert seen.problem is None and not seen.suspended and not seen.ours
    assert seen.resume_at is None


@pytest.mark.parametrize(("obj", "why"), [
    (job(managedBy="kueue.x-k8s.io/multikueue"), "spec.managedBy names"),
    (job(labels={"kueue.x-k8s.io/queue-name": "q"}), "Kueue manages it"),
    (job(owners=[{"kind": "JobSet", "name": "js", "controller": True}]),
     "its controller JobSet js decides"),
    ({"metadata": {"name": "train"}, "spec": {}}, "no uid"),
], ids=["managed-by-another", "kueue", "a-jobsets-job", "no-uid"])
def test_a_job_another_controller_suspends_is_never_headstarts_to_suspend(obj, why):
    assert why in (job_suspension(obj).problem or "")


def jobset(labels=None, owners=None, **spec):
    obj = job(labels, owners, **spec)
    obj.update(apiVersion="jobset.x-k8s.io/v1alpha2", kind="JobSet")
    obj["spec"].pop("parallelism")
    return obj


def test_a_jobsets_job_names_its_jobset_and_the_jobset_may_be_suspended():
    child = job_suspension(job(owners=[{"kind": "JobSet", "name": "js", "controller": True}]))
    assert child.controller == ("JobSet", "js") and child.problem is not None
    seen = job_suspension(jobset(suspend=False), "JobSet")
    assert seen.key == ("JobSet", "team", "train") and seen.where == "JobSet team/train"
    assert seen.problem is None and seen.controller is None
    # The JobSet controller's own manager name is its default; another one decides.
    own = jobset(managedBy="jobset.sigs.k8s.io/jobset-controller")
    assert job_suspension(own, "JobSet").problem is None
    assert "spec.managedBy names" in job_suspension(
        jobset(managedBy="kubernetes.io/job-controller"), "JobSet").problem
    assert "spec.managedBy names" in job_suspension(
        job(managedBy="jobset.sigs.k8s.io/jobset-controller")).problem


@pytest.mark.parametrize(("obj", "why"), [
    (jobset(labels={"kueue.x-k8s.io/queue-name": "q"}), "Kueue manages it"),
    (jobset(owners=[{"kind": "TrainJob", "name": "t", "controller": True}]),
     "its controller TrainJob t decides"),
    (jobset(owners=[{"kind": "CronJob", "name": "c", "controller": True}]),
     "its controller CronJob c decides"),
], ids=["kueue", "a-trainjobs-jobset", "a-cronjob-controls-no-jobset"])
def test_a_jobset_another_controller_suspends_is_never_headstarts_to_suspend(obj, why):
    assert why in (job_suspension(obj, "JobSet").problem or "")


def test_another_kind_is_never_suspended():
    assert "does not suspend a LeaderWorkerSet" in job_suspension(
        job(), "LeaderWorkerSet").problem


def mpijob(version="v1", **run_policy):
    obj = job()
    obj.update(apiVersion=f"kubeflow.org/{version}", kind="MPIJob")
    obj["spec"] = {"mpiReplicaSpecs": {"Launcher": {"replicas": 1},
                                       "Worker": {"replicas": 2}},
                   "runPolicy": dict(run_policy)}
    return obj


def test_an_mpijob_is_suspended_at_either_operators_version_with_its_manager():
    seen = parse_owner(mpijob(suspend=False), "MPIJob", version="v1").suspension
    assert seen is not None and seen.problem is None and not seen.suspended
    assert seen.api_version == "kubeflow.org/v1"
    assert suspend_patch(seen, 7)["spec"] == {"runPolicy": {"suspend": True}}
    # mpi-operator's v2beta1: its own manager name, not the training operator's.
    v2 = parse_owner(mpijob("v2beta1"), "MPIJob", version="v2beta1").suspension
    assert v2 is not None and v2.problem is None and v2.api_version == "kubeflow.org/v2beta1"
    own = mpijob("v2beta1", managedBy="kubeflow.org/mpi-operator")
    assert parse_owner(own, "MPIJob", version="v2beta1").suspension.problem is None
    other = mpijob("v2beta1", managedBy="kubeflow.org/training-operator")
    assert "names 'kubeflow.org/training-operator'" in parse_owner(
        other, "MPIJob", version="v2beta1").suspension.problem
    assert suspendable("MPIJob", "v2beta1") and not suspendable("MPIJob", "v3")
    assert "of kubeflow.org/v3" in job_suspension(mpijob("v3"), "MPIJob").problem


def test_every_suspendable_kind_is_watched_at_each_version_it_is_patched_at():
    watched = {(api.kind, f"{api.group}/{api.version}") for api in OWNER_APIS}
    for kind, how in SUSPENDABLE.items():
        for version in how.managers:
            assert (kind, f"{how.group}/{version}") in watched, (kind, version)


def pytorchjob(labels=None, owners=None, **run_policy):
    obj = job(labels, owners)
    obj.update(apiVersion="kubeflow.org/v1", kind="PyTorchJob")
    obj["spec"] = {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}},
                   "runPolicy": {"cleanPodPolicy": "None", **run_policy}}
    return obj


def test_a_pytorchjob_is_suspended_through_its_run_policy():
    seen = job_suspension(pytorchjob(suspend=False), "PyTorchJob")
    assert seen.key == ("PyTorchJob", "team", "train") and seen.problem is None
    assert not seen.suspended
    assert job_suspension(pytorchjob(suspend=True), "PyTorchJob").suspended
    # A top-level spec.suspend is no PyTorchJob field: it suspends nothing.
    stray = pytorchjob()
    stray["spec"]["suspend"] = True
    assert not job_suspension(stray, "PyTorchJob").suspended
    assert suspend_patch(seen, 7)["spec"] == {"runPolicy": {"suspend": True}}
    assert release_patch(seen)["spec"] == {"runPolicy": {"suspend": False}}
    # The training operator's own manager name is its default; another one decides.
    own = pytorchjob(managedBy="kubeflow.org/training-operator")
    assert job_suspension(own, "PyTorchJob").problem is None


@pytest.mark.parametrize(("obj", "why"), [
    (pytorchjob(managedBy="kueue.x-k8s.io/multikueue"),
     "spec.runPolicy.managedBy names 'kueue.x-k8s.io/multikueue'"),
    (pytorchjob(labels={"kueue.x-k8s.io/queue-name": "q"}), "Kueue manages it"),
    (pytorchjob(owners=[{"kind": "Pipeline", "name": "p", "controller": True}]),
     "its controller Pipeline p decides"),
], ids=["managed-by-another", "kueue", "controlled"])
def test_a_pytorchjob_another_controller_suspends_is_never_headstarts(obj, why):
    assert why in (job_suspension(obj, "PyTorchJob").problem or "")


def test_a_cronjobs_job_and_the_job_controllers_own_manager_may_be_suspended():
    cron = job(owners=[{"kind": "CronJob", "name": "nightly", "controller": True}])
    assert job_suspension(cron).problem is None
    assert job_suspension(job(managedBy="kubernetes.io/job-controller")).problem is None
    # An owner reference that is not the controller decides nothing.
    assert job_suspension(job(owners=[{"kind": "JobSet", "name": "js"}])).problem is None


@pytest.mark.parametrize(("mark", "resume_at"), [
    ("1764370000", 1764370000.0), ("true", 0.0), ("", 0.0),
], ids=["a-time", "not-a-time-resumes-now", "empty-resumes-now"])
def test_the_mark_says_when_to_resume(mark, resume_at):
    seen = job_suspension(job(labels={SUSPENDED_LABEL: mark}, suspend=True))
    assert seen.ours and seen.suspended and seen.resume_at == resume_at


def test_the_job_controller_acting_on_a_suspension_is_read_from_its_condition():
    obj = job(labels={SUSPENDED_LABEL: "5"}, suspend=True)
    assert not job_suspension(obj).acknowledged
    obj["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    assert job_suspension(obj).acknowledged
    obj["status"] = {"conditions": [{"type": "Suspended", "status": "False"}]}
    assert not job_suspension(obj).acknowledged


def test_bad_content_never_raises():
    for obj in (None, [], {"metadata": []}, {"metadata": {"labels": "x"}, "spec": "y"}):
        seen = job_suspension(obj)
        assert seen.problem is not None and not seen.ours


def test_the_patches_are_conditional_on_the_uid():
    seen = job_suspension(job())
    assert suspend_patch(seen, 100.2) == {
        "metadata": {"uid": "u-1", "labels": {SUSPENDED_LABEL: "101"}},
        "spec": {"suspend": True}}
    assert release_patch(seen) == {
        "metadata": {"uid": "u-1", "labels": {SUSPENDED_LABEL: None}},
        "spec": {"suspend": False}}


def test_a_tfjob_is_suspended_through_its_run_policy_too():
    obj = pytorchjob(suspend=True)
    obj["kind"] = "TFJob"
    obj["spec"] = {"tfReplicaSpecs": obj["spec"].pop("pytorchReplicaSpecs"),
                   "runPolicy": obj["spec"]["runPolicy"]}
    seen = job_suspension(obj, "TFJob")
    assert seen.key == ("TFJob", "team", "train") and seen.suspended and seen.problem is None
    assert suspend_patch(seen, 7)["spec"] == {"runPolicy": {"suspend": True}}


def test_a_relist_of_one_mpijob_version_keeps_the_other_versions_suspensions():
    """The extender watches MPIJobs at v1 and v2beta1 (a cluster serves one); the empty
    list of the version not served must not drop the served one's Jobs."""
    from extender.resolve import Resolver
    from locality.config import LocalityConfig

    resolver = Resolver(LocalityConfig())
    served = parse_owner(mpijob(), "MPIJob", version="v1")
    resolver.replace_owners([served], "MPIJob/v1")
    resolver.replace_owners([], "MPIJob/v2beta1")
    assert list(resolver.batch_jobs()) == [("MPIJob", "team", "train")]
    resolver.replace_owners([], "MPIJob/v1")
    assert resolver.batch_jobs() == {}
