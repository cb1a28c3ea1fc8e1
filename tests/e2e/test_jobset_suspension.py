"""A JobSet's gang evicted by suspending the JobSet, against the REAL JobSet controller
(kubernetes-sigs/jobset v0.12.0, built from its public source like the other components:
`jobset-controller` and `crds/jobset.x-k8s.io_jobsets.yaml` in HEADSTART_E2E_BIN; the
tests skip when they are absent), as installed (issue 26).

The cluster: pg-c, one 8-GPU kwok node, and a node group `ghost` the admitter is told
can add 2 more there, which never come (no autoscaler runs here); the shipped extender
with a 20 s bind timeout and a 5 s backoff; the JobSet controller with its webhooks
(defaulting and validation, on 127.0.0.1) registered, running as the cluster's admin
as its Deployment's ClusterRole would let it.

- A JobSet "js" of one replicated job (1 Job of 3 8-GPU pods, backoffLimit 0, no
  podFailurePolicy: one evicted pod would fail its Job for good) pinned to pg-c is
  admitted there counting on the ghost nodes; 20 s on, not whole, its gang is evicted
  by suspending the JobSet (never its Job: the JobSet controller decides that). The
  JobSet controller suspends the Job, the Job controller deletes its pods counting no
  failure, and after the backoff the admitter resumes the JobSet: the JobSet and its
  Job are not Failed, the Job's status says Suspended then Resumed, and its new pods
  wait behind the gate.
- The bound on the extender's new right (`patch` on JobSets): with its token, the shipped
  ValidatingAdmissionPolicy `headstart-extender-jobset-edits` refuses suspending a
  JobSet Kueue manages, a suspension without headstart's label, resuming a JobSet
  headstart did not suspend and a change of the replicated jobs along with a
  suspension; it accepts suspending a plain JobSet with the label and releasing it
  (which the JobSet's own validating webhook accepts too).
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
from tests.e2e.objects import bound_node
from tests.e2e.processes import free_ports
from tests.e2e.suspension import (
    BACKOFF_S,
    TIMEOUT_S,
    conditions,
    ghost_cluster,
    headstart_events,
)
from tests.e2e.test_gang import gang_state, indexed_job
from tests.e2e.test_gang_recovery import GROUP_KEY, live

LOGS = ["headstart-extender", "jobset-controller", "kube-controller-manager"]
CONTROLLER = "jobset-controller"
CRD = Path("crds") / "jobset.x-k8s.io_jobsets.yaml"
API = "/apis/jobset.x-k8s.io/v1alpha2"


def jobset_problem() -> str | None:
    """Why the JobSet controller cannot run here (None: it can)."""
    return optional_problem((CONTROLLER, CRD), "build kubernetes-sigs/jobset's manager and "
                            "copy its CRD there to run the JobSet suspension tests")


@pytest.fixture(scope="module")
def jobset_cluster(e2e_clusters):
    problem = jobset_problem()
    if problem:
        pytest.skip(problem)
    directory = Path(os.environ[ENV_VAR])
    cluster, extender = ghost_cluster(e2e_clusters, "jobset-suspension", LOGS,
                                      (directory / CRD,))
    start_jobset_controller(cluster, directory / CONTROLLER)
    yield cluster, extender
    cluster.stop()


def start_jobset_controller(cluster, binary: Path) -> None:
    """The JobSet controller with its webhooks served on 127.0.0.1 (the API server's own
    serving certificate, from the cluster's CA) and registered by URL, as its
    Deployment's Service would have them."""
    workdir = cluster.workdir / "jobset"
    certs = workdir / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copy(cluster.pki.server_cert, certs / "tls.crt")
    shutil.copy(cluster.pki.server_key, certs / "tls.key")
    webhook, health = free_ports(2)
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
        "internalCertManagement": {"enable": False},
        "webhook": {"port": webhook, "host": "127.0.0.1", "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
    }))
    cluster.run(CONTROLLER, [binary, f"--kubeconfig={cluster.admin_kubeconfig}",
                             f"--config={config}", "--leader-elect=false",
                             "--metrics-bind-address=0",
                             f"--health-probe-bind-address=127.0.0.1:{health}"])

    def ready():
        try:
            return requests.get(f"http://127.0.0.1:{health}/readyz", timeout=2).ok or \
                NotYet("not ready")
        except requests.RequestException as error:
            return NotYet(str(error))

    cluster.wait("the JobSet controller ready", ready, 60, LOGS)
    ca = base64.b64encode(Path(cluster.pki.ca_cert).read_bytes()).decode()

    def hook(name: str, path: str, group: str, resource: str, operations: list[str],
             pods: bool) -> dict[str, Any]:
        out = {"name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
               "failurePolicy": "Fail",
               "clientConfig": {"url": f"https://127.0.0.1:{webhook}{path}", "caBundle": ca},
               "rules": [{"apiGroups": [group], "apiVersions": ["v1" if pods else "v1alpha2"],
                          "operations": operations, "resources": [resource]}]}
        if pods:
            out["objectSelector"] = {"matchExpressions": [
                {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
        return out

    for kind, verb, jobset_operations in (("Mutating", "mutate", ["CREATE"]),
                                          ("Validating", "validate", ["CREATE", "UPDATE"])):
        cluster.kube.create(
            f"/apis/admissionregistration.k8s.io/v1/{kind.lower()}webhookconfigurations", {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": f"{kind}WebhookConfiguration",
                "metadata": {"name": f"jobset-{kind.lower()}-webhook-configuration"},
                "webhooks": [
                    hook(f"{verb[0]}jobset.kb.io", f"/{verb}-jobset-x-k8s-io-v1alpha2-jobset",
                         "jobset.x-k8s.io", "jobsets", jobset_operations, False),
                    hook(f"{verb[0]}pod.kb.io", f"/{verb}--v1-pod", "", "pods", ["CREATE"],
                         True)]})

def jobset(name: str, size: int, labels: dict[str, str] | None = None,
           suspend: bool = False) -> dict[str, Any]:
    """A JobSet of one replicated job: one Indexed Job of `size` 8-GPU pods pinned to
    pg-c that run until deleted; backoffLimit 0 and no podFailurePolicy."""
    job = indexed_job(name, size, node_selector={GROUP_KEY: "pg-c"})
    job["spec"]["template"]["metadata"]["annotations"]["e2e/runs-until-deleted"] = "true"
    assert job["spec"]["backoffLimit"] == 0 and "podFailurePolicy" not in job["spec"]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"suspend": suspend, "replicatedJobs": [
                {"name": "workers", "replicas": 1, "template": {"spec": job["spec"]}}]}}


def test_a_jobsets_gang_is_evicted_by_suspending_the_jobset_and_resumed(
        jobset_cluster, namespace, e2e_timings):
    cluster, _ = jobset_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"{API}/namespaces/{namespace}/jobsets", jobset("js", 3))
    cluster.wait("its Gang Admitted", lambda: gang_state(
        cluster, namespace, "js", "Admitted"), 90, LOGS)
    admitted = time.monotonic()
    record = cluster.wait("its Gang Evicted", lambda: gang_state(
        cluster, namespace, "js", "Evicted"), TIMEOUT_S + 30, LOGS)
    evicted_s = time.monotonic() - admitted
    found = kube.get(f"{API}/namespaces/{namespace}/jobsets/js")
    assert record["status"]["suspendedJobs"] == [
        {"kind": "JobSet", "name": "js", "uid": found["metadata"]["uid"]}]
    job_path = f"/apis/batch/v1/namespaces/{namespace}/jobs/js-workers-0"

    def job_suspended_and_resumed():
        job = kube.get(job_path)
        seen = conditions(job).get("Suspended")
        if job["spec"].get("suspend") or seen is None or seen["status"] != "False":
            return NotYet(f"suspend={job['spec'].get('suspend')}, Suspended={seen}")
        return job

    job = cluster.wait("the JobSet suspended, then resumed by the admitter",
                       job_suspended_and_resumed, BACKOFF_S + 90, LOGS)
    resumed_s = time.monotonic() - admitted
    assert any(c["reason"] == "JobResumed" for c in job["status"]["conditions"]), \
        job["status"]
    assert "Failed" not in conditions(job) and not job["status"].get("failed"), job["status"]
    found = kube.get(f"{API}/namespaces/{namespace}/jobsets/js")
    assert found["spec"]["suspend"] is False
    assert "headstart.io/suspended" not in (found["metadata"].get("labels") or {})
    assert "Failed" not in conditions(found) and not found["status"].get("restarts"), \
        found["status"]
    reasons = headstart_events(kube, namespace)
    assert ("JobSet", "HeadstartSuspended") in reasons, reasons
    assert ("JobSet", "HeadstartResumed") in reasons, reasons
    assert not [r for r in reasons if r[1] == "HeadstartEvicted" or r[0] == "Job"], reasons
    cluster.wait("the JobSet's new pods, gated", lambda: len(live(cluster, namespace, "js"))
                 == 3 or NotYet(len(live(cluster, namespace, "js"))), 60, LOGS)
    assert all(bound_node(p) is None for p in live(cluster, namespace, "js"))
    e2e_timings.record("jobset: a JobSet suspended, not failed, resumed",
                       evicted_since_admitted=evicted_s, resumed_since_admitted=resumed_s,
                       timeout_s=TIMEOUT_S, backoff_s=BACKOFF_S)
    kube.delete(f"{API}/namespaces/{namespace}/jobsets/js?propagationPolicy=Background")


def patch_jobset_as_extender(cluster, namespace: str, name: str, patch: dict
                             ) -> tuple[int, str]:
    return patch_as_extender(cluster, namespace, "jobsets", name, patch,
                             api="jobset.x-k8s.io/v1alpha2")


def test_the_extender_may_only_suspend_and_release_a_jobset_as_the_policy_says(
        jobset_cluster, namespace):
    cluster, _ = jobset_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    for name, labels, suspend in (("plain", {}, False),
                                  ("queued", {"kueue.x-k8s.io/queue-name": "q"}, False),
                                  ("paused", {}, True)):  # its owner suspended it
        kube.create(f"{API}/namespaces/{namespace}/jobsets",
                    jobset(name, 1, labels=labels, suspend=suspend))
    mark = {"headstart.io/suspended": str(int(time.time()) + 60)}
    refused = {
        "suspending a JobSet Kueue manages": ("queued", {
            "metadata": {"labels": mark}, "spec": {"suspend": True}}),
        "suspending without the label": ("plain", {"spec": {"suspend": True}}),
        "resuming a JobSet headstart did not suspend": ("paused", {"spec": {"suspend": False}}),
        "the replicated jobs along with a suspension": ("plain", {
            "metadata": {"labels": mark},
            "spec": {"suspend": True, "replicatedJobs": []}}),
    }
    for what, (name, patch) in refused.items():
        code, err = patch_jobset_as_extender(cluster, namespace, name, patch)
        assert code in (403, 422) and "headstart-extender-jobset-edits" in err, (what, code, err)
    code, err = patch_jobset_as_extender(cluster, namespace, "plain", {
        "metadata": {"labels": mark}, "spec": {"suspend": True}})
    assert code == 200, err
    code, err = patch_jobset_as_extender(cluster, namespace, "plain", {
        "metadata": {"labels": {"headstart.io/suspended": None}}, "spec": {"suspend": False}})
    assert code == 200, err
    found = kube.get(f"{API}/namespaces/{namespace}/jobsets/plain")
    assert found["spec"]["suspend"] is False
    assert "headstart.io/suspended" not in (found["metadata"].get("labels") or {})
    for name in ("plain", "queued", "paused"):
        kube.delete(f"{API}/namespaces/{namespace}/jobsets/{name}?propagationPolicy=Background")
