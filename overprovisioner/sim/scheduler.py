"""kube-scheduler as the simulator sees it: fit, then score, then (if nothing fits) preempt.

Decides which ready node a real pod goes to. Like kube-scheduler, a pod first goes to a
node where it fits without evicting anyone (NodeResourcesFit counts a placeholder's
request as used); only when no node fits does preemption evict a placeholder (priority
-5 < 0) from a node where that makes room. Among candidates, one of two scorers chooses:

- `headstart`: what the manifests install: the locality core
  (`locality.context.build_context` + `locality.score.score_totals`, the extender), its
  weight taken as dominant, then the headstart-scheduler profile's NodeResourcesFit
  MostAllocated score on GPUs, CPU and memory (the fullest node that fits wins), which
  keeps empty nodes and placeholders' nodes whole for pods that need a whole node and
  lets cluster-autoscaler remove nodes sooner.
- `default`: kube-scheduler's default NodeResourcesFit LeastAllocated score on CPU and
  memory (the most idle node wins), no knowledge of jobs.

Ties left after scoring go to the lowest node index (kube-scheduler picks at random among
equals; the order here is the node's creation order, which keeps runs reproducible).

Bounds: at most `SAMPLE_NODES` candidates are scored plus the nodes holding the pod's
job (kube-scheduler samples nodes above 100 too); no affinity, taints beyond GPU vs CPU
types, or NUMA topology (nodes publish none here, so the NUMA term is 0 everywhere); none
of kube-scheduler's other score plugins is modelled (in a cluster, BalancedAllocation,
weight 1 and 0..100 on CPU and memory, can outweigh a few points of MostAllocated).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping

import numpy as np

from bucketing.resources import Resources
from locality.context import build_context
from locality.jobs import parse_role
from locality.layout import JobLayout, Where, bump, place_of
from locality.model import JobIdentity, JobKey, JobPolicy, NodeState, Pod, Role
from locality.placement import JobPlacement
from locality.score import score_totals
from overprovisioner.sim.cluster import READY, Cluster, SimNode

SAMPLE_NODES = 100
NAMESPACE = "sim"


def least_allocated(node: SimNode, cpu: int, mem: int) -> float:
    """kube-scheduler's LeastAllocated on CPU and memory: mean idle fraction after the pod."""
    cpu_score = (node.free_cpu - cpu) / node.alloc_cpu if node.alloc_cpu > 0 else 0.0
    mem_score = (node.free_mem - mem) / node.alloc_mem if node.alloc_mem > 0 else 0.0
    return (cpu_score + mem_score) / 2


# The headstart-scheduler profile's NodeResourcesFit scoring as
# manifests/base/scheduler/scheduler-config.yaml ships it (tests/manifests checks that
# the two agree): MostAllocated on these resources, with these weights.
PACKING_STRATEGY = "MostAllocated"
PACKING_WEIGHTS = (("nvidia.com/gpu", 1), ("cpu", 1), ("memory", 1))


def most_allocated(node: SimNode, gpu: int, cpu: int, mem: int) -> int:
    """NodeResourcesFit MostAllocated as the shipped profile configures it
    (`PACKING_WEIGHTS`), in kube-scheduler's integer arithmetic: per resource
    100 x (requested after the pod) // allocatable, then the weighted sum // the weights.

    As kube-scheduler does, GPUs count only for a pod that asks for some (an extended
    resource the pod does not request is skipped on every node, so a CPU pod is scored on
    CPU and memory alone) and a resource the node lacks is left out (most_allocated.go,
    resource_allocation.go in pkg/scheduler/framework/plugins/noderesources)."""
    (_, gpu_weight), (_, cpu_weight), (_, mem_weight) = PACKING_WEIGHTS
    total, weights = 0, 0
    for alloc, free, asked, weight, extended in (
        (node.alloc_gpu, node.free_gpu, gpu, gpu_weight, True),
        (node.alloc_cpu, node.free_cpu, cpu, cpu_weight, False),
        (node.alloc_mem, node.free_mem, mem, mem_weight, False),
    ):
        if alloc <= 0 or (extended and asked == 0):
            continue
        total += min(alloc - free + asked, alloc) * 100 // alloc * weight
        weights += weight
    return total // weights if weights else 0


def where_in_cluster(cluster: Cluster) -> Where:
    """`Where` for the simulated nodes ("n<index>")."""

    def where(node_name: str):
        return place_of(cluster.nodes[int(node_name[1:])].state())

    return where


class JobBook:
    """Each multi-pod job's placed pods and its pods waiting for a node.

    Like the extender's cache (`locality.tally`), it keeps each job's placement summed as
    pods bind and finish: per (node, role) and as a `JobLayout`, so a scheduling decision
    reads the sums instead of walking the job's pods. where: a simulated node's name ->
    its placement group and domains (`locality.layout.Where`)."""

    def __init__(self, job_of: list[int], role_of: list[str], request_of: list[tuple],
                 job_names: tuple[str, ...], where: Where) -> None:
        self.job_of = job_of
        self.role_of = [parse_role(r) for r in role_of]
        self.request_of = request_of
        self.job_names = job_names
        self.where = where
        self.placed_on: dict[int, dict[tuple[str, Role], int]] = {}
        self.layouts: dict[int, JobLayout] = {}
        self.node_of: dict[int, str] = {}
        self.waiting: dict[int, set[int]] = {}
        self.nodes_used: dict[int, set[int]] = {}

    def submitted(self, pod: int) -> None:
        job = self.job_of[pod]
        if job >= 0:
            self.waiting.setdefault(job, set()).add(pod)

    def bound(self, pod: int, node: int) -> None:
        job = self.job_of[pod]
        if job >= 0:
            self.waiting.get(job, set()).discard(pod)
            name = self.node_of[pod] = f"n{node}"
            self._count(job, name, self.role_of[pod], 1)
            self.nodes_used.setdefault(job, set()).add(node)

    def finished(self, pod: int) -> None:
        job = self.job_of[pod]
        name = self.node_of.pop(pod, None)
        if job >= 0 and name is not None:
            self._count(job, name, self.role_of[pod], -1)

    def _count(self, job: int, node_name: str, role: Role, count: int) -> None:
        bump(self.placed_on.setdefault(job, {}), (node_name, role), count)
        layout = self.layouts.get(job)
        if layout is None:
            layout = self.layouts[job] = JobLayout(self.where)
        layout.add(node_name, role, count)

    def placement(self, pod: int) -> tuple[JobIdentity, JobPlacement] | None:
        """The pod's identity and its job's placement (read-only: the sums are shared)."""
        job = self.job_of[pod]
        if job < 0:
            return None
        key = JobKey(NAMESPACE, self.job_names[job])
        remaining: Counter[Resources] = Counter()
        for other in self.waiting.get(job, ()):
            remaining[Resources(*self.request_of[other])] += 1
        if pod not in self.waiting.get(job, ()):
            remaining[Resources(*self.request_of[pod])] += 1
        ordered = tuple(sorted(
            remaining.items(),
            key=lambda item: (-item[0].gpu_milli, -item[0].cpu_milli, -item[0].memory_bytes),
        ))
        return JobIdentity(key, self.role_of[pod]), JobPlacement(
            key, (), ordered, placed_on=self.placed_on.get(job, {}),
            layout=self.layouts.get(job) or JobLayout(self.where))


class _ClusterStates(Mapping[str, NodeState]):
    """The locality core's `cluster` mapping, built lazily from the simulated nodes.

    Iteration (used only to size placement groups for a job's first pod) covers the
    ready nodes of the types the job uses, not the whole cluster."""

    def __init__(self, cluster: Cluster, type_indexes: set[int]) -> None:
        self.cluster = cluster
        self.type_indexes = type_indexes

    def __getitem__(self, name: str) -> NodeState:
        return self.cluster.nodes[int(name[1:])].state()

    def get(self, name: str, default=None):  # noqa: D401 - Mapping.get, faster
        index = int(name[1:])
        if 0 <= index < len(self.cluster.nodes):
            return self.cluster.nodes[index].state()
        return default

    def _ready(self) -> Iterator[SimNode]:
        for node in self.cluster.nodes:
            if node.status == READY and node.type_index in self.type_indexes:
                yield node

    def __iter__(self) -> Iterator[str]:
        return (node.name for node in self._ready())

    def __len__(self) -> int:
        return sum(1 for _ in self._ready())

    def values(self):  # type: ignore[override]
        return [node.state() for node in self._ready()]


class DefaultScorer:
    """kube-scheduler's default: least allocated CPU and memory, jobs unknown."""

    name = "default"

    def choose(self, pod: int, candidates: list[SimNode], request: tuple[int, int, int]
               ) -> SimNode:
        _, cpu, mem = request
        return max(candidates, key=lambda n: (least_allocated(n, cpu, mem), -n.index))


class HeadstartScorer:
    """The locality core's score (the extender), most-allocated (the shipped profile)
    breaking ties."""

    name = "headstart"

    def __init__(self, cluster: Cluster, jobs: JobBook, bucket_of: list[int]) -> None:
        self.cluster = cluster
        self.jobs = jobs
        self.bucket_of = bucket_of
        self.policy = JobPolicy()

    def choose(self, pod: int, candidates: list[SimNode], request: tuple[int, int, int]
               ) -> SimNode:
        gpu, cpu, mem = request
        found = self.jobs.placement(pod)
        if found is None:
            return max(candidates, key=lambda n: (most_allocated(n, gpu, cpu, mem), -n.index))
        identity, placement = found
        job = self.jobs.job_of[pod]
        types = {self.bucket_of[p] for p in self.jobs.waiting.get(job, ())}
        types.add(self.bucket_of[pod])
        states = _ClusterStates(self.cluster, types)
        sim_pod = Pod(NAMESPACE, str(pod), str(pod), {}, {}, Resources(*request))
        context = build_context(sim_pod, identity, self.policy, placement, states)
        totals = score_totals(context, [node.state() for node in candidates])
        return max(
            zip(candidates, totals, strict=True),
            key=lambda pair: (pair[1][1], most_allocated(pair[0], gpu, cpu, mem),
                              -pair[0].index),
        )[0]


def candidates_for(
    cluster: Cluster, type_index: int, request: tuple[int, int, int], job_nodes: set[int]
) -> tuple[list[SimNode], bool]:
    """(nodes the pod fits on, whether that needs preemption): nodes that fit without
    evicting anyone if any, else nodes where evicting the placeholder makes room.

    Like kube-scheduler (percentageOfNodesToScore), the search stops once SAMPLE_NODES
    feasible nodes are found, the oldest nodes first (kube-scheduler starts each search
    where the last one stopped); the nodes holding the pod's job are always considered."""
    gpu, cpu, mem = request
    nodes = cluster.nodes
    if not cluster.open_count[type_index]:
        return [], True
    # The open nodes of the type, oldest first.
    count = len(nodes)
    rows = np.flatnonzero(cluster.is_open[:count] & (cluster.type_of[:count] == type_index))
    free = cluster.free[:, rows]
    fit = (free[0] >= gpu) & (free[1] >= cpu) & (free[2] >= mem)
    held = cluster.holds_placeholder[rows]
    found = np.flatnonzero(fit & ~held)
    preempt = not len(found)
    if preempt:
        found = np.flatnonzero(fit & held)
    chosen = [nodes[index] for index in rows[found[:SAMPLE_NODES]].tolist()]
    if job_nodes and len(chosen) >= SAMPLE_NODES:
        seen = {n.index for n in chosen}
        for index in job_nodes:
            node = nodes[index]
            if (index not in seen and node.status == READY and node.type_index == type_index
                    and node.placeholder == preempt and node.fits(gpu, cpu, mem)):
                chosen.append(node)
    return chosen, preempt
