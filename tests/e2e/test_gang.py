"""A gang's admission against the real components, as installed, with real owners: every
job is a batch/v1 Indexed Job (completions = parallelism = its size) that
kube-controller-manager's Job controller turns into pods; the shipped
MutatingAdmissionPolicy gates them, the extender's admitter (its own ServiceAccount)
decides, and writes the decision into a Gang record and the pods.

The cluster: three placement groups of 8-GPU kwok nodes. pg-a: 3 plain nodes; pg-b: 3
nodes labelled `gpu.model=a100`; pg-c: 2 nodes tainted `dedicated=team-c:NoSchedule`.
Without constraints a 2-node job's best fit is pg-c (no GPU left over), then pg-a.

- A job selecting `gpu.model=a100` lands whole in pg-b; its Gang says Admitted, then
  Running, in pg-b.
- A 2-node job without pg-c's toleration lands whole in pg-a (pg-c would be its best
  fit); with the toleration, in pg-c.
- An unsatisfiable `required` job (4 nodes; no group has 4) created before two 3-node
  jobs: it is Inadmissible and holds nothing, both others bind whole (it used to hold
  the head of the queue for ever).
- A 9-node job under the default policy (`preferred`) on 8 nodes: nothing of it binds,
  its Gang says Inadmissible (it used to bind pod by pod and hold GPUs).
- A tenant (a ServiceAccount with the `edit` ClusterRole in its namespace) can read
  Gangs but not write one, may neither create nor annotate a pod with
  `headstart.io/domain` (the headstart-decisions policy), and its unbound pods reserve
  nothing: a 3-node job is still admitted into pg-a.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from tests.e2e.headstart import extender_on
from tests.e2e.kube import NotYet
from tests.e2e.objects import GPU_TAINT, GPU_TOLERATION, bound_node, kwok_node, training_pod
from tests.manifests import checks

GATE = "headstart.io/placement"
LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]
GROUP_KEY = "headstart.io/placement-group"
TEAM_C_TAINT = {"key": "dedicated", "value": "team-c", "effect": "NoSchedule"}
NODES: dict[str, tuple[str, dict[str, str], list[dict[str, str]]]] = {
    **{f"a-{i}": ("pg-a", {}, [GPU_TAINT]) for i in range(3)},
    **{f"b-{i}": ("pg-b", {"gpu.model": "a100"}, [GPU_TAINT]) for i in range(3)},
    **{f"c-{i}": ("pg-c", {}, [GPU_TAINT, TEAM_C_TAINT]) for i in range(2)},
}
GANGS = "/apis/headstart.io/v1alpha1/namespaces/{namespace}/gangs"


@pytest.fixture(scope="module")
def gang_cluster(e2e_clusters):
    cluster, extender, _ = extender_on(e2e_clusters, "gang", [
        kwok_node(name, memory="768Gi", group=group, labels=labels, taints=taints)
        for name, (group, labels, taints) in NODES.items()], LOGS)
    yield cluster, extender
    cluster.stop()


def indexed_job(name: str, size: int, policy: str | None = "required",
                node_selector: dict[str, str] | None = None,
                tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A batch/v1 Indexed Job of `size` 8-GPU pods that declare their job and size."""
    annotations = {"headstart.io/job-size": str(size)}
    if policy is not None:
        annotations["headstart.io/placement-group"] = policy
    pod = training_pod("template", "unused", name, "worker", gpus=8, cpu="8", memory="64Gi",
                       annotations=annotations, node_selector=node_selector)
    spec = pod["spec"]
    spec["restartPolicy"] = "Never"
    spec["tolerations"] = [GPU_TOLERATION, *(tolerations or [])]
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"completionMode": "Indexed", "completions": size, "parallelism": size,
                 "backoffLimit": 0,
                 "template": {"metadata": {"labels": pod["metadata"]["labels"],
                                           "annotations": annotations},
                              "spec": spec}},
    }


def run_job(cluster, namespace: str, job: dict[str, Any]) -> None:
    cluster.kube.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", job)


def pods_of(cluster, namespace: str, job: str) -> list[dict[str, Any]]:
    return cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods",
                             label_selector=f"headstart.io/job={job}")


def groups_of(cluster, namespace: str, job: str, size: int):
    """The placement groups of the job's pods once all `size` are bound, read from their
    nodes' labels (so any scenario's cluster can ask)."""
    pods = pods_of(cluster, namespace, job)
    nodes = [bound_node(pod) for pod in pods]
    if len(pods) < size or not all(nodes):
        return NotYet(f"{sum(map(bool, nodes))} of {size} bound ({len(pods)} pods)")
    return sorted({cluster.kube.get(f"/api/v1/nodes/{node}")["metadata"]["labels"][GROUP_KEY]
                   for node in set(nodes)})


def gang(cluster, namespace: str, job: str) -> dict[str, Any] | None:
    return cluster.kube.get(GANGS.format(namespace=namespace) + f"/{job}", missing_ok=True)


def gang_state(cluster, namespace: str, job: str, state: str):
    record = gang(cluster, namespace, job)
    found = ((record or {}).get("status") or {}).get("state")
    return record if found == state else NotYet(found)


def finish(cluster, namespace: str, *jobs: str) -> None:
    for job in jobs:
        cluster.kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{job}?"
                            "propagationPolicy=Background")
    cluster.wait("the jobs' pods to go", lambda: not any(
        pods_of(cluster, namespace, job) for job in jobs) or NotYet("pods left"), 60, LOGS)


def test_a_job_selecting_a_gpu_model_lands_where_that_model_is(gang_cluster, namespace,
                                                                e2e_timings):
    cluster, _ = gang_cluster
    cluster.kube.ensure_namespace(namespace)
    created = time.monotonic()
    run_job(cluster, namespace, indexed_job("model", 2, node_selector={"gpu.model": "a100"}))
    groups = cluster.wait("the a100 job bound whole", lambda: groups_of(
        cluster, namespace, "model", 2), 90, LOGS)
    bound_s = time.monotonic() - created
    assert groups == ["pg-b"]
    record = cluster.wait("its Gang Running", lambda: gang_state(
        cluster, namespace, "model", "Running"), 30, LOGS)
    assert record["status"]["domain"] == "placement-group=pg-b"
    assert record["spec"] == {"job": "model", "level": "placement-group",
                              "policy": "required", "size": 2}
    e2e_timings.record("gang: job selecting a GPU model", bound_since_created=bound_s)
    finish(cluster, namespace, "model")


def test_a_job_without_a_groups_toleration_avoids_it(gang_cluster, namespace, e2e_timings):
    cluster, _ = gang_cluster
    cluster.kube.ensure_namespace(namespace)
    run_job(cluster, namespace, indexed_job("plain", 2))
    assert cluster.wait("the job without the toleration bound whole", lambda: groups_of(
        cluster, namespace, "plain", 2), 90, LOGS) == ["pg-a"]
    finish(cluster, namespace, "plain")
    run_job(cluster, namespace, indexed_job("tolerant", 2, tolerations=[
        {"key": "dedicated", "operator": "Equal", "value": "team-c", "effect": "NoSchedule"}]))
    assert cluster.wait("the tolerating job bound whole", lambda: groups_of(
        cluster, namespace, "tolerant", 2), 90, LOGS) == ["pg-c"]
    finish(cluster, namespace, "tolerant")


def test_an_indexed_job_is_a_gang_without_any_headstart_label(gang_cluster, namespace,
                                                              e2e_timings):
    """A plain Indexed Job (completions = parallelism = 3) whose pods say nothing but
    schedulerName: its Job sizes the gang (3), which binds whole in one group."""
    cluster, _ = gang_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    job = indexed_job("bare", 3, policy=None)
    template = job["spec"]["template"]
    template["metadata"] = {}
    template["spec"]["containers"][0]["name"] = "main"
    created = time.monotonic()
    run_job(cluster, namespace, job)

    def bound_groups():
        pods = kube.list(f"/api/v1/namespaces/{namespace}/pods",
                         label_selector="batch.kubernetes.io/job-name=bare")
        nodes = [bound_node(pod) for pod in pods]
        if len(pods) < 3 or not all(nodes):
            return NotYet(f"{sum(map(bool, nodes))} of 3 bound ({len(pods)} pods)")
        assert not any(key.startswith("headstart.io/") for pod in pods
                       for key in (pod["metadata"].get("labels") or {}))
        return sorted({NODES[node][0] for node in nodes})

    groups = cluster.wait("the bare Indexed Job bound whole", bound_groups, 90, LOGS)
    bound_s = time.monotonic() - created
    assert len(groups) == 1, groups
    record = cluster.wait("its Gang Running", lambda: gang_state(
        cluster, namespace, "bare", "Running"), 30, LOGS)
    assert record["spec"]["size"] == 3 and record["spec"]["policy"] == "preferred"
    e2e_timings.record("gang: Indexed Job without headstart labels", groups=groups,
                       bound_since_created=bound_s)
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/bare?propagationPolicy=Background")


def test_an_unsatisfiable_job_does_not_starve_the_jobs_behind_it(gang_cluster, namespace,
                                                                   e2e_timings):
    cluster, extender = gang_cluster
    cluster.kube.ensure_namespace(namespace)
    run_job(cluster, namespace, indexed_job("huge", 4))
    time.sleep(2)  # older than the others
    created = time.monotonic()
    run_job(cluster, namespace, indexed_job("first", 3))
    run_job(cluster, namespace, indexed_job("second", 3))
    first = cluster.wait("the first 3-node job bound whole", lambda: groups_of(
        cluster, namespace, "first", 3), 90, LOGS)
    second = cluster.wait("the second 3-node job bound whole", lambda: groups_of(
        cluster, namespace, "second", 3), 90, LOGS)
    both_s = time.monotonic() - created
    assert sorted(first + second) == ["pg-a", "pg-b"]
    record = cluster.wait("huge's Gang Inadmissible", lambda: gang_state(
        cluster, namespace, "huge", "Inadmissible"), 30, LOGS)
    assert record["status"]["reason"] == "inadmissible"
    huge = pods_of(cluster, namespace, "huge")
    assert len(huge) == 4 and not any(bound_node(p) for p in huge)
    assert all({"name": GATE} in p["spec"]["schedulingGates"] for p in huge)
    waiting = {w["job"]: w["code"] for w in extender.get("/admission").json()["waiting"]}
    assert waiting == {f"{namespace}/huge": "inadmissible"}, waiting
    e2e_timings.record("gang: unsatisfiable job ahead of two that fit",
                       both_bound_since_created=both_s,
                       reason=record["status"]["message"][:120])
    finish(cluster, namespace, "huge", "first", "second")


def test_a_job_larger_than_the_cluster_binds_nothing_under_the_default_policy(
        gang_cluster, namespace, e2e_timings):
    cluster, _ = gang_cluster
    cluster.kube.ensure_namespace(namespace)
    run_job(cluster, namespace, indexed_job("toobig", 9, policy=None))  # the default
    record = cluster.wait("its Gang Inadmissible", lambda: gang_state(
        cluster, namespace, "toobig", "Inadmissible"), 60, LOGS)
    time.sleep(5)  # the scheduler would have bound released pods by now
    pods = pods_of(cluster, namespace, "toobig")
    assert len(pods) == 9 and not any(bound_node(p) for p in pods)
    assert record["spec"]["policy"] == "preferred"
    e2e_timings.record("gang: preferred job larger than the cluster",
                       reason=record["status"]["message"][:160])
    finish(cluster, namespace, "toobig")


def kubectl_as(kubeconfig, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([checks.kubectl(), f"--kubeconfig={kubeconfig}", *args],
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_a_tenant_can_neither_write_a_gang_nor_reserve_room_by_annotation(
        gang_cluster, namespace, e2e_timings):
    cluster, _ = gang_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"metadata": {"name": "tenant"}})
    kube.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", {
        "metadata": {"name": "tenant-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": namespace}]})
    tenant = cluster.token_kubeconfig(namespace, "tenant", "tenant")
    forged = {"apiVersion": "headstart.io/v1alpha1", "kind": "Gang",
              "metadata": {"name": "mine", "namespace": namespace},
              "spec": {"job": "mine"}, "status": {"state": "Admitted",
                                                  "domain": "placement-group=pg-a"}}
    created = kubectl_as(tenant, "create", "-f", "-", stdin=json.dumps(forged))
    assert created.returncode != 0 and "forbidden" in created.stderr, created.stderr
    listed = kubectl_as(tenant, "get", "gangs", "-n", namespace)
    assert listed.returncode == 0, listed.stderr  # the aggregated view role
    # A pod annotated as if admitted into pg-a is refused at the door (the shipped
    # headstart-decisions policy); three unbound pods of a scheduler that does not exist,
    # without it, hold pg-a's 3 nodes x 8 GPUs in their requests only.
    annotated = training_pod("squat-forged", namespace, "squat", "worker", gpus=8, cpu="8",
                             memory="64Gi", scheduler="nobody",
                             annotations={"headstart.io/domain": "placement-group=pg-a"})
    refused = kubectl_as(tenant, "create", "-f", "-", stdin=json.dumps(annotated))
    assert refused.returncode != 0 and "headstart-decisions" in refused.stderr, \
        refused.stderr
    for index in range(3):
        pod = training_pod(f"squat-{index}", namespace, "squat", "worker", gpus=8, cpu="8",
                           memory="64Gi", scheduler="nobody")
        result = kubectl_as(tenant, "create", "-f", "-", stdin=json.dumps(pod))
        assert result.returncode == 0, result.stderr
        forged = kubectl_as(tenant, "annotate", "pod", f"squat-{index}", "-n", namespace,
                            "headstart.io/domain=placement-group=pg-a")
        assert forged.returncode != 0 and "headstart-decisions" in forged.stderr, \
            forged.stderr
    created_at = time.monotonic()
    run_job(cluster, namespace, indexed_job("honest", 3, node_selector={GROUP_KEY: "pg-a"}))
    assert cluster.wait("the honest job bound whole in pg-a", lambda: groups_of(
        cluster, namespace, "honest", 3), 90, LOGS) == ["pg-a"]
    e2e_timings.record("gang: forged domain annotations reserve nothing",
                       bound_since_created=time.monotonic() - created_at,
                       tenant_create_gang=created.stderr.strip()[:160],
                       tenant_annotate_domain=refused.stderr.strip()[:200])
    finish(cluster, namespace, "honest")
    for index in range(3):
        kube.delete(f"/api/v1/namespaces/{namespace}/pods/squat-{index}", grace_period_s=0)
    # A pod labelled as a placeholder in the tenant's namespace is no placeholder: the
    # placement gate is not skipped for it (the shipped MutatingAdmissionPolicy), so
    # it waits for the admitter like any pod of a job.
    fake = training_pod("fake-placeholder", namespace, "fake", "worker", gpus=8, cpu="8",
                        memory="64Gi", annotations={"headstart.io/job-size": "1"})
    fake["metadata"]["labels"]["headstart.io/placeholder"] = "true"
    result = kubectl_as(tenant, "create", "-f", "-", "-o", "json", stdin=json.dumps(fake))
    assert result.returncode == 0, result.stderr
    # The pod as created (the admitter may lift the gate a moment later).
    gates = json.loads(result.stdout)["spec"].get("schedulingGates") or []
    assert {"name": GATE} in gates, gates

    def admitted():
        record = gang(cluster, namespace, "fake")
        state = ((record or {}).get("status") or {}).get("state")
        return record if state in ("Admitted", "Running") else NotYet(state)

    record = cluster.wait("the forged placeholder admitted as a job", admitted, 60, LOGS)
    assert record["spec"]["size"] == 1
    kube.delete(f"/api/v1/namespaces/{namespace}/pods/fake-placeholder", grace_period_s=0)
