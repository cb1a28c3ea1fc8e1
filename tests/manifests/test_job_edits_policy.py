"""The shipped ValidatingAdmissionPolicies `headstart-extender-job-edits`,
`headstart-extender-jobset-edits`, `-pytorchjob-edits` and `-kubeflow-edits`, evaluated
with a CEL interpreter (cel-python) on updates the extender's account could send: the
ones headstart sends pass, every other change is refused. kube-apiserver runs the same
expressions in tests/e2e/test_gang_recovery.py and test_elastic.py; this catches a wrong
rule without a cluster.

cel-python is not kube-apiserver's CEL: it lacks Kubernetes' library (no `quantity`,
`url`, `isSorted`), which the policy does not use; `has()`, `matches()`, `all()`,
`int()` and the ternary behave as in CEL's specification.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from locality.suspension import SUSPENDABLE, job_suspension, release_patch, suspend_patch

ADMISSION = Path(__file__).resolve().parents[2] / "manifests" / "base" / "admission"
MARK = "headstart.io/suspended"


def _policy(name: str) -> dict[str, Any]:
    for path in sorted(ADMISSION.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] == "ValidatingAdmissionPolicy" and \
                    doc["metadata"]["name"] == name:
                return doc
    raise AssertionError(f"{name} is not shipped")


ENV = celpy.Environment()


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    return ENV.program(ENV.compile(expression)).evaluate(activation)


def refusals(old: dict[str, Any], new: dict[str, Any],
             policy: str = "headstart-extender-job-edits") -> list[str]:
    """The messages of the validations `new` (an update of `old`) fails; an expression
    that cannot be evaluated fails, as under the policy's `failurePolicy: Fail`."""
    spec = _policy(policy)["spec"]
    activation: dict[str, Any] = {"object": celpy.json_to_cel(new),
                                  "oldObject": celpy.json_to_cel(old)}
    variables: dict[Any, Any] = {}
    for variable in spec.get("variables", ()):  # each may read the ones before it
        activation["variables"] = celpy.celtypes.MapType(variables)
        variables[celpy.celtypes.StringType(variable["name"])] = _evaluate(
            variable["expression"], activation)
    activation["variables"] = celpy.celtypes.MapType(variables)
    failed = []
    for validation in spec["validations"]:
        try:
            passed = _evaluate(validation["expression"], activation) == \
                celpy.celtypes.BoolType(True)
        except celpy.CELEvalError as error:  # kube-apiserver: an error refuses (Fail)
            passed, validation = False, {"message": f"error: {error.args[0]}"}
        if not passed:
            failed.append(validation["message"])
    return failed


def job(labels=None, annotations=None, owners=None, **spec):
    metadata: dict[str, Any] = {"name": "train", "namespace": "team", "uid": "u-1",
                                "labels": dict(labels or {})}
    if annotations:
        metadata["annotations"] = annotations
    if owners:
        metadata["ownerReferences"] = owners
    body = {"parallelism": 2, "completions": 2, "completionMode": "Indexed",
            "suspend": False, "backoffLimit": 6, "template": {"spec": {"containers": []}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
            "spec": {**body, **spec}}


def merged(obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch applied (RFC 7386), as kube-apiserver applies headstart's."""
    out = copy.deepcopy(obj)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = merged(out.get(key) or {}, value)
        else:
            out[key] = value
    return out


OPTED = {"headstart.io/min-size": "1", "headstart.io/max-size": "4"}


def test_what_headstart_sends_passes():
    plain = job()
    suspended = merged(plain, suspend_patch(job_suspension(plain), 1764370000.4))
    assert suspended["spec"]["suspend"] is True and suspended["metadata"]["labels"][MARK]
    assert refusals(plain, suspended) == []
    released = merged(suspended, release_patch(job_suspension(suspended)))
    assert refusals(suspended, released) == []
    # Its owner resumed it first: releasing only removes the mark.
    resumed = merged(suspended, {"spec": {"suspend": False}})
    assert refusals(resumed, merged(resumed, release_patch(job_suspension(resumed)))) == []
    # A CronJob's Job, and a resize of one that opted in.
    cron = job(owners=[{"kind": "CronJob", "name": "nightly", "controller": True}])
    assert refusals(cron, merged(cron, suspend_patch(job_suspension(cron), 5))) == []
    opted = job(annotations=OPTED)
    assert refusals(opted, merged(opted, {"spec": {"parallelism": 3, "completions": 3}})) == []


REFUSED = {
    "suspending a Job Kueue manages": (
        job(labels={"kueue.x-k8s.io/queue-name": "q"}),
        {"metadata": {"labels": {MARK: "5"}}, "spec": {"suspend": True}}),
    "suspending a JobSet's Job": (
        job(owners=[{"kind": "JobSet", "name": "js", "controller": True}]),
        {"metadata": {"labels": {MARK: "5"}}, "spec": {"suspend": True}}),
    "suspending a Job another controller manages": (
        job(managedBy="kueue.x-k8s.io/multikueue"),
        {"metadata": {"labels": {MARK: "5"}}, "spec": {"suspend": True}}),
    "suspending without the mark": (job(), {"spec": {"suspend": True}}),
    "a mark that is not a time": (
        job(), {"metadata": {"labels": {MARK: "soon"}}, "spec": {"suspend": True}}),
    "resuming a Job headstart did not suspend": (
        job(annotations=OPTED, suspend=True), {"spec": {"suspend": False}}),
    "removing the mark yet keeping it suspended": (
        job(labels={MARK: "5"}, suspend=True), {"metadata": {"labels": {MARK: None}}}),
    "a resize with a suspension": (
        job(annotations=OPTED),
        {"metadata": {"labels": {MARK: "5"}}, "spec": {"suspend": True, "parallelism": 3,
                                                       "completions": 3}}),
    "another label with a suspension": (
        job(), {"metadata": {"labels": {MARK: "5", "team": "x"}}, "spec": {"suspend": True}}),
    "the pod template with a suspension": (
        job(), {"metadata": {"labels": {MARK: "5"}},
                "spec": {"suspend": True, "template": {"spec": {"containers": [{}]}}}}),
    "an annotation with a release": (
        job(labels={MARK: "5"}, suspend=True),
        {"metadata": {"labels": {MARK: None}, "annotations": {"x": "y"}},
         "spec": {"suspend": False}}),
    "changing the mark of a suspended Job": (
        job(labels={MARK: "5"}, suspend=True), {"metadata": {"labels": {MARK: "9"}}}),
    "resizing a Job that did not opt in": (
        job(), {"spec": {"parallelism": 3, "completions": 3}}),
    "a resize beyond max-size": (
        job(annotations=OPTED), {"spec": {"parallelism": 5, "completions": 5}}),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_every_other_update_is_refused(case):
    old, patch = REFUSED[case]
    assert refusals(old, merged(old, patch)), f"{case}: allowed"


JOBSET_POLICY = "headstart-extender-jobset-edits"


def jobset(labels=None, owners=None, **spec):
    obj = job(labels, owners=owners)
    obj.update(apiVersion="jobset.x-k8s.io/v1alpha2", kind="JobSet")
    obj["spec"] = {"suspend": False, "replicatedJobs": [
        {"name": "workers", "replicas": 1,
         "template": {"spec": {"parallelism": 2, "template": {"spec": {}}}}}], **spec}
    return obj


def test_what_headstart_sends_a_jobset_passes():
    plain = jobset()
    suspended = merged(plain, suspend_patch(job_suspension(plain, "JobSet"), 1764370000.4))
    assert refusals(plain, suspended, JOBSET_POLICY) == []
    released = merged(suspended, release_patch(job_suspension(suspended, "JobSet")))
    assert refusals(suspended, released, JOBSET_POLICY) == []
    resumed = merged(suspended, {"spec": {"suspend": False}})
    assert refusals(resumed, merged(resumed, release_patch(
        job_suspension(resumed, "JobSet"))), JOBSET_POLICY) == []


SUSPEND = {"metadata": {"labels": {MARK: "5"}}, "spec": {"suspend": True}}
JOBSET_REFUSED = {
    "suspending a JobSet Kueue manages": (jobset(labels={"kueue.x-k8s.io/queue-name": "q"}),
                                          SUSPEND),
    "suspending a TrainJob's JobSet": (
        jobset(owners=[{"kind": "TrainJob", "name": "t", "controller": True}]), SUSPEND),
    "suspending a JobSet another controller manages": (
        jobset(managedBy="kueue.x-k8s.io/multikueue"), SUSPEND),
    "suspending without the mark": (jobset(), {"spec": {"suspend": True}}),
    "resuming a JobSet headstart did not suspend": (jobset(suspend=True),
                                                    {"spec": {"suspend": False}}),
    "removing the mark yet keeping it suspended": (
        jobset(labels={MARK: "5"}, suspend=True), {"metadata": {"labels": {MARK: None}}}),
    "the replicated jobs with a suspension": (
        jobset(), {**SUSPEND, "spec": {"suspend": True, "replicatedJobs": []}}),
    "a TTL with a release": (
        jobset(labels={MARK: "5"}, suspend=True),
        {"metadata": {"labels": {MARK: None}},
         "spec": {"suspend": False, "ttlSecondsAfterFinished": 1}}),
    "another label with a suspension": (
        jobset(), {"metadata": {"labels": {MARK: "5", "team": "x"}},
                   "spec": {"suspend": True}}),
    "an annotation with a release": (
        jobset(labels={MARK: "5"}, suspend=True),
        {"metadata": {"labels": {MARK: None}, "annotations": {"x": "y"}},
         "spec": {"suspend": False}}),
    "any change but a suspension or a release": (
        jobset(), {"metadata": {"labels": {"team": "x"}}}),
}


@pytest.mark.parametrize("case", sorted(JOBSET_REFUSED))
def test_every_other_update_of_a_jobset_is_refused(case):
    old, patch = JOBSET_REFUSED[case]
    assert refusals(old, merged(old, patch), JOBSET_POLICY), f"{case}: allowed"


def rayjob(**spec):
    """A RayJob (ray.io/v1) KubeRay may suspend: it shuts its cluster down when done."""
    obj = job()
    obj.update(apiVersion="ray.io/v1", kind="RayJob")
    obj["spec"] = {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True,
                   "rayClusterSpec": {"headGroupSpec": {"template": {"spec": {}}}}, **spec}
    return {**obj, "spec": {k: v for k, v in obj["spec"].items() if v is not None}}


def test_a_rayjob_kuberay_would_fail_when_suspended_is_refused():
    plain = rayjob()
    suspended = merged(plain, suspend_patch(job_suspension(plain, "RayJob"), 1764370000.4))
    assert refusals(plain, suspended, JOBSET_POLICY) == []
    assert refusals(suspended, merged(suspended, release_patch(
        job_suspension(suspended, "RayJob"))), JOBSET_POLICY) == []
    for spec in ({"shutdownAfterJobFinishes": False}, {"shutdownAfterJobFinishes": None},
                 {"clusterSelector": {"ray.io/cluster": "shared"}}):
        assert refusals(rayjob(**spec), merged(rayjob(**spec), SUSPEND), JOBSET_POLICY), spec


def trainjob(labels=None, owners=None, **spec):
    """A TrainJob (trainer.kubeflow.org/v1alpha1) of 2 nodes on a cluster runtime."""
    obj = job(labels, owners=owners)
    obj.update(apiVersion="trainer.kubeflow.org/v1alpha1", kind="TrainJob")
    obj["spec"] = {"suspend": False,
                   "runtimeRef": {"apiGroup": "trainer.kubeflow.org",
                                  "kind": "ClusterTrainingRuntime", "name": "torch"},
                   "trainer": {"numNodes": 2, "image": "train:1"}, **spec}
    return obj


def test_what_headstart_sends_a_trainjob_passes():
    plain = trainjob()
    suspended = merged(plain, suspend_patch(job_suspension(plain, "TrainJob"), 1764370000.4))
    assert refusals(plain, suspended, JOBSET_POLICY) == []
    released = merged(suspended, release_patch(job_suspension(suspended, "TrainJob")))
    assert refusals(suspended, released, JOBSET_POLICY) == []
    # The trainer's own manager name may be suspended; another one's may not.
    own = trainjob(managedBy="trainer.kubeflow.org/trainjob-controller")
    assert refusals(own, merged(own, SUSPEND), JOBSET_POLICY) == []


TRAINJOB_REFUSED = {
    "suspending a TrainJob MultiKueue manages": (
        trainjob(managedBy="kueue.x-k8s.io/multikueue"), SUSPEND),
    "a JobSet's manager name on a TrainJob": (
        trainjob(managedBy="jobset.sigs.k8s.io/jobset-controller"), SUSPEND),
    "suspending a TrainJob Kueue manages": (
        trainjob(labels={"kueue.x-k8s.io/queue-name": "q"}), SUSPEND),
    "the nodes with a suspension": (
        trainjob(), {**SUSPEND, "spec": {"suspend": True, "trainer": {"numNodes": 4}}}),
    "the runtime with a release": (
        trainjob(labels={MARK: "5"}, suspend=True),
        {"metadata": {"labels": {MARK: None}},
         "spec": {"suspend": False, "runtimeRef": {"name": "other"}}}),
    "a spec field added with a suspension": (
        trainjob(), {**SUSPEND, "spec": {"suspend": True, "labels": {"a": "b"}}}),
    "resuming a TrainJob headstart did not suspend": (trainjob(suspend=True),
                                                      {"spec": {"suspend": False}}),
}


@pytest.mark.parametrize("case", sorted(TRAINJOB_REFUSED))
def test_every_other_update_of_a_trainjob_is_refused(case):
    old, patch = TRAINJOB_REFUSED[case]
    assert refusals(old, merged(old, patch), JOBSET_POLICY), f"{case}: allowed"


PYTORCHJOB_POLICY = "headstart-extender-pytorchjob-edits"


def pytorchjob(labels=None, annotations=None, owners=None, run_policy=None, workers=2):
    obj = job(labels, annotations, owners)
    obj.update(apiVersion="kubeflow.org/v1", kind="PyTorchJob")
    template = {"spec": {"containers": [{"name": "pytorch", "image": "train:1"}]}}
    obj["spec"] = {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template},
            "Worker": {"replicas": workers, "restartPolicy": "OnFailure",
                       "template": template}},
        # as the training operator's defaulting leaves it
        "runPolicy": {"cleanPodPolicy": "None", "suspend": False, **(run_policy or {})}}
    return obj


def test_what_headstart_sends_a_pytorchjob_passes():
    plain = pytorchjob()
    suspended = merged(plain, suspend_patch(job_suspension(plain, "PyTorchJob"), 1764370000.4))
    assert suspended["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "suspend": True}
    assert refusals(plain, suspended, PYTORCHJOB_POLICY) == []
    released = merged(suspended, release_patch(job_suspension(suspended, "PyTorchJob")))
    assert released["spec"]["runPolicy"]["suspend"] is False
    assert refusals(suspended, released, PYTORCHJOB_POLICY) == []
    resumed = merged(suspended, {"spec": {"runPolicy": {"suspend": False}}})
    assert refusals(resumed, merged(resumed, release_patch(
        job_suspension(resumed, "PyTorchJob"))), PYTORCHJOB_POLICY) == []
    # A job without runPolicy, and the elastic resize the policy already allowed.
    bare = pytorchjob()
    del bare["spec"]["runPolicy"]
    assert refusals(bare, merged(bare, suspend_patch(job_suspension(bare, "PyTorchJob"), 5)),
                    PYTORCHJOB_POLICY) == []
    opted = pytorchjob(annotations=OPTED)
    assert refusals(opted, merged(opted, {"spec": {"pytorchReplicaSpecs": {
        "Worker": {"replicas": 3}}}}), PYTORCHJOB_POLICY) == []


PYTORCH_SUSPEND = {"metadata": {"labels": {MARK: "5"}}, "spec": {"runPolicy": {"suspend": True}}}
PYTORCHJOB_REFUSED = {
    "suspending a PyTorchJob Kueue manages": (
        pytorchjob(labels={"kueue.x-k8s.io/queue-name": "q"}), PYTORCH_SUSPEND),
    "suspending one another controller manages": (
        pytorchjob(run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}), PYTORCH_SUSPEND),
    "suspending one another object controls": (
        pytorchjob(owners=[{"kind": "Pipeline", "name": "p", "controller": True}]),
        PYTORCH_SUSPEND),
    "suspending without the mark": (pytorchjob(), {"spec": {"runPolicy": {"suspend": True}}}),
    "a mark that is not a time": (
        pytorchjob(), {"metadata": {"labels": {MARK: "soon"}},
                       "spec": {"runPolicy": {"suspend": True}}}),
    "resuming one headstart did not suspend": (
        pytorchjob(annotations=OPTED, run_policy={"suspend": True}),
        {"spec": {"runPolicy": {"suspend": False}}}),
    "removing the mark yet keeping it suspended": (
        pytorchjob(labels={MARK: "5"}, run_policy={"suspend": True}),
        {"metadata": {"labels": {MARK: None}}}),
    "a resize with a suspension": (
        pytorchjob(annotations=OPTED),
        {**PYTORCH_SUSPEND, "spec": {"runPolicy": {"suspend": True},
                                     "pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}}),
    "the backoff limit with a suspension": (
        pytorchjob(), {**PYTORCH_SUSPEND, "spec": {"runPolicy": {"suspend": True,
                                                                  "backoffLimit": 100}}}),
    "the clean-pod policy with a release": (
        pytorchjob(labels={MARK: "5"}, run_policy={"suspend": True}),
        {"metadata": {"labels": {MARK: None}},
         "spec": {"runPolicy": {"suspend": False, "cleanPodPolicy": "All"}}}),
    "the image with a suspension": (
        pytorchjob(), {**PYTORCH_SUSPEND, "spec": {"runPolicy": {"suspend": True},
                                                   "pytorchReplicaSpecs": {"Master": {
                                                       "template": {"spec": {"containers": [
                                                           {"name": "pytorch",
                                                            "image": "other:1"}]}}}}}}),
    "another label with a suspension": (
        pytorchjob(), {"metadata": {"labels": {MARK: "5", "team": "x"}},
                       "spec": {"runPolicy": {"suspend": True}}}),
    "an annotation with a release": (
        pytorchjob(labels={MARK: "5"}, run_policy={"suspend": True}),
        {"metadata": {"labels": {MARK: None}, "annotations": {"x": "y"}},
         "spec": {"runPolicy": {"suspend": False}}}),
    "resizing one that did not opt in": (
        pytorchjob(), {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}}),
    "a resize beyond max-size": (
        pytorchjob(annotations=OPTED),
        {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 5}}}}),
}


@pytest.mark.parametrize("case", sorted(PYTORCHJOB_REFUSED))
def test_every_other_update_of_a_pytorchjob_is_refused(case):
    old, patch = PYTORCHJOB_REFUSED[case]
    assert refusals(old, merged(old, patch), PYTORCHJOB_POLICY), f"{case}: allowed"


KUBEFLOW_POLICY = "headstart-extender-kubeflow-edits"


def tfjob(labels=None, owners=None, run_policy=None):
    obj = job(labels, None, owners)
    obj.update(apiVersion="kubeflow.org/v1", kind="TFJob")
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "train:1"}]}}
    obj["spec"] = {
        "tfReplicaSpecs": {"PS": {"replicas": 1, "template": template},
                           "Worker": {"replicas": 2, "template": template}},
        "runPolicy": {"cleanPodPolicy": "Running", "suspend": False, **(run_policy or {})}}
    return obj


def mpijob(labels=None, owners=None, run_policy=None, version="v1"):
    """An MPIJob of the training operator (kubeflow.org/v1) or of mpi-operator
    (v2beta1): a Launcher and 2 Workers."""
    obj = job(labels, None, owners)
    obj.update(apiVersion=f"kubeflow.org/{version}", kind="MPIJob")
    template = {"spec": {"containers": [{"name": "mpi", "image": "train:1"}]}}
    obj["spec"] = {
        "slotsPerWorker": 1,
        "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": template},
                            "Worker": {"replicas": 2, "template": template}},
        "runPolicy": {"cleanPodPolicy": "Running", "suspend": False, **(run_policy or {})}}
    return obj


KUBEFLOW_JOBS = {"TFJob": tfjob, "MPIJob": mpijob,
                 "MPIJob v2beta1": lambda **kw: mpijob(version="v2beta1", **kw)}


@pytest.mark.parametrize("kind", sorted(KUBEFLOW_JOBS))
def test_what_headstart_sends_a_tfjob_or_mpijob_passes(kind):
    plain = KUBEFLOW_JOBS[kind]()
    kind = kind.split()[0]
    suspended = merged(plain, suspend_patch(job_suspension(plain, kind), 1764370000.4))
    assert refusals(plain, suspended, KUBEFLOW_POLICY) == []
    released = merged(suspended, release_patch(job_suspension(suspended, kind)))
    assert refusals(suspended, released, KUBEFLOW_POLICY) == []
    resumed = merged(suspended, {"spec": {"runPolicy": {"suspend": False}}})
    assert refusals(resumed, merged(resumed, release_patch(
        job_suspension(resumed, kind))), KUBEFLOW_POLICY) == []


def test_an_mpijob_naming_its_own_operator_may_be_suspended_at_either_version():
    for version, manager in (("v1", "kubeflow.org/training-operator"),
                             ("v2beta1", "kubeflow.org/mpi-operator")):
        own = mpijob(run_policy={"managedBy": manager}, version=version)
        assert refusals(own, merged(own, TF_SUSPEND), KUBEFLOW_POLICY) == [], version


TF_SUSPEND = {"metadata": {"labels": {MARK: "5"}}, "spec": {"runPolicy": {"suspend": True}}}
TFJOB_REFUSED = {
    "suspending a TFJob Kueue manages": (tfjob(labels={"kueue.x-k8s.io/queue-name": "q"}),
                                         TF_SUSPEND),
    "suspending one another controller manages": (
        tfjob(run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}), TF_SUSPEND),
    "suspending without the mark": (tfjob(), {"spec": {"runPolicy": {"suspend": True}}}),
    "resuming one headstart did not suspend": (
        tfjob(run_policy={"suspend": True}), {"spec": {"runPolicy": {"suspend": False}}}),
    "removing the mark yet keeping it suspended": (
        tfjob(labels={MARK: "5"}, run_policy={"suspend": True}),
        {"metadata": {"labels": {MARK: None}}}),
    "any resize": (tfjob(), {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 3}}}}),
    "the workers with a suspension": (
        tfjob(), {**TF_SUSPEND, "spec": {"runPolicy": {"suspend": True},
                                         "tfReplicaSpecs": {"Worker": {"replicas": 3}}}}),
    "the success policy with a suspension": (
        tfjob(), {**TF_SUSPEND, "spec": {"runPolicy": {"suspend": True},
                                         "successPolicy": "AllWorkers"}}),
    "the backoff limit with a release": (
        tfjob(labels={MARK: "5"}, run_policy={"suspend": True}),
        {"metadata": {"labels": {MARK: None}},
         "spec": {"runPolicy": {"suspend": False, "backoffLimit": 9}}}),
    "another label with a suspension": (
        tfjob(), {"metadata": {"labels": {MARK: "5", "team": "x"}},
                  "spec": {"runPolicy": {"suspend": True}}}),
    "an annotation with a release": (
        tfjob(labels={MARK: "5"}, run_policy={"suspend": True}),
        {"metadata": {"labels": {MARK: None}, "annotations": {"x": "y"}},
         "spec": {"runPolicy": {"suspend": False}}}),
}


MPIJOB_REFUSED = {
    "any resize": (mpijob(), {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}}),
    "its slots per worker with a suspension": (
        mpijob(), {**TF_SUSPEND, "spec": {"runPolicy": {"suspend": True},
                                          "slotsPerWorker": 8}}),
    "a run-policy field added with a suspension": (
        mpijob(), {**TF_SUSPEND, "spec": {"runPolicy": {"suspend": True,
                                                        "activeDeadlineSeconds": 60}}}),
    "a run-policy field removed with a release": (
        mpijob(labels={MARK: "5"}, run_policy={"suspend": True}),
        {"metadata": {"labels": {MARK: None}},
         "spec": {"runPolicy": {"suspend": False, "cleanPodPolicy": None}}}),
    "a spec field removed with a suspension": (
        mpijob(), {**TF_SUSPEND, "spec": {"runPolicy": {"suspend": True},
                                          "slotsPerWorker": None}}),
    "suspending an MPIJob another object controls": (
        mpijob(owners=[{"kind": "Pipeline", "name": "p", "controller": True}]), TF_SUSPEND),
    "suspending a v1 MPIJob managed by mpi-operator's name": (
        mpijob(run_policy={"managedBy": "kubeflow.org/mpi-operator"}), TF_SUSPEND),
    "suspending a v2beta1 MPIJob managed by the training operator's name": (
        mpijob(run_policy={"managedBy": "kubeflow.org/training-operator"}, version="v2beta1"),
        TF_SUSPEND),
    "a v2beta1 resize": (mpijob(version="v2beta1"),
                         {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}}),
}
KUBEFLOW_REFUSED = {**{("TFJob", case): v for case, v in TFJOB_REFUSED.items()},
           **{("MPIJob", case): v for case, v in MPIJOB_REFUSED.items()}}


@pytest.mark.parametrize("case", sorted(KUBEFLOW_REFUSED), ids=" ".join)
def test_every_other_update_of_a_tfjob_or_mpijob_is_refused(case):
    old, patch = KUBEFLOW_REFUSED[case]
    assert refusals(old, merged(old, patch), KUBEFLOW_POLICY), f"{case}: allowed"


def test_every_kind_headstart_suspends_has_a_patch_right_and_a_policy_bounding_it():
    """A kind added to `locality.suspension.SUSPENDABLE` without both would be patched
    unbounded, or refused with a 403 at the first eviction."""
    rbac = ADMISSION.parent / "extender" / "rbac.yaml"
    rules = [rule for doc in yaml.safe_load_all(rbac.read_text())
             if doc and doc["kind"] == "ClusterRole" for rule in doc.get("rules", ())]
    policies = [doc for path in sorted(ADMISSION.glob("*.yaml"))
                for doc in yaml.safe_load_all(path.read_text())
                if doc and doc["kind"] == "ValidatingAdmissionPolicy"
                and "headstart-extender" in str(doc["spec"].get("matchConditions"))]
    for kind, how in SUSPENDABLE.items():
        assert any(how.group in rule["apiGroups"] and how.plural in rule["resources"]
                   and "patch" in rule["verbs"] for rule in rules), f"{kind}: no patch right"
        for version in how.managers:
            assert any(how.group in rule["apiGroups"] and version in rule["apiVersions"]
                       and how.plural in rule["resources"] and "UPDATE" in rule["operations"]
                       for policy in policies
                       for rule in policy["spec"]["matchConstraints"]["resourceRules"]), \
                f"{kind} {version}: no policy bounds the extender's edits"
