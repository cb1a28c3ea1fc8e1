"""A TrainJob's gang evicted by suspending the TrainJob, against the REAL Kubeflow Trainer
(kubeflow/trainer v2.3.0, built from its public source like the other components:
`trainer-controller-manager` and `crds/trainer.kubeflow.org_*.yaml` in
HEADSTART_E2E_BIN) and the REAL JobSet controller (as in test_jobset_suspension.py); the
tests skip when any is absent. As installed (issue 26).

A TrainJob's pods are a JobSet's Jobs' (pod -> Job -> JobSet -> TrainJob, each the next
one's controller) and the trainer decides that JobSet's suspension, so headstart
suspends the TrainJob, the top of that chain.

The cluster: pg-c, one 8-GPU kwok node, and a node group `ghost` the admitter is told
can add 2 more there, which never come; the shipped extender with a 20 s bind timeout
and a 5 s backoff; the JobSet controller and the trainer, each with its webhooks
(defaulting and validation, on 127.0.0.1) registered, running as the cluster's admin.

- A TrainJob "tj" of 3 nodes on a ClusterTrainingRuntime whose pods ask for 8 GPUs on
  pg-c (its Job's backoffLimit 0: one evicted pod would fail it for good) is admitted
  counting on the ghost nodes; 20 s on, not whole, its gang is evicted by suspending
  the TrainJob (never its JobSet or Job). The trainer suspends the JobSet, the JobSet
  controller the Job, the Job controller deletes the pods counting no failure; after
  the backoff the admitter resumes the TrainJob: it says Suspended False (Resumed), not
  Failed, its Job is not failed, and its new pods wait behind the gate.
- The bound on the extender's right: with its token, the shipped
  ValidatingAdmissionPolicy `headstart-extender-jobset-edits` refuses a runtime patch or
  another label along with a suspension (the rest of a TrainJob's spec is immutable by
  its CRD's own rules) and a suspension without headstart's label;
  it accepts suspending it with the label and releasing it (which the trainer's own
  webhooks accept too).
"""

from __future__ import annotations

import base64
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.e2e.controlplane import ENV_VAR, optional_problem
from tests.e2e.headstart import patch_as_extender
from tests.e2e.kube import NotYet
from tests.e2e.objects import GPU_TOLERATION, HEADSTART_SCHEDULER, bound_node
from tests.e2e.processes import free_ports
from tests.e2e.suspension import (
    BACKOFF_S,
    MARK,
    TIMEOUT_S,
    conditions,
    evicted_then_resumed,
    ghost_cluster,
)
from tests.e2e.test_gang_recovery import GROUP_KEY
from tests.e2e.test_jobset_suspension import (
    CONTROLLER as JOBSET_CONTROLLER,
)
from tests.e2e.test_jobset_suspension import (
    CRD as JOBSET_CRD,
)
from tests.e2e.test_jobset_suspension import (
    jobset_problem,
    start_jobset_controller,
)

LOGS = ["headstart-extender", "trainer", "jobset-controller", "kube-controller-manager"]
TRAINER = "trainer-controller-manager"
CRDS = tuple(Path("crds") / f"trainer.kubeflow.org_{plural}.yaml"
             for plural in ("trainjobs", "trainingruntimes", "clustertrainingruntimes"))
API = "trainer.kubeflow.org/v1alpha1"
RUNTIME = "torch-gpu"
STAGED_RUNTIME = "torch-gpu-staged"


def trainer_problem() -> str | None:
    return jobset_problem() or optional_problem(
        (TRAINER, *CRDS), "build kubeflow/trainer's controller manager and copy its CRDs "
        "there to run the TrainJob suspension tests")


@pytest.fixture(scope="module")
def trainer_cluster(e2e_clusters):
    problem = trainer_problem()
    if problem:
        pytest.skip(problem)
    directory = Path(os.environ[ENV_VAR])
    cluster, extender = ghost_cluster(e2e_clusters, "trainjob-suspension", LOGS,
                                      (directory / JOBSET_CRD, *(directory / crd for crd in CRDS)))
    try:
        start_jobset_controller(cluster, directory / JOBSET_CONTROLLER)
        start_trainer(cluster, directory / TRAINER)
        cluster.kube.create(f"/apis/{API}/clustertrainingruntimes", runtime())
        yield cluster, extender
    finally:
        cluster.stop()


def start_trainer(cluster, binary: Path) -> None:
    """The trainer with its webhooks served on 127.0.0.1 (the API server's own serving
    certificate, in the directory controller-runtime reads under $TMPDIR) and registered
    by URL, as its Deployment's Service would have them; its own certificate management
    off."""
    workdir = cluster.workdir / "trainer"
    certs = workdir / "tmp" / "k8s-webhook-server" / "serving-certs"
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copy(cluster.pki.server_cert, certs / "tls.crt")
    shutil.copy(cluster.pki.server_key, certs / "tls.key")
    webhook, health = free_ports(2)
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1", "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}",
                   "readinessEndpointName": "readyz", "livenessEndpointName": "healthz"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": webhook, "host": "127.0.0.1"},
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
    }))
    cluster.run("trainer", [binary, f"--kubeconfig={cluster.admin_kubeconfig}",
                            f"--config={config}", "--zap-devel=false"],
                env={**os.environ, "TMPDIR": str(workdir / "tmp")})

    def ready():
        try:
            return requests.get(f"http://127.0.0.1:{health}/readyz", timeout=2).ok or \
                NotYet("not ready")
        except requests.RequestException as error:
            return NotYet(str(error))

    cluster.wait("the trainer ready", ready, 60, LOGS)
    ca = base64.b64encode(Path(cluster.pki.ca_cert).read_bytes()).decode()

    def hook(verb: str, plural: str) -> dict[str, Any]:
        kind = plural.removesuffix("s")
        return {"name": f"{'defaulter' if verb == 'mutate' else 'validator'}.{kind}."
                        "trainer.kubeflow.org",
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {"url": f"https://127.0.0.1:{webhook}/{verb}-trainer-"
                                        f"kubeflow-org-v1alpha1-{kind}", "caBundle": ca},
                "rules": [{"apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["v1alpha1"],
                           "operations": ["CREATE", "UPDATE"], "resources": [plural]}]}

    for kind, verb, plurals in (
            ("Mutating", "mutate", ("trainjobs",)),
            ("Validating", "validate", ("trainjobs", "trainingruntimes",
                                        "clustertrainingruntimes"))):
        cluster.kube.create(
            f"/apis/admissionregistration.k8s.io/v1/{kind.lower()}webhookconfigurations", {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": f"{kind}WebhookConfiguration",
                "metadata": {"name": f"{'defaulter' if verb == 'mutate' else 'validator'}"
                                     ".trainer.kubeflow.org"},
                "webhooks": [hook(verb, plural) for plural in plurals]})


def runtime() -> dict[str, Any]:
    """A torch ClusterTrainingRuntime of one replicated job `node` whose pods ask
    headstart-scheduler for 8 GPUs on pg-c, `required`, and run until deleted (kwok)."""
    pod = {"metadata": {"annotations": {"headstart.io/placement-group": "required",
                                        "e2e/runs-until-deleted": "true"}},
           "spec": {"schedulerName": HEADSTART_SCHEDULER, "terminationGracePeriodSeconds": 0,
                    "tolerations": [GPU_TOLERATION], "nodeSelector": {GROUP_KEY: "pg-c"},
                    "containers": [{"name": "node", "image": "x", "resources": {
                        "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
                        "limits": {"nvidia.com/gpu": "8"}}}]}}
    return {"apiVersion": API, "kind": "ClusterTrainingRuntime",
            "metadata": {"name": RUNTIME, "labels": {"trainer.kubeflow.org/framework": "torch"}},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {
                "replicatedJobs": [{"name": "node", "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step":
                                            "trainer"}},
                    "spec": {"backoffLimit": 0, "template": pod}}}]}}}}


def staged_runtime() -> dict[str, Any]:
    """`runtime()` with a dataset initializer before its nodes (`dependsOn` it Complete,
    as the trainer's own torchtune runtimes): an 8-GPU pod on pg-c that kwok completes."""
    staged = runtime()
    staged["metadata"]["name"] = STAGED_RUNTIME
    (node,) = staged["spec"]["template"]["spec"]["replicatedJobs"]
    init_pod = yaml.safe_load(yaml.safe_dump(node["template"]["spec"]["template"]))
    del init_pod["metadata"]["annotations"]["e2e/runs-until-deleted"]
    init_pod["spec"]["containers"][0]["name"] = "dataset-initializer"
    init_pod["spec"]["restartPolicy"] = "Never"
    initializer = {"name": "dataset-initializer", "template": {
        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step":
                                "dataset-initializer"}},
        "spec": {"backoffLimit": 0, "template": init_pod}}}
    node["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
    staged["spec"]["template"]["spec"]["replicatedJobs"] = [initializer, node]
    return staged


def live(cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    """The TrainJob's pods not being deleted: its JobSet's (the trainer puts no label of
    its own on them)."""
    return [p for p in cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods",
                                         label_selector=f"jobset.sigs.k8s.io/jobset-name={name}")
            if not p["metadata"].get("deletionTimestamp")]


def trainjob(name: str, nodes: int) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "TrainJob", "metadata": {"name": name},
            "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org",
                                    "kind": "ClusterTrainingRuntime", "name": RUNTIME},
                     "trainer": {"numNodes": nodes}}}


def test_a_trainjobs_gang_is_evicted_by_suspending_the_trainjob_and_resumed(
        trainer_cluster, namespace, e2e_timings):
    cluster, _ = trainer_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    path = f"/apis/{API}/namespaces/{namespace}/trainjobs/tj"
    kube.create(f"/apis/{API}/namespaces/{namespace}/trainjobs", trainjob("tj", 3))
    cycle = evicted_then_resumed(
        cluster, namespace, "TrainJob", "tj", path, lambda: live(cluster, namespace, "tj"),
        lambda job: job["spec"].get("suspend"), "Resumed", LOGS,
        children=("JobSet", "Job"), first_pods=3)
    child = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/tj-node-0")
    assert not child["status"].get("failed") and "Failed" not in conditions(child), \
        child["status"]
    e2e_timings.record("trainer: a TrainJob suspended, not failed, resumed",
                       evicted_since_admitted=cycle.evicted_s,
                       resumed_since_admitted=cycle.resumed_s,
                       timeout_s=TIMEOUT_S, backoff_s=BACKOFF_S)
    kube.delete(f"{path}?propagationPolicy=Background")


def test_a_trainjob_with_an_initializer_binds_its_nodes(trainer_cluster, namespace,
                                                        e2e_timings):
    # The TrainJob's gang is its initializer and its node (size 2); the node pod comes
    # only once the initializer has Succeeded, so its PodGroup asks for the 1 live pod
    # (issue 46: minMember 2 against 1 live pod never bound).
    cluster, _ = trainer_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/apis/{API}/clustertrainingruntimes", staged_runtime())
    job = trainjob("staged", 1)
    job["spec"]["runtimeRef"]["name"] = STAGED_RUNTIME
    kube.create(f"/apis/{API}/namespaces/{namespace}/trainjobs", job)
    created = time.monotonic()

    def node_bound():
        pods = {p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name"): p
                for p in live(cluster, namespace, "staged")}
        node = pods.get("node")
        if node is None or not bound_node(node):
            phases = {name: p["status"].get("phase") for name, p in pods.items()}
            return NotYet(f"pods by replicated job: {phases}")
        return pods

    pods = cluster.wait("the TrainJob's node bound after its initializer", node_bound,
                        120, LOGS)
    bound_s = time.monotonic() - created
    init = kube.list(f"/api/v1/namespaces/{namespace}/pods", label_selector=(
        "jobset.sigs.k8s.io/replicatedjob-name=dataset-initializer"))
    assert [p["status"]["phase"] for p in init] == ["Succeeded"]
    group_name = pods["node"]["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"]
    group = kube.get(f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/"
                     f"podgroups/{group_name}")
    assert group["spec"]["minMember"] == 1, group["spec"]
    e2e_timings.record("trainer: a TrainJob's node bound after its initializer",
                       bound_since_created=bound_s)
    kube.delete(f"/apis/{API}/namespaces/{namespace}/trainjobs/staged?"
                "propagationPolicy=Background")
    kube.delete(f"/apis/{API}/clustertrainingruntimes/{STAGED_RUNTIME}")


def test_the_extender_may_only_suspend_and_release_a_trainjob(trainer_cluster, namespace):
    cluster, _ = trainer_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/apis/{API}/namespaces/{namespace}/trainjobs", trainjob("plain", 1))
    mark = {MARK: str(int(time.time()) + 60)}
    # Most of a TrainJob's spec is immutable by its CRD's own rules; runtimePatches is
    # not, nor are its labels.
    refused = {
        "a runtime patch along with a suspension": {
            "metadata": {"labels": mark}, "spec": {"suspend": True, "runtimePatches": [
                {"manager": "headstart.io/x", "trainingRuntimeSpec": {}}]}},
        "another label along with a suspension": {
            "metadata": {"labels": {**mark, "team": "x"}}, "spec": {"suspend": True}},
        "a suspension without the label": {"spec": {"suspend": True}},
    }
    for what, patch in refused.items():
        code, err = patch_as_extender(cluster, namespace, "trainjobs", "plain", patch, api=API)
        assert code in (403, 422) and "headstart-extender-jobset-edits" in err, (
            what, code, err)
    code, err = patch_as_extender(cluster, namespace, "trainjobs", "plain", {
        "metadata": {"labels": mark}, "spec": {"suspend": True}}, api=API)
    assert code == 200, err
    code, err = patch_as_extender(cluster, namespace, "trainjobs", "plain", {
        "metadata": {"labels": {MARK: None}}, "spec": {"suspend": False}}, api=API)
    assert code == 200, err
    found = kube.get(f"/apis/{API}/namespaces/{namespace}/trainjobs/plain")
    assert found["spec"]["suspend"] is False
    assert MARK not in (found["metadata"].get("labels") or {})
    kube.delete(f"/apis/{API}/namespaces/{namespace}/trainjobs/plain?"
                "propagationPolicy=Background")
