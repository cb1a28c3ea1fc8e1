"""The cache kept in step with a (fake) API server by list+watch, over real HTTP with the
official kubernetes client: first sync, incremental events, 410 relist, retries with
backoff visible in /readyz and /metrics, a missing NRT CRD, the bind verb, shutdown."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from extender.app import OPS_APP, create_app
from extender.binder import ApiBinder
from extender.cache import NODES, PODS, TOPOLOGIES, ClusterCache
from extender.config import ExtenderConfig
from extender.sync import ClusterSync
from extender.wire import BindingArgs
from kube.informer import WatchSettings
from locality.config import LocalityConfig
from locality.model import JobKey
from locality.parse import parse_pod
from tests.extender.builders import make_node, make_nrt, make_pod

LOCALITY = LocalityConfig()
FAST = WatchSettings(
    watch_timeout_seconds=5, backoff_initial_seconds=0.05, backoff_max_seconds=0.2,
    optional_recheck_seconds=0.2, request_timeout_seconds=5,
)
GPU = 1000  # milli-GPUs per GPU


async def eventually(predicate, timeout: float = 60.0) -> None:
    """Wait until `predicate()`, which ends the wait at once; the bound only ends a test
    that never gets there (a loaded machine gets there later, not never)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.fixture
async def started(fake_kube):
    """A function starting a ClusterSync against the fake; stops it afterwards."""
    syncs: list[ClusterSync] = []

    def start(
        stale_after_seconds: float = 120.0, settings: WatchSettings = FAST
    ) -> tuple[ClusterCache, ClusterSync]:
        cache = ClusterCache(LOCALITY)
        sync = ClusterSync(fake_kube.api_client(), cache, LOCALITY, settings,
                           stale_after_seconds=stale_after_seconds)
        sync.start(asyncio.get_running_loop())
        syncs.append(sync)
        return cache, sync

    yield start
    for sync in syncs:
        await sync.stop(timeout=5)


def seed(kube) -> None:
    kube.create(make_node("n1", group="g1"))
    kube.create(make_node("n2", group="g2"))
    kube.create(make_pod("bound", gpus=2, node="n1", phase="Running"))
    kube.create(make_pod("pending", gpus=1, job="j", role="worker"))
    kube.create(make_nrt("n1", [(48, 4), (48, 4)]))


async def test_first_sync_builds_node_states_and_makes_ready(fake_kube, started):
    seed(fake_kube)
    cache, sync = started()
    await eventually(lambda: cache.ready() and cache.synced[TOPOLOGIES])
    assert sync.readiness(0.0)[0] is True
    assert cache.nodes["n1"].free_gpu_milli == 8 * GPU - 2 * GPU  # 2 GPUs bound on n1
    assert cache.nodes["n2"].free_gpu_milli == 8 * GPU
    assert cache.nodes["n1"].placement_group == "g1"
    assert [zone.gpu_free_milli for zone in cache.nodes["n1"].topology.zones] == [4000, 4000]
    assert cache.nodes["n2"].topology is None
    assert [pod.name for pod in cache.pods_of_job(JobKey("team", "j"))] == ["pending"]


async def test_watch_events_update_node_states_incrementally(fake_kube, started):
    seed(fake_kube)
    cache, _ = started()
    await eventually(cache.ready)

    fake_kube.create(make_pod("late", gpus=4, node="n2", phase="Running"))
    await eventually(lambda: cache.nodes["n2"].free_gpu_milli == 4 * GPU)

    finished = fake_kube.get("v1", "Pod", "late", "team")
    finished["status"]["phase"] = "Succeeded"
    fake_kube.replace(finished)
    await eventually(lambda: cache.nodes["n2"].free_gpu_milli == 8 * GPU)

    relabelled = fake_kube.get("v1", "Node", "n2")
    relabelled["metadata"]["labels"]["headstart.io/placement-group"] = "g9"
    fake_kube.replace(relabelled)
    await eventually(lambda: cache.nodes["n2"].placement_group == "g9")

    fake_kube.create(make_nrt("n2", [(10, 1)]))
    await eventually(lambda: cache.nodes["n2"].topology is not None)
    fake_kube.delete("topology.node.k8s.io/v1alpha2", "NodeResourceTopology", "n2")
    await eventually(lambda: cache.nodes["n2"].topology is None)

    fake_kube.delete("v1", "Pod", "bound", "team")
    await eventually(lambda: cache.nodes["n1"].free_gpu_milli == 8 * GPU)
    fake_kube.delete("v1", "Node", "n1")
    await eventually(lambda: "n1" not in cache.nodes)


async def test_expired_history_relists_and_misses_nothing(fake_kube, started):
    seed(fake_kube)
    # Watches end every second, so the pod watch reconnects from its last version soon.
    cache, sync = started(settings=replace(FAST, watch_timeout_seconds=1))
    await eventually(cache.ready)
    fake_kube.create(make_node("n3"))  # the history moves past the pod watch's version
    fake_kube.expire_history()  # ... and is compacted: that reconnect gets 410 Expired
    pods = next(status for status in sync.statuses() if status.kind == PODS)
    await eventually(lambda: pods.relists_total >= 1)
    fake_kube.create(make_pod("after", gpus=3, node="n2", phase="Running"))
    await eventually(lambda: cache.nodes["n2"].free_gpu_milli == 5 * GPU)
    assert pods.errors_total == 0  # a 410 is routine, not an error
    assert "n3" in cache.nodes


async def test_failures_are_retried_with_backoff_and_visible_in_readyz_and_metrics(
    fake_kube, started, aiohttp_client
):
    seed(fake_kube)
    fake_kube.fail_next("GET", "/api/v1/pods", 500, count=3)
    cache, sync = started()
    client = await aiohttp_client(create_app(ExtenderConfig(), cache, sync)[OPS_APP])
    await eventually(cache.ready)
    readyz = await (await client.get("/readyz")).json()
    assert readyz["ready"] is True
    assert readyz["watches"][PODS]["errors_total"] == 3
    assert "500" in readyz["watches"][PODS]["last_error"]
    metrics = await (await client.get("/metrics")).text()
    assert 'headstart_extender_watch_errors_total{kind="pods"} 3.0' in metrics
    assert 'headstart_extender_cache_objects{kind="nodes"} 2.0' in metrics


async def test_a_watch_failing_for_too_long_makes_readyz_fail(fake_kube, started, aiohttp_client):
    seed(fake_kube)
    cache, sync = started(stale_after_seconds=0.3, settings=replace(FAST, watch_timeout_seconds=1))
    client = await aiohttp_client(create_app(ExtenderConfig(), cache, sync)[OPS_APP])
    await eventually(cache.ready)
    # The node watch ends within a second and every reconnect fails from then on.
    fake_kube.fail_next("GET", "/api/v1/nodes", 503, count=10_000)
    await eventually(lambda: not sync.readiness(time.monotonic())[0])
    response = await client.get("/readyz")
    body = await response.json()
    assert response.status == 503
    assert "nodes watch failing" in body["reason"] and "503" in body["reason"]


async def test_a_missing_topology_crd_means_no_numa_data_not_an_error(fake_kube, started):
    fake_kube.serve("topology.node.k8s.io/v1alpha2", served=False)
    seed_without_nrt = [make_node("n1"), make_pod("bound", gpus=2, node="n1", phase="Running")]
    for obj in seed_without_nrt:
        fake_kube.create(obj)
    cache, sync = started()
    await eventually(lambda: cache.ready() and cache.synced[TOPOLOGIES])
    topologies = next(status for status in sync.statuses() if status.kind == TOPOLOGIES)
    assert topologies.absent and topologies.errors_total == 0
    assert sync.readiness(time.monotonic())[0] is True
    # The CRD gets installed later: the periodic re-check picks its objects up.
    fake_kube.serve("topology.node.k8s.io/v1alpha2", served=True)
    fake_kube.create(make_nrt("n1", [(8, 1)]))
    await eventually(lambda: cache.nodes["n1"].topology is not None)


async def test_stop_ends_every_watch_thread(fake_kube):
    seed(fake_kube)
    cache = ClusterCache(LOCALITY)
    sync = ClusterSync(fake_kube.api_client(), cache, LOCALITY, FAST)
    sync.start(asyncio.get_running_loop())
    await eventually(cache.ready)
    await sync.stop(timeout=5)
    assert all(watch.join(0) for watch in sync.watches)
    assert {status.kind for status in sync.statuses()} == {
        NODES, PODS, TOPOLOGIES, "resourceslices", "resourceclaims", "resourceclaimtemplates",
        "podgroups.scheduling.volcano.sh", "podgroups.scheduling.x-k8s.io",
        "pytorchjobs.kubeflow.org", "tfjobs.kubeflow.org", "mpijobs.kubeflow.org",
        "mpijobs.v2beta1.kubeflow.org", "jobsets.jobset.x-k8s.io",
        "trainjobs.trainer.kubeflow.org", "jobs.batch", "gangs.headstart.io",
        "leaderworkersets.leaderworkerset.x-k8s.io", "rayclusters.ray.io", "rayjobs.ray.io"}


def gpu_slice(name: str, node: str, gpus: int, mig: int = 0, generation: int = 1) -> dict:
    """A ResourceSlice as NVIDIA's DRA driver publishes it: GPUs (type gpu) and MIG
    devices (type mig) of one node's pool."""
    devices = [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"},
                                                   "productName": {"string": "H100"}}}
               for i in range(gpus)]
    devices += [{"name": f"mig-{i}", "attributes": {"gpu.nvidia.com/type": {"string": "mig"}}}
                for i in range(mig)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                     "devices": devices}}


def gpu_claim(name: str, count: int, kind: str = "ResourceClaim") -> dict:
    spec = {"devices": {"requests": [{"name": "gpus", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": count}}]}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "team"},
            "spec": spec if kind == "ResourceClaim" else {"spec": spec}}


async def test_dra_gpus_count_on_nodes_and_pods(fake_kube, started):
    # Node d publishes no nvidia.com/gpu in allocatable: its 8 GPUs are slice devices
    # (the 2 MIG devices of the same driver are not whole GPUs).
    fake_kube.create(make_node("d", gpus=0))
    fake_kube.create(gpu_slice("d-gpus", "d", 8, mig=2))
    fake_kube.create(gpu_claim("four-gpus", 4))
    fake_kube.create(gpu_claim("two-gpus", 2, kind="ResourceClaimTemplate"))
    bound = make_pod("bound", node="d", phase="Running")
    bound["spec"]["resourceClaims"] = [{"name": "g", "resourceClaimName": "four-gpus"}]
    fake_kube.create(bound)
    waiting = make_pod("waiting", job="j", role="worker")
    waiting["spec"]["resourceClaims"] = [{"name": "g", "resourceClaimTemplateName": "two-gpus"}]
    fake_kube.create(waiting)
    cache, sync = started()
    # 8 DRA GPUs less the bound pod's claim of 4.
    await eventually(lambda: cache.ready() and cache.nodes["d"].free_gpu_milli == 4 * GPU)
    assert cache.nodes["d"].node.allocatable.devices == (("nvidia.com/gpu", 8 * GPU),)
    await eventually(lambda: cache.pod("team", "waiting").request.gpu_milli == 2 * GPU)
    # The request path's pod (kube-scheduler sends its own copy) is resolved the same way.
    parsed = parse_pod(waiting, LOCALITY)
    assert (parsed.request.gpu_milli, cache.resolve_pod(parsed).request.gpu_milli) == (0, 2 * GPU)
    # The driver republishes the pool with one GPU gone (a newer generation wins).
    fake_kube.create(gpu_slice("d-gpus-2", "d", 7, generation=2))
    await eventually(lambda: cache.nodes["d"].free_gpu_milli == 3 * GPU)


async def test_pod_group_min_member_sizes_the_job(fake_kube, started):
    pod = make_pod("w0", gpus=1, job="j", role="worker")
    pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "j-group"}
    fake_kube.create(pod)
    fake_kube.create(make_node("n1"))
    fake_kube.serve("scheduling.volcano.sh/v1beta1")  # Volcano installed, Coscheduling not
    cache, sync = started()
    await eventually(cache.ready)
    assert cache.pod("team", "w0").group_min_member is None  # not seen yet
    fake_kube.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                      "metadata": {"name": "j-group", "namespace": "team"},
                      "spec": {"minMember": 16}})
    await eventually(lambda: cache.pod("team", "w0").group_min_member == 16)
    absent = next(s for s in sync.statuses() if s.kind == "podgroups.scheduling.x-k8s.io")
    assert absent.absent and absent.errors_total == 0
    assert sync.readiness(time.monotonic())[0] is True


async def test_owner_replica_counts_size_the_job(fake_kube, started):
    """A PyTorchJob's replicas and a JobSet's replicated jobs reach the pods they own;
    counts that do not parse reach them as a reason, not as a size."""
    worker = make_pod("pt-worker-0", gpus=1)
    worker["metadata"]["labels"] = {"training.kubeflow.org/job-name": "pt",
                                    "training.kubeflow.org/replica-type": "worker"}
    node = make_pod("js-node-0-0", gpus=1)
    node["metadata"]["labels"] = {"jobset.sigs.k8s.io/jobset-name": "js",
                                  "jobset.sigs.k8s.io/replicatedjob-name": "node"}
    fake_kube.create(worker)
    fake_kube.create(node)
    fake_kube.serve("kubeflow.org/v1")
    fake_kube.serve("jobset.x-k8s.io/v1alpha2")  # TrainJob's API not served: absent
    cache, sync = started()
    await eventually(cache.ready)
    fake_kube.create({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                      "metadata": {"name": "pt", "namespace": "team"},
                      "spec": {"pytorchReplicaSpecs": {"Master": {}, "Worker": {"replicas": 7}}}})
    fake_kube.create({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                      "metadata": {"name": "js", "namespace": "team"},
                      "spec": {"replicatedJobs": [{"name": "node", "replicas": 4, "template": {
                          "spec": {"parallelism": 2, "completions": 2}}}]}})
    await eventually(lambda: cache.pod("team", "pt-worker-0").owner_size == 8)  # 1 + 7
    await eventually(lambda: cache.pod("team", "js-node-0-0").owner_size == 8)  # 4 x 2
    fake_kube.replace({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                       "metadata": {"name": "pt", "namespace": "team"},
                       "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": "seven"}}}})
    await eventually(lambda: cache.pod("team", "pt-worker-0").owner_wait is not None)
    pod = cache.pod("team", "pt-worker-0")
    assert pod.owner_size is None
    assert "Worker.replicas: expected a whole number >= 0, got 'seven'" in pod.owner_wait
    absent = next(s for s in sync.statuses() if s.kind == "trainjobs.trainer.kubeflow.org")
    assert absent.absent and absent.errors_total == 0
    assert sync.sizes_listed()  # every size watch listed (or absent): admission may run



async def test_api_binder_creates_the_binding_and_reports_conflicts(fake_kube):
    fake_kube.create(make_node("n1"))
    created = fake_kube.create(make_pod("w-0", gpus=1, job="j", role="worker"))
    binder = ApiBinder(fake_kube.api_client())
    args = BindingArgs("w-0", "team", created["metadata"]["uid"], "n1")
    assert await binder.bind(args) == ""
    assert fake_kube.get("v1", "Pod", "w-0", "team")["spec"]["nodeName"] == "n1"
    again = await binder.bind(BindingArgs("w-0", "team", args.pod_uid, "n2"))
    assert "409" in again
    # The call is the pod's binding subresource, as kube-scheduler's DefaultBinder makes it.
    assert ("POST", "/api/v1/namespaces/team/pods/w-0/binding", "") in fake_kube.requests


async def test_api_binder_binds_while_the_loops_default_executor_is_busy(fake_kube):
    """A gang released at once is bound at once: the binds never queue behind the
    admitter's work on the event loop's default executor."""
    import threading

    fake_kube.create(make_node("n1"))
    created = fake_kube.create(make_pod("w-0", gpus=1, job="j", role="worker"))
    loop = asyncio.get_running_loop()
    released = threading.Event()
    # The default executor has at most 32 threads (min(32, CPUs + 4)): all of them held.
    busy = [loop.run_in_executor(None, released.wait) for _ in range(64)]
    try:
        binder = ApiBinder(fake_kube.api_client(), workers=2)
        bound = await asyncio.wait_for(
            binder.bind(BindingArgs("w-0", "team", created["metadata"]["uid"], "n1")), 30)
        assert bound == ""
    finally:
        released.set()
        await asyncio.gather(*busy)


async def test_api_binder_never_binds_a_pod_recreated_under_the_same_name(fake_kube):
    fake_kube.create(make_node("n1"))
    fake_kube.create(make_pod("w-0", gpus=1, job="j", role="worker"))
    binder = ApiBinder(fake_kube.api_client())
    # kube-scheduler decided for the pod it saw; this UID is not the live pod's.
    error = await binder.bind(BindingArgs("w-0", "team", "uid-of-the-deleted-pod", "n1"))
    assert "409" in error
    assert "nodeName" not in fake_kube.get("v1", "Pod", "w-0", "team")["spec"]
