"""A faithful stand-in for kube-scheduler's scheduling and binding cycles, for tests.

It plays kube-scheduler against the real extender app through real HTTP, and does
what kube-scheduler 1.36 does (read in its source, pkg/scheduler/schedule_one.go and
framework/plugins/noderesources), not what the extender would like it to do:

- Filter: NodeResourcesFit's fit on GPUs, CPU and memory against the scheduler's own
  cache (bound pods plus the pods it assumed, so a pod whose bind is still in flight
  takes its room at once), then the extender's filter (`NodeNames` in and out).
- One feasible node left: it is taken and prioritize is skipped.
- Score: each plugin's 0..100 score times its weight, summed: NodeResourcesFit (the
  shipped profile's MostAllocated on GPUs, CPU and memory, or the default
  LeastAllocated on CPU and memory; an extended resource the pod does not request is
  skipped, as is a resource the node lacks; integer arithmetic) weight 1, and
  NodeResourcesBalancedAllocation (CPU and memory, the 1.36 formula
  50 + (50 + withPod - withoutPod) / 2) weight 1; plus the extender's score x weight x
  10. The other default score plugins give every candidate the same score for these
  pods (TaintToleration without PreferNoSchedule taints, NodeAffinity without preferred
  terms, PodTopologySpread and InterPodAffinity without constraints, DynamicResources
  without claims) or have no data here (ImageLocality), so they cannot change the
  winner and are left out.
- The highest total wins; equal totals are broken at random (a seeded RNG here;
  kube-scheduler gives each node a random `Randomizer` and pops a heap).
- The pod is assumed on its node, and its binding cycle runs as a task after a random
  delay (Permit, PreBind, then the extender's /bind, or the default binder when the
  extender does not bind) while the next pod's scheduling cycle starts at once.

Bounds: no preemption, no taints or affinity (the test pods have none), no sampling
(`percentageOfNodesToScore: 100` as shipped), one profile, one extender.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bucketing.resources import Resources
from locality.config import LocalityConfig
from locality.parse import parse_node, parse_pod
from tests.extender.builders import JSON_HEADERS, args_body

MOST_ALLOCATED = "MostAllocated"  # the shipped headstart-scheduler profile
LEAST_ALLOCATED = "LeastAllocated"  # kube-scheduler's default
MAX_NODE_SCORE = 100
EXTENDER_SCALE = 10  # MaxNodeScore / MaxExtenderPriority


@dataclass
class SchedNode:
    """A node as the scheduler's cache holds it: allocatable and the requests of the pods
    bound or assumed on it (GPU milli, CPU milli, memory bytes)."""

    name: str
    allocatable: Resources
    requested: Resources = field(default_factory=lambda: Resources(0, 0, 0))

    def fits(self, request: Resources) -> bool:
        free = self.allocatable - self.requested
        return (request.gpu_milli <= free.gpu_milli and request.cpu_milli <= free.cpu_milli
                and request.memory_bytes <= free.memory_bytes)


# The resources each scoring configuration scores, GPU first: the shipped profile's
# MostAllocated lists GPUs, CPU and memory; the default LeastAllocated, CPU and memory.
SCORED = {MOST_ALLOCATED: ("gpu", "cpu", "memory"), LEAST_ALLOCATED: ("cpu", "memory")}
_FIELDS = {"gpu": "gpu_milli", "cpu": "cpu_milli", "memory": "memory_bytes"}


def resource_rows(
    node: SchedNode, request: Resources, resources: tuple[str, ...]
) -> list[tuple[int, int, int]]:
    """(requested after the pod, allocatable, requested before) per scored resource:
    skipped where the node has none, or the pod asks for none of an extended resource
    (resource_allocation.go)."""
    rows = []
    for resource in resources:
        attribute = _FIELDS[resource]
        allocatable = getattr(node.allocatable, attribute)
        before = getattr(node.requested, attribute)
        asked = getattr(request, attribute)
        if allocatable <= 0 or (resource == "gpu" and asked == 0):
            continue
        rows.append((before + asked, allocatable, before))
    return rows


def fit_score(node: SchedNode, request: Resources, strategy: str) -> int:
    """NodeResourcesFit's score, weight 1 per resource, integer arithmetic
    (most_allocated.go, least_allocated.go)."""
    rows = resource_rows(node, request, SCORED[strategy])
    total = 0
    for requested, allocatable, _ in rows:
        if strategy == MOST_ALLOCATED:
            total += min(requested, allocatable) * MAX_NODE_SCORE // allocatable
        elif requested <= allocatable:
            total += (allocatable - requested) * MAX_NODE_SCORE // allocatable
    return total // len(rows) if rows else 0


def _balance(fractions: list[float]) -> int:
    # Two resources: std = |f1 - f2| / 2 (balanced_allocation.go).
    std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_score(node: SchedNode, request: Resources) -> int:
    """NodeResourcesBalancedAllocation on CPU and memory (its default resources), 1.36:
    50 + (50 + score with the pod - score without it) / 2."""
    rows = resource_rows(node, request, ("cpu", "memory"))
    with_pod = _balance([min(req / alloc, 1.0) for req, alloc, _ in rows])
    without = _balance([min(before / alloc, 1.0) for _, alloc, before in rows])
    return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - without) // 2


class KubeSchedulerStandIn:
    """Schedules pods one after another through the extender app behind `client`."""

    def __init__(
        self,
        client: Any,
        nodes: list[dict],
        bound_pods: list[dict],
        rng: random.Random,
        *,
        strategy: str = MOST_ALLOCATED,
        extender_weight: int = 10,
        extender_binds: bool = True,
        bind_delay_seconds: tuple[float, float] = (0.0, 0.004),
        default_binder: Callable[[dict, str], Awaitable[None]] | None = None,
        config: LocalityConfig | None = None,
    ) -> None:
        self.client = client
        self.rng = rng
        self.strategy = strategy
        self.extender_weight = extender_weight
        self.extender_binds = extender_binds
        self.bind_delay_seconds = bind_delay_seconds
        self.default_binder = default_binder
        self.config = config or LocalityConfig()
        self.nodes = {}
        for obj in nodes:
            node = parse_node(obj, self.config)
            self.nodes[node.name] = SchedNode(node.name, node.allocatable)
        for obj in bound_pods:
            pod = parse_pod(obj, self.config)
            if pod.node_name is not None and not pod.terminal:
                self.nodes[pod.node_name].requested += pod.request
        self.placed: dict[str, str] = {}
        self._binding: list[asyncio.Task] = []

    async def schedule(self, pod: dict) -> str | None:
        """One scheduling cycle; the binding cycle is left running. None: unschedulable."""
        request = parse_pod(pod, self.config).request
        feasible = [name for name, node in self.nodes.items() if node.fits(request)]
        if not feasible:
            return None
        feasible = await self._extender_filter(pod, feasible)
        if not feasible:
            return None
        if len(feasible) == 1:
            chosen = feasible[0]
        else:
            totals = await self._totals(pod, request, feasible)
            top = max(totals.values())
            chosen = self.rng.choice([name for name in feasible if totals[name] == top])
        self.nodes[chosen].requested += request  # assume
        self.placed[pod["metadata"]["name"]] = chosen
        delay = self.rng.uniform(*self.bind_delay_seconds)
        self._binding.append(asyncio.create_task(self._bind(pod, chosen, delay)))
        return chosen

    async def drain(self) -> None:
        """Wait for every binding cycle started so far."""
        await asyncio.gather(*self._binding)
        self._binding.clear()

    async def _extender_filter(self, pod: dict, names: list[str]) -> list[str]:
        response = await self.client.post("/filter", data=args_body(pod, names=names),
                                          headers=JSON_HEADERS)
        answer = json.loads(await response.text())
        assert response.status == 200 and not answer["Error"], answer
        return answer["NodeNames"] or []

    async def _totals(self, pod: dict, request: Resources, names: list[str]) -> dict[str, int]:
        totals = {
            name: fit_score(self.nodes[name], request, self.strategy)
            + balanced_score(self.nodes[name], request)
            for name in names
        }
        response = await self.client.post("/prioritize", data=args_body(pod, names=names),
                                          headers=JSON_HEADERS)
        if response.status == 200:  # prioritize errors are ignored, as kube-scheduler does
            for entry in json.loads(await response.text()):
                totals[entry["Host"]] += entry["Score"] * self.extender_weight * EXTENDER_SCALE
        return totals

    async def _bind(self, pod: dict, node: str, delay: float) -> None:
        await asyncio.sleep(delay)
        metadata = pod["metadata"]
        if self.extender_binds:
            body = {"PodName": metadata["name"], "PodNamespace": metadata["namespace"],
                    "PodUID": metadata["uid"], "Node": node}
            response = await self.client.post("/bind", json=body)
            answer = await response.json()
            assert response.status == 200 and not answer["Error"], answer
        elif self.default_binder is not None:
            await self.default_binder(pod, node)
