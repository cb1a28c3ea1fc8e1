"""An mpi-operator MPIJob's gang evicted by suspending the MPIJob, against the REAL
mpi-operator (kubeflow/mpi-operator v0.8.0, `kubeflow.org/v2beta1`, built from its
public source like the other components: `mpi-operator` and
`crds-mpi-operator/kubeflow.org_mpijobs.yaml` in HEADSTART_E2E_BIN, a directory of its
own because the training operator's v1 CRD has the same name; the tests skip when
either is absent). As installed (issue 26).

Its workers' controller is the MPIJob; its launcher's is a batch/v1 Job the MPIJob
controls, so headstart suspends the MPIJob, the top of both chains, and resumes it once
the MPIJob and its launcher Job say Suspended.

The cluster: pg-c, one 8-GPU kwok node, and a node group `ghost` the admitter is told
can add 2 more there, which never come; the shipped extender with a 20 s bind timeout
and a 5 s backoff; mpi-operator (it has no webhooks; its health port is fixed at 8080,
so one at a time per host).

- An MPIJob "mpi" of a Launcher and 2 Workers (8-GPU pods pinned to pg-c, launcher
  created at startup, runPolicy backoffLimit 0) is admitted counting on the ghost nodes;
  20 s on, not whole, its gang is evicted by suspending the MPIJob. mpi-operator deletes
  the workers and suspends its launcher Job, whose controller deletes the launcher;
  after the backoff the admitter resumes the MPIJob: it says Suspended False
  (MPIJobResumed), not Failed, the launcher Job has failed no pod, and the new pods
  wait behind the gate.
- The bound on the extender's right at v2beta1: with its token, the shipped policy
  `headstart-extender-kubeflow-edits` refuses a resize of the workers along with a
  suspension and accepts a marked suspension and its release.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.controlplane import ENV_VAR, optional_problem
from tests.e2e.headstart import patch_as_extender
from tests.e2e.kube import NotYet
from tests.e2e.objects import GPU_TOLERATION, HEADSTART_SCHEDULER
from tests.e2e.suspension import (
    BACKOFF_S,
    MARK,
    TIMEOUT_S,
    conditions,
    evicted_then_resumed,
    ghost_cluster,
)
from tests.e2e.test_gang_recovery import GROUP_KEY

LOGS = ["headstart-extender", "mpi-operator", "kube-controller-manager"]
OPERATOR = "mpi-operator"
CRD = Path("crds-mpi-operator") / "kubeflow.org_mpijobs.yaml"
API = "kubeflow.org/v2beta1"
JOB_LABEL = "training.kubeflow.org/job-name"
HEALTH = "http://127.0.0.1:8080/healthz"  # fixed in mpi-operator


@pytest.fixture(scope="module")
def mpi_cluster(e2e_clusters):
    problem = optional_problem((OPERATOR, CRD), "build kubeflow/mpi-operator and copy its "
                               "v2beta1 CRD to crds-mpi-operator/ there to run the "
                               "mpi-operator suspension tests")
    if problem:
        pytest.skip(problem)
    directory = Path(os.environ[ENV_VAR])
    cluster, extender = ghost_cluster(e2e_clusters, "mpi-operator-suspension", LOGS,
                                      (directory / CRD,))
    try:
        env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
        cluster.run(OPERATOR, [directory / OPERATOR,
                               f"--kubeConfig={cluster.admin_kubeconfig}",
                               "--lock-namespace=default"], env=env)

        def healthy():
            try:
                return requests.get(HEALTH, timeout=2).ok or NotYet("not healthy")
            except requests.RequestException as error:
                return NotYet(str(error))

        cluster.wait("mpi-operator healthy", healthy, 60, LOGS)
        yield cluster, extender
    finally:
        cluster.stop()


def replica(count: int, node_group: str = "pg-c") -> dict[str, Any]:
    """`count` 8-GPU pods for headstart-scheduler on `node_group` that run until deleted."""
    return {"replicas": count, "template": {
        "metadata": {"annotations": {"headstart.io/placement-group": "required",
                                     "e2e/runs-until-deleted": "true"}},
        "spec": {"schedulerName": HEADSTART_SCHEDULER, "terminationGracePeriodSeconds": 0,
                 "tolerations": [GPU_TOLERATION], "nodeSelector": {GROUP_KEY: node_group},
                 "containers": [{"name": "mpi", "image": "x", "resources": {
                     "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
                     "limits": {"nvidia.com/gpu": "8"}}}]}}}


def mpijob(name: str, workers: int, node_group: str = "pg-c") -> dict[str, Any]:
    return {"apiVersion": API, "kind": "MPIJob", "metadata": {"name": name},
            "spec": {"slotsPerWorker": 1, "runPolicy": {"backoffLimit": 0},
                     "mpiReplicaSpecs": {"Launcher": replica(1, node_group),
                                         "Worker": replica(workers, node_group)}}}


def live(cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    return [p for p in cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods",
                                         label_selector=f"{JOB_LABEL}={name}")
            if not p["metadata"].get("deletionTimestamp")]


def test_an_mpijobs_gang_is_evicted_by_suspending_it_and_resumed(
        mpi_cluster, namespace, e2e_timings):
    cluster, _ = mpi_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    path = f"/apis/{API}/namespaces/{namespace}/mpijobs/mpi"
    kube.create(f"/apis/{API}/namespaces/{namespace}/mpijobs", mpijob("mpi", 2))
    cycle = evicted_then_resumed(
        cluster, namespace, "MPIJob", "mpi", path, lambda: live(cluster, namespace, "mpi"),
        lambda job: job["spec"]["runPolicy"].get("suspend"), "MPIJobResumed", LOGS,
        children=("Job",), first_pods=3)
    assert cycle.job["spec"]["runPolicy"]["backoffLimit"] == 0
    launcher = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/mpi-launcher")
    assert not launcher["status"].get("failed") and "Failed" not in conditions(launcher), \
        launcher["status"]
    e2e_timings.record("mpi-operator: an MPIJob suspended, not failed, resumed",
                       evicted_since_admitted=cycle.evicted_s,
                       resumed_since_admitted=cycle.resumed_s,
                       timeout_s=TIMEOUT_S, backoff_s=BACKOFF_S)
    kube.delete(f"{path}?propagationPolicy=Background")


def test_the_extender_may_only_suspend_and_release_an_mpijob_at_v2beta1(mpi_cluster,
                                                                        namespace):
    cluster, _ = mpi_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/apis/{API}/namespaces/{namespace}/mpijobs",
                mpijob("plain", 1, node_group="pg-b"))  # no node there: nothing runs
    mark = {MARK: str(int(time.time()) + 60)}
    code, err = patch_as_extender(cluster, namespace, "mpijobs", "plain", {
        "metadata": {"labels": mark},
        "spec": {"runPolicy": {"suspend": True},
                 "mpiReplicaSpecs": {"Worker": {"replicas": 3}}}}, api=API)
    assert code in (403, 422) and "headstart-extender-kubeflow-edits" in err, (code, err)
    code, err = patch_as_extender(cluster, namespace, "mpijobs", "plain", {
        "metadata": {"labels": mark}, "spec": {"runPolicy": {"suspend": True}}}, api=API)
    assert code == 200, err
    code, err = patch_as_extender(cluster, namespace, "mpijobs", "plain", {
        "metadata": {"labels": {MARK: None}}, "spec": {"runPolicy": {"suspend": False}}},
        api=API)
    assert code == 200, err
    found = kube.get(f"/apis/{API}/namespaces/{namespace}/mpijobs/plain")
    assert found["spec"]["runPolicy"]["suspend"] is False
    assert MARK not in (found["metadata"].get("labels") or {})
    kube.delete(f"/apis/{API}/namespaces/{namespace}/mpijobs/plain?"
                "propagationPolicy=Background")
