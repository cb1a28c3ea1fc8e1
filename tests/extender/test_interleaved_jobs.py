"""Three distributed-training jobs submitted together, scheduled by a faithful stand-in
for kube-scheduler (tests/extender/kubescheduler.py: plugin scores added, ties broken
at random, binds asynchronous) through the real extender over HTTP.

Each job is 1 CPU-only PS + 24 one-GPU workers on 8-GPU nodes, so its fewest nodes
are ceil(24 / 8) = 3 (the PS, 4 CPUs, fits beside 8 workers: 4 + 8 x 8 = 68 of 96
CPUs). The pods of the three jobs reach the scheduler interleaved (a seeded shuffle
that keeps each job's own order). Binds arrive 0-4 ms after each decision, and the
extender's pod watch shows each binding 0-50 ms after it, so the extender's requests
race both, as in a cluster.
"""

from __future__ import annotations

import asyncio
import copy
import random

import pytest

from extender.app import create_app
from extender.cache import ClusterCache
from extender.config import ExtenderConfig
from extender.wire import BindingArgs
from locality.config import LocalityConfig
from locality.parse import parse_node, parse_pod
from tests.extender.builders import PG_LABEL, make_node, make_pod
from tests.extender.kubescheduler import LEAST_ALLOCATED, MOST_ALLOCATED, KubeSchedulerStandIn

LOCALITY = LocalityConfig()
WORKERS = 24
FEWEST_NODES = 3  # ceil(24 one-GPU workers / 8 GPUs per node); the PS fits beside them


class WatchedBinder:
    """The extender's Binder for tests: the Binding is created at once, and the pod
    watch delivers the bound pod to the cache `watch_lag` seconds later (None: never)."""

    def __init__(self, cache: ClusterCache, pods: dict[str, dict], rng: random.Random,
                 watch_lag: tuple[float, float] | None) -> None:
        self.cache, self.pods, self.rng, self.watch_lag = cache, pods, rng, watch_lag

    async def bind(self, args: BindingArgs) -> str:
        self.bound(self.pods[args.pod_name], args.node)
        return ""

    def bound(self, pod: dict, node: str) -> None:
        if self.watch_lag is None:
            return
        bound = copy.deepcopy(pod)
        bound["spec"]["nodeName"], bound["status"]["phase"] = node, "Running"
        asyncio.get_running_loop().call_later(
            self.rng.uniform(*self.watch_lag), self.cache.apply_pod, parse_pod(bound, LOCALITY))


def training_job(name: str, annotations: dict[str, str] | None = None) -> list[dict]:
    pods = [make_pod(f"{name}-ps-0", cpu="4", memory="16Gi", job=name, role="PS",
                     annotations=annotations)]
    pods += [make_pod(f"{name}-worker-{i}", gpus=1, cpu="8", memory="64Gi", job=name,
                      role="Worker", annotations=annotations) for i in range(WORKERS)]
    return pods


def interleaved(jobs: list[list[dict]], rng: random.Random) -> list[dict]:
    """The jobs' pods in one queue: a random job next each time, each job in its order."""
    left = [list(job) for job in jobs]
    queue = []
    while any(left):
        queue.append(rng.choice([job for job in left if job]).pop(0))
    return queue


async def schedule_jobs(
    aiohttp_client, seed: int, groups: int, nodes_per_group: int, strategy: str, *,
    config: ExtenderConfig, extender_binds: bool = True, extender_weight: int = 10,
    bind_delay: tuple[float, float] = (0.0, 0.004),
    watch_lag: tuple[float, float] | None = (0.0, 0.05),
    ungated: bool = False,
) -> tuple[list[list[dict]], dict[str, str], dict[str, str]]:
    """Schedule three jobs; (jobs, pod name -> node, node -> group).

    By default every pod is in the extender's cache before the first is scheduled (they
    were created behind scheduling gates and released together). ungated: the pods are
    created one by one, each annotated with its job's size, and each is scheduled
    before the next is created (creating a pod takes longer than a scheduling cycle,
    as in tests/e2e/test_extender_interleaved.py): each is judged knowing only the pods
    created before it.
    """
    rng = random.Random(seed)
    nodes = [make_node(f"pg-{g}-{i}", group=f"pg-{g}") for g in range(groups)
             for i in range(nodes_per_group)]
    size = {LOCALITY.job_size_annotation: str(WORKERS + 1)} if ungated else None
    jobs = [training_job(f"job-{j}", size) for j in range(3)]
    pods = {pod["metadata"]["name"]: pod for job in jobs for pod in job}
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
    cache.replace_pods([] if ungated else [parse_pod(pod, LOCALITY) for pod in pods.values()])
    cache.replace_topologies([])
    binder = WatchedBinder(cache, pods, rng, watch_lag)
    client = await aiohttp_client(create_app(config, cache, binder=binder))

    async def default_binder(pod: dict, node: str) -> None:  # kube-scheduler's own
        binder.bound(pod, node)

    scheduler = KubeSchedulerStandIn(
        client, nodes, [], rng, strategy=strategy, extender_binds=extender_binds,
        extender_weight=extender_weight, bind_delay_seconds=bind_delay,
        default_binder=default_binder,
    )
    for pod in interleaved(jobs, rng):
        if ungated:  # created now: the watch shows it before kube-scheduler asks about it
            cache.apply_pod(parse_pod(pod, LOCALITY))
        assert await scheduler.schedule(pod), f"{pod['metadata']['name']} found no node"
    await scheduler.drain()
    group_of = {node["metadata"]["name"]: node["metadata"]["labels"][PG_LABEL] for node in nodes}
    return jobs, scheduler.placed, group_of


def spread_of(job: list[dict], placed: dict[str, str], group_of: dict[str, str]):
    """(nodes the job uses, groups it uses, the PS shares a node with a worker)."""
    nodes = {placed[pod["metadata"]["name"]] for pod in job}
    workers = {placed[pod["metadata"]["name"]] for pod in job[1:]}
    return len(nodes), len({group_of[node] for node in nodes}), placed[
        job[0]["metadata"]["name"]] in workers


@pytest.mark.parametrize("strategy", [MOST_ALLOCATED, LEAST_ALLOCATED])
@pytest.mark.parametrize(
    "groups, nodes_per_group",
    [
        (3, 4),  # 32 GPUs per group: a group per job
        (2, 6),  # 48 GPUs per group: two jobs must share one, node by node
    ],
    ids=["a-group-each", "two-share-a-group"],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_interleaved_jobs_each_land_on_their_fewest_nodes_in_one_group(
    aiohttp_client, seed, groups, nodes_per_group, strategy
):
    jobs, placed, group_of = await schedule_jobs(
        aiohttp_client, seed, groups, nodes_per_group, strategy, config=ExtenderConfig())
    for job in jobs:
        assert spread_of(job, placed, group_of) == (FEWEST_NODES, 1, True), (
            job[0]["metadata"]["labels"], sorted(placed[p["metadata"]["name"]] for p in job))


@pytest.mark.parametrize("strategy", [MOST_ALLOCATED, LEAST_ALLOCATED])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_ungated_interleaved_jobs_with_their_size_annotated_each_land_on_their_fewest_nodes(
    aiohttp_client, seed, strategy
):
    # Two groups of 48 GPUs: wherever a PS lands, its group holds its 24 workers beside
    # the other job's. Each job's unseen workers are claimed (the job-size annotation)
    # in the shape of its known ones, so the next job's PS keeps off that room.
    jobs, placed, group_of = await schedule_jobs(
        aiohttp_client, seed, 2, 6, strategy, config=ExtenderConfig(), ungated=True)
    for job in jobs:
        assert spread_of(job, placed, group_of) == (FEWEST_NODES, 1, True), (
            job[0]["metadata"]["labels"], sorted(placed[p["metadata"]["name"]] for p in job))


async def test_ungated_jobs_whose_ps_comes_before_any_worker_can_share_a_too_small_group(
    aiohttp_client
):
    # A known limit. Three groups of 32 GPUs, one per job: a PS created before any of
    # its workers sizes its job as 25 CPU-only pods (nothing says they need GPUs), so
    # a group another job already claims 24 of 32 GPUs in still "holds" it; the two
    # jobs' 48 workers then cannot both stay in that group.
    jobs, placed, group_of = await schedule_jobs(
        aiohttp_client, 1, 3, 4, MOST_ALLOCATED, config=ExtenderConfig(), ungated=True)
    assert worst_spread(jobs, placed, group_of) > (FEWEST_NODES, 1)


# ---- the controls: the same stand-in splits jobs when the extender lacks what it needs


def worst_spread(jobs, placed, group_of) -> tuple[int, int]:
    spreads = [spread_of(job, placed, group_of) for job in jobs]
    return max(nodes for nodes, _, _ in spreads), max(groups for _, groups, _ in spreads)


async def test_without_waiting_for_binds_in_flight_jobs_split(aiohttp_client):
    # Binds 5-10 ms after each decision: the next pods' requests come first, and with
    # bind_wait_seconds 0 they are judged without the pods before them.
    jobs, placed, group_of = await schedule_jobs(
        aiohttp_client, 1, 3, 4, MOST_ALLOCATED, config=ExtenderConfig(bind_wait_seconds=0),
        bind_delay=(0.005, 0.010))
    assert worst_spread(jobs, placed, group_of) > (FEWEST_NODES, 1)


async def test_without_the_bind_verb_jobs_split(aiohttp_client):
    # The extender learns placements from its watch only (5-50 ms after each binding):
    # the default binder binds, and the extender has no pending binds to wait for.
    jobs, placed, group_of = await schedule_jobs(
        aiohttp_client, 1, 3, 4, MOST_ALLOCATED, config=ExtenderConfig(bind_enabled=False),
        extender_binds=False, watch_lag=(0.005, 0.05))
    assert worst_spread(jobs, placed, group_of) > (FEWEST_NODES, 1)


async def test_with_too_small_an_extender_weight_resource_scoring_splits_jobs(aiohttp_client):
    # Weight 3: the extender's 2-point lead for a job's own node is worth 60, less than
    # LeastAllocated's pull toward an emptier node (docs/extender.md, weight).
    jobs, placed, group_of = await schedule_jobs(
        aiohttp_client, 1, 3, 4, LEAST_ALLOCATED, config=ExtenderConfig(), extender_weight=3)
    assert worst_spread(jobs, placed, group_of) > (FEWEST_NODES, 1)
