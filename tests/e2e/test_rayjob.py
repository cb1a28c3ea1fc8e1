"""A KubeRay RayJob admitted as one gang and preempted whole by suspending the RayJob,
against the REAL KubeRay operator (ray-project/kuberay v1.7.0, `ray.io/v1`, built from
its public source like the other components: `kuberay-operator` and
`crds-kuberay/ray.io_{rayclusters,rayjobs}.yaml` in HEADSTART_E2E_BIN; the tests skip
when any is absent). As installed (issue 26).

The operator makes a RayCluster `<rayjob>-<5 characters>` the RayJob controls, and the
cluster's pods (controlled by the RayCluster, labelled `ray.io/cluster`); once all are
Ready it makes the submitter Job (here pinned to no node: it would finish, and a
finished submitter whose Ray job the operator cannot ask about fails the RayJob). No
Ray dashboard exists here, so the operator runs with RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
at an hour (it would fail the RayJob otherwise). It has no webhooks.

The cluster: pg-a, 2 8-GPU kwok nodes; the shipped extender.

- A low-priority RayJob "rj" (a head and a worker group of 3, each pod 4 GPUs: 16, all
  of pg-a) is admitted as ONE gang of 4: its Gang record names the RayCluster with size
  4, its PodGroup minMember 4, the 4 pods bound by headstart's scheduler, the gang
  Running.
- A high-priority 2-pod job (8 GPUs each) then needs pg-a: the admitter evicts the ray
  gang whole by suspending the RayJob (its Gang Evicted naming the RayJob; the RayJob
  marked `headstart.io/suspended` with `spec.suspend: true`, seen in a watch), the
  operator deletes the RayCluster and says Suspended, and
  the admitter resumes it: a new RayCluster, its 4 pods gated while the high job runs.
- The high job deleted, the new RayCluster's gang is admitted and bound whole, 4 pods.
- The bound on the extender's right: with its token, the shipped policy
  `headstart-extender-jobset-edits` refuses suspending a RayJob without
  `shutdownAfterJobFinishes: true` (KubeRay would mark it ValidationFailed for good).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.controlplane import ENV_VAR, optional_problem
from tests.e2e.headstart import extender_on, patch_as_extender
from tests.e2e.kube import NotYet
from tests.e2e.objects import GPU_TOLERATION, HEADSTART_SCHEDULER, bound_node, kwok_node
from tests.e2e.processes import free_ports
from tests.e2e.suspension import GATE, MARK, headstart_events
from tests.e2e.test_gang import gang, gang_state, run_job
from tests.e2e.test_gang_priority import create_priority_classes, prioritized, running_pods

LOGS = ["headstart-scheduler", "headstart-extender", "kuberay-operator",
        "kube-controller-manager"]
OPERATOR = "kuberay-operator"
CRDS = tuple(Path("crds-kuberay") / f"ray.io_{plural}.yaml"
             for plural in ("rayclusters", "rayjobs"))
API = "/apis/ray.io/v1"
NODES = {"a-0": "pg-a", "a-1": "pg-a"}
IMAGE = "rayproject/ray:2.46.0"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"


@pytest.fixture(scope="module")
def ray_cluster(e2e_clusters):
    problem = optional_problem((OPERATOR, *CRDS), "build ray-project/kuberay's ray-operator "
                               "and copy its ray.io CRDs to crds-kuberay/ there to run the "
                               "RayJob tests")
    if problem:
        pytest.skip(problem)
    directory = Path(os.environ[ENV_VAR])
    cluster, extender, _ = extender_on(
        e2e_clusters, "rayjob", [kwok_node(name, memory="768Gi", group=group)
                                 for name, group in NODES.items()],
        LOGS, crds=tuple(directory / crd for crd in CRDS))
    try:
        create_priority_classes(cluster)
        start_operator(cluster, directory / OPERATOR)
        yield cluster, extender
    finally:
        cluster.stop()


def start_operator(cluster, binary: Path) -> None:
    """The KubeRay operator as the cluster's admin, its probes on a free port."""
    [health] = free_ports(1)
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    # No Ray dashboard answers here: without this the RayJob fails after the default.
    env["RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"] = "3600"
    cluster.run(OPERATOR, [binary, f"--kubeconfig={cluster.admin_kubeconfig}",
                           "--metrics-addr=0", "--enable-leader-election=false",
                           f"--health-probe-bind-address=127.0.0.1:{health}"], env=env)

    def ready():
        try:
            return requests.get(f"http://127.0.0.1:{health}/readyz", timeout=2).ok or \
                NotYet("not ready")
        except requests.RequestException as error:
            return NotYet(str(error))

    cluster.wait("the KubeRay operator ready", ready, 60, LOGS)


def ray_template(container: str, priority_class: str) -> dict[str, Any]:
    """A Ray pod template: 4 GPUs, for headstart's scheduler, in one placement group."""
    return {"metadata": {"annotations": {"headstart.io/placement-group": "required"}},
            "spec": {"schedulerName": HEADSTART_SCHEDULER, "terminationGracePeriodSeconds": 0,
                     "priorityClassName": priority_class, "tolerations": [GPU_TOLERATION],
                     "containers": [{"name": container, "image": IMAGE, "resources": {
                         "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "4"},
                         "limits": {"nvidia.com/gpu": "4"}}}]}}


def rayjob(name: str, workers: int, priority_class: str) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
            "spec": {
                "entrypoint": "python -c 'print(1)'", "shutdownAfterJobFinishes": True,
                # Pinned to no node: kwok would complete it, and the operator fails a
                # RayJob whose submitter finished without the Ray job saying so.
                "submitterPodTemplate": {"spec": {
                    "restartPolicy": "Never", "nodeSelector": {"e2e/nowhere": "true"},
                    "containers": [{"name": "ray-job-submitter", "image": IMAGE}]}},
                "rayClusterSpec": {
                    "headGroupSpec": {"rayStartParams": {},
                                      "template": ray_template("ray-head", priority_class)},
                    "workerGroupSpecs": [{
                        "groupName": "gpu", "replicas": workers, "minReplicas": workers,
                        "maxReplicas": workers, "rayStartParams": {},
                        "template": ray_template("ray-worker", priority_class)}]}}}


def ray_clusters(kube, namespace: str, job: str) -> list[dict[str, Any]]:
    """The RayClusters the RayJob `job` controls, not being deleted."""
    return [c for c in kube.list(f"{API}/namespaces/{namespace}/rayclusters")
            if not c["metadata"].get("deletionTimestamp")
            and any(r.get("controller") and r["kind"] == "RayJob" and r["name"] == job
                    for r in c["metadata"].get("ownerReferences") or ())]


def one_cluster(kube, namespace: str, job: str, other_than: str | None = None):
    found = [c["metadata"]["name"] for c in ray_clusters(kube, namespace, job)
             if c["metadata"]["name"] != other_than]
    return found[0] if len(found) == 1 else NotYet(found)


def cluster_pods(kube, namespace: str, name: str) -> list[dict[str, Any]]:
    return [p for p in kube.list(f"/api/v1/namespaces/{namespace}/pods",
                                 label_selector=f"ray.io/cluster={name}")
            if not p["metadata"].get("deletionTimestamp")]


def bound_whole(kube, namespace: str, name: str, size: int):
    pods = cluster_pods(kube, namespace, name)
    nodes = {p["metadata"]["name"]: bound_node(p) for p in pods}
    if len(pods) != size or not all(nodes.values()):
        return NotYet(f"{sum(map(bool, nodes.values()))} of {size} bound ({len(pods)} live)")
    return pods


def assert_one_gang_of(cluster, namespace: str, name: str, size: int) -> list[dict[str, Any]]:
    """The RayCluster `name`'s pods: one Gang of `size` Running, its PodGroup's
    minMember `size`, every pod bound whole by headstart's scheduler."""
    kube = cluster.kube
    pods = cluster.wait(f"{name}'s {size} pods bound", lambda: bound_whole(
        kube, namespace, name, size), 120, LOGS)
    record = cluster.wait(f"{name}'s Gang Running", lambda: gang_state(
        cluster, namespace, name, "Running"), 60, LOGS)
    assert record["spec"]["size"] == size, record["spec"]
    gangs = kube.list(f"/apis/headstart.io/v1alpha1/namespaces/{namespace}/gangs")
    assert [g["metadata"]["name"] for g in gangs if g["status"].get("state") != "Evicted"
            and g["metadata"]["name"].startswith("rj-")] == [name], \
        [(g["metadata"]["name"], g["status"]) for g in gangs]
    group = kube.get(PODGROUPS.format(namespace=namespace) + f"/{name}")
    assert group["spec"]["minMember"] == size, group["spec"]
    roles = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
    assert roles == ["head"] + ["worker"] * (size - 1), roles
    for pod in pods:
        scheduled = kube.events(namespace, pod["metadata"]["name"], reason="Scheduled")
        by = {e.get("reportingComponent") or (e.get("source") or {}).get("component")
              for e in scheduled}
        assert by == {HEADSTART_SCHEDULER}, (pod["metadata"]["name"], scheduled)
    return pods


class Versions:
    """Every version of one object, from a watch read in a daemon thread with a session
    of its own: what polling would miss between two reads. The API server ends the
    watch after `TIMEOUT_S` (closing a response another thread reads can deadlock)."""

    TIMEOUT_S = 300

    def __init__(self, kube, collection: str, name: str) -> None:
        self.seen: list[dict[str, Any]] = []
        session = requests.Session()
        session.trust_env = False
        session.verify, session.cert = kube.session.verify, kube.session.cert
        version = kube.request("GET", collection)["metadata"]["resourceVersion"]
        self.response = session.get(
            kube.server + collection, stream=True, timeout=(15, self.TIMEOUT_S + 30),
            params={"watch": "1", "resourceVersion": version, "timeoutSeconds":
                    str(self.TIMEOUT_S), "fieldSelector": f"metadata.name={name}"})
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with contextlib.suppress(requests.RequestException, ValueError):
            for line in self.response.iter_lines():
                if line:
                    self.seen.append(json.loads(line)["object"])

    def so_far(self) -> list[dict[str, Any]]:
        return list(self.seen)


def extender_patches(cluster, namespace: str, job: str) -> list[int]:
    """The response codes of the extender's patches of the RayJob (the audit log)."""
    return [event["responseStatus"]["code"] for event in cluster.audit_events()
            if event.get("verb") == "patch" and event.get("stage") == "ResponseComplete"
            and (ref := event.get("objectRef") or {}).get("resource") == "rayjobs"
            and ref.get("namespace") == namespace and ref.get("name") == job
            and event["user"]["username"].endswith(":headstart-extender")]


def test_a_rayjob_is_one_gang_preempted_whole_by_suspending_it_and_admitted_again(
        ray_cluster, namespace, e2e_timings):
    cluster, _ = ray_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    path = f"{API}/namespaces/{namespace}/rayjobs/rj"
    created = time.monotonic()
    kube.create(f"{API}/namespaces/{namespace}/rayjobs", rayjob("rj", 3, "e2e-low"))
    first = cluster.wait("the RayJob's RayCluster", lambda: one_cluster(
        kube, namespace, "rj"), 60, LOGS)
    before = {p["metadata"]["uid"] for p in assert_one_gang_of(cluster, namespace, first, 4)}
    running_s = time.monotonic() - created

    versions = Versions(kube, f"{API}/namespaces/{namespace}/rayjobs", "rj")
    run_job(cluster, namespace, prioritized("high", 2, "e2e-high"))
    preempting = time.monotonic()
    cluster.wait("the high job bound whole", lambda: running_pods(
        cluster, namespace, "high", 2), 120, LOGS)
    high_bound_s = time.monotonic() - preempting
    record = gang(cluster, namespace, first)
    assert record["status"]["state"] == "Evicted", record["status"]
    assert record["status"]["message"].startswith(f"preempted whole by {namespace}/high"), \
        record["status"]
    job = kube.get(path)
    assert record["status"]["suspendedJobs"] == [
        {"kind": "RayJob", "name": "rj", "uid": job["metadata"]["uid"]}], record["status"]
    cluster.wait("the first RayCluster deleted", lambda: kube.get(
        f"{API}/namespaces/{namespace}/rayclusters/{first}", missing_ok=True) is None
        or NotYet("still there"), 60, LOGS)
    # Resumed once the operator said Suspended: a new RayCluster, its pods gated.
    second = cluster.wait("a new RayCluster for the resumed RayJob", lambda: one_cluster(
        kube, namespace, "rj", other_than=first), 90, LOGS)
    job = kube.get(path)
    assert job["spec"]["suspend"] is False and MARK not in (job["metadata"].get("labels") or {})
    assert job["status"].get("jobDeploymentStatus") not in ("Failed", "Complete"), \
        job["status"]
    states = [(v["spec"].get("suspend"), MARK in (v["metadata"].get("labels") or {}),
               (v.get("status") or {}).get("jobDeploymentStatus"))
              for v in versions.so_far()]
    # Marked and suspended in one patch; Suspended said by the operator while still
    # marked; unmarked and resumed in one patch.
    assert (True, True, "Suspended") in states, states
    assert not [s for s in states if bool(s[0]) != s[1]], states
    assert extender_patches(cluster, namespace, "rj") == [200, 200]

    def gated():
        pods = cluster_pods(kube, namespace, second)
        waiting = [p for p in pods if not bound_node(p)
                   and {"name": GATE} in (p["spec"].get("schedulingGates") or [])]
        return pods if len(waiting) == 4 else NotYet(f"{len(waiting)} of {len(pods)} gated")

    cluster.wait("the new RayCluster's 4 pods gated", gated, 60, LOGS)
    assert not before & {p["metadata"]["uid"] for p in cluster_pods(kube, namespace, first)}
    reasons = headstart_events(kube, namespace)
    assert ("RayJob", "HeadstartSuspended") in reasons, reasons
    assert ("RayJob", "HeadstartResumed") in reasons, reasons
    assert not [r for r in reasons if r[1] == "HeadstartEvicted" or r[0] == "RayCluster"], \
        reasons

    # The room freed: the new cluster's gang is admitted whole.
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/high?propagationPolicy=Background")
    freed = time.monotonic()
    assert_one_gang_of(cluster, namespace, second, 4)
    readmitted_s = time.monotonic() - freed
    job = kube.get(path)
    assert job["status"].get("jobDeploymentStatus") not in ("Failed", "Complete"), \
        json.dumps(job["status"])
    e2e_timings.record("rayjob: one gang of 4, preempted by suspending the RayJob, readmitted",
                       created_to_gang_running=running_s,
                       high_created_to_bound=high_bound_s,
                       room_freed_to_gang_running=readmitted_s)
    kube.delete(f"{path}?propagationPolicy=Background")


def test_the_extender_may_not_suspend_a_rayjob_kuberay_would_fail(ray_cluster, namespace):
    cluster, _ = ray_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    loose = rayjob("loose", 1, "e2e-low")
    loose["spec"]["shutdownAfterJobFinishes"] = False
    kube.create(f"{API}/namespaces/{namespace}/rayjobs", loose)
    mark = {MARK: str(int(time.time()) + 60)}
    code, err = patch_as_extender(cluster, namespace, "rayjobs", "loose", {
        "metadata": {"labels": mark}, "spec": {"suspend": True}}, api="ray.io/v1")
    assert code in (403, 422) and "headstart-extender-jobset-edits" in err, (code, err)
    assert "KubeRay would fail" in err, err
    found = kube.get(f"{API}/namespaces/{namespace}/rayjobs/loose")
    assert not found["spec"].get("suspend") and MARK not in found["metadata"].get("labels", {})
    kube.delete(f"{API}/namespaces/{namespace}/rayjobs/loose?propagationPolicy=Background")
