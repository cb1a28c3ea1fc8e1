"""How good each node is for a pod: an integer 0..10, the sum of four documented terms.

    total = node (0..5) + group (0..3) + numa (0..1) + placeholder (0..1)

node, `pack` (as few nodes as possible, the counterpart's node first):
    5  the node holds the pod's counterpart (the job's PS for a worker or chief, the
       job's workers for a PS; any pod of the job when the counterpart is not placed)
    4  the node holds other pods of the job
    0..3  otherwise: how idle the node is, round(3 * mean over the job's requested
       dimensions of (free - request) / allocatable), each fraction clamped to 0..1 and
       a dimension with zero allocatable counting 0 (as leastRequestedScore guards it).
       When the job does not fit on one node, the rest fills the most idle node first,
       and a CPU-only PS prefers a GPU node its workers can join.
node, `spread` (one pod per node; only this term is inverted):
    0  counterpart on the node, 1 other job pods on it, 2 + idle (2..5) otherwise.
group (policy `required` or `preferred`; `none` gives 0):
    3  the node is in the job's home group, or, for a job with no home group yet, in a
       group that can hold all of the job's remaining pods; 0 otherwise.
numa (pods requesting GPUs, NUMA policy not `none`):
    1  the node publishes NUMA zones and one holds the pod's GPUs and CPUs together;
    0  otherwise (no zone fits, or no NodeResourceTopology data).
placeholder:
    1  the node holds headstart placeholders (capacity already paid for) and is in the
       right group (home group; a group that holds the job; any group under policy none).

Pods of no job score 0 on every node (neutral).

kube-scheduler adds score x weight x 10 to its own plugins' total; see docs/locality.md
for the weight. Must not: mutate inputs; do more than O(1) work per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from locality.context import DecisionContext
from locality.model import Locality, NodeState, Packing

NODE_COUNTERPART = 5
NODE_JOB = 4
NODE_IDLE_MAX = 3
GROUP = 3
NUMA = 1
PLACEHOLDER = 1
MAX_SCORE = NODE_COUNTERPART + GROUP + NUMA + PLACEHOLDER  # 10


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """The four terms of one node's score."""

    node: int
    group: int
    numa: int
    placeholder: int

    @property
    def total(self) -> int:
        return self.node + self.group + self.numa + self.placeholder


NEUTRAL = ScoreBreakdown(0, 0, 0, 0)


def score_nodes(context: DecisionContext, nodes: Sequence[NodeState]) -> dict[str, ScoreBreakdown]:
    """Each node's score terms (for /explain and tests; prioritize can use `score_totals`)."""
    if context.identity is None:
        return {state.name: NEUTRAL for state in nodes}
    return {state.name: score_node(context, state) for state in nodes}


def score_totals(context: DecisionContext, nodes: Sequence[NodeState]) -> list[tuple[str, int]]:
    """(node name, total 0..10) in input order, without building a breakdown per node."""
    if context.identity is None:
        return [(state.name, 0) for state in nodes]
    return [(state.name, score_node(context, state).total) for state in nodes]


def score_node(context: DecisionContext, state: NodeState) -> ScoreBreakdown:
    """The breakdown for one node (the pod must belong to a job)."""
    name = state.name
    spread = context.policy.packing is Packing.SPREAD
    if name in context.counterpart_nodes:
        node_term = 0 if spread else NODE_COUNTERPART
    elif name in context.job_nodes:
        node_term = 1 if spread else NODE_JOB
    else:
        idle = idle_term(context, state)
        node_term = 2 + idle if spread else idle

    group_term = GROUP if _in_right_group(context, state) else 0

    numa_term = 0
    request = context.pod.request
    topology = state.topology
    if (
        topology is not None
        and request.gpu_milli > 0
        and context.policy.numa is not Locality.NONE
        and topology.best_zone_for(request.gpu_milli, request.cpu_milli) is not None
    ):
        numa_term = NUMA

    held = state.placeholder_requested
    placeholder_term = 0
    if (held.gpu_milli > 0 or held.cpu_milli > 0) and (
        context.policy.placement_group is Locality.NONE or group_term
    ):
        placeholder_term = PLACEHOLDER

    return ScoreBreakdown(node_term, group_term, numa_term, placeholder_term)


def _in_right_group(context: DecisionContext, state: NodeState) -> bool:
    if context.policy.placement_group is Locality.NONE:
        return False
    group = state.placement_group
    if group is None:
        return False
    if context.home_group is not None:
        return group == context.home_group
    fit = context.group_fits.get(group)
    return fit is not None and fit.holds_job


def idle_term(context: DecisionContext, state: NodeState) -> int:
    """round(3 x mean idle fraction after placing the pod) over the job's dimensions
    (halves round up, so an empty node stays at 3 after a small pod)."""
    allocatable = state.node.allocatable
    request = context.pod.request
    extra = context.extra_requested.get(state.name)
    use_gpu, use_cpu, use_memory = context.idle_dims
    total = 0.0
    dims = 0
    if use_gpu:
        dims += 1
        total += _fraction(
            state.free_gpu_milli - (extra.gpu_milli if extra else 0) - request.gpu_milli,
            allocatable.gpu_milli,
        )
    if use_cpu:
        dims += 1
        total += _fraction(
            state.free_cpu_milli - (extra.cpu_milli if extra else 0) - request.cpu_milli,
            allocatable.cpu_milli,
        )
    if use_memory:
        dims += 1
        total += _fraction(
            state.free_memory_bytes - (extra.memory_bytes if extra else 0) - request.memory_bytes,
            allocatable.memory_bytes,
        )
    if dims == 0:
        return 0
    # The epsilon keeps exact halves (0.5 * 3 = 1.5) rounding up despite float error.
    return min(NODE_IDLE_MAX, int(NODE_IDLE_MAX * total / dims + 0.5 + 1e-9))


def _fraction(free_after: int, allocatable: int) -> float:
    if allocatable <= 0 or free_after <= 0:
        return 0.0
    return min(1.0, free_after / allocatable)


def best_node(totals: Sequence[tuple[str, int]]) -> str | None:
    """The highest-scoring node, ties broken by name: the node to record as assumed after
    prioritize (kube-scheduler adds its own plugins' scores, so this is a guess that the
    cache corrects when the binding shows up). None when there are no nodes."""
    best: tuple[int, str] | None = None
    for name, total in totals:
        if best is None or total > best[0] or (total == best[0] and name < best[1]):
            best = (total, name)
    return best[1] if best is not None else None
