"""The shipped RBAC rules are exactly what the code calls: nothing missing, nothing extra.

Each component runs for real (its own CLI, in a subprocess) against the fake API
server; every request it makes is turned into the (API group, resource, verb) that
RBAC authorizes, and compared with the rules bound to the component's
ServiceAccount in the rendered manifests. A call with no rule fails in a real
cluster with 403; a rule with no call is privilege the component does not need.
Discovery (`/api`, `/apis/...` without a resource) needs no RBAC rule.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.manifests import checks

Call = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


def rbac_call(method: str, path: str, query: str) -> Call | None:
    """The RBAC attributes of one API request, or None for discovery."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if not rest:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    watching = "watch=true" in query or "watch=1" in query
    verb = {
        "GET": "get" if name else ("watch" if watching else "list"),
        "POST": "create", "PUT": "update", "PATCH": "patch",
        "DELETE": "delete" if name else "deletecollection",
    }[method]
    # No aliasing: the `bindings` collection and the `pods/binding` subresource are
    # different RBAC resources (system:kube-scheduler grants both; a rule for one does
    # not authorize the other), so a call to one must never count as the other.
    return group, resource, verb


def rbac_calls(fake_kube) -> set[Call]:
    """The RBAC attributes of every request the fake saw, plus `create` for each
    server-side apply that created its object: kube-apiserver authorizes that apply
    as both `patch` and `create` (k8s.io/apiserver pkg/endpoints/handlers/patch.go), so
    a Role with `patch` alone gets 403 on the first apply of every placeholder."""
    calls = {c for c in (rbac_call(*r) for r in fake_kube.requests) if c}
    for path in fake_kube.applied_creations:
        group, resource, _ = rbac_call("PATCH", path, "")
        calls.add((group, resource, "create"))
    return calls


granted = checks.granted


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, seconds: float) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return response.status
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer 200 within {seconds} s")


def run_component(
    argv: list[str], ready_url: str, then: Iterable = ()
) -> subprocess.CompletedProcess:
    """Start `headstart ARGV`, wait until ready, run the `then` callables, SIGTERM it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "headstart", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for(ready_url, 30)
        for step in then:
            step()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            raise AssertionError(f"headstart {argv[0]} ignored SIGTERM for 20 s") from None
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> checks.Rendered:
    return checks.render("eks", checks.MANIFESTS, tmp_path_factory.mktemp("rbac"))


def seed_cluster(fake_kube) -> None:
    fake_kube.create({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": {"headstart.io/placement-group": "pg-a"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1",
                                   "pods": "110"}},
    })
    fake_kube.create({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-ps-0", "namespace": "default",
                     "labels": {"headstart.io/job": "job", "headstart.io/role": "ps"}},
        # The extender binds only pods of the schedulers it serves.
        "spec": {"schedulerName": "headstart-scheduler",
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    })


def post_filter(port: int) -> None:
    body = json.dumps({
        "Pod": {"metadata": {"name": "job-worker-0", "namespace": "default",
                             "labels": {"headstart.io/job": "job", "headstart.io/role": "worker"}},
                "spec": {"containers": [{"name": "c", "resources": {
                    "requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]}},
        "Nodes": None, "NodeNames": ["gpu-1"],
    }).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/filter", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        answer = json.loads(response.read())
    assert answer["NodeNames"] == ["gpu-1"], answer


def post_bind(port: int, fake_kube) -> None:
    """kube-scheduler's bind call for the seeded PS pod, as it sends it."""
    pod = fake_kube.get("v1", "Pod", "job-ps-0", "default")
    body = json.dumps({"PodName": "job-ps-0", "PodNamespace": "default",
                       "PodUID": pod["metadata"]["uid"], "Node": "gpu-1"}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/bind", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        answer = json.loads(response.read())
    assert answer == {"Error": ""}, answer
    assert fake_kube.get("v1", "Pod", "job-ps-0", "default")["spec"]["nodeName"] == "gpu-1"


def gated_pod(job: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{job}-0", "namespace": "default",
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                          "name": job, "uid": f"{job}-uid",
                                          "controller": True}],
                     "labels": {"headstart.io/job": job, "headstart.io/role": "worker"},
                     "annotations": {"headstart.io/job-size": "1"}},
        "spec": {"schedulingGates": [{"name": "headstart.io/placement"}],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }


def seed_gated_job(fake_kube) -> None:
    """Two one-pod jobs behind the placement gate, owned by Jobs: the admitter
    (leader-elected: a Lease) reads each pod, patches it, writes an Event on it and a
    gang record for its job. Nothing binds `gated`: once the bind timeout passes the
    admitter evicts it. `gone`'s pod is deleted at once: its record is deleted."""
    fake_kube.create(gated_pod("gated"))
    fake_kube.create(gated_pod("gone"))


def seed_elastic_jobs(fake_kube) -> None:
    """Two elastic owners that opted in (headstart.io/min-size, max-size) whose pods do
    not all fit gpu-1: an Indexed Job of 2 pods of 20 GiB, a PyTorchJob of 3 workers of
    3 CPUs. The admitter resizes each to what the node holds (a patch of the owner)."""
    bounds = {"headstart.io/min-size": "1", "headstart.io/max-size": "3"}
    fake_kube.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "elastic", "namespace": "default", "annotations": bounds},
        "spec": {"parallelism": 2, "completions": 2, "completionMode": "Indexed",
                 "template": {"spec": {"containers": [{"name": "c"}]}}}})
    fake_kube.create({
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "pt", "namespace": "default", "annotations": bounds},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}})
    for index in range(2):
        pod = gated_pod("elastic")
        pod["metadata"].update(
            name=f"elastic-{index}", labels={},
            annotations={"batch.kubernetes.io/job-completion-index": str(index)})
        pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "100m",
                                                                 "memory": "20Gi"}
        fake_kube.create(pod)
    for index in range(3):
        pod = gated_pod("pt")
        pod["metadata"].update(
            name=f"pt-worker-{index}", annotations={}, ownerReferences=[
                {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "pt",
                 "uid": "pt-uid", "controller": True}],
            labels={"training.kubeflow.org/job-name": "pt",
                    "training.kubeflow.org/replica-type": "worker",
                    "training.kubeflow.org/replica-index": str(index)})
        pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "3"}
        fake_kube.create(pod)


def seed_marked_jobset(fake_kube) -> None:
    """A JobSet carrying headstart's suspension mark whose owner resumed it: the
    admitter unmarks it (a patch of the JobSet, as a release is)."""
    fake_kube.create({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "resumed", "namespace": "default",
                     "labels": {"headstart.io/suspended": "1"}},
        "spec": {"suspend": False, "replicatedJobs": [
            {"name": "w", "replicas": 1, "template": {"spec": {"parallelism": 1}}}]}})


def seed_marked_tfjob(fake_kube) -> None:
    """A TFJob and an MPIJob carrying headstart's suspension mark whose owners resumed
    them: unmarked, as the JobSet above (a patch of each)."""
    for kind, specs in (("TFJob", "tfReplicaSpecs"), ("MPIJob", "mpiReplicaSpecs")):
        fake_kube.create({
            "apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": f"resumed-{kind.lower()}", "namespace": "default",
                         "labels": {"headstart.io/suspended": "1"}},
            "spec": {"runPolicy": {"suspend": False},
                     specs: {"Worker": {"replicas": 1, "template": {"spec": {}}}}}})


def seed_marked_trainjob(fake_kube) -> None:
    """A TrainJob carrying headstart's mark whose owner resumed it: unmarked too."""
    fake_kube.create({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "resumed-trainjob", "namespace": "default",
                     "labels": {"headstart.io/suspended": "1"}},
        "spec": {"suspend": False, "trainer": {"numNodes": 1}}})


def seed_marked_ray(fake_kube) -> None:
    """A RayCluster and a RayJob carrying headstart's mark whose owners resumed them:
    unmarked too."""
    cluster = {"headGroupSpec": {"template": {"spec": {}}}, "workerGroupSpecs": [
        {"groupName": "w", "replicas": 1, "template": {"spec": {}}}]}
    for kind, spec in (("RayCluster", cluster), ("RayJob", {"rayClusterSpec": cluster})):
        fake_kube.create({
            "apiVersion": "ray.io/v1", "kind": kind,
            "metadata": {"name": f"resumed-{kind.lower()}", "namespace": "default",
                         "labels": {"headstart.io/suspended": "1"}},
            "spec": {"suspend": False, **spec}})


def jobset_unmarked(fake_kube) -> None:
    wait_until(lambda: "headstart.io/suspended" not in (fake_kube.get(
        "jobset.x-k8s.io/v1alpha2", "JobSet", "resumed", "default")["metadata"].get(
        "labels") or {}), 30, "the admitter to unmark the JobSet its owner resumed")
    for api, kind in (("kubeflow.org/v1", "TFJob"), ("kubeflow.org/v1", "MPIJob"),
                      ("trainer.kubeflow.org/v1alpha1", "TrainJob"), ("ray.io/v1", "RayCluster"),
                      ("ray.io/v1", "RayJob")):
        wait_until(lambda api=api, kind=kind: "headstart.io/suspended" not in (fake_kube.get(
            api, kind, f"resumed-{kind.lower()}", "default")["metadata"].get(
            "labels") or {}), 30, f"the admitter to unmark the {kind} its owner resumed")


def elastic_owners_resized(fake_kube) -> None:
    def resized() -> bool:
        job = fake_kube.get("batch/v1", "Job", "elastic", "default")
        pt = fake_kube.get("kubeflow.org/v1", "PyTorchJob", "pt", "default")
        return job["spec"]["parallelism"] < 2 and job["spec"]["completions"] < 2 and \
            pt["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] < 3

    wait_until(resized, 30, "the admitter to resize the elastic owners")


def gang(fake_kube, name: str) -> dict | None:
    return fake_kube.get("headstart.io/v1alpha1", "Gang", name, "default")


def gate_lifted(fake_kube) -> None:
    def lifted() -> bool:
        pod = fake_kube.get("v1", "Pod", "gated-0", "default")
        admitted = any(e["reason"] == "HeadstartAdmitted"
                       for e in fake_kube.list("v1", "Event", "default"))
        # Gone already: evicted after the bind timeout, so admitted first.
        return admitted and (pod is None or not pod["spec"].get("schedulingGates"))

    wait_until(lifted, 30, "the admitter to lift the gate")


def records_kept_and_deleted(fake_kube) -> None:
    """`gone`'s record is deleted once its pod is; `gated`'s pod, never bound within
    the bind timeout (5 s in this run's config), is evicted and its record says so."""
    wait_until(lambda: gang(fake_kube, "gone"), 30, "the admitter to write gone's record")
    # Its PodGroup is marked admitted (a patch) once its pods are patched: wait for it, or
    # a loaded machine deletes the pod first and the patch rule looks unused.
    wait_until(lambda: "headstart.io/admitted-at" in ((fake_kube.get(
        "scheduling.x-k8s.io/v1alpha1", "PodGroup", "gone", "default") or {}).get(
        "metadata", {}).get("annotations") or {}), 30, "the admitter to mark gone's PodGroup")
    fake_kube.delete("v1", "Pod", "gone-0", "default")
    wait_until(lambda: not gang(fake_kube, "gone"), 30, "the admitter to delete gone's record")
    wait_until(lambda: not fake_kube.get("v1", "Pod", "gated-0", "default"),
               30, "the admitter to evict the pod it admitted")
    wait_until(lambda: (gang(fake_kube, "gated") or {}).get("status", {}).get("state")
               == "Evicted", 30, "the admitter to record the eviction")


def test_extender_rbac_matches_its_api_calls(fake_kube, rendered, tmp_path):
    seed_cluster(fake_kube)
    seed_gated_job(fake_kube)
    # Both PodGroup CRDs and the owners' CRDs installed, so the extender's calls cover
    # their watch rules too.
    for group_version in ("scheduling.volcano.sh/v1beta1", "scheduling.x-k8s.io/v1alpha1",
                          "kubeflow.org/v1", "jobset.x-k8s.io/v1alpha2",
                          "trainer.kubeflow.org/v1alpha1", "leaderworkerset.x-k8s.io/v1",
                          "ray.io/v1"):
        fake_kube.serve(group_version)
    # `gated`'s PodGroup name is taken by a tenant's: the admitter's create gets 409 and
    # it reads that one back (not its own: left alone); `gone` gets its own.
    fake_kube.create({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                      "metadata": {"name": "gated", "namespace": "default"},
                      "spec": {"minMember": 1}})
    seed_elastic_jobs(fake_kube)
    seed_marked_jobset(fake_kube)
    seed_marked_tfjob(fake_kube)
    seed_marked_trainjob(fake_kube)
    seed_marked_ray(fake_kube)
    port, ops_port = free_port(), free_port()
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "extender.yaml"
    config.write_text("admission: {bind_timeout_seconds: 5}\n")
    result = run_component(
        ["extender", "--kubeconfig", kubeconfig, "--config", str(config), "--port", str(port),
         "--ops-port", str(ops_port)],
        f"http://127.0.0.1:{ops_port}/readyz",
        then=[lambda: post_filter(port), lambda: post_bind(port, fake_kube),
              lambda: gate_lifted(fake_kube), lambda: elastic_owners_resized(fake_kube),
              lambda: jobset_unmarked(fake_kube), lambda: records_kept_and_deleted(fake_kube)],
    )
    assert result.returncode == 0, result.stderr[-2000:]
    calls = rbac_calls(fake_kube)
    rules = granted(rendered, "headstart-extender")
    assert calls - rules == set(), f"calls without an RBAC rule (403 in a cluster): {calls - rules}"
    assert rules - calls == set(), f"RBAC rules the extender never uses: {rules - calls}"
    # ConfigMaps are read by name in other namespaces (CA's status in kube-system, the
    # worker plans in headstart-placeholders): each read has its named Role there.
    reads = named_gets(fake_kube, "configmaps")
    assert ("headstart-placeholders", "headstart-worker-plans") in reads
    named = {(namespace, name) for namespace, group, resource, verb, name
             in checks.granted_by_name(rendered, "headstart-extender")
             if (group, resource, verb) == ("", "configmaps", "get")}
    assert reads == named, f"reads {reads} but Roles name {named}"


def named_gets(fake_kube, resource: str) -> set[tuple[str, str]]:
    """(namespace, name) of every core-group GET of one object of `resource`."""
    out = set()
    for method, path, _ in fake_kube.requests:
        parts = [p for p in path.split("/") if p]
        if method == "GET" and parts[:3] == ["api", "v1", "namespaces"] and \
                len(parts) == 6 and parts[4] == resource:
            out.add((parts[3], parts[5]))
    return out


def overprovisioner_config(path: Path, instance_types: list[str], backend: str,
                           port: int) -> str:
    path.write_text(
        "catalog: aws\n"
        f"instance_types: [{', '.join(instance_types)}]\n"
        "tick: 5m\n"
        f"forecast: {{history_path: {path.parent / 'history.sqlite'}}}\n"
        f"placeholders: {{backend: {backend}}}\n"
        f"host: 127.0.0.1\nport: {port}\n"
    )
    return str(path)


def wait_until(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def owned(fake_kube, api_version: str, kind: str) -> list[str]:
    return sorted(
        o["metadata"]["name"] for o in fake_kube.list(api_version, kind, "headstart")
        if o["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by") == "headstart"
    )


def exercise_overprovisioner(tmp_path: Path, backend: str, api_version: str,
                             kind: str) -> set[Call]:
    """On a fresh fake cluster with no history (cold start): the first run recreates the
    missing PriorityClass and applies one placeholder per type; a second run with one
    type fewer prunes the other. Every known-demand source's API is served, so the
    default config reads them all. Returns the RBAC attributes of every call made."""
    from tests.fakekube import CRD_GROUP_VERSIONS, FakeKube

    kube = FakeKube().start()
    try:
        if backend == "capacitybuffer":
            kube.serve(api_version)
        for group_version in CRD_GROUP_VERSIONS:
            kube.serve(group_version)
        seed_cluster(kube)
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        for run, types in enumerate((["g5.xlarge", "g5.12xlarge"], ["g5.xlarge"])):
            port = free_port()
            config = overprovisioner_config(tmp_path / f"config-{run}.yaml", types, backend, port)

            def applied(types=types) -> bool:
                return len(owned(kube, api_version, kind)) == len(types)

            result = run_component(
                ["overprovisioner", "--config", config, "--kubeconfig", kubeconfig],
                f"http://127.0.0.1:{port}/readyz",
                then=[lambda applied=applied: wait_until(applied, 30, f"{kind} placeholders")],
            )
            assert result.returncode == 0, result.stderr[-2000:]
        assert kube.get("scheduling.k8s.io/v1", "PriorityClass", "headstart-placeholder")
        return rbac_calls(kube)
    finally:
        kube.stop()


def test_overprovisioner_rbac_matches_its_api_calls(rendered, tmp_path):
    calls = set()
    for backend, api_version, kind in [
        ("deployment", "apps/v1", "Deployment"),
        ("capacitybuffer", "autoscaling.x-k8s.io/v1beta1", "CapacityBuffer"),
    ]:
        (tmp_path / backend).mkdir()
        calls |= exercise_overprovisioner(tmp_path / backend, backend, api_version, kind)
    rules = granted(rendered, "headstart-overprovisioner")
    assert calls - rules == set(), f"calls without an RBAC rule (403 in a cluster): {calls - rules}"
    # Its dead-man's switch scales an expired Deployment through the scale subresource,
    # the call the expiry job's test below makes (Applier.scale): not reached here; nor
    # the worker plans' ConfigMap, written only when an elastic job asks for a plan
    # (test_worker_planner_rbac_matches_its_api_calls).
    unused = rules - calls - {("apps", "deployments/scale", "patch"),
                              ("", "configmaps", "create"), ("", "configmaps", "patch")}
    assert unused == set(), f"RBAC rules the overprovisioner never uses: {unused}"


def test_worker_planner_rbac_matches_its_api_calls(rendered, fake_kube, tmp_path):
    """The worker planner's calls (owners listed, a job's pods, the plans' ConfigMap
    applied, created the first time) are all granted to the overprovisioner."""
    import numpy as np

    from overprovisioner.config.parse import parse_config
    from overprovisioner.service.apply import KubeApi
    from overprovisioner.service.worker_planner import PrometheusReader, WorkerPlanner
    from tests.fakeprometheus import FakePrometheus

    query = "sum(rate(samples_in[5m]))"
    prometheus = FakePrometheus({query: 30_000.0})
    fake_kube.serve("kubeflow.org/v1")
    fake_kube.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "stream", "namespace": "ml", "annotations": {
            "headstart.io/min-size": "1", "headstart.io/max-size": "16",
            "headstart.io/sample-rate-query": query,
            "headstart.io/throughput-model": "synchronous",
            "headstart.io/global-batch": "16384",
            "headstart.io/throughput-thetas": "0.00035,2.5726,0.9824,0.02786"}},
        "spec": {"parallelism": 4, "completions": 4, "completionMode": "Indexed",
                 "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}}})
    config = parse_config({"instance_types": ["p4d.24xlarge"], "placeholders": {
        "namespace": "headstart-placeholders"}}, "test.yaml")
    try:
        planner = WorkerPlanner(config, KubeApi(fake_kube.api_client(), 5.0), None,
                                PrometheusReader(prometheus.url), np.random.default_rng(0),
                                lambda s: None)
        assert planner.step(1_800_000_000.0, (), write=True).written
    finally:
        prometheus.stop()
    calls = rbac_calls(fake_kube)
    assert ("", "configmaps", "create") in calls and ("", "configmaps", "patch") in calls
    rules = granted(rendered, "headstart-overprovisioner")
    assert calls - rules == set(), f"calls without an RBAC rule (403 in a cluster): {calls - rules}"
    # the patch is narrowed to the one ConfigMap, in the namespace it writes
    patched = {tuple(path.split("/")[4:7:2]) for method, path, _ in fake_kube.requests
               if method == "PATCH" and "/configmaps/" in path}
    assert patched == {("headstart-placeholders", "headstart-worker-plans")}
    named = {(namespace, name) for namespace, group, resource, verb, name
             in checks.granted_by_name(rendered, "headstart-overprovisioner")
             if (group, resource, verb) == ("", "configmaps", "patch")}
    assert patched <= named, f"patches {patched} but Roles name {named}"


def exercise_expiry(tmp_path: Path, backend: str, api_version: str, kind: str
                    ) -> set[Call]:
    """The overprovisioner writes one placeholder object, then stops; its valid-until is
    set in the past; `headstart expire-placeholders` runs once (the CronJob's command)
    and scales it to the floor (0). Returns the RBAC attributes of the expiry's calls."""
    from tests.fakekube import FakeKube

    kube = FakeKube().start()
    try:
        if backend == "capacitybuffer":
            kube.serve(api_version)
        seed_cluster(kube)
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        port = free_port()
        config = overprovisioner_config(tmp_path / "config.yaml", ["g5.xlarge"], backend, port)
        # One placeholder wanted even with no demand: the floor, min 1, then min 0 below.
        with open(config, "a") as handle:
            handle.write("limits: {default: {min: 1, max: 4}}\n")
        result = run_component(
            ["overprovisioner", "--config", config, "--kubeconfig", kubeconfig],
            f"http://127.0.0.1:{port}/readyz",
            then=[lambda: wait_until(lambda: len(owned(kube, api_version, kind)) == 1, 30,
                                     f"a {kind} placeholder")])
        assert result.returncode == 0, result.stderr[-2000:]
        [name] = owned(kube, api_version, kind)
        obj = kube.get(api_version, kind, name, "headstart")
        obj["metadata"]["annotations"]["headstart.io/valid-until"] = "2020-01-01T00:00:00Z"
        kube.replace(obj)
        text = open(config).read().replace("min: 1", "min: 0")
        open(config, "w").write(text)
        kube.requests.clear()
        kube.applied_creations.clear()
        done = subprocess.run(
            [sys.executable, "-m", "headstart", "expire-placeholders", "--config", config,
             "--kubeconfig", kubeconfig], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "scaled to the floor by the expiry job" in done.stderr
        assert kube.get(api_version, kind, name, "headstart")["spec"]["replicas"] == 0
        return rbac_calls(kube)
    finally:
        kube.stop()


def test_placeholder_expiry_rbac_matches_its_api_calls(rendered, tmp_path):
    """The CronJob's account may do exactly what `headstart expire-placeholders` does:
    list placeholder objects, change replica counts (a Deployment's only through its
    scale subresource), nothing else."""
    calls = set()
    for backend, api_version, kind in [
        ("deployment", "apps/v1", "Deployment"),
        ("capacitybuffer", "autoscaling.x-k8s.io/v1beta1", "CapacityBuffer"),
    ]:
        (tmp_path / backend).mkdir()
        calls |= exercise_expiry(tmp_path / backend, backend, api_version, kind)
    rules = granted(rendered, "headstart-placeholder-expiry")
    assert calls - rules == set(), f"calls without an RBAC rule (403 in a cluster): {calls - rules}"
    assert rules - calls == set(), f"RBAC rules the expiry job never uses: {rules - calls}"
    assert ("apps", "deployments", "patch") not in rules


@pytest.mark.parametrize(
    "request_line, expected",
    [
        (("GET", "/api/v1/pods", "watch=true&resourceVersion=5"), ("", "pods", "watch")),
        (("GET", "/api/v1/namespaces/headstart/pods/p", ""), ("", "pods", "get")),
        (("POST", "/api/v1/namespaces/default/pods/p/binding", ""),
         ("", "pods/binding", "create")),
        (("POST", "/api/v1/namespaces/default/bindings", ""), ("", "bindings", "create")),
        (("PATCH", "/apis/apps/v1/namespaces/headstart/deployments/d", "fieldManager=m"),
         ("apps", "deployments", "patch")),
        (("GET", "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies", ""),
         ("topology.node.k8s.io", "noderesourcetopologies", "list")),
        (("GET", "/apis/autoscaling.x-k8s.io/v1alpha1", ""), None),
    ],
    ids=["watch", "get", "pod-binding", "bindings-collection", "apply", "crd-list",
         "discovery"],
)
def test_requests_map_to_rbac_attributes(request_line, expected):
    assert rbac_call(*request_line) == expected


def test_granted_reads_the_rules_bound_to_an_account(rendered):
    assert ("", "nodes", "watch") in granted(rendered, "headstart-extender")
    assert ("apps", "deployments", "patch") not in granted(rendered, "headstart-extender")
    assert ("apps", "deployments", "patch") in granted(rendered, "headstart-overprovisioner")




def lease_rules(rendered: checks.Rendered, account: str) -> list[dict]:
    """The rules on Leases bound to ServiceAccount `account`."""
    return [rule for rule in checks.bound_rules(rendered, account)
            if "leases" in rule.get("resources", [])]


def test_each_component_may_take_only_its_own_lease(rendered):
    """An account that may update any Lease in `headstart` can take the admitter's or the
    scheduler's and stop admission or scheduling; create cannot be narrowed by name."""
    from overprovisioner.config.parse import parse_config

    _, extender = checks.config_file(rendered, "headstart-extender-config")
    _, overprovisioner = checks.config_file(rendered, "headstart-overprovisioner-config")
    _, scheduler = checks.config_file(rendered, "headstart-scheduler-config")
    own = {
        "headstart-extender": (extender.get("admission") or {}).get(
            "lease_name", "headstart-extender-admitter"),
        "headstart-overprovisioner": parse_config(
            overprovisioner, "shipped").leader_election.lease_name,
        "headstart-scheduler": scheduler["leaderElection"]["resourceName"],
    }
    for account, lease in own.items():
        rules = lease_rules(rendered, account)
        assert rules, account
        for rule in rules:
            named = rule.get("resourceNames")
            if set(rule["verbs"]) - {"create"}:
                assert named == [lease], (account, rule)
            else:
                assert named is None, (account, rule)  # a named create never matches
