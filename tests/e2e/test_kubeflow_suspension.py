"""Kubeflow jobs' gangs evicted by suspending the job (`spec.runPolicy.suspend`), against
the REAL Kubeflow training operator (kubeflow/training-operator release-1.9, as in
test_elastic_pytorchjob.py, here with PyTorchJob, TFJob and MPIJob on; the tests skip
when it or the TFJob or MPIJob CRD is absent), as installed (issue 26).

The cluster: pg-c, one 8-GPU kwok node, and a node group `ghost` the admitter is told can
add 2 more there, which never come; the shipped extender with a 20 s bind timeout and a
5 s backoff; the training operator with its validating webhooks.

- A PyTorchJob "pt" of a Master and 2 Workers, a TFJob "tf" of a PS and 2 Workers, and
  an MPIJob "mpi" of a Launcher and 2 Workers (8-GPU pods pinned to pg-c, runPolicy
  backoffLimit 0: one evicted pod would fail the job for good), each admitted counting
  on the ghost nodes; 20 s on, not whole, its gang is evicted by suspending the job. The
  training operator deletes its pods and says Suspended; after the backoff the admitter
  resumes it: the job is not Failed, says Suspended False (resumed), its other runPolicy
  fields are as its owner wrote them, and its new pods wait behind the gate.
- The bound on the extender's right: with its token, the shipped
  ValidatingAdmissionPolicy `headstart-extender-pytorchjob-edits` refuses suspending a
  PyTorchJob Kueue manages, a suspension without headstart's label, resuming one
  headstart did not suspend and a change of its backoff limit along with a suspension;
  it accepts suspending a plain PyTorchJob with the label and releasing it (which the
  operator's own validating webhook accepts too). `headstart-extender-kubeflow-edits`
  refuses any resize of a TFJob or an MPIJob and a change of an MPIJob's slots along
  with a suspension, and accepts a marked suspension and its release.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ENV_VAR
from tests.e2e.headstart import patch_as_extender
from tests.e2e.kube import NotYet
from tests.e2e.suspension import (
    BACKOFF_S,
    MARK,
    TIMEOUT_S,
    evicted_then_resumed,
    ghost_cluster,
)
from tests.e2e.test_elastic_pytorchjob import (
    API,
    CRD,
    JOB_LABEL,
    OPERATOR,
    live_pods,
    operator_problem,
    patch_pytorchjob_as_extender,
    pytorchjob,
    replica,
    training_operator,
)
from tests.e2e.test_gang_recovery import GROUP_KEY

LOGS = ["headstart-extender", "training-operator", "kube-controller-manager"]
TF_CRD = Path("crds") / "kubeflow.org_tfjobs.yaml"
MPI_CRD = Path("crds") / "kubeflow.org_mpijobs.yaml"


@pytest.fixture(scope="module")
def suspension_cluster(e2e_clusters):
    problem = operator_problem()
    if problem:
        pytest.skip(problem)
    directory = Path(os.environ[ENV_VAR])
    for crd in (TF_CRD, MPI_CRD):
        if not (directory / crd).is_file():
            pytest.skip(f"no {crd} in {directory}: copy the training operator's CRDs there "
                        "to run the Kubeflow suspension tests")
    cluster, extender = ghost_cluster(e2e_clusters, "kubeflow-suspension", LOGS,
                                      (directory / CRD, directory / TF_CRD, directory / MPI_CRD))
    with training_operator(cluster, directory / OPERATOR, ("pytorchjob", "tfjob", "mpijob")):
        yield cluster, extender


def pinned(name: str, workers: int, kind: str = "PyTorchJob", **run_policy: Any
           ) -> dict[str, Any]:
    """`pytorchjob(name, workers)` (or a TFJob of a PS and `workers` Workers, its
    containers named `tensorflow` as its webhook requires, or an MPIJob of a Launcher and
    `workers` Workers) with every pod pinned to pg-c and `run_policy`."""
    job = pytorchjob(name, workers)
    if kind == "TFJob":
        specs = {"PS": replica(1, "8", "64Gi"), "Worker": replica(workers, "8", "64Gi")}
        for spec in specs.values():
            spec["template"]["spec"]["containers"][0]["name"] = "tensorflow"
        job.update(kind="TFJob", spec={"tfReplicaSpecs": specs})
    if kind == "MPIJob":
        specs = {"Launcher": replica(1, "8", "64Gi"), "Worker": replica(workers, "8", "64Gi")}
        job.update(kind="MPIJob", spec={"mpiReplicaSpecs": specs, "slotsPerWorker": 1})
    for spec in next(iter(job["spec"].values())).values():
        spec["template"]["spec"]["nodeSelector"] = {GROUP_KEY: "pg-c"}
    if run_policy:
        job["spec"]["runPolicy"] = dict(run_policy)
    return job


PLURALS = {"PyTorchJob": "pytorchjobs", "TFJob": "tfjobs", "MPIJob": "mpijobs"}


@pytest.mark.parametrize(("kind", "name"), [("PyTorchJob", "pt"), ("TFJob", "tf"),
                                            ("MPIJob", "mpi")])
def test_a_kubeflow_jobs_gang_is_evicted_by_suspending_it_and_resumed(
        suspension_cluster, namespace, e2e_timings, kind, name):
    cluster, _ = suspension_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    collection = f"{API}/namespaces/{namespace}/{PLURALS[kind]}"
    path = f"{collection}/{name}"
    kube.create(collection, pinned(name, 2, kind, backoffLimit=0, cleanPodPolicy="None"))
    cycle = evicted_then_resumed(
        cluster, namespace, kind, name, path, lambda: live_pods(cluster, namespace, name),
        lambda job: job["spec"]["runPolicy"].get("suspend"), f"{kind}Resumed", LOGS)
    assert cycle.job["spec"]["runPolicy"]["backoffLimit"] == 0
    assert cycle.job["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    e2e_timings.record(f"kubeflow: a {kind} suspended, not failed, resumed",
                       evicted_since_admitted=cycle.evicted_s,
                       resumed_since_admitted=cycle.resumed_s,
                       timeout_s=TIMEOUT_S, backoff_s=BACKOFF_S)
    kube.delete(f"{path}?propagationPolicy=Background")
    cluster.wait("its pods gone", lambda: not kube.list(
        f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{JOB_LABEL}={name}")
        or NotYet("pods left"), 60, LOGS)


def test_the_extender_may_only_suspend_and_release_a_pytorchjob_as_the_policy_says(
        suspension_cluster, namespace):
    cluster, _ = suspension_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    # Each pinned to pg-b, where no node is: nothing runs, only the API's answers matter.
    for name, labels, suspend in (("plain", {}, False),
                                  ("queued", {"kueue.x-k8s.io/queue-name": "q"}, False),
                                  ("paused", {}, True)):  # its owner suspended it
        job = pinned(name, 1, suspend=suspend)
        job["metadata"]["labels"] = labels
        for spec in job["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["nodeSelector"] = {GROUP_KEY: "pg-b"}
        kube.create(f"{API}/namespaces/{namespace}/pytorchjobs", job)
    mark = {MARK: str(int(time.time()) + 60)}
    refused = {
        "suspending a PyTorchJob Kueue manages": ("queued", {
            "metadata": {"labels": mark}, "spec": {"runPolicy": {"suspend": True}}}),
        "suspending without the label": ("plain", {"spec": {"runPolicy": {"suspend": True}}}),
        "resuming one headstart did not suspend": ("paused", {
            "spec": {"runPolicy": {"suspend": False}}}),
        "its backoff limit along with a suspension": ("plain", {
            "metadata": {"labels": mark},
            "spec": {"runPolicy": {"suspend": True, "backoffLimit": 100}}}),
    }
    for what, (name, patch) in refused.items():
        code, err = patch_pytorchjob_as_extender(cluster, namespace, name, patch)
        assert code in (403, 422) and "headstart-extender-pytorchjob-edits" in err, (
            what, code, err)
    code, err = patch_pytorchjob_as_extender(cluster, namespace, "plain", {
        "metadata": {"labels": mark}, "spec": {"runPolicy": {"suspend": True}}})
    assert code == 200, err
    assert kube.get(f"{API}/namespaces/{namespace}/pytorchjobs/plain")["spec"][
        "runPolicy"]["suspend"] is True
    code, err = patch_pytorchjob_as_extender(cluster, namespace, "plain", {
        "metadata": {"labels": {MARK: None}}, "spec": {"runPolicy": {"suspend": False}}})
    assert code == 200, err
    found = kube.get(f"{API}/namespaces/{namespace}/pytorchjobs/plain")
    assert found["spec"]["runPolicy"]["suspend"] is False
    assert MARK not in (found["metadata"].get("labels") or {})
    for name in ("plain", "queued", "paused"):
        kube.delete(f"{API}/namespaces/{namespace}/pytorchjobs/{name}?"
                    "propagationPolicy=Background")


@pytest.mark.parametrize(("kind", "resize"), [
    ("TFJob", {"tfReplicaSpecs": {"Worker": {"replicas": 3}}}),
    ("MPIJob", {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}),
    ("MPIJob", {"slotsPerWorker": 8, "runPolicy": {"suspend": True}}),
])
def test_the_extender_may_only_suspend_and_release_a_tfjob_or_mpijob(
        suspension_cluster, namespace, kind, resize):
    cluster, _ = suspension_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    name, plural = f"plain-{kind.lower()}", PLURALS[kind]
    job = pinned(name, 1, kind)
    for spec in next(iter(job["spec"].values())).values():  # its replica specs
        spec["template"]["spec"]["nodeSelector"] = {GROUP_KEY: "pg-b"}  # no node: idle
    kube.create(f"{API}/namespaces/{namespace}/{plural}", job)
    mark = {MARK: str(int(time.time()) + 60)}
    code, err = patch_as_extender(cluster, namespace, plural, name, {
        "metadata": {"labels": mark}, "spec": resize})
    assert code in (403, 422) and "headstart-extender-kubeflow-edits" in err, (code, err)
    code, err = patch_as_extender(cluster, namespace, plural, name, {
        "metadata": {"labels": mark}, "spec": {"runPolicy": {"suspend": True}}})
    assert code == 200, err
    code, err = patch_as_extender(cluster, namespace, plural, name, {
        "metadata": {"labels": {MARK: None}}, "spec": {"runPolicy": {"suspend": False}}})
    assert code == 200, err
    found = kube.get(f"{API}/namespaces/{namespace}/{plural}/{name}")
    assert found["spec"]["runPolicy"]["suspend"] is False
    assert MARK not in (found["metadata"].get("labels") or {})
    kube.delete(f"{API}/namespaces/{namespace}/{plural}/{name}?propagationPolicy=Background")
