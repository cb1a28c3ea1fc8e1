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

The terms are computed once, over the columns of a `NodeTable` (`score_columns`), for
the same reason as the filter's rules (`locality.filter`); `score_nodes` and `score_totals`
are views over a table of the nodes they are given.
kube-scheduler adds score x weight x 10 to its own plugins' total; see docs/locality.md
for the weight. Must not: mutate inputs, read the clock, log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from locality.columns import NodeTable, gather
from locality.context import DecisionContext
from locality.model import Locality, NodeState, Packing
from locality.topology import TOPOLOGY_MAX

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
    """Each node's score terms (for /explain and tests)."""
    if context.identity is None:
        return {state.name: NEUTRAL for state in nodes}
    return breakdowns(context, NodeTable(nodes))


def breakdowns(context: DecisionContext, table: NodeTable) -> dict[str, ScoreBreakdown]:
    """Each of the table's nodes' score terms, by name (neutral for pods of no job)."""
    if context.identity is None:
        return {name: NEUTRAL for name in table.names}
    columns = score_columns(context, table).T.tolist()
    return {name: ScoreBreakdown(*terms) for name, terms in zip(table.names, columns, strict=True)}


def score_totals(context: DecisionContext, nodes: Sequence[NodeState]) -> list[tuple[str, int]]:
    """(node name, total 0..10) in input order."""
    if context.identity is None:
        return [(state.name, 0) for state in nodes]
    table = NodeTable(nodes)
    return list(zip(table.names, score_columns(context, table).sum(axis=0).tolist(), strict=True))


def score_table(context: DecisionContext, table: NodeTable, names: Sequence[str]) -> list[int]:
    """The totals (0..10) of the candidates in `names`, in their order (pair them with
    zip); names the table does not know score 0, and so does every node for a pod of no
    job."""
    if context.identity is None:
        return [0] * len(names)
    totals = score_columns(context, table).sum(axis=0).tolist()
    totals.append(0)
    return list(gather(totals, table.rows_of(names)))


def score_columns(context: DecisionContext, table: NodeTable) -> np.ndarray:
    """The four terms for every row of the table: shape (4, nodes), the order of
    `ScoreBreakdown` (node, group, numa, placeholder). The pod must belong to a job."""
    size = len(table)
    policy = context.policy
    request = context.pod.request
    gpu_request, cpu_request, memory_request = (
        request.gpu_milli, request.cpu_milli, request.memory_bytes)
    spread = policy.packing is Packing.SPREAD
    counterpart_term, job_term, idle_offset = (0, 1, 2) if spread else (
        NODE_COUNTERPART, NODE_JOB, 0)

    # The idle term reads assumptions plus other jobs' claims (expected_requested).
    free_gpu, free_cpu, free_memory = table.free_after_assumed(context.expected_requested)
    use_gpu, use_cpu, use_memory = context.idle_dims
    dims = use_gpu + use_cpu + use_memory
    idle = np.zeros(size, dtype=np.float64)
    for used, free, allocatable, asked in (
        (use_gpu, free_gpu, table.allocatable_gpu, gpu_request),
        (use_cpu, free_cpu, table.allocatable_cpu, cpu_request),
        (use_memory, free_memory, table.allocatable_memory, memory_request),
    ):
        if not used:
            continue
        after = free - asked
        ok = (after > 0) & (allocatable > 0)
        fraction = np.divide(after, allocatable, out=np.zeros(size), where=ok)
        idle += np.where(after >= allocatable, 1.0, fraction) * ok
    if dims:
        node = idle_offset + np.floor(idle * (NODE_IDLE_MAX / dims) + 0.5 + 1e-9).astype(np.int64)
    else:
        node = np.full(size, idle_offset, dtype=np.int64)
    index = table.index
    for name in context.job_nodes:
        row = index.get(name)
        if row is not None:
            node[row] = job_term
    for name in context.counterpart_nodes:
        row = index.get(name)
        if row is not None:
            node[row] = counterpart_term

    group_policy_none = policy.placement_group is Locality.NONE
    group = np.zeros(size, dtype=np.int64)
    if not group_policy_none:
        # The topology term, narrowest target level first (locality.topology).
        for rank, (level, wanted) in enumerate(context.targets):
            codes = table.level_codes.get(level)
            if codes is None:
                continue
            if len(wanted) == 1:  # a placed job's home domain: one comparison
                code = table.level_index[level].get(next(iter(wanted)), -2)
                inside = codes == code
            else:
                holds = np.array([domain in wanted for domain in table.level_domains[level]]
                                 + [False], dtype=bool)
                inside = holds[codes]  # code -1 reads the trailing False
            value = max(TOPOLOGY_MAX - rank, 1)
            group = np.where(inside, value, 0) if rank == 0 else np.where(
                (group == 0) & inside, value, group)

    demand = context.pod.numa_request
    if demand.gpu_milli > 0 and policy.numa is not Locality.NONE and table.topology_rows:
        aligned = table.numa_masks(demand, context.assumed_topologies)[2]
        numa = aligned.astype(np.int64) * NUMA
    else:
        numa = np.zeros(size, dtype=np.int64)

    right_group = np.ones(size, dtype=bool) if group_policy_none else group > 0
    placeholder = (table.holds_placeholders & right_group).astype(np.int64) * PLACEHOLDER
    return np.stack([node, group, numa, placeholder])


def best_node(totals: Sequence[tuple[str, int]]) -> str | None:
    """The highest-scoring node, ties broken by name (for tests and simulations that
    take the extender's score alone; kube-scheduler adds its plugins' scores and breaks
    ties at random, so the extender never assumes this node). None when no nodes."""
    best: tuple[int, str] | None = None
    for name, total in totals:
        if best is None or total > best[0] or (total == best[0] and name < best[1]):
            best = (total, name)
    return best[1] if best is not None else None
