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
group, the topology term (policy `required` or `preferred`; `none` gives 0;
`locality.topology`):
    3  the node is in the job's home domain at the narrowest topology level where the
       job has one, or, for a job with no pod placed yet, in a domain that can hold
       all of its remaining pods at the narrowest level where any can (for `spread`,
       with a free node per pod, when some domain has that);
    2  not that, but in the target domain one level up; 1 further up; 0 otherwise.
    With the placement group as the only level in use this is the placement-group
    term it always was: 3 in the home group (or a group holding the job), else 0.
numa (pods with device-plugin GPUs, NUMA policy not `none`):
    1  the node publishes NUMA zones and kubelet's Topology Manager would put each of
       the pod's GPUs-and-pinned-CPUs units in one zone (`locality.numa`), after the
       pods assumed on the node took their zones;
    0  otherwise (no zone fits, the policy does not align, or no NUMA data).
placeholder:
    1  the node holds headstart placeholders (capacity already paid for) and is in the
       right group (topology term > 0; any node under policy none).

Pods of no job score 0 on every node (neutral).

`locality.table.score_table` computes the same with numpy columns.
kube-scheduler adds score x weight x 10 to its own plugins' total; see docs/locality.md
for the weight. Must not: mutate inputs; do more than O(1) work per node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from locality.context import DecisionContext
from locality.model import Locality, NodeState, Packing
from locality.numa import NumaFit
from locality.topology import domains_of, topology_term

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
    terms = context.node_scorer
    return {state.name: ScoreBreakdown(*terms(state)) for state in nodes}


def score_totals(context: DecisionContext, nodes: Sequence[NodeState]) -> list[tuple[str, int]]:
    """(node name, total 0..10) in input order, without building a breakdown per node."""
    if context.identity is None:
        return [(state.name, 0) for state in nodes]
    terms = context.node_scorer
    return [(state.name, sum(terms(state))) for state in nodes]


def score_node(context: DecisionContext, state: NodeState) -> ScoreBreakdown:
    """The breakdown for one node (neutral for pods of no job). Callers scoring many
    nodes one at a time (the simulator) pay for `node_scorer` once per context."""
    if context.identity is None:
        return NEUTRAL
    return ScoreBreakdown(*context.node_scorer(state))


def node_scorer(context: DecisionContext) -> Callable[[NodeState], tuple[int, int, int, int]]:
    """A function giving one node's (node, group, numa, placeholder) terms.

    Everything that depends only on the pod and its job is read once here, so the
    per-node work is a few integer operations and set/dict lookups (prioritize at
    5,000 nodes runs this 5,000 times per pod). The pod must belong to a job.
    """
    policy = context.policy
    spread = policy.packing is Packing.SPREAD
    if spread:
        counterpart_term, job_term, idle_offset = 0, 1, 2
    else:
        counterpart_term, job_term, idle_offset = NODE_COUNTERPART, NODE_JOB, 0
    counterpart_nodes = context.counterpart_nodes
    job_nodes = context.job_nodes
    extra_requested = context.expected_requested  # assumptions + other jobs' claims
    assumed_topologies = context.assumed_topologies  # NUMA zones less assumed pods
    group_policy_none = policy.placement_group is Locality.NONE
    targets = context.targets
    request = context.pod.request
    gpu, cpu, memory = request.gpu_milli, request.cpu_milli, request.memory_bytes
    demand = context.pod.numa_request
    numa_wanted = demand.gpu_milli > 0 and policy.numa is not Locality.NONE
    use_gpu, use_cpu, use_memory = context.idle_dims
    dims = use_gpu + use_cpu + use_memory
    idle_scale = NODE_IDLE_MAX / dims if dims else 0.0

    def terms(state: NodeState) -> tuple[int, int, int, int]:
        name = state.name
        if name in counterpart_nodes:
            node_term = counterpart_term
        elif name in job_nodes:
            node_term = job_term
        elif dims == 0:
            node_term = idle_offset
        else:
            # round(3 x mean idle fraction after placing the pod) over the job's
            # dimensions; halves round up, so an empty node stays at 3 after a small
            # pod. Zero allocatable counts 0 (the leastRequestedScore guard).
            extra = extra_requested.get(name)
            idle = 0.0
            if use_gpu:
                free = state.free_gpu_milli - gpu
                if extra is not None:
                    free -= extra.gpu_milli
                capacity = state.allocatable_gpu_milli
                if free > 0 and capacity > 0:
                    idle += free / capacity if free < capacity else 1.0
            if use_cpu:
                free = state.free_cpu_milli - cpu
                if extra is not None:
                    free -= extra.cpu_milli
                capacity = state.allocatable_cpu_milli
                if free > 0 and capacity > 0:
                    idle += free / capacity if free < capacity else 1.0
            if use_memory:
                free = state.free_memory_bytes - memory
                if extra is not None:
                    free -= extra.memory_bytes
                capacity = state.allocatable_memory_bytes
                if free > 0 and capacity > 0:
                    idle += free / capacity if free < capacity else 1.0
            # idle <= dims, so this is at most 3. The epsilon keeps exact halves (1.5)
            # rounding up despite float error.
            node_term = idle_offset + int(idle * idle_scale + 0.5 + 1e-9)

        if group_policy_none or not targets:
            group_term = 0
        else:
            group_term = topology_term(
                domains_of(state.node.domains, state.placement_group), targets)

        numa_term = 0
        if numa_wanted:
            topology = assumed_topologies.get(name)
            if topology is None:
                topology = state.topology
            if topology is not None and topology.fit(demand) is NumaFit.ALIGNED:
                numa_term = NUMA

        placeholder_term = 0
        if state.holds_placeholders and (group_policy_none or group_term):
            placeholder_term = PLACEHOLDER
        return node_term, group_term, numa_term, placeholder_term

    return terms


def best_node(totals: Sequence[tuple[str, int]]) -> str | None:
    """The highest-scoring node, ties broken by name (for tests and simulations that
    take the extender's score alone; kube-scheduler adds its plugins' scores and breaks
    ties at random, so the extender never assumes this node). None when no nodes."""
    best: tuple[int, str] | None = None
    for name, total in totals:
        if best is None or total > best[0] or (total == best[0] and name < best[1]):
            best = (total, name)
    return best[1] if best is not None else None
