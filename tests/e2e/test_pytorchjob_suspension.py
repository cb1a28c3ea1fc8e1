"""A PyTorchJob's gang evicted by suspending the PyTorchJob (`spec.runPolicy.suspend`),
against the REAL Kubeflow training operator (kubeflow/training-operator release-1.9, as in
test_elastic_pytorchjob.py; the tests skip when it is absent), as installed (issue 26).

The cluster: pg-c, one 8-GPU kwok node, and a node group `ghost` the admitter is told can
add 2 more there, which never come; the shipped extender with a 20 s bind timeout and a
5 s backoff; the training operator (PyTorchJob only) with its validating webhook.

- A PyTorchJob "pt" of a Master and 2 Workers (8-GPU pods pinned to pg-c, runPolicy
  backoffLimit 0: one evicted pod would fail it for good) is admitted counting on the
  ghost nodes; 20 s on, not whole, its gang is evicted by suspending the PyTorchJob. The
  training operator deletes its pods and says Suspended; after the backoff the admitter
  resumes it: the PyTorchJob is not Failed, says Suspended False (resumed), its other
  runPolicy fields are as its owner wrote them, and its new pods wait behind the gate.
- The bound on the extender's right: with its token, the shipped
  ValidatingAdmissionPolicy `headstart-extender-pytorchjob-edits` refuses suspending a
  PyTorchJob Kueue manages, a suspension without headstart's label, resuming one
  headstart did not suspend and a change of its backoff limit along with a suspension;
  it accepts suspending a plain PyTorchJob with the label and releasing it (which the
  operator's own validating webhook accepts too).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import installed
from tests.e2e.controlplane import ENV_VAR
from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_elastic_pytorchjob import (
    API,
    CRD,
    JOB_LABEL,
    OPERATOR,
    live_pods,
    operator_problem,
    patch_pytorchjob_as_extender,
    pytorchjob,
    start_training_operator,
)
from tests.e2e.test_gang import gang_state
from tests.e2e.test_gang_recovery import GROUP_KEY, P4D
from tests.e2e.test_jobset_suspension import conditions

LOGS = ["headstart-extender", "training-operator", "kube-controller-manager"]
TIMEOUT_S = 20
BACKOFF_S = 5
MARK = "headstart.io/suspended"


@pytest.fixture(scope="module")
def suspension_cluster(e2e_clusters):
    problem = operator_problem()
    if problem:
        pytest.skip(problem)
    admission = dict(installed.shipped_config("extender")["admission"])
    admission.update(bind_timeout_seconds=TIMEOUT_S, backoff_base_seconds=BACKOFF_S,
                     autoscaler={"status": "", "node_groups": [
                         {"name": "ghost", "instance_type": "p4d.24xlarge", "domain": "pg-c",
                          "max_size": 3}]})
    directory = Path(os.environ[ENV_VAR])
    cluster, extender, _ = extender_on(
        e2e_clusters, "pytorchjob-suspension",
        [kwok_node("c-0", memory="768Gi", group="pg-c", labels=P4D)], LOGS,
        settings={"admission": admission}, crds=(directory / CRD,))
    written = start_training_operator(cluster, directory / OPERATOR)
    try:
        yield cluster, extender
    finally:
        cluster.stop()
        for path in written:
            path.unlink(missing_ok=True)


def pinned(name: str, workers: int, **run_policy: Any) -> dict[str, Any]:
    """`pytorchjob(name, workers)` with every pod pinned to pg-c and `run_policy`."""
    job = pytorchjob(name, workers)
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["spec"]["nodeSelector"] = {GROUP_KEY: "pg-c"}
    if run_policy:
        job["spec"]["runPolicy"] = dict(run_policy)
    return job


def test_a_pytorchjobs_gang_is_evicted_by_suspending_it_and_resumed(
        suspension_cluster, namespace, e2e_timings):
    cluster, _ = suspension_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    path = f"{API}/namespaces/{namespace}/pytorchjobs/pt"
    kube.create(f"{API}/namespaces/{namespace}/pytorchjobs",
                pinned("pt", 2, backoffLimit=0, cleanPodPolicy="None"))
    cluster.wait("its Gang Admitted", lambda: gang_state(
        cluster, namespace, "pt", "Admitted"), 90, LOGS)
    admitted = time.monotonic()
    first = {p["metadata"]["uid"] for p in live_pods(cluster, namespace, "pt")}
    record = cluster.wait("its Gang Evicted", lambda: gang_state(
        cluster, namespace, "pt", "Evicted"), TIMEOUT_S + 30, LOGS)
    evicted_s = time.monotonic() - admitted
    found = kube.get(path)
    assert record["status"]["suspendedJobs"] == [
        {"kind": "PyTorchJob", "name": "pt", "uid": found["metadata"]["uid"]}]

    def suspended_then_resumed():
        job = kube.get(path)
        seen = conditions(job).get("Suspended")
        if job["spec"]["runPolicy"].get("suspend") or seen is None \
                or seen["status"] != "False":
            return NotYet(f"suspend={job['spec']['runPolicy'].get('suspend')}, "
                          f"Suspended={seen}")
        return job

    job = cluster.wait("the PyTorchJob suspended by the admitter, then resumed",
                       suspended_then_resumed, BACKOFF_S + 90, LOGS)
    resumed_s = time.monotonic() - admitted
    assert conditions(job)["Suspended"]["reason"] == "PyTorchJobResumed", job["status"]
    assert "Failed" not in conditions(job) or conditions(job)["Failed"]["status"] != "True", \
        job["status"]
    assert job["spec"]["runPolicy"]["backoffLimit"] == 0
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    assert MARK not in (job["metadata"].get("labels") or {})
    reasons = [(e["involvedObject"]["kind"], e["reason"])
               for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
               if e["reason"].startswith("Headstart")]
    assert ("PyTorchJob", "HeadstartSuspended") in reasons, reasons
    assert ("PyTorchJob", "HeadstartResumed") in reasons, reasons
    assert not [r for r in reasons if r[1] == "HeadstartEvicted"], reasons
    # The operator made new pods (the first ones were deleted), and they are gated.
    pods = cluster.wait("the PyTorchJob's 3 new pods", lambda: (
        pods := live_pods(cluster, namespace, "pt"),
        pods if len(pods) == 3 and not first & {p["metadata"]["uid"] for p in pods}
        else NotYet(f"{len(pods)} live"))[1], 60, LOGS)
    assert all(bound_node(p) is None for p in pods)
    assert all({"name": "headstart.io/placement"} in (p["spec"].get("schedulingGates") or [])
               for p in pods), [p["spec"].get("schedulingGates") for p in pods]
    e2e_timings.record("pytorchjob: a PyTorchJob suspended, not failed, resumed",
                       evicted_since_admitted=evicted_s, resumed_since_admitted=resumed_s,
                       timeout_s=TIMEOUT_S, backoff_s=BACKOFF_S)
    kube.delete(f"{path}?propagationPolicy=Background")
    cluster.wait("its pods gone", lambda: not kube.list(
        f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{JOB_LABEL}=pt")
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
        for replica in job["spec"]["pytorchReplicaSpecs"].values():
            replica["template"]["spec"]["nodeSelector"] = {GROUP_KEY: "pg-b"}
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
