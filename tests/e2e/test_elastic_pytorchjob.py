"""An elastic PyTorchJob against the REAL Kubeflow training operator (kubeflow/
training-operator release-1.9, its v1 manager built from public source like the other
components: `training-operator` and `crds/kubeflow.org_pytorchjobs.yaml` in
HEADSTART_E2E_BIN; the tests skip when they are absent), as installed (issue 28).

The cluster: pg-a, 4 8-GPU kwok nodes; the shipped extender with
`admission.elastic.scale_out_after_seconds: 5`; the training operator (PyTorchJob only)
with its validating webhook served on 127.0.0.1 and registered by URL, running as the
cluster's admin as its Deployment's ClusterRole would let it.

- "grow" is a PyTorchJob that opted in (annotations headstart.io/min-size 1, max-size 3
  on the PyTorchJob: its Worker replicas) of a Master and 3 Workers, 8-GPU pods asking
  8 CPUs and 64 GiB each (light in KOD2's weight), filling pg-a. "claim" is a fixed
  2-pod Indexed Job asking 1 CPU and 4 GiB per 8-GPU pod: heavier. The admitter patches
  "grow"'s Worker replicas to 1; the REAL training operator deletes workers 2 and 1 (the
  highest indices, as `locality.elastic.Removal.HIGHEST_INDEX` says it does), "claim"
  binds whole on their two nodes, and the master and worker 0 are the very same pods
  (uids) on the same nodes. Once "claim" is deleted and no job waits, "grow" is scaled
  out to 3 workers again after 5 s: the operator creates workers 1 and 2, which pass
  the gate into pg-a and bind, and the Gang record counts 4 members again.
- The bound on the extender's right to patch PyTorchJobs: with its token, the shipped
  ValidatingAdmissionPolicy `headstart-extender-pytorchjob-edits` refuses Worker
  replicas above max-size or below min-size, a change of the Master's replica spec or
  of the Worker's template, and any resize of a PyTorchJob that did not opt in; it
  accepts Worker replicas within the bounds (which the operator's own validating
  webhook accepts too).

The operator's cert rotator always runs: it needs the Secret
kubeflow/training-operator-webhook-cert pre-populated with a CA it accepts and a
serving certificate, and the same serving certificate as files in the directory it
hard-codes, /tmp/k8s-webhook-server/serving-certs. So one training operator per host
at a time: these tests must not run in parallel with another copy of themselves.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e import installed
from tests.e2e.controlplane import ENV_VAR, optional_problem
from tests.e2e.headstart import extender_on, patch_as_extender
from tests.e2e.kube import NotYet
from tests.e2e.objects import GPU_TOLERATION, HEADSTART_SCHEDULER, bound_node, kwok_node
from tests.e2e.processes import free_ports
from tests.e2e.test_elastic import bound_pods as bound_indexed_pods
from tests.e2e.test_elastic import light_job
from tests.e2e.test_gang import gang, gang_state, run_job

LOGS = ["headstart-extender", "training-operator", "kube-controller-manager"]
OPERATOR = "training-operator"
CRD = Path("crds") / "kubeflow.org_pytorchjobs.yaml"
API = "/apis/kubeflow.org/v1"
OPERATOR_NAMESPACE = "kubeflow"
# Hard-coded in the operator (in a pod the Secret is mounted there).
SERVING_CERTS = Path("/tmp/k8s-webhook-server/serving-certs")
JOB_LABEL = "training.kubeflow.org/job-name"
TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
NODES = {f"a-{i}": "pg-a" for i in range(4)}
BOUNDS = {"headstart.io/min-size": "1", "headstart.io/max-size": "3"}


def operator_problem() -> str | None:
    """Why the training operator cannot run here (None: it can)."""
    return optional_problem((OPERATOR, CRD), "build kubeflow/training-operator's v1 manager "
                            "and copy its PyTorchJob CRD there to run the elastic PyTorchJob "
                            "tests")


@pytest.fixture(scope="module")
def pytorchjob_cluster(e2e_clusters):
    problem = operator_problem()
    if problem:
        pytest.skip(problem)
    admission = dict(installed.shipped_config("extender")["admission"])
    admission["elastic"] = {"scale_out_after_seconds": 5}
    directory = Path(os.environ[ENV_VAR])
    cluster, extender, _ = extender_on(e2e_clusters, "elastic-pytorchjob", [
        kwok_node(name, memory="768Gi", group=group) for name, group in NODES.items()],
        LOGS, settings={"admission": admission}, crds=(directory / CRD,))
    with training_operator(cluster, directory / OPERATOR):
        yield cluster, extender


def openssl(workdir: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=workdir, check=True, capture_output=True)


def operator_pki(workdir: Path) -> Path:
    """A CA in the form the operator's cert rotator accepts as valid (a PKCS#1 RSA key,
    SAN DNS:training-operator-ca) and a serving certificate from it for
    training-operator.kubeflow.svc and 127.0.0.1, valid long past the rotator's 90-day
    renewal margin, so it keeps them rather than making its own."""
    workdir.mkdir(parents=True, exist_ok=True)
    if (workdir / "tls.crt").exists():
        return workdir
    openssl(workdir, "genrsa", "-traditional", "-out", "ca.key", "2048")
    openssl(workdir, "req", "-x509", "-new", "-key", "ca.key", "-out", "ca.crt", "-days",
            "3650", "-subj", "/CN=training-operator-ca",
            "-addext", "subjectAltName=DNS:training-operator-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")
    openssl(workdir, "genrsa", "-traditional", "-out", "tls.key", "2048")
    openssl(workdir, "req", "-new", "-key", "tls.key", "-out", "tls.csr", "-subj",
            "/CN=training-operator.kubeflow.svc")
    (workdir / "tls.ext").write_text(
        "subjectAltName=DNS:training-operator.kubeflow.svc,DNS:localhost,IP:127.0.0.1\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
    openssl(workdir, "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "tls.crt", "-days", "730", "-extfile", "tls.ext")
    return workdir


WEBHOOK_KINDS = ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")
"""The kinds release-1.9 validates by webhook (pkg/webhooks): not an MPIJob."""


def start_training_operator(cluster, binary: Path, kinds: tuple[str, ...] = ("pytorchjob",)
                            ) -> list[Path]:
    """The training operator (these `kinds` only, lower-case: pytorchjob, tfjob, mpijob)
    with its validating webhooks on 127.0.0.1, registered by URL as its Deployment's
    Service would have them; returns the files it wrote outside the cluster's work dir
    (the serving certificate in the hard-coded directory), for the fixture to remove."""
    pki = operator_pki(cluster.workdir / "training-operator" / "pki")
    files = {name: (pki / name).read_bytes() for name in ("ca.crt", "ca.key", "tls.crt",
                                                           "tls.key")}
    cluster.kube.ensure_namespace(OPERATOR_NAMESPACE, service_account_timeout_s=None)
    cluster.kube.create(f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/secrets", {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "training-operator-webhook-cert"},
        "data": {name: base64.b64encode(data).decode() for name, data in files.items()}})
    SERVING_CERTS.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("tls.crt", "tls.key"):
        (SERVING_CERTS / name).write_bytes(files[name])
        written.append(SERVING_CERTS / name)
    webhook, health = free_ports(2)
    cluster.kube.create(
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validator.training-operator.kubeflow.org"},
            "webhooks": [{
                "name": f"validator.{kind}.training-operator.kubeflow.org",
                "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{webhook}/validate-kubeflow-org-v1-{kind}",
                    "caBundle": base64.b64encode(files["ca.crt"]).decode()},
                "rules": [{"apiGroups": ["kubeflow.org"], "apiVersions": ["v1"],
                           "operations": ["CREATE", "UPDATE"],
                           "resources": [f"{kind}s"]}]}
                for kind in kinds if kind in WEBHOOK_KINDS]})
    cluster.run(OPERATOR, [binary, f"--kubeconfig={cluster.admin_kubeconfig}",
                           *(f"--enable-scheme={kind}" for kind in kinds),
                           "--leader-elect=false",
                           "--metrics-bind-address=0",
                           f"--health-probe-bind-address=127.0.0.1:{health}",
                           f"--webhook-server-port={webhook}"],
                env={**os.environ, "MY_POD_NAMESPACE": OPERATOR_NAMESPACE})

    def ready():
        try:
            return requests.get(f"http://127.0.0.1:{health}/readyz", timeout=2).ok or \
                NotYet("not ready")
        except requests.RequestException as error:
            return NotYet(str(error))

    cluster.wait("the training operator ready", ready, 90, LOGS)
    return written


@contextmanager
def training_operator(cluster, binary: Path, kinds: tuple[str, ...] = ("pytorchjob",)):
    """`start_training_operator`; on leaving, the cluster stopped and the serving
    certificate the operator needs outside the cluster's work dir removed."""
    try:
        written = start_training_operator(cluster, binary, kinds)
    except BaseException:
        cluster.stop()
        raise
    try:
        yield
    finally:
        cluster.stop()
        for path in written:
            path.unlink(missing_ok=True)


def replica(replicas: int, cpu: str, memory: str) -> dict[str, Any]:
    """A replica spec of 8-GPU pods for headstart-scheduler that run until deleted
    (kwok), in a container named `pytorch` (the operator's webhook requires one)."""
    return {"replicas": replicas, "restartPolicy": "OnFailure", "template": {
        "metadata": {"annotations": {"headstart.io/placement-group": "required",
                                     "e2e/runs-until-deleted": "true"}},
        "spec": {"schedulerName": HEADSTART_SCHEDULER, "terminationGracePeriodSeconds": 0,
                 "tolerations": [GPU_TOLERATION],
                 "containers": [{"name": "pytorch", "image": "x", "resources": {
                     "requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": "8"},
                     "limits": {"nvidia.com/gpu": "8"}}}]}}}


def pytorchjob(name: str, workers: int, annotations: dict[str, str] | None = None,
               suspend: bool = False) -> dict[str, Any]:
    """A PyTorchJob of a Master and `workers` Workers, 8 GPUs, 8 CPUs and 64 GiB each."""
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {
        "Master": replica(1, "8", "64Gi"), "Worker": replica(workers, "8", "64Gi")}}
    if suspend:
        spec["runPolicy"] = {"suspend": True}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "annotations": dict(annotations or {})},
            "spec": spec}


def live_pods(cluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return [p for p in cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods",
                                         label_selector=f"{JOB_LABEL}={job}")
            if not p["metadata"].get("deletionTimestamp")]


def placed(cluster, namespace: str, job: str, workers: int):
    """{"master-0" | "worker-N": (pod uid, node)} once the master and exactly `workers`
    workers are live and bound."""
    pods = live_pods(cluster, namespace, job)
    where = {f"{p['metadata']['labels'][TYPE_LABEL]}-{p['metadata']['labels'][INDEX_LABEL]}":
             (p["metadata"]["uid"], bound_node(p)) for p in pods}
    if len(pods) != workers + 1 or not all(node for _, node in where.values()):
        return NotYet(f"{sum(bool(node) for _, node in where.values())} of {workers + 1} "
                      f"bound ({sorted(where)} live)")
    return where


def worker_replicas(cluster, namespace: str, name: str) -> int:
    job = cluster.kube.get(f"{API}/namespaces/{namespace}/pytorchjobs/{name}")
    return job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]


def test_a_heavier_job_scales_an_elastic_pytorchjob_in_and_it_grows_back(
        pytorchjob_cluster, namespace, e2e_timings):
    cluster, _ = pytorchjob_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"{API}/namespaces/{namespace}/pytorchjobs", pytorchjob("grow", 3, BOUNDS))
    before = cluster.wait("grow bound whole", lambda: placed(
        cluster, namespace, "grow", 3), 120, LOGS)
    assert sorted(before) == ["master-0", "worker-0", "worker-1", "worker-2"]
    assert {node for _, node in before.values()} == set(NODES)
    cluster.wait("grow's Gang Running", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 30, LOGS)
    assert gang(cluster, namespace, "grow")["spec"]["size"] == 4

    created = time.monotonic()
    run_job(cluster, namespace, light_job("claim", 2))
    claim = cluster.wait("claim bound whole", lambda: bound_indexed_pods(
        cluster, namespace, "claim", 2), 120, LOGS)
    claim_s = time.monotonic() - created
    assert worker_replicas(cluster, namespace, "grow") == 1
    # The operator removed the highest indices; the master and worker 0 are the very
    # same pods, where they were, and claim took the nodes of workers 1 and 2.
    kept = cluster.wait("grow at 1 worker", lambda: placed(cluster, namespace, "grow", 1),
                        60, LOGS)
    assert kept == {"master-0": before["master-0"], "worker-0": before["worker-0"]}
    assert set(claim.values()) == {before["worker-1"][1], before["worker-2"][1]}
    record = gang(cluster, namespace, "grow")
    assert record["status"]["state"] in ("Running", "Recovering"), record
    assert record["spec"]["size"] == 2, record  # the master and worker 0
    events = [e for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
              if e["reason"] == "HeadstartResized" and e["involvedObject"]["name"] == "grow"]
    assert [e["involvedObject"]["kind"] for e in events] == ["PyTorchJob"], events
    assert events[0]["message"].startswith("3 -> 1: scaled in"), events
    found = kube.get(f"{API}/namespaces/{namespace}/pytorchjobs/grow")
    assert not any(c["type"] == "Failed" and c["status"] == "True"
                   for c in found["status"].get("conditions") or ()), found["status"]

    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/claim?propagationPolicy=Background")
    freed = time.monotonic()
    grown = cluster.wait("grow scaled out to 3 workers and bound", lambda: placed(
        cluster, namespace, "grow", 3), 120, LOGS)
    grow_s = time.monotonic() - freed
    assert worker_replicas(cluster, namespace, "grow") == 3
    assert {k: grown[k] for k in kept} == kept
    assert grown["worker-1"][0] != before["worker-1"][0]  # created again by the operator
    assert {node for _, node in grown.values()} == set(NODES)
    record = cluster.wait("grow's Gang Running at 4", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 60, LOGS)
    assert record["spec"]["size"] == 4, record
    assert record["status"]["domain"] == "placement-group=pg-a", record
    messages = [e["message"] for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
                if e["reason"] == "HeadstartResized" and e["involvedObject"]["name"] == "grow"]
    assert any(m.startswith("1 -> 3: scaled out") for m in messages), messages
    e2e_timings.record("elastic PyTorchJob: scale-in for a heavier job, then scale-out",
                       claim_bound_since_created=claim_s, grown_bound_since_freed=grow_s)
    kube.delete(f"{API}/namespaces/{namespace}/pytorchjobs/grow?propagationPolicy=Background")
    cluster.wait("grow's pods gone", lambda: not live_pods(cluster, namespace, "grow") or
                 NotYet("pods left"), 60, LOGS)


def patch_pytorchjob_as_extender(cluster, namespace: str, name: str, patch: dict
                                 ) -> tuple[int, str]:
    return patch_as_extender(cluster, namespace, "pytorchjobs", name, patch)


def workers(count: int) -> dict[str, Any]:
    return {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": count}}}}


def test_the_extender_may_only_resize_pytorchjobs_within_their_bounds(pytorchjob_cluster,
                                                                       namespace):
    cluster, _ = pytorchjob_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    # Suspended (runPolicy.suspend): nothing runs, only the API's answers matter here.
    for name, opted_in in (("opted", BOUNDS), ("plain", {})):
        kube.create(f"{API}/namespaces/{namespace}/pytorchjobs",
                    pytorchjob(name, 1, opted_in, suspend=True))
    refused = {
        "Worker replicas above its max-size": ("opted", workers(4)),
        "Worker replicas below its min-size": ("opted", workers(0)),
        "the Master's replicas": ("opted", {"spec": {"pytorchReplicaSpecs": {
            "Master": {"replicas": 2}}}}),
        "the Master's template": ("opted", {"spec": {"pytorchReplicaSpecs": {"Master": {
            "template": {"metadata": {"labels": {"e2e": "forged"}}}}}}}),
        "the Worker's template": ("opted", {"spec": {"pytorchReplicaSpecs": {"Worker": {
            "replicas": 2, "template": {"metadata": {"labels": {"e2e": "forged"}}}}}}}),
        "its run policy": ("opted", {"spec": {"runPolicy": {"suspend": False}}}),
        "its annotations": ("opted", {"metadata": {"annotations": {
            "headstart.io/max-size": "100"}}}),
        "a PyTorchJob that did not opt in": ("plain", workers(2)),
    }
    for what, (name, patch) in refused.items():
        code, err = patch_pytorchjob_as_extender(cluster, namespace, name, patch)
        assert code in (403, 422) and "headstart-extender-pytorchjob-edits" in err, (
            what, code, err)
    assert worker_replicas(cluster, namespace, "opted") == 1
    code, err = patch_pytorchjob_as_extender(cluster, namespace, "opted", workers(3))
    assert code == 200, err
    assert worker_replicas(cluster, namespace, "opted") == 3
    for name in ("opted", "plain"):
        kube.delete(f"{API}/namespaces/{namespace}/pytorchjobs/{name}?"
                    "propagationPolicy=Background")
