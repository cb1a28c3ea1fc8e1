"""Three training jobs submitted together to the real kube-scheduler running the shipped
headstart-scheduler configuration (MostAllocated, extender weight 10, bind verb on), as
tests/extender/test_interleaved_jobs.py does against the stand-in.

Each job is 1 CPU-only PS + 24 one-GPU workers on 8-GPU kwok nodes, so its fewest nodes
are ceil(24 GPUs / 8 per node) = 3 (the PS, 4 CPUs, fits beside 8 workers: 4 + 8 x 8 =
68 of 96 CPUs). The three jobs' pods are created interleaved (a seeded shuffle that
keeps each job's own order), gated as Kueue gates a workload, and released in that
order once the extender's cache knows them all: kube-scheduler then meets them one at
a time, interleaved, with its own plugin scores, tie-breaks and asynchronous binds.

The control: the same pods through a scheduler with the shipped profile but no
extender (`packing-only`) split jobs, so the scenario can tell the extender's work apart.
Without gates: the same jobs created one pod at a time, annotated with their size,
reach kube-scheduler while the rest of their pods (and the other jobs') are still
being created. With two groups of 48 GPUs every job lands on its fewest nodes. With a
32-GPU group per job they still split in about half the runs, not asserted here: a PS
created before any of its workers cannot know they need GPUs (docs/extender.md,
"Other jobs' claims"; the stand-in test pins it).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.headstart import Extender, headstart_cluster, scheduler_variant
from tests.e2e.jobs import (
    create_pods,
    delete_pods,
    job_pods,
    release,
    wait_all_bound,
    wait_known,
)
from tests.e2e.kube import NotYet
from tests.e2e.objects import HEADSTART_SCHEDULER, kwok_node
from tests.extender.test_interleaved_jobs import FEWEST_NODES, WORKERS, interleaved

LOGS = ["headstart-scheduler", "headstart-extender"]
PACKING_ONLY = "packing-only"
JOBS = 3
TOPOLOGIES = {
    "a-group-each": (3, 4),  # 3 groups x 4 nodes = 32 GPUs each: one job per group
    "two-share-a-group": (2, 6),  # 2 x 6 nodes = 48 GPUs: two jobs fill one, node by node
}


@pytest.fixture(scope="module")
def extender_cluster(e2e_clusters) -> Iterator[tuple]:
    spec, port = headstart_cluster()
    spec = dataclasses.replace(spec, schedulers={
        **spec.schedulers, PACKING_ONLY: scheduler_variant(PACKING_ONLY, None)})
    cluster = e2e_clusters.start(spec, "extender-interleaved")
    extender = Extender(cluster, port=port).start()
    extender.wait_ready()
    yield cluster, extender
    cluster.stop()


@pytest.fixture(params=list(TOPOLOGIES))
def topology(request, extender_cluster, namespace) -> Iterator[dict[str, str]]:
    """Nodes of one topology (node -> group) for one test, removed after it with its pods."""
    cluster, extender = extender_cluster
    groups, per_group = TOPOLOGIES[request.param]
    prefix = request.param[:5]
    nodes = {f"{prefix}-{g}-{i}": f"{prefix}-pg-{g}" for g in range(groups)
             for i in range(per_group)}
    before = extender.readyz()["nodes"]
    for name, group in nodes.items():
        cluster.kube.create("/api/v1/nodes", kwok_node(name, memory="768Gi", group=group))
    cluster.kube.ensure_namespace(namespace)
    expect = before + len(nodes)
    cluster.wait(f"the extender's cache to hold {expect} nodes",
                 lambda: extender.readyz()["nodes"] == expect or NotYet(extender.readyz()),
                 30, LOGS)
    yield nodes
    delete_pods(cluster, namespace)
    cluster.wait(f"the pods of {namespace} gone",
                 lambda: not cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods"), 60)
    for name in nodes:
        cluster.kube.delete(f"/api/v1/nodes/{name}")
    cluster.wait(f"the extender's cache back to {before} nodes",
                 lambda: extender.readyz()["nodes"] == before or NotYet(extender.readyz()),
                 30, LOGS)


def schedule_jobs(cluster, extender, namespace: str, seed: int, scheduler: str):
    """Create the three jobs' pods interleaved, release them in that order once the
    extender knows them all; (jobs, pod -> node, seconds from the first release to the
    last pod bound)."""
    jobs = [job_pods(namespace, f"job-{j}", WORKERS, worker_gpus=1, scheduler=scheduler)
            for j in range(JOBS)]
    names = create_pods(cluster, namespace, interleaved(jobs, random.Random(seed)))
    wait_known(cluster, extender, namespace, names)
    released = time.monotonic()
    release(cluster, namespace, names)
    where = wait_all_bound(cluster, namespace, names, 120, LOGS + [scheduler])
    return jobs, where, time.monotonic() - released


def spreads(jobs, where: dict[str, str], group_of: dict[str, str]) -> dict[str, tuple]:
    """Job -> (nodes it uses, groups it uses, its PS shares a node with a worker, nodes)."""
    result = {}
    for job in jobs:
        pods = [pod["metadata"]["name"] for pod in job]
        nodes = sorted({where[pod] for pod in pods})
        ps_beside_a_worker = where[pods[0]] in {where[pod] for pod in pods[1:]}
        result[job[0]["metadata"]["labels"]["headstart.io/job"]] = (
            len(nodes), len({group_of[node] for node in nodes}), ps_beside_a_worker, nodes)
    return result


def counters(extender: Extender) -> dict[str, float]:
    """The extender's filter calls and its waits for binds in flight (count and total
    milliseconds per outcome), from its /metrics."""
    text = extender.get("/metrics").text
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "headstart_extender_requests_total" and \
                    sample.labels["verb"] == "filter":
                values["filter_calls"] = values.get("filter_calls", 0) + int(sample.value)
            elif sample.name in ("headstart_extender_bind_wait_seconds_count",
                                 "headstart_extender_bind_wait_seconds_sum"):
                outcome = sample.labels["outcome"]
                if sample.name.endswith("_count"):
                    values[f"waits_{outcome}"] = int(sample.value)
                else:
                    values[f"wait_ms_{outcome}"] = round(sample.value * 1000, 1)
    return values


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interleaved_jobs_each_land_on_their_fewest_nodes_in_one_group(
        extender_cluster, topology, namespace, seed, e2e_timings, request):
    cluster, extender = extender_cluster
    before = counters(extender)
    jobs, where, bound_s = schedule_jobs(cluster, extender, namespace, seed,
                                         HEADSTART_SCHEDULER)
    # How often kube-scheduler's next call for a job beat the previous pod's bind, and
    # what the extender waited for it.
    calls = {key: round(value - before.get(key, 0), 1)
             for key, value in counters(extender).items()}
    spread = spreads(jobs, where, topology)
    e2e_timings.record(f"extender: 3 interleaved jobs ({request.node.callspec.id})",
                       all_bound=bound_s, pods=len(where),
                       nodes_per_job=[s[0] for s in spread.values()],
                       groups_per_job=[s[1] for s in spread.values()], **calls)
    assert all(s[:3] == (FEWEST_NODES, 1, True) for s in spread.values()), spread


@pytest.mark.parametrize("topology", ["two-share-a-group"], indirect=True)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_without_the_extender_the_shipped_profile_splits_jobs(
        extender_cluster, topology, namespace, seed, e2e_timings):
    """MostAllocated alone piles the interleaved jobs' pods onto the fullest nodes,
    whichever job they belong to, so at least one job spreads past its fewest nodes."""
    cluster, extender = extender_cluster
    jobs, where, bound_s = schedule_jobs(cluster, extender, namespace, seed, PACKING_ONLY)
    spread = spreads(jobs, where, topology)
    e2e_timings.record(f"control: 3 interleaved jobs, no extender (seed {seed})",
                       all_bound=bound_s, nodes_per_job=[s[0] for s in spread.values()],
                       groups_per_job=[s[1] for s in spread.values()])
    assert any(s[0] > FEWEST_NODES or s[1] > 1 for s in spread.values()), spread


def ungated_spreads(cluster, namespace: str, seed: int, group_of: dict[str, str],
                    e2e_timings, label: str) -> dict[str, tuple]:
    """Create the three jobs' pods interleaved without scheduling gates, each annotated
    with its job's size, wait for all to bind, record the run; `spreads`."""
    jobs = [job_pods(namespace, f"job-{j}", WORKERS, worker_gpus=1) for j in range(JOBS)]
    for pod in (pod for job in jobs for pod in job):
        del pod["spec"]["schedulingGates"]
        pod["metadata"]["annotations"]["headstart.io/job-size"] = str(WORKERS + 1)
    created = time.monotonic()
    names = create_pods(cluster, namespace, interleaved(jobs, random.Random(seed)))
    where = wait_all_bound(cluster, namespace, names, 120, LOGS)
    spread = spreads(jobs, where, group_of)
    e2e_timings.record(f"{label} (seed {seed})", all_bound=time.monotonic() - created,
                       nodes_per_job=[s[0] for s in spread.values()],
                       groups_per_job=[s[1] for s in spread.values()])
    return spread


@pytest.mark.parametrize("topology", ["two-share-a-group"], indirect=True)
def test_without_gates_interleaved_jobs_with_their_size_annotated_mostly_land_on_their_fewest_nodes(
        extender_cluster, topology, namespace, e2e_timings):
    """Each pod is judged knowing only the pods created before it; each job claims the
    pods its size annotation says are still to come, shaped as its known workers, so
    the next job's PS keeps off that room. Not every run: with the claims of jobs
    created together overlapping, some runs still split (2 of 15 runs over five
    invocations; before these claims, 3 of 3). Asserted: at least one of three
    interleavings puts every job on its fewest nodes in one group."""
    perfect = []
    for seed in (1, 2, 3):
        spread = ungated_spreads(extender_cluster[0], namespace, seed, topology, e2e_timings,
                                 "3 interleaved jobs without gates, two share a group")
        perfect.append(all(s[:3] == (FEWEST_NODES, 1, True) for s in spread.values()))
        delete_pods(extender_cluster[0], namespace)
        extender_cluster[0].wait(
            f"the pods of {namespace} gone",
            lambda: not extender_cluster[0].kube.list(f"/api/v1/namespaces/{namespace}/pods"),
            60)
    assert any(perfect), perfect
