"""A staged JobSet against the REAL JobSet controller (kubernetes-sigs/jobset, as in
test_jobset_suspension.py; skipped when absent), as installed (issue 46).

A JobSet whose `workers` replicated job `dependsOn` its `init` job Complete: the JobSet
controller creates the workers only once init's pod has Succeeded, so the workers'
gang (size 3: init's 1 and their 2, `locality.owners`) has one member that
kube-scheduler never sees again. Its PodGroup must ask for the 2 live pods; with
minMember 3, Coscheduling would hold them in Permit for ever and nothing would bind.

The cluster: pg-a, three 8-GPU kwok nodes; the shipped extender; the JobSet controller
running as the cluster's admin.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_gang import gang_state, indexed_job
from tests.e2e.test_gang_recovery import GROUP_KEY, P4D
from tests.e2e.test_jobset_suspension import (
    API,
    CONTROLLER,
    CRD,
    jobset_problem,
    start_jobset_controller,
)

LOGS = ["headstart-scheduler", "headstart-extender", "jobset-controller",
        "kube-controller-manager"]
NODES = ("a-0", "a-1", "a-2")


@pytest.fixture(scope="module")
def staged_jobset_cluster(e2e_clusters):
    problem = jobset_problem()
    if problem:
        pytest.skip(problem)
    directory = Path(os.environ["HEADSTART_E2E_BIN"])
    cluster, extender, _ = extender_on(
        e2e_clusters, "staged-jobset",
        [kwok_node(name, memory="768Gi", group="pg-a", labels=P4D) for name in NODES],
        LOGS, crds=(directory / CRD,))
    start_jobset_controller(cluster, directory / CONTROLLER)
    yield cluster, extender
    cluster.stop()


def stage(name: str, size: int, runs: bool) -> dict[str, Any]:
    """A replicated job of one Indexed Job of `size` 8-GPU pods of the job `staged`,
    sized by the JobSet (no job-size annotation); `runs`: its pods run until deleted,
    else kwok completes them."""
    spec = indexed_job("staged", size, node_selector={GROUP_KEY: "pg-a"})["spec"]
    annotations = spec["template"]["metadata"]["annotations"]
    del annotations["headstart.io/job-size"]
    if runs:
        annotations["e2e/runs-until-deleted"] = "true"
    return {"name": name, "replicas": 1, "template": {"spec": spec}}


def pods(cluster, namespace: str) -> list[dict[str, Any]]:
    return cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods",
                             label_selector="jobset.sigs.k8s.io/jobset-name=staged")


def test_a_later_stage_binds_though_an_earlier_one_finished(staged_jobset_cluster,
                                                             namespace, e2e_timings):
    cluster, _ = staged_jobset_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    workers = stage("workers", 2, runs=True)
    workers["dependsOn"] = [{"name": "init", "status": "Complete"}]
    kube.create(f"{API}/namespaces/{namespace}/jobsets", {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "staged"},
        "spec": {"replicatedJobs": [stage("init", 1, runs=False), workers]}})
    created = time.monotonic()

    def workers_bound():
        found = [p for p in pods(cluster, namespace)
                 if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name")
                 == "workers" and not p["metadata"].get("deletionTimestamp")]
        bound = [p for p in found if bound_node(p)]
        if len(found) != 2 or len(bound) != 2:
            phases = sorted((p["metadata"]["name"], p["status"].get("phase"))
                            for p in pods(cluster, namespace))
            return NotYet(f"{len(bound)} of 2 workers bound; pods {phases}")
        return found

    bound = cluster.wait("the workers stage bound whole", workers_bound, 120, LOGS)
    bound_s = time.monotonic() - created
    (init,) = [p for p in pods(cluster, namespace)
               if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name")
               == "init"]
    assert init["status"]["phase"] == "Succeeded"
    group = kube.get(f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/"
                     "podgroups/staged")
    assert group["spec"]["minMember"] == 2, group["spec"]  # the live pods, not 3
    assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in bound} == \
        {"staged"}
    record = cluster.wait("its Gang Running", lambda: gang_state(
        cluster, namespace, "staged", "Running"), 30, LOGS)
    assert record["spec"]["size"] == 3
    e2e_timings.record("staged JobSet: the later stage bound whole",
                       bound_since_created=bound_s)
    kube.delete(f"{API}/namespaces/{namespace}/jobsets/staged?propagationPolicy=Background")
