"""The job admitter against the fake API server: real watches, real JSON patches, the
API server's rules for gated pods, Events, and leader election between two replicas."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace

import pytest

from extender.admission.admitter import Admitter
from extender.admission.events import EventRecorder, job_reference
from extender.admission.observe import AUTOSCALER_STATUS_SECONDS
from extender.admission.ungate import GatePatcher
from extender.binder import ApiBinder
from extender.cache import ClusterCache
from extender.sync import ClusterSync
from extender.wire import BindingArgs
from kube.leader import LeaderElector
from locality.admission.config import GATE, AdmissionConfig, NodeGroup
from locality.config import LocalityConfig
from locality.parse import rfc3339_seconds
from tests.extender.builders import make_node, make_pod
from tests.extender.test_sync import FAST, eventually

LOCALITY = LocalityConfig()
ADMISSION = AdmissionConfig(lease_namespace="headstart", lease_duration_s=3,
                            renew_deadline_s=2, retry_period_s=1, interval_seconds=0.1)
PG_KEY = "headstart.io/placement-group"


def gated_pod(name, job, size, gpus=8, policy="required", extra_spec=None):
    pod = make_pod(name, job=job, role="worker", gpus=gpus, annotations={
        "headstart.io/job-size": str(size), "headstart.io/placement-group": policy})
    pod["spec"]["schedulingGates"] = [{"name": GATE}]
    pod["spec"].update(extra_spec or {})
    return pod


@pytest.fixture
async def replicas(fake_kube):
    """A function starting a replica (cache, watches, elector, admitter)."""
    started = []

    def start(identity: str, leading: bool | None = None) -> Admitter:
        api = fake_kube.api_client()
        cache = ClusterCache(LOCALITY)
        sync = ClusterSync(api, cache, LOCALITY, FAST, watch_topology=False, watch_dra=False,
                           watch_pod_groups=False)
        sync.start(asyncio.get_running_loop())
        if leading is None:
            elector = LeaderElector(api, "headstart", ADMISSION, identity=identity)
            elector.start()
            is_leader = elector.is_leader
        else:
            elector = None
            is_leader = lambda: leading  # noqa: E731
        admitter = Admitter(cache, LOCALITY, ADMISSION, api, is_leader, identity,
                            batch_jobs=sync.resolver.batch_jobs)
        started.append((sync, elector))
        return admitter

    yield start
    for sync, elector in started:
        if elector is not None:
            elector.stop()
        await sync.stop(timeout=5)


def pod_of(kube, name):
    return kube.get("v1", "Pod", name, "team")


def events_for(kube, name):
    return [(e["reason"], e["message"]) for e in kube.list("v1", "Event", "team")
            if e["involvedObject"]["name"] == name]


async def settle(admitter, predicate, timeout=60.0):
    """Run rounds until `predicate()`: it returns as soon as that holds; the bound only
    ends a test whose rounds never get there (a loaded machine runs them slower)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if admitter.cache.ready():
            await admitter.round(time.time())
        if predicate():
            return
        if loop.time() > deadline:
            raise AssertionError(f"not reached; last plan: {admitter.summary()}")
        await asyncio.sleep(0.1)


async def test_whole_job_admitted_into_one_domain_and_the_other_waits(fake_kube, replicas):
    # pg-a: 2 nodes of 8 GPUs, pg-b: 1. Job a (2 x 8 GPUs) fits only pg-a; job b the same,
    # created after: it waits until a's pods are gone.
    for name, group in (("a1", "pg-a"), ("a2", "pg-a"), ("b1", "pg-b")):
        fake_kube.create(make_node(name, group=group))
    for index in range(2):
        fake_kube.create(gated_pod(f"a-{index}", "a", 2))
    await asyncio.sleep(0.01)  # b is younger
    for index in range(2):
        fake_kube.create(gated_pod(f"b-{index}", "b", 2))
    admitter = replicas("solo", leading=True)

    def a_admitted():
        return all(not pod_of(fake_kube, f"a-{i}")["spec"].get("schedulingGates")
                   for i in range(2))

    await settle(admitter, a_admitted)
    pod = pod_of(fake_kube, "a-0")
    assert pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": PG_KEY, "operator": "In", "values": ["pg-a"]}]}]
    assert pod["metadata"]["annotations"]["headstart.io/domain"] == "placement-group=pg-a"
    assert [r for r, _ in events_for(fake_kube, "a-0")] == ["HeadstartAdmitted"]
    assert pod_of(fake_kube, "b-0")["spec"]["schedulingGates"] == [{"name": GATE}]
    await eventually(lambda: bool(events_for(fake_kube, "b-1")))
    ((reason, message),) = events_for(fake_kube, "b-1")
    assert reason == "HeadstartWaiting" and "no placement-group domain holds" in message
    assert admitter.waiting_by_code()["no_fit"] == 1
    # a's pods are admitted but unbound: their reservation is read back from the API, so
    # a second round (or a new leader) still keeps b out.
    await admitter.round(time.time())
    assert pod_of(fake_kube, "b-0")["spec"]["schedulingGates"] == [{"name": GATE}]
    # a finishes and its pods go: b is admitted.
    for index in range(2):
        fake_kube.delete("v1", "Pod", f"a-{index}", "team")
    await settle(admitter, lambda: not pod_of(fake_kube, "b-0")["spec"].get("schedulingGates"))
    assert pod_of(fake_kube, "b-1")["metadata"]["annotations"]["headstart.io/domain"] == (
        "placement-group=pg-a")


async def test_existing_affinity_is_narrowed_as_the_api_server_allows(fake_kube, replicas):
    # The pod already requires GPU nodes (one term) and prefers something: the domain is
    # appended to the term; the fake applies kube-apiserver's narrowing rule.
    fake_kube.create(make_node("a1", group="pg-a", labels={"gpu": "yes"}))
    fake_kube.create(make_node("b1", group="pg-b", labels={"gpu": "yes"}))
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["yes"]}]}]}}}
    fake_kube.create(gated_pod("x-0", "x", 1, extra_spec={"affinity": affinity}))
    fake_kube.create(gated_pod("p-0", "p", 1, policy="preferred"))
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: not any(
        pod_of(fake_kube, n)["spec"].get("schedulingGates") for n in ("x-0", "p-0")))
    terms = pod_of(fake_kube, "x-0")["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert len(terms) == 1 and terms[0]["matchExpressions"][0]["key"] == "gpu"
    assert terms[0]["matchExpressions"][1]["key"] == PG_KEY
    preferred = pod_of(fake_kube, "p-0")["spec"]["affinity"]["nodeAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in preferred
    assert preferred["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 100


async def test_bad_input_gets_a_reason_never_a_silent_gate(fake_kube, replicas):
    fake_kube.create(make_node("n1", group="pg-a"))
    fake_kube.create(make_node("loose"))  # no placement-group label
    # A job that declares 3 pods and has 1; a pod of no job; a pod Kueue also gates.
    fake_kube.create(gated_pod("short-0", "short", 3, gpus=1))
    lone = make_pod("lone", gpus=1)
    lone["spec"]["schedulingGates"] = [{"name": GATE}]
    fake_kube.create(lone)
    kueue = gated_pod("k-0", "k", 1, gpus=1)
    kueue["spec"]["schedulingGates"].append({"name": "kueue.x-k8s.io/topology"})
    fake_kube.create(kueue)
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: pod_of(fake_kube, "lone")["spec"].get(
        "schedulingGates") == [] and bool(events_for(fake_kube, "short-0")))
    assert events_for(fake_kube, "lone")[0][0] == "HeadstartReleased"
    assert pod_of(fake_kube, "k-0")["spec"]["schedulingGates"] == [
        {"name": "kueue.x-k8s.io/topology"}]  # ours lifted, Kueue's left to Kueue
    assert "affinity" not in pod_of(fake_kube, "k-0")["spec"]
    ((reason, message),) = events_for(fake_kube, "short-0")
    assert reason == "HeadstartWaiting" and "1 of its 3 pods exist" in message
    explained = admitter.explain(admitter.cache.pod("team", "short-0"))
    assert explained["code"] == "incomplete"


async def test_two_replicas_only_the_leader_patches(fake_kube, replicas):
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    for index in range(2):
        fake_kube.create(gated_pod(f"j-{index}", "j", 2))
    one, two = replicas("one"), replicas("two")
    await eventually(lambda: one.is_leader() or two.is_leader(), timeout=15)
    leader, follower = (one, two) if one.is_leader() else (two, one)
    await eventually(lambda: follower.cache.ready() and leader.cache.ready())
    before = len(fake_kube.requests)
    await follower.round(time.time())
    assert not [r for r in fake_kube.requests[before:] if r[0] == "PATCH"]
    assert [a.job.name for a in follower.last_plan.admissions] == ["j"]  # plans, writes not
    await settle(leader, lambda: not pod_of(fake_kube, "j-1")["spec"].get("schedulingGates"))
    patches = [r for r in fake_kube.requests if r[0] == "PATCH" and "/pods/" in r[1]]
    assert len(patches) == 2  # one per pod, by the leader alone


def test_the_fake_rejects_what_kube_apiserver_rejects(fake_kube):
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core = client.CoreV1Api(fake_kube.api_client())
    fake_kube.create(gated_pod("g", "g", 1))
    fake_kube.create(make_pod("free", job="f"))

    def patch(name, ops):
        core.patch_namespaced_pod(name, "team", ops, _content_type="application/json-patch+json")

    with pytest.raises(ApiException) as error:  # a gate cannot be added
        patch("g", [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "x"}}])
    assert error.value.status == 422
    term = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    with pytest.raises(ApiException) as error:  # nor affinity set on an ungated pod
        patch("free", [{"op": "add", "path": "/spec/affinity",
                        "value": {"nodeAffinity": required}}])
    assert error.value.status == 422
    patch("g", [{"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": required}}])
    with pytest.raises(ApiException) as error:  # while gated: no term added to a set list
        patch("g", [{"op": "add", "path": "/spec/affinity/nodeAffinity/"
                     "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/-",
                     "value": term}])
    assert error.value.status == 422
    with pytest.raises(ApiException) as error:  # a failed test operation
        patch("g", [{"op": "test", "path": "/metadata/uid", "value": "other"}])
    assert error.value.status == 422
    batch = client.BatchV1Api(fake_kube.api_client())
    fake_kube.create(plain_job("j", 1))
    with pytest.raises(ApiException) as error:  # a merge patch naming another uid
        batch.patch_namespaced_job("j", "team", {"metadata": {"uid": "other"},
                                                 "spec": {"suspend": True}},
                                   _content_type="application/merge-patch+json")
    assert error.value.status == 422 and "field is immutable" in str(error.value.body)
    assert fake_kube.get("batch/v1", "Job", "j", "team")["spec"]["suspend"] is False
    stale = fake_kube.get("batch/v1", "Job", "j", "team")["metadata"]["resourceVersion"]
    batch.patch_namespaced_job("j", "team", {"metadata": {"labels": {"x": "1"}}},
                               _content_type="application/merge-patch+json")
    with pytest.raises(ApiException) as error:  # a merge patch guarded by a stale version
        batch.patch_namespaced_job("j", "team", {"metadata": {"resourceVersion": stale},
                                                 "spec": {"parallelism": 2}},
                                   _content_type="application/merge-patch+json")
    assert error.value.status == 409
    assert fake_kube.get("batch/v1", "Job", "j", "team")["spec"]["parallelism"] == 1


CA_STATUS = """time: 2026-01-01 00:00:00.000000000 +0000 UTC
autoscalerStatus: Running
nodeGroups:
- name: p4d-a
  health:
    status: Healthy
    nodeCounts:
      registered: {total: 1, ready: 1, notStarted: 0}
      longUnregistered: 0
      unregistered: 0
    cloudProviderTarget: 1
    minSize: 0
    maxSize: 3
"""


async def test_autoscaler_status_sizes_the_headroom_config_is_the_fallback(fake_kube, replicas):
    # pg-a: 1 p4d node; config says max_size 1 (no node to add), CA's status max 3,
    # 1 registered: 2 more. A 3-pod job of 8 GPUs fits only with CA's sizes.
    fake_kube.create(make_node("a1", group="pg-a",
                               labels={"node.kubernetes.io/instance-type": "p4d.24xlarge"}))
    fake_kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "cluster-autoscaler-status",
                                   "namespace": "kube-system"},
                      "data": {"status": CA_STATUS}})
    admitter = replicas("solo", leading=True)
    admitter.config = replace(ADMISSION, node_groups=(
        NodeGroup("p4d-a", "p4d.24xlarge", "pg-a", max_size=1),))
    await eventually(admitter.cache.ready)
    await admitter.refresh_autoscaler(0.0)
    await admitter.round(time.time())
    assert admitter.summary()["headroom"] == [
        {"domain": "placement-group=pg-a", "node_group": "p4d-a", "nodes": 2,
         "source": "autoscaler-status"}]
    # CA's map goes away: after the next read the config's max_size is used (no room).
    fake_kube.delete("v1", "ConfigMap", "cluster-autoscaler-status", "kube-system")
    await admitter.refresh_autoscaler(1.0)  # within the interval: not read again
    await admitter.round(time.time())
    assert admitter.summary()["headroom"][0]["source"] == "autoscaler-status"
    await admitter.refresh_autoscaler(AUTOSCALER_STATUS_SECONDS + 1)
    await admitter.round(time.time())
    summary = admitter.summary()
    assert summary["headroom"] == []  # max_size 1, 1 seen
    assert summary["autoscaler_status"].startswith("no status ConfigMap")


async def test_owner_replicas_hold_the_job_and_a_bad_count_is_an_event(fake_kube, replicas):
    # A PyTorchJob of 1 Master + 2 Workers; 2 of its pods exist, created long ago (past
    # settle_seconds): without the owner's size they would be admitted as a whole job.
    fake_kube.serve("kubeflow.org/v1")
    fake_kube.create(make_node("a1", group="pg-a"))
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
             "metadata": {"name": "pt", "namespace": "team"},
             "spec": {"pytorchReplicaSpecs": {"Master": {}, "Worker": {"replicas": 2}}}}
    fake_kube.create(owner)
    for index in range(2):
        pod = make_pod(f"pt-{index}", gpus=1, labels={"training.kubeflow.org/job-name": "pt"})
        pod["spec"]["schedulingGates"] = [{"name": GATE}]
        pod["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
        fake_kube.create(pod)
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: admitter.waiting_by_code()["incomplete"] == 1)
    assert "2 of its 3 pods exist" in admitter.summary()["waiting"][0]["reason"]
    fake_kube.replace({**owner, "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": "2"}}}})
    await settle(admitter, lambda: admitter.waiting_by_code()["size_unknown"] == 1)
    await eventually(lambda: bool(events_for(fake_kube, "pt-0")[1:]))
    reason, message = events_for(fake_kube, "pt-0")[-1]
    assert reason == "HeadstartWaiting"
    assert "PyTorchJob team/pt: spec.pytorchReplicaSpecs.Worker.replicas" in message
    assert pod_of(fake_kube, "pt-0")["spec"]["schedulingGates"] == [{"name": GATE}]


async def test_no_round_before_the_size_watches_have_listed(fake_kube, replicas):
    # Until PodGroups and owners are listed, a job could be taken as declaring no size:
    # the loop runs no round (and lifts no gate) before `sizes_listed()`.
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(gated_pod("one-0", "one", 1, gpus=1))
    started = replicas("solo", leading=True)
    listed = False
    admitter = Admitter(started.cache, LOCALITY, ADMISSION, fake_kube.api_client(),
                        lambda: True, "solo", sizes_listed=lambda: listed)
    task = asyncio.create_task(admitter.run())
    try:
        await eventually(started.cache.ready)
        await asyncio.sleep(1.0)  # 10 intervals
        assert pod_of(fake_kube, "one-0")["spec"]["schedulingGates"] == [{"name": GATE}]
        listed = True
        await eventually(lambda: not pod_of(fake_kube, "one-0")["spec"].get("schedulingGates"))
    finally:
        task.cancel()


def gang_of(kube, name):
    return kube.get("headstart.io/v1alpha1", "Gang", name, "team")


async def test_the_decision_lives_in_a_gang_record(fake_kube, replicas):
    # a fits pg-a and is admitted; b (larger than any domain even empty) is inadmissible.
    # Each gets a Gang record; a's becomes Running once its pods are bound, and is
    # deleted when its pods are gone.
    for name, group in (("a1", "pg-a"), ("a2", "pg-a"), ("b1", "pg-b")):
        fake_kube.create(make_node(name, group=group))
    for index in range(2):
        fake_kube.create(gated_pod(f"a-{index}", "a", 2))
    for index in range(3):
        fake_kube.create(gated_pod(f"b-{index}", "b", 3))
    admitter = replicas("solo", leading=True)

    def recorded(name, state):
        gang = gang_of(fake_kube, name)
        return gang is not None and gang["status"]["state"] == state

    await settle(admitter, lambda: recorded("a", "Admitted") and recorded("b", "Inadmissible"))
    gang = gang_of(fake_kube, "a")
    assert gang["spec"] == {"job": "a", "level": "placement-group", "policy": "required",
                            "size": 2}
    assert gang["status"]["domain"] == "placement-group=pg-a"
    assert gang["status"]["labelKey"] == PG_KEY
    assert gang_of(fake_kube, "b")["status"]["reason"] == "inadmissible"
    # Written by the admitter's field manager, applied server-side.
    assert [m["manager"] for m in gang["metadata"]["managedFields"]] == ["headstart-admitter"]
    binder = ApiBinder(fake_kube.api_client())
    for index in range(2):
        uid = pod_of(fake_kube, f"a-{index}")["metadata"]["uid"]
        assert await binder.bind(BindingArgs(f"a-{index}", "team", uid, "a1" if index else "a2")) \
            == ""
    # Bound is not running: Admitted until kubelet says each pod is Ready.
    await admitter.round(time.time())
    assert recorded("a", "Admitted")
    for index in range(2):
        kubelet_ready(fake_kube, f"a-{index}")
    await settle(admitter, lambda: recorded("a", "Running"))
    for index in range(2):
        fake_kube.delete("v1", "Pod", f"a-{index}", "team")

    await settle(admitter, lambda: gang_of(fake_kube, "a") is None)
    assert recorded("b", "Inadmissible")  # b still has its pods: its record stays


async def test_a_follower_writes_no_record(fake_kube, replicas):
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(gated_pod("a-0", "a", 1))
    follower = replicas("follower", leading=False)
    await eventually(follower.cache.ready)
    await follower.round(time.time())
    assert follower.summary()["admitting"]
    assert fake_kube.list("headstart.io/v1alpha1", "Gang", "team") == []


async def test_a_budget_that_would_stop_a_gangs_eviction_half_way_stops_all_of_it(
        fake_kube, replicas):
    # As below, but a PodDisruptionBudget allows 0 disruptions of a's running pod: the
    # Eviction API would take a-1 (pending, no budget) and refuse a-0, leaving half a
    # gang. Nothing is evicted, and the record says which budget and why.
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    for index in range(2):
        fake_kube.create(owned(gated_pod(f"a-{index}", "a", 2), "a"))
    fake_kube.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                      "metadata": {"name": "keep-a", "namespace": "team"},
                      "spec": {"selector": {"matchLabels": {"headstart.io/job": "a"}}},
                      "status": {"disruptionsAllowed": 0}})
    admitter = replicas("solo", leading=True)
    admitter.config = replace(ADMISSION, bind_timeout_seconds=3, backoff_base_seconds=30)
    await settle(admitter, lambda: (gang_of(fake_kube, "a") or {}).get(
        "status", {}).get("state") == "Admitted")
    uid = pod_of(fake_kube, "a-0")["metadata"]["uid"]
    assert await ApiBinder(fake_kube.api_client()).bind(
        BindingArgs("a-0", "team", uid, "a1")) == ""
    await eventually(lambda: admitter.cache.pod("team", "a-0").node_name == "a1")
    admitted_at = gang_of(fake_kube, "a")["status"]["lastTransitionTime"]
    await settle(admitter, lambda: "not evicted" in gang_of(fake_kube, "a")["status"].get(
        "message", ""))
    status = gang_of(fake_kube, "a")["status"]
    assert status["state"] == "Admitted" and "evictions" not in status
    assert status["lastTransitionTime"] == admitted_at  # the timeouts keep counting
    assert ("PodDisruptionBudget team/keep-a allows 0 disruption(s) and 1 of the gang's "
            "pods are under it") in status["message"]
    assert pod_of(fake_kube, "a-0") is not None and pod_of(fake_kube, "a-1") is not None
    assert not [e for e in fake_kube.list("v1", "Event", "team")
                if e["reason"] == "HeadstartEvicted"]
    assert admitter.evicted_jobs_total == 0


async def test_a_gang_not_whole_in_time_is_evicted_whole_and_backs_off(fake_kube, replicas):
    # a (2 pods, owned by a Job) is admitted into pg-a, but only one pod ever binds. After
    # bind_timeout_seconds both are evicted (the Eviction API, so PDBs hold), the record
    # says Evicted with requeueAt = now + the backoff, and each pod gets an Event.
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    for index in range(2):
        pod = gated_pod(f"a-{index}", "a", 2)
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                               "name": "a", "uid": "job-uid",
                                               "controller": True}]
        fake_kube.create(pod)
    admitter = replicas("solo", leading=True)
    # 3 s: time for the admitter's watch to see the bind below before the timeout (with
    # 1 s, a loaded machine evicted on a snapshot that had not seen it yet: 0 of 2).
    admitter.config = replace(ADMISSION, bind_timeout_seconds=3, backoff_base_seconds=30)
    await settle(admitter, lambda: (gang_of(fake_kube, "a") or {}).get(
        "status", {}).get("state") == "Admitted")
    uid = pod_of(fake_kube, "a-0")["metadata"]["uid"]
    assert await ApiBinder(fake_kube.api_client()).bind(
        BindingArgs("a-0", "team", uid, "a1")) == ""
    await eventually(lambda: admitter.cache.pod("team", "a-0").node_name == "a1")
    await settle(admitter, lambda: (gang_of(fake_kube, "a") or {}).get(
        "status", {}).get("state") == "Evicted")
    status = gang_of(fake_kube, "a")["status"]
    assert status["evictions"] == 1
    assert "not whole 3 s after it was admitted (1 of 2 bound)" in status["message"]
    assert pod_of(fake_kube, "a-0") is None and pod_of(fake_kube, "a-1") is None
    evicted = [e for e in fake_kube.list("v1", "Event", "team")
               if e["reason"] == "HeadstartEvicted"]
    assert sorted(e["involvedObject"]["name"] for e in evicted) == ["a-0", "a-1"]
    assert admitter.evicted_jobs_total == 1
    # The owner recreates a pod behind the gate: it waits out the backoff, and the
    # Evicted record (with its requeueAt) stays as it is.
    replacement = gated_pod("a-2", "a", 2)
    fake_kube.create(replacement)
    fake_kube.create(gated_pod("a-3", "a", 2))
    await settle(admitter, lambda: admitter.waiting_by_code()["backoff"] == 1)
    assert gang_of(fake_kube, "a")["status"]["state"] == "Evicted"
    assert pod_of(fake_kube, "a-2")["spec"]["schedulingGates"] == [{"name": GATE}]


def plain_job(name, size, **labels):
    """A batch/v1 Indexed Job as the Job controller would have it while its pods run."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "team", "labels": labels},
            "spec": {"parallelism": size, "completions": size, "completionMode": "Indexed",
                     "backoffLimit": 0, "suspend": False,
                     "template": {"spec": {"containers": [{"name": "c"}]}}}}


async def evicted_job_gang(fake_kube, replicas, backoff=30, **job_labels):
    """Job "a" (2 x 8 GPUs, its Job in the API with `job_labels`), admitted into pg-a,
    never bound, evicted after a 1 s bind timeout: (the admitter, the Job's uid)."""
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    job_uid = fake_kube.create(plain_job("a", 2, **job_labels))["metadata"]["uid"]
    for index in range(2):
        fake_kube.create(owned(gated_pod(f"a-{index}", "a", 2), "a"))
    admitter = replicas("solo", leading=True)
    admitter.config = replace(ADMISSION, bind_timeout_seconds=1, backoff_base_seconds=backoff)
    await eventually(lambda: ("Job", "team", "a") in admitter.batch_jobs())
    await settle(admitter, lambda: (gang_of(fake_kube, "a") or {}).get(
        "status", {}).get("state") == "Evicted")
    return admitter, job_uid


async def test_a_jobs_gang_not_whole_in_time_is_evicted_by_suspending_its_job(
        fake_kube, replicas):
    # The same gang as above, its pods controlled by a Job the API holds (backoffLimit 0:
    # one evicted pod would fail it for good). The admitter suspends the Job instead of
    # evicting the pods: the Job carries headstart's mark (when to resume), the record
    # names it, the Job gets the Event, no pod is evicted. Once the backoff is over the
    # admitter resumes the Job and removes the mark.
    admitter, job_uid = await evicted_job_gang(fake_kube, replicas, backoff=3)
    evicted_at = time.time()
    job = fake_kube.get("batch/v1", "Job", "a", "team")
    assert job["spec"]["suspend"] is True
    resume_at = int(job["metadata"]["labels"]["headstart.io/suspended"])
    status = gang_of(fake_kube, "a")["status"]
    assert status["suspendedJobs"] == [{"kind": "Job", "name": "a", "uid": job_uid}]
    assert abs(resume_at - rfc3339_seconds(status["requeueAt"], "requeueAt")) <= 1
    assert resume_at - evicted_at == pytest.approx(3, abs=1.5)
    assert pod_of(fake_kube, "a-0") is not None and pod_of(fake_kube, "a-1") is not None
    assert not [e for e in fake_kube.list("v1", "Event", "team")
                if e["reason"] == "HeadstartEvicted"]
    assert [r for r, _ in events_for(fake_kube, "a")] == ["HeadstartSuspended"]
    assert admitter.suspended_jobs_total == 1 and admitter.evicted_jobs_total == 1
    # Until the Job controller has acted on the suspension, the Job stays suspended
    # whatever the time: resumed first, it would keep its pods.
    await asyncio.sleep(max(resume_at - time.time(), 0) + 0.5)
    for _ in range(3):
        await admitter.round(time.time())
    assert fake_kube.get("batch/v1", "Job", "a", "team")["spec"]["suspend"] is True
    # The Job controller deletes the suspended Job's pods and says Suspended (played).
    for index in range(2):
        fake_kube.delete("v1", "Pod", f"a-{index}", "team")
    job = fake_kube.get("batch/v1", "Job", "a", "team")
    job["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    fake_kube.replace(job)
    await settle(admitter, lambda: fake_kube.get("batch/v1", "Job", "a", "team")[
        "spec"]["suspend"] is False, timeout=15)
    assert time.time() >= resume_at - 0.01
    job = fake_kube.get("batch/v1", "Job", "a", "team")
    assert "headstart.io/suspended" not in (job["metadata"].get("labels") or {})
    assert [r for r, _ in events_for(fake_kube, "a")] == ["HeadstartSuspended",
                                                          "HeadstartResumed"]
    assert admitter.released_jobs_total == 1


async def test_a_jobsets_gang_is_evicted_by_suspending_the_jobset(fake_kube, replicas):
    # JobSet "a" runs its 2 pods through its Job "a-workers-0" (the JobSet controller
    # decides that Job's suspension, so headstart suspends the JobSet, never the Job).
    # Released only once the JobSet controller said Suspended and the Job controller
    # acted on the Job it suspended (its condition): resumed before, the pods would stay.
    fake_kube.serve("jobset.x-k8s.io/v1alpha2")
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    jobset = fake_kube.create({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "a", "namespace": "team"},
        "spec": {"suspend": False, "replicatedJobs": [
            {"name": "workers", "replicas": 1,
             "template": {"spec": {"parallelism": 2, "completions": 2}}}]}})
    child = plain_job("a-workers-0", 2)
    child["metadata"]["ownerReferences"] = [{
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "a",
        "uid": jobset["metadata"]["uid"], "controller": True}]
    fake_kube.create(child)
    for index in range(2):
        fake_kube.create(owned(gated_pod(f"a-{index}", "a", 2), "a-workers-0"))
    admitter = replicas("solo", leading=True)
    admitter.config = replace(ADMISSION, bind_timeout_seconds=1, backoff_base_seconds=1)
    await eventually(lambda: {("JobSet", "team", "a"), ("Job", "team", "a-workers-0")}
                     <= set(admitter.batch_jobs()))
    await settle(admitter, lambda: (gang_of(fake_kube, "a") or {}).get(
        "status", {}).get("state") == "Evicted")
    found = fake_kube.get("jobset.x-k8s.io/v1alpha2", "JobSet", "a", "team")
    assert found["spec"]["suspend"] is True
    assert "headstart.io/suspended" in found["metadata"]["labels"]
    assert fake_kube.get("batch/v1", "Job", "a-workers-0", "team")["spec"]["suspend"] is False
    assert gang_of(fake_kube, "a")["status"]["suspendedJobs"] == [
        {"kind": "JobSet", "name": "a", "uid": jobset["metadata"]["uid"]}]
    assert pod_of(fake_kube, "a-0") is not None  # no pod evicted
    suspended = [e for e in fake_kube.list("v1", "Event", "team")
                 if e["reason"] == "HeadstartSuspended"]
    assert [(e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in suspended] \
        == [("JobSet", "a")]
    # The JobSet controller suspends its Job and says Suspended (played); the Job
    # controller has not acted yet: the JobSet stays suspended past its time.
    found["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    fake_kube.replace(found)
    job = fake_kube.get("batch/v1", "Job", "a-workers-0", "team")
    job["spec"]["suspend"] = True
    fake_kube.replace(job)
    resume_at = int(found["metadata"]["labels"]["headstart.io/suspended"])
    await eventually(lambda: admitter.batch_jobs()[("JobSet", "team", "a")].acknowledged)
    await asyncio.sleep(max(resume_at - time.time(), 0) + 0.5)
    for _ in range(3):
        await admitter.round(time.time())
    assert fake_kube.get("jobset.x-k8s.io/v1alpha2", "JobSet", "a", "team")[
        "spec"]["suspend"] is True
    # The Job controller deletes the pods and says Suspended: the JobSet is resumed.
    for index in range(2):
        fake_kube.delete("v1", "Pod", f"a-{index}", "team")
    job = fake_kube.get("batch/v1", "Job", "a-workers-0", "team")
    job["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    fake_kube.replace(job)
    await settle(admitter, lambda: fake_kube.get("jobset.x-k8s.io/v1alpha2", "JobSet", "a",
                                                 "team")["spec"]["suspend"] is False,
                 timeout=15)
    found = fake_kube.get("jobset.x-k8s.io/v1alpha2", "JobSet", "a", "team")
    assert "headstart.io/suspended" not in (found["metadata"].get("labels") or {})
    assert admitter.suspended_jobs_total == 1 and admitter.released_jobs_total == 1


async def test_a_pytorchjobs_gang_is_evicted_by_suspending_the_pytorchjob(fake_kube,
                                                                          replicas):
    # PyTorchJob "a" (Master 1 + Worker 1) controls its pods itself: the admitter sets its
    # spec.runPolicy.suspend and mark, keeps its other runPolicy fields, evicts no pod,
    # and resumes it once the training operator said Suspended and the time has come.
    fake_kube.serve("kubeflow.org/v1")
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    template = {"spec": {"containers": [{"name": "pytorch"}]}}
    trainer = fake_kube.create({
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "a", "namespace": "team"},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template},
                                         "Worker": {"replicas": 1, "template": template}},
                 "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0}}})
    uid = trainer["metadata"]["uid"]
    for index, role in enumerate(("master", "worker")):
        pod = gated_pod(f"a-{index}", "a", 2)
        pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] = role
        pod["metadata"]["ownerReferences"] = [{
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "a", "uid": uid,
            "controller": True}]
        fake_kube.create(pod)
    admitter = replicas("solo", leading=True)
    admitter.config = replace(ADMISSION, bind_timeout_seconds=1, backoff_base_seconds=1)
    await eventually(lambda: ("PyTorchJob", "team", "a") in admitter.batch_jobs())
    await settle(admitter, lambda: (gang_of(fake_kube, "a") or {}).get(
        "status", {}).get("state") == "Evicted")
    found = fake_kube.get("kubeflow.org/v1", "PyTorchJob", "a", "team")
    assert found["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "backoffLimit": 0,
                                          "suspend": True}
    assert "suspend" not in found["spec"]
    assert gang_of(fake_kube, "a")["status"]["suspendedJobs"] == [
        {"kind": "PyTorchJob", "name": "a", "uid": uid}]
    assert pod_of(fake_kube, "a-0") is not None and pod_of(fake_kube, "a-1") is not None
    suspended = [e for e in fake_kube.list("v1", "Event", "team")
                 if e["reason"] == "HeadstartSuspended"]
    assert [(e["involvedObject"]["apiVersion"], e["involvedObject"]["kind"])
            for e in suspended] == [("kubeflow.org/v1", "PyTorchJob")]
    # Past its time, but the operator has not acted: it stays suspended.
    resume_at = int(found["metadata"]["labels"]["headstart.io/suspended"])
    await asyncio.sleep(max(resume_at - time.time(), 0) + 0.5)
    for _ in range(3):
        await admitter.round(time.time())
    assert fake_kube.get("kubeflow.org/v1", "PyTorchJob", "a", "team")[
        "spec"]["runPolicy"]["suspend"] is True
    # The operator deletes the pods and says Suspended (played): resumed and unmarked.
    for index in range(2):
        fake_kube.delete("v1", "Pod", f"a-{index}", "team")
    found = fake_kube.get("kubeflow.org/v1", "PyTorchJob", "a", "team")
    found["status"] = {"conditions": [{"type": "Suspended", "status": "True"}]}
    fake_kube.replace(found)
    await settle(admitter, lambda: fake_kube.get("kubeflow.org/v1", "PyTorchJob", "a",
                                                 "team")["spec"]["runPolicy"]["suspend"]
                 is False, timeout=15)
    found = fake_kube.get("kubeflow.org/v1", "PyTorchJob", "a", "team")
    assert "headstart.io/suspended" not in (found["metadata"].get("labels") or {})
    assert admitter.suspended_jobs_total == 1 and admitter.released_jobs_total == 1


async def test_an_event_the_api_failed_to_take_is_sent_at_the_next_round(fake_kube,
                                                                        replicas):
    # The API answers an Event with 503 through all of the throttle's 4 attempts (an
    # outage longer than its backoff): the Event is kept and sent at the next applied
    # round (client-go's recorder retries the same way), not lost; a 4xx refusal drops
    # it and counts it.
    admitter, _ = await evicted_job_gang(fake_kube, replicas)
    job = job_reference(admitter.writer.evictor.batch_jobs[("Job", "team", "a")])

    def reasons():
        return [r for r, _ in events_for(fake_kube, "a")]

    fake_kube.fail_next("POST", "/events", 503, count=4)
    admitter.writer.events.on(job, "HeadstartKept", "sent again", time.time())
    assert "HeadstartKept" not in reasons()
    await settle(admitter, lambda: "HeadstartKept" in reasons())
    assert admitter.events_dropped_total == 0
    fake_kube.fail_next("POST", "/events", 403)
    admitter.writer.events.on(job, "HeadstartRefused", "dropped", time.time())
    for _ in range(2):
        await admitter.round(time.time())
    assert admitter.events_dropped_total == 1 and "HeadstartRefused" not in reasons()


async def test_a_job_headstart_may_not_suspend_has_its_pods_evicted(fake_kube, replicas):
    # Kueue manages the Job (its queue-name label): headstart never touches its
    # suspension, so the gang goes by eviction as any other owner's.
    await evicted_job_gang(fake_kube, replicas, **{"kueue.x-k8s.io/queue-name": "q"})
    job = fake_kube.get("batch/v1", "Job", "a", "team")
    assert job["spec"]["suspend"] is False and "headstart.io/suspended" not in \
        job["metadata"]["labels"]
    assert pod_of(fake_kube, "a-0") is None and pod_of(fake_kube, "a-1") is None
    assert "suspendedJobs" not in gang_of(fake_kube, "a")["status"]


async def test_a_refused_suspension_falls_back_to_evicting_the_pods(fake_kube, replicas):
    fake_kube.fail_next("PATCH", "/jobs/a", 422)
    admitter, _ = await evicted_job_gang(fake_kube, replicas)
    assert fake_kube.get("batch/v1", "Job", "a", "team")["spec"]["suspend"] is False
    assert pod_of(fake_kube, "a-0") is None and pod_of(fake_kube, "a-1") is None
    assert admitter.suspended_jobs_total == 0


async def test_a_marked_job_its_owner_resumed_is_unmarked(fake_kube, replicas):
    # A Job carrying headstart's mark that is not suspended (its owner resumed it early):
    # the mark goes at once, so a later suspension by the owner is never undone.
    job = plain_job("a", 1, **{"headstart.io/suspended": str(int(time.time()) + 3600)})
    fake_kube.create(job)
    fake_kube.create(make_node("a1", group="pg-a"))
    admitter = replicas("solo", leading=True)
    await eventually(lambda: ("Job", "team", "a") in admitter.batch_jobs())
    await settle(admitter, lambda: "headstart.io/suspended" not in (fake_kube.get(
        "batch/v1", "Job", "a", "team")["metadata"].get("labels") or {}))
    assert fake_kube.get("batch/v1", "Job", "a", "team")["spec"]["suspend"] is False
    assert events_for(fake_kube, "a") == []  # nothing was resumed
    assert admitter.released_jobs_total == 0


async def test_a_replacement_waiting_for_room_keeps_its_gangs_record(fake_kube, replicas):
    # a runs whole in pg-a (its 1 node full); its replacement pod arrives gated and pg-a
    # has no room for it. It waits there; the record stays the running gang's (domain
    # kept), so the replacement is never admitted somewhere else as a new job.
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("b1", group="pg-b"))
    fake_kube.create(gated_pod("a-0", "a", 2, gpus=4))
    fake_kube.create(gated_pod("a-1", "a", 2, gpus=4))
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: (gang_of(fake_kube, "a") or {}).get(
        "status", {}).get("state") == "Admitted")
    binder = ApiBinder(fake_kube.api_client())
    for index in range(2):
        uid = pod_of(fake_kube, f"a-{index}")["metadata"]["uid"]
        assert await binder.bind(BindingArgs(f"a-{index}", "team", uid, "a1")) == ""
        kubelet_ready(fake_kube, f"a-{index}")
    await settle(admitter, lambda: gang_of(fake_kube, "a")["status"]["state"] == "Running")
    fake_kube.delete("v1", "Pod", "a-1", "team")  # lost; the other pod keeps pg-a's room
    fake_kube.create(make_pod("x", gpus=4, node="a1", phase="Running"))  # room taken
    fake_kube.create(gated_pod("a-2", "a", 2, gpus=4))
    await settle(admitter, lambda: gang_of(fake_kube, "a")["status"]["state"] == "Recovering"
                 and admitter.waiting_by_code()["no_fit"] == 1)
    for _ in range(3):
        await admitter.round(time.time())
    record = gang_of(fake_kube, "a")["status"]
    assert record["state"] == "Recovering" and record["domain"] == "placement-group=pg-a"
    assert pod_of(fake_kube, "a-2")["spec"]["schedulingGates"] == [{"name": GATE}]


def kubelet_ready(fake_kube, name):
    """What kubelet writes once a bound pod's containers run and pass their probes (the
    fake runs no kubelet)."""
    pod = pod_of(fake_kube, name)
    pod["status"] = {**pod.get("status", {}), "phase": "Running",
                     "conditions": [{"type": "Ready", "status": "True"}]}
    fake_kube.replace(pod)


def owned(pod, job):
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                           "name": job, "uid": f"{job}-uid",
                                           "controller": True}]
    return pod


async def test_a_higher_priority_job_preempts_one_whole_gang(fake_kube, replicas):
    # low-a fills pg-a, low-b fills pg-b (1 node each, 8 GPUs, priority 0, running). high
    # (1 pod, 8 GPUs, priority 100) fits nowhere: the admitter evicts exactly one whole
    # gang through the Eviction API, records it Evicted (to be admitted again at once,
    # its eviction count unchanged), and high waits `preempting`; once the victim's pod
    # is gone, high is admitted into that domain.
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("b1", group="pg-b"))
    for job in ("low-a", "low-b"):
        fake_kube.create(owned(gated_pod(f"{job}-0", job, 1), job))
    admitter = replicas("solo", leading=True)
    binder = ApiBinder(fake_kube.api_client())

    def state(job):
        return (gang_of(fake_kube, job) or {}).get("status", {}).get("state")

    await settle(admitter, lambda: state("low-a") == "Admitted" and state("low-b") == "Admitted")
    for job in ("low-a", "low-b"):
        pod = pod_of(fake_kube, f"{job}-0")
        node = "a1" if "pg-a" in str(pod["spec"]["affinity"]) else "b1"
        assert await binder.bind(BindingArgs(f"{job}-0", "team", pod["metadata"]["uid"],
                                             node)) == ""
        kubelet_ready(fake_kube, f"{job}-0")
    await settle(admitter, lambda: state("low-a") == "Running" and state("low-b") == "Running")
    fake_kube.create(owned(gated_pod("high-0", "high", 1, extra_spec={"priority": 100}),
                           "high"))
    await settle(admitter, lambda: "Evicted" in (state("low-a"), state("low-b")))
    victim = "low-a" if state("low-a") == "Evicted" else "low-b"
    survivor = "low-b" if victim == "low-a" else "low-a"
    assert pod_of(fake_kube, f"{victim}-0") is None
    assert pod_of(fake_kube, f"{survivor}-0")["spec"].get("nodeName")
    assert state(survivor) == "Running"
    status = gang_of(fake_kube, victim)["status"]
    assert status.get("evictions", 0) == 0
    assert status["message"].startswith("preempted whole by team/high (priority 100)")
    assert admitter.preempted_gangs_total == 1
    await settle(admitter, lambda: state("high") == "Admitted")
    assert gang_of(fake_kube, "high")["status"]["domain"] == \
        f"placement-group={'pg-a' if victim == 'low-a' else 'pg-b'}"
    # The victim's owner recreates its pod behind the gate: no backoff, it waits for room.
    fake_kube.create(owned(gated_pod(f"{victim}-1", victim, 1), victim))
    await settle(admitter, lambda: admitter.waiting_by_code()["no_fit"] == 1)
    assert admitter.preempted_gangs_total == 1


def pod_group_of(kube, name):
    return kube.get("scheduling.x-k8s.io/v1alpha1", "PodGroup", name, "team")


async def test_an_admitted_gang_gets_a_pod_group_owned_by_its_record(fake_kube, replicas):
    # a (2 pods) is admitted: its PodGroup (minMember 2, the configured timeout) is
    # created before any pod is patched, owned by the Gang, and every pod is labelled
    # with it, so Coscheduling binds the gang all or nothing.
    fake_kube.serve("scheduling.x-k8s.io/v1alpha1")
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    for index in range(2):
        fake_kube.create(gated_pod(f"a-{index}", "a", 2))
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: all(
        not pod_of(fake_kube, f"a-{i}")["spec"].get("schedulingGates") for i in range(2)))
    group = pod_group_of(fake_kube, "a")
    gang = gang_of(fake_kube, "a")
    assert group["spec"] == {"minMember": 2,
                             "scheduleTimeoutSeconds": ADMISSION.pod_group_timeout_seconds}
    assert [(o["kind"], o["uid"]) for o in group["metadata"]["ownerReferences"]] == [
        ("Gang", gang["metadata"]["uid"])]
    for index in range(2):
        labels = pod_of(fake_kube, f"a-{index}")["metadata"]["labels"]
        assert labels["scheduling.x-k8s.io/pod-group"] == "a"
    # Marked admitted once its pods were patched: the update Coscheduling requeues on.
    assert "headstart.io/admitted-at" in group["metadata"]["annotations"]


async def test_a_gang_admitted_again_at_another_size_gets_that_minmember(fake_kube, replicas):
    # a's PodGroup, headstart's, outlives an attempt (owned by the Gang, which an
    # eviction or a preemption keeps): minMember 4. The job is admitted again at 2 (an
    # elastic job resized while it waited, rule 7): Coscheduling would hold its 2 pods
    # for 4 members forever (seen in tests/e2e/test_elastic_faults.py), so the
    # admission sets minMember to the size it admits, the rest of the PodGroup kept.
    fake_kube.serve("scheduling.x-k8s.io/v1alpha1")
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    fake_kube.create({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                      "metadata": {"name": "a", "namespace": "team",
                                   "labels": {"app.kubernetes.io/managed-by": "headstart"},
                                   "annotations": {"headstart.io/job": "a"}},
                      "spec": {"minMember": 4, "scheduleTimeoutSeconds": 30}})
    for index in range(2):
        fake_kube.create(gated_pod(f"a-{index}", "a", 2))
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: all(
        not pod_of(fake_kube, f"a-{i}")["spec"].get("schedulingGates") for i in range(2)))
    group = pod_group_of(fake_kube, "a")
    assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 30}
    for index in range(2):
        labels = pod_of(fake_kube, f"a-{index}")["metadata"]["labels"]
        assert labels["scheduling.x-k8s.io/pod-group"] == "a"


async def test_a_later_stage_gets_a_pod_group_of_its_live_pods(fake_kube, replicas):
    # a declares 3 pods; its first stage (1 pod, an initializer) already Succeeded on
    # a1. The 2 gated pods are the rest: the job is whole, and its PodGroup asks for 2
    # members, the pods kube-scheduler will see (it never sees Succeeded ones).
    fake_kube.serve("scheduling.x-k8s.io/v1alpha1")
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(make_node("a2", group="pg-a"))
    done = make_pod("a-init", job="a", role="worker", gpus=8, node="a1", phase="Succeeded",
                    annotations={"headstart.io/job-size": "3",
                                 "headstart.io/placement-group": "required"})
    fake_kube.create(done)
    for index in range(2):
        fake_kube.create(gated_pod(f"a-{index}", "a", 3))
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: all(
        not pod_of(fake_kube, f"a-{i}")["spec"].get("schedulingGates") for i in range(2)))
    assert pod_group_of(fake_kube, "a")["spec"]["minMember"] == 2
    assert gang_of(fake_kube, "a")["spec"]["size"] == 3  # the record keeps the job's size


@pytest.mark.parametrize("case", ["name-taken", "pods-name-their-own", "turned-off"])
async def test_no_pod_group_of_anyone_else_is_used_or_changed(fake_kube, replicas, case):
    fake_kube.serve("scheduling.x-k8s.io/v1alpha1")
    fake_kube.create(make_node("a1", group="pg-a"))
    theirs = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
              "metadata": {"name": "a" if case == "name-taken" else "mine",
                           "namespace": "team"},
              "spec": {"minMember": 5}}
    fake_kube.create(theirs)
    pod = gated_pod("a-0", "a", 1)
    if case == "pods-name-their-own":
        pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "mine"
    fake_kube.create(pod)
    admitter = replicas("solo", leading=True)
    if case == "turned-off":
        admitter.config = replace(ADMISSION, pod_groups=False)
    await settle(admitter, lambda: not pod_of(fake_kube, "a-0")["spec"].get("schedulingGates"))
    labels = pod_of(fake_kube, "a-0")["metadata"]["labels"]
    expected = "mine" if case == "pods-name-their-own" else None
    assert labels.get("scheduling.x-k8s.io/pod-group") == expected
    assert pod_group_of(fake_kube, theirs["metadata"]["name"])["spec"] == {"minMember": 5}
    if case != "name-taken":
        assert pod_group_of(fake_kube, "a") is None


async def test_without_the_pod_group_api_a_gang_is_admitted_without_one(fake_kube, replicas,
                                                                        caplog):
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(gated_pod("a-0", "a", 1))
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: not pod_of(fake_kube, "a-0")["spec"].get("schedulingGates"))
    assert "scheduling.x-k8s.io/pod-group" not in pod_of(fake_kube, "a-0")["metadata"]["labels"]
    assert "PodGroups (scheduling.x-k8s.io/v1alpha1) are not served" in caplog.text


async def test_the_longest_gated_wait_is_a_metric_and_drops_once_admitted(fake_kube, replicas):
    from extender.metrics import ExtenderMetrics

    fake_kube.create(gated_pod("a-0", "a", 1))
    admitter = replicas("solo", leading=True)
    await eventually(admitter.cache.ready)
    metrics = ExtenderMetrics()
    metrics.watch_admitter(admitter)
    created = admitter.cache.pod("team", "a-0").created_at
    assert admitter.longest_gated_seconds(created + 100) == pytest.approx(100)
    assert "headstart_admitter_longest_gated_seconds" in metrics.render().decode()
    fake_kube.create(make_node("a1", group="pg-a"))  # room: it is admitted
    await settle(admitter, lambda: not pod_of(fake_kube, "a-0")["spec"].get("schedulingGates"))
    await eventually(lambda: not admitter.cache.gated_pods())
    assert admitter.longest_gated_seconds(created + 100) == 0.0


CA_TWO_GROUPS = """\
autoscalerStatus: Running
nodeGroups:
""" + "".join(f"""\
- name: {name}
  health:
    status: Healthy
    nodeCounts:
      registered: {{total: 0, ready: 0, notStarted: 0}}
    cloudProviderTarget: 0
    minSize: 0
    maxSize: 4
""" for name in ("p4d-pg-a", "p4d-pg-b"))


async def test_as_shipped_a_job_beyond_known_room_is_released_to_the_autoscaler(
        fake_kube, replicas):
    # The case: the shipped config names no node group, CA's status lists one
    # per placement group, one free node. A 3-pod required job of 8 GPUs used to wait
    # no_fit for ever; it is released into pg-a with a Warning and a RoomUnknown record.
    fake_kube.create(make_node("a1", group="pg-a",
                               labels={"node.kubernetes.io/instance-type": "p4d.24xlarge"}))
    fake_kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "cluster-autoscaler-status",
                                   "namespace": "kube-system"},
                      "data": {"status": CA_TWO_GROUPS}})
    for index in range(3):
        fake_kube.create(gated_pod(f"big-{index}", "big", 3))
    admitter = replicas("solo", leading=True)
    await eventually(admitter.cache.ready)
    await admitter.refresh_autoscaler(0.0)
    await settle(admitter, lambda: not pod_of(fake_kube, "big-2")["spec"].get("schedulingGates"))
    summary = admitter.summary()
    assert summary["unknown_room"] == ["cluster-autoscaler node group p4d-pg-a",
                                       "cluster-autoscaler node group p4d-pg-b"]
    from extender.metrics import ExtenderMetrics
    metrics = ExtenderMetrics()
    metrics.watch_admitter(admitter)
    assert "headstart_admitter_unknown_room_groups 2.0" in metrics.render().decode()
    assert summary["nodepools"].startswith("karpenter.sh/v1 NodePools not served")
    pod = pod_of(fake_kube, "big-0")
    assert pod["metadata"]["annotations"]["headstart.io/domain"] == "placement-group=pg-a"
    [(reason, message)] = events_for(fake_kube, "big-0")
    assert reason == "HeadstartRoomUnknown"
    assert "p4d-pg-b" in message and "holds 1 of its 3 pods" in message
    [gang] = fake_kube.list("headstart.io/v1alpha1", "Gang", "team")
    assert (gang["status"]["state"], gang["status"]["reason"]) == ("Admitted", "RoomUnknown")


async def test_karpenter_nodepools_are_read_and_their_room_counted(fake_kube, replicas):
    # No node at all; a NodePool launching p4d.24xlarge into pg-b, limited to 16 GPUs
    # (2 nodes). A 2-pod job is admitted there with 2 new nodes; a 3-pod job waits,
    # inadmissible (known room, not released on a guess).
    fake_kube.serve("karpenter.sh/v1")
    fake_kube.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p4d-b"},
        "spec": {"template": {
            "metadata": {"labels": {PG_KEY: "pg-b"}},
            "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type",
                                       "operator": "In", "values": ["p4d.24xlarge"]}]}},
            "limits": {"nvidia.com/gpu": "16"}}})
    for index in range(2):
        fake_kube.create(gated_pod(f"two-{index}", "two", 2))
    for index in range(3):
        fake_kube.create(gated_pod(f"three-{index}", "three", 3))
    admitter = replicas("solo", leading=True)
    await eventually(admitter.cache.ready)
    await admitter.refresh_autoscaler(0.0)
    await settle(admitter, lambda: not pod_of(fake_kube, "two-1")["spec"].get("schedulingGates"))
    summary = admitter.summary()
    assert summary["nodepools"] == "1 NodePool(s) read"
    assert summary["unknown_room"] == []
    assert pod_of(fake_kube, "two-0")["metadata"]["annotations"]["headstart.io/domain"] == \
        "placement-group=pg-b"
    await settle(admitter, lambda: admitter.waiting_by_code()["inadmissible"] == 1)
    assert pod_of(fake_kube, "three-0")["spec"]["schedulingGates"] == [{"name": GATE}]


async def test_a_status_in_a_format_not_read_leaves_the_room_unknown(fake_kube, replicas):
    # cluster-autoscaler before 1.30 wrote its status as text: its groups are not read,
    # and with no group named in the config the room they could add is unknown.
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "cluster-autoscaler-status",
                                   "namespace": "kube-system"},
                      "data": {"status": "Cluster-autoscaler status at 2024-01-01...\n"}})
    for index in range(2):
        fake_kube.create(gated_pod(f"big-{index}", "big", 2))
    admitter = replicas("solo", leading=True)
    await eventually(admitter.cache.ready)
    await admitter.refresh_autoscaler(0.0)
    await settle(admitter, lambda: not pod_of(fake_kube, "big-1")["spec"].get("schedulingGates"))
    [unknown] = admitter.summary()["unknown_room"]
    assert unknown.startswith("cluster-autoscaler's node groups (status in the text format")
    # Named groups (here one with a max_size) make the room known: nothing is unknown.
    admitter.config = replace(ADMISSION, node_groups=(
        NodeGroup("p4d-a", "p4d.24xlarge", "pg-a", max_size=1),))
    await admitter.round(time.time())
    assert admitter.summary()["unknown_room"] == []


async def test_a_429_from_the_api_server_is_retried_after_its_retry_after_in_the_round(
        fake_kube, replicas):
    # API Priority and Fairness turns away two of the pod patches (429, Retry-After 1):
    # the same round retries them after the wait and admits the whole job, each pod
    # patched once.
    fake_kube.create(make_node("a1", group="pg-a"))
    for index in range(4):
        fake_kube.create(gated_pod(f"four-{index}", "four", 4, gpus=2))
    admitter = replicas("solo", leading=True)
    await eventually(admitter.cache.ready)
    await eventually(lambda: len(admitter.cache.gated_pods()) == 4)
    fake_kube.fail_next("PATCH", "/pods/four-", 429, count=2)
    started = time.monotonic()
    outcome = await admitter.round(time.time())
    assert (outcome.patched, outcome.failed) == (4, 0)
    assert time.monotonic() - started >= 1.0  # the Retry-After was waited
    assert admitter.throttle.retries_total == 2
    from extender.metrics import ExtenderMetrics
    metrics = ExtenderMetrics()
    metrics.watch_admitter(admitter)
    assert "headstart_admitter_api_retries_total 2.0" in metrics.render().decode()
    patches = [path for method, path, _ in fake_kube.requests
               if method == "PATCH" and "/pods/four-" in path]
    assert len(patches) == 6 and len(set(patches)) == 4


def elastic_job(name, size, low=1, high=4):
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "team",
                         "annotations": {"headstart.io/min-size": str(low),
                                         "headstart.io/max-size": str(high)}},
            "spec": {"parallelism": size, "completions": size, "completionMode": "Indexed",
                     "template": {"spec": {"containers": [{"name": "c"}]}}}}


def elastic_pod(job, index):
    pod = make_pod(f"{job}-{index}", gpus=8)
    pod["metadata"]["namespace"] = "team"
    pod["metadata"].setdefault("annotations", {})[
        "batch.kubernetes.io/job-completion-index"] = str(index)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                           "name": job, "uid": f"{job}-uid",
                                           "controller": True}]
    pod["spec"]["schedulingGates"] = [{"name": GATE}]
    return pod


async def test_a_resize_is_written_to_the_owner_and_a_refused_one_is_said_once(
        fake_kube, replicas):
    # One 8-GPU node in pg-a; an elastic Indexed Job of 3 x 8 GPUs (min 1): resized to 1.
    fake_kube.create(make_node("a1", group="pg-a"))
    fake_kube.create(elastic_job("grow", 3))
    for index in range(3):
        fake_kube.create(elastic_pod("grow", index))
    # The API refuses the first two resize patches (a webhook, a policy): said once.
    fake_kube.fail_next("PATCH", "/jobs/grow", 422, count=2)
    admitter = replicas("solo", leading=True)

    def refused():
        return any(r == "HeadstartResizeRefused" for r, _ in events_for(fake_kube, "grow"))

    await settle(admitter, refused)
    job = fake_kube.get("batch/v1", "Job", "grow", "team")
    assert job["spec"]["parallelism"] == 3  # kept at its size
    # The next rounds retry; the third patch goes through, and the job is set to 1.
    await settle(admitter, lambda: fake_kube.get("batch/v1", "Job", "grow", "team")[
        "spec"]["parallelism"] == 1)
    job = fake_kube.get("batch/v1", "Job", "grow", "team")
    assert job["spec"]["completions"] == 1
    reasons = [(r, m) for r, m in events_for(fake_kube, "grow") if r.startswith("HeadstartResiz")]
    assert [r for r, _ in reasons].count("HeadstartResizeRefused") == 1, reasons
    refusal = next(m for r, m in reasons if r == "HeadstartResizeRefused")
    assert refusal.startswith("3 -> 1 refused (422") and "kept at 3" in refusal
    assert any(r == "HeadstartResized" and m.startswith("3 -> 1: no placement-group domain")
               for r, m in reasons), reasons
    assert admitter.resized_jobs_total == 1


def worker_plans_map(entries):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "headstart-worker-plans",
                         "namespace": "headstart-placeholders"},
            "data": entries}


async def test_a_running_elastic_gang_is_scaled_in_to_its_worker_plan(fake_kube, replicas,
                                                                       caplog):
    # An elastic Indexed Job of 2 x 4 GPUs (min 1, max 4) runs on a1. The overprovisioner
    # plans 1 worker for it: the admitter reads the plan, sets the Job to 1, and the
    # Event and record say why, citing the plan. A forbidden read means no plans.
    fake_kube.create(make_node("a1", group="pg-a"))
    owner = fake_kube.create(elastic_job("plan", 2))
    for index in range(2):
        pod = elastic_pod("plan", index)
        pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "4"
        fake_kube.create(pod)
    admitter = replicas("solo", leading=True)
    await settle(admitter, lambda: (gang_of(fake_kube, "plan") or {}).get(
        "status", {}).get("state") == "Admitted")
    binder = ApiBinder(fake_kube.api_client())
    for index in range(2):
        uid = pod_of(fake_kube, f"plan-{index}")["metadata"]["uid"]
        assert await binder.bind(BindingArgs(f"plan-{index}", "team", uid, "a1")) == ""
        kubelet_ready(fake_kube, f"plan-{index}")
    await settle(admitter, lambda: gang_of(fake_kube, "plan")["status"]["state"] == "Running")
    await admitter.refresh_worker_plans(0.0)
    assert admitter.summary()["worker_plans"] == (
        "no ConfigMap headstart-placeholders/headstart-worker-plans: no plans (KOD2's rules "
        "alone)")
    valid = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 600))
    fake_kube.create(worker_plans_map({
        "Job.team.plan": json.dumps({
            "uid": owner["metadata"]["uid"], "size": 1, "planned": 1,
            "decided": "2026-01-01T00:00:00Z", "validUntil": valid,
            "reason": "forecast 12 samples/s"}),
        "Job.team.broken": "not json"}))
    await admitter.refresh_worker_plans(1.0)  # within refresh_seconds: not read again
    assert admitter.summary()["worker_plans"].startswith("no ConfigMap")
    await admitter.refresh_worker_plans(20.0)
    summary = admitter.summary()
    assert summary["worker_plans"] == ("1 plan(s) read from headstart-placeholders/"
                                       "headstart-worker-plans; 1 value(s) not read")
    [problem] = summary["worker_plan_problems"]
    assert problem.startswith("headstart-placeholders/headstart-worker-plans: "
                              "data.Job.team.broken: not JSON")
    await settle(admitter, lambda: fake_kube.get("batch/v1", "Job", "plan", "team")[
        "spec"]["parallelism"] == 1)
    expected = "scaled in from 2 to 1: its worker plan needs 1 (forecast 12 samples/s)"
    assert ("HeadstartResized", f"2 -> 1: {expected}") in events_for(fake_kube, "plan")
    gang = gang_of(fake_kube, "plan")
    assert (gang["spec"]["size"], gang["status"]["message"]) == (1, expected)
    await admitter.refresh_worker_plans(40.0)  # read again: the same problem, not said again
    # Unreadable (403: the Role not installed, or an API blip): the plans last read are
    # kept (each expires at its own validUntil), said once in the log.
    fake_kube.fail_next("GET", "/configmaps/headstart-worker-plans", 403, count=2)
    await admitter.refresh_worker_plans(60.0)
    await admitter.refresh_worker_plans(80.0)
    assert admitter.summary()["worker_plans"] == (
        "1 plan(s) of the last read kept: headstart-placeholders/headstart-worker-plans "
        "unreadable (API status 403)")
    assert list(admitter.reader.plans.plans) == ["Job.team.plan"]
    assert caplog.text.count("worker plans unreadable") == 1
    assert caplog.text.count("a worker plan is not read") == 1


class RecordingCore:
    """A CoreV1Api stand-in for `GatePatcher._patch_pod`: serves pods from a dict,
    applies and records each JSON patch (the label pass, then the gate's removal) and
    answers it with the patched pod, raw (`_preload_content=False`), as the API does;
    counts the reads."""

    def __init__(self, pods):
        self.pods = {p["metadata"]["name"]: p for p in pods}
        self.patches = []
        self.reads = 0
        self.events = []

    @staticmethod
    def _raw(pod):
        body = json.dumps(pod).encode()
        return type("Raw", (), {"data": body, "release_conn": lambda self: None})()

    def read_namespaced_pod(self, name, namespace, **_):
        self.reads += 1
        return self._raw(self.pods[name])

    def patch_namespaced_pod(self, name, namespace, ops, **_):
        from tests.fakekube import apply_json_patch

        self.patches.append((name, ops))
        self.pods[name] = apply_json_patch(self.pods[name], ops)
        return self._raw(self.pods[name])

    def create_namespaced_event(self, namespace, body, **_):
        self.events.append((body["involvedObject"]["name"], body["reason"]))
        return type("Raw", (), {"drain_conn": lambda self: None,
                                "release_conn": lambda self: None})()


def test_every_member_is_labelled_for_its_pod_group_before_any_is_ungated():
    from locality.admission.model import Admission
    from locality.model import Locality
    from locality.parse import parse_pod

    raws = [gated_pod(f"w{i}", "train", 3) for i in range(3)]
    for i, raw in enumerate(raws):
        raw["metadata"].update(uid=f"u{i}", resourceVersion="1")
    core = RecordingCore(raws)
    gates = GatePatcher(core, ADMISSION, lambda: True, EventRecorder(core, "test"), None)
    admission = Admission(None, tuple(parse_pod(raw, LOCALITY) for raw in raws), None, None,
                          Locality.REQUIRED, 0, "test")
    assert gates.admit(admission, time.time(),
                       {"scheduling.x-k8s.io/pod-group": "train"}) == (3, 0)
    removes = [i for i, (_, ops) in enumerate(core.patches)
               if any(op["op"] == "remove" and "schedulingGates" in op["path"] for op in ops)]
    labels = [i for i, (_, ops) in enumerate(core.patches)
              if any("pod-group" in op["path"] for op in ops)]
    assert len(labels) == 3 and len(removes) == 3
    assert max(labels) < min(removes), core.patches
    # The gate's patch is computed from the label patch's answer: each pod read once.
    assert core.reads == 3
    # The Events wait until the round's gates are all lifted (the writer sends them).
    assert core.events == []
    gates.send_events()
    assert sorted(core.events) == [(f"w{i}", "HeadstartAdmitted") for i in range(3)]
    assert all(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "train"
               and not p["spec"].get("schedulingGates") for p in core.pods.values())


async def watched_then_deaf(fake_kube, nodes, pods):
    """A cache filled by the watches, which then stop: what a round writes reaches it
    only if the admitter assumes it."""
    for name, group in nodes:
        fake_kube.create(make_node(name, group=group))
    for pod in pods:
        fake_kube.create(pod)
    api = fake_kube.api_client()
    cache = ClusterCache(LOCALITY)
    sync = ClusterSync(api, cache, LOCALITY, FAST, watch_topology=False, watch_dra=False,
                       watch_pod_groups=False)
    sync.start(asyncio.get_running_loop())
    await eventually(lambda: cache.ready() and sync.sizes_listed()
                     and len(cache.gated_pods()) == len(pods))
    await sync.stop(timeout=5)
    return api, cache


async def test_a_rounds_own_writes_are_assumed_before_the_watch_brings_them(fake_kube):
    # Kueue's AssumeWorkload: with the watch silent, the next round sees a's record
    # Admitted into pg-a and its pods ungated, so it neither admits a again nor sends
    # anything of it elsewhere.
    api, cache = await watched_then_deaf(
        fake_kube, (("a1", "pg-a"), ("b1", "pg-b")),
        [gated_pod(f"a-{i}", "a", 2, gpus=4) for i in range(2)])
    admitter = Admitter(cache, LOCALITY, ADMISSION, api, lambda: True, "solo")
    outcome = await admitter.round(time.time())
    assert outcome.patched == 2
    record = cache.gangs[next(iter(cache.gangs))]
    assert (record.state.value, str(record.domain)) == ("Admitted", "placement-group=pg-a")
    assert record.uid == gang_of(fake_kube, "a")["metadata"]["uid"]
    assert cache.gated_pods() == [] or all(
        GATE not in pod.scheduling_gates for pod in cache.gated_pods())
    again = await admitter.round(time.time())
    assert again == type(again)() and admitter.last_plan.admissions == ()
    admitter.close()


async def test_a_replica_that_loses_its_lease_mid_apply_stops_writing(fake_kube):
    # Leadership is read before every write: lost after the record and the first pod,
    # the second pod keeps its gate (the next leader completes the job into pg-a).
    api, cache = await watched_then_deaf(
        fake_kube, (("a1", "pg-a"),),
        [gated_pod(f"a-{i}", "a", 2, gpus=4) for i in range(2)])
    answers = iter([True, True, True])  # the round, the job, one pod; then lost
    config = replace(ADMISSION, write_workers=1)
    admitter = Admitter(cache, LOCALITY, config, api, lambda: next(answers, False), "solo")
    outcome = await admitter.round(time.time())
    assert (outcome.patched, outcome.failed) == (1, 1)
    gated = [name for name in ("a-0", "a-1")
             if pod_of(fake_kube, name)["spec"].get("schedulingGates")]
    assert len(gated) == 1
    assert gang_of(fake_kube, "a")["status"]["state"] == "Admitted"
    admitter.close()


@pytest.mark.parametrize("job_workers", [4, 1])
async def test_a_rounds_jobs_are_written_several_at_once(fake_kube, job_workers):
    # Four one-pod jobs, each fitting its own group: their Gang records are in flight
    # together with job_workers 4, one after another with 1.
    groups = ("pg-a", "pg-b", "pg-c", "pg-d")
    api, cache = await watched_then_deaf(
        fake_kube, tuple((f"{g}-1", g) for g in groups),
        [gated_pod(f"{j}-0", j, 1) for j in ("a", "b", "c", "d")])
    together = fake_kube.gather("*", "/gangs", 4, timeout_s=1.0)
    config = replace(ADMISSION, job_workers=job_workers)
    admitter = Admitter(cache, LOCALITY, config, api, lambda: True, "solo")
    outcome = await admitter.round(time.time())
    assert (outcome.patched, outcome.failed) == (4, 0)
    assert together.met is (job_workers == 4)
    assert all(gang_of(fake_kube, j)["status"]["state"] == "Admitted" for j in "abcd")
    assert admitter.writer.admitted_jobs_total == 4
    admitter.close()
