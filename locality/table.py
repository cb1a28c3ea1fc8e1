"""A columnar, immutable snapshot of the cluster's node states, for numpy filter and score.

Why: kube-scheduler calls the extender inside its scheduling cycle, so every
millisecond is a millisecond per pod. A Python loop over 5,000 `NodeState`s costs
milliseconds; the same rules over numpy columns cost tens of microseconds plus one
dict lookup per candidate name. `filter_table` and `score_table` give exactly the
results of `filter_nodes` and `score_totals` (tests check this on generated clusters).

The table is a value: `with_states` returns a new table (the columns are copied, a
memcpy, and the changed rows set), so a request reads a consistent snapshot while the
watch task builds the next. It is also a `Mapping[str, NodeState]`, so it can be
passed as the `cluster` of `decision_context`.

One cache inside: single-NUMA fit per (GPUs, pinned CPUs) request, memoised per table.
The table never changes, so the memo is a pure function's result kept next to its
input; `with_states` carries it over for the newest request shapes, recomputing only
the changed rows.
Assumed GPU pods' NUMA charges are per request (they depend on the pod being
scheduled), so they are applied on a copy of the memo's row, for their nodes only.

Must not: read the clock, log, or change after construction (apart from that memo).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import compress
from operator import itemgetter, not_

import numpy as np

from bucketing.resources import Resources
from locality.context import DecisionContext, GroupFit
from locality.filter import (
    NO_GROUP_REASON,
    FilterResult,
    ReasonCode,
    cpus_text,
    gib_text,
    gpus_text,
    group_too_small_reason,
    insufficient_reason,
    numa_reason,
    outside_group_reason,
)
from locality.model import Locality, NodeState, NodeTopology, Packing
from locality.score import GROUP, NODE_COUNTERPART, NODE_IDLE_MAX, NODE_JOB, NUMA, PLACEHOLDER

UNKNOWN_NODE_REASON = "node not (yet) in the extender's node cache"
_NUMA_MEMO_CARRIED = 16  # request shapes whose NUMA fit `with_states` carries over

# filter_table's verdict numbers -> the ReasonCode node_verdict gives for the same rule.
_REASON_CODES: dict[int, ReasonCode] = {
    1: ReasonCode.UNKNOWN_NODE,
    2: ReasonCode.PLACEMENT_GROUP,  # outside the home group
    3: ReasonCode.PLACEMENT_GROUP,  # no group
    4: ReasonCode.PLACEMENT_GROUP,  # group too small
    5: ReasonCode.NUMA,
    6: ReasonCode.INSUFFICIENT_GPU,
    7: ReasonCode.INSUFFICIENT_CPU,
    8: ReasonCode.INSUFFICIENT_MEMORY,
}


class NodeTable(Mapping[str, NodeState]):
    """Node states as columns: free and allocatable per dimension, group codes, flags."""

    __slots__ = (
        "states", "names", "index", "groups", "group_codes", "free_gpu", "free_cpu",
        "free_memory", "allocatable_gpu", "allocatable_cpu", "allocatable_memory",
        "holds_placeholders", "closed", "topology_rows", "_numa_memo", "_group_order",
    )

    def __init__(self, states: Iterable[NodeState]) -> None:
        self.states: tuple[NodeState, ...] = tuple(states)
        self.names: tuple[str, ...] = tuple(state.name for state in self.states)
        self.index: dict[str, int] = {name: row for row, name in enumerate(self.names)}
        if len(self.index) != len(self.names):
            raise ValueError("NodeTable: duplicate node names")
        groups = sorted({s.placement_group for s in self.states if s.placement_group is not None})
        self.groups: tuple[str, ...] = tuple(groups)
        code_of = {group: code for code, group in enumerate(groups)}
        self.group_codes = np.array(
            [code_of.get(s.placement_group, -1) if s.placement_group is not None else -1
             for s in self.states],
            dtype=np.int64,
        )
        self.free_gpu = np.array([s.free_gpu_milli for s in self.states], dtype=np.int64)
        self.free_cpu = np.array([s.free_cpu_milli for s in self.states], dtype=np.int64)
        self.free_memory = np.array([s.free_memory_bytes for s in self.states], dtype=np.int64)
        self.allocatable_gpu = np.array(
            [s.allocatable_gpu_milli for s in self.states], dtype=np.int64)
        self.allocatable_cpu = np.array(
            [s.allocatable_cpu_milli for s in self.states], dtype=np.int64)
        self.allocatable_memory = np.array(
            [s.allocatable_memory_bytes for s in self.states], dtype=np.int64)
        self.holds_placeholders = np.array(
            [s.holds_placeholders for s in self.states], dtype=bool)
        # Nodes that take no new pods (cordoned, not Ready, tainted away): no group room.
        self.closed = np.array([not s.node.takes_new_pods for s in self.states], dtype=bool)
        self.topology_rows: tuple[int, ...] = tuple(
            row for row, s in enumerate(self.states) if s.topology is not None
        )
        self._numa_memo: dict[tuple[int, int], np.ndarray] = {}
        self._group_order: np.ndarray | None = None

    # Mapping[str, NodeState]
    def __getitem__(self, name: str) -> NodeState:
        return self.states[self.index[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.index

    def with_states(self, changed: Iterable[NodeState]) -> NodeTable:
        """A new table with these node states replacing (or adding) rows by name.

        Replacing rows copies the columns (O(nodes) memcpy) and keeps the group codes
        when no new group appears; anything else rebuilds the table.
        """
        changed = list(changed)
        if not changed:
            return self
        rows = [self.index.get(state.name) for state in changed]
        new_group = any(
            s.placement_group is not None and s.placement_group not in self.groups
            for s in changed
        )
        if any(row is None for row in rows) or new_group:
            by_name = dict(zip(self.names, self.states, strict=True))
            by_name.update((state.name, state) for state in changed)
            return NodeTable(by_name.values())
        table = object.__new__(NodeTable)
        states = list(self.states)
        for row, state in zip(rows, changed, strict=True):
            states[row] = state
        table.states = tuple(states)
        table.names = self.names
        table.index = self.index
        table.groups = self.groups
        table.group_codes = self.group_codes.copy()
        table.free_gpu = self.free_gpu.copy()
        table.free_cpu = self.free_cpu.copy()
        table.free_memory = self.free_memory.copy()
        table.allocatable_gpu = self.allocatable_gpu.copy()
        table.allocatable_cpu = self.allocatable_cpu.copy()
        table.allocatable_memory = self.allocatable_memory.copy()
        table.holds_placeholders = self.holds_placeholders.copy()
        table.closed = self.closed.copy()
        code_of = {group: code for code, group in enumerate(self.groups)}
        topology_rows = set(self.topology_rows)
        for row, s in zip(rows, changed, strict=True):
            table.group_codes[row] = code_of[s.placement_group] if s.placement_group else -1
            table.free_gpu[row] = s.free_gpu_milli
            table.free_cpu[row] = s.free_cpu_milli
            table.free_memory[row] = s.free_memory_bytes
            table.allocatable_gpu[row] = s.allocatable_gpu_milli
            table.allocatable_cpu[row] = s.allocatable_cpu_milli
            table.allocatable_memory[row] = s.allocatable_memory_bytes
            table.holds_placeholders[row] = s.holds_placeholders
            table.closed[row] = not s.node.takes_new_pods
            if s.topology is not None:
                topology_rows.add(row)
            else:
                topology_rows.discard(row)
        table.topology_rows = tuple(sorted(topology_rows))
        # Carry the NUMA memo over, judging only the changed rows again: rebuilding it
        # costs a Python zone_for per NRT node (milliseconds at 5,000), and bindings and
        # NRT republishes change a few rows between most requests. The newest shapes
        # only, so a long-running extender's memo stays small.
        table._numa_memo = {}
        for key in list(self._numa_memo)[-_NUMA_MEMO_CARRIED:]:
            fit = self._numa_memo[key].copy()
            for row, s in zip(rows, changed, strict=True):
                fit[row] = s.topology is not None and s.topology.zone_for(*key) is not None
            table._numa_memo[key] = fit
        table._group_order = None
        return table

    def without(self, names: Iterable[str]) -> NodeTable:
        """A new table without these nodes (rebuilds)."""
        gone = set(names)
        if not gone & self.index.keys():
            return self
        return NodeTable(s for s in self.states if s.name not in gone)

    def rows_of(self, names: Sequence[str]) -> tuple[int, ...]:
        """Row numbers of `names`; a name not in the table maps to len(table)."""
        if not names:
            return ()
        try:
            # One C-level call for the common case where every name is known.
            found = itemgetter(*names)(self.index)
        except KeyError:
            missing = len(self.names)
            return tuple(self.index.get(name, missing) for name in names)
        return (found,) if len(names) == 1 else found

    def numa_fit(self, gpu_milli: int, cpu_milli: int) -> np.ndarray:
        """Per row: the node publishes NUMA zones and one holds both amounts (the GPUs and
        the pinned CPUs, `Pod.numa_request`)."""
        key = (gpu_milli, cpu_milli)
        fit = self._numa_memo.get(key)
        if fit is None:
            fit = np.zeros(len(self.names), dtype=bool)
            for row in self.topology_rows:
                topology = self.states[row].topology
                if topology is not None and topology.zone_for(gpu_milli, cpu_milli):
                    fit[row] = True
            self._numa_memo[key] = fit
        return fit

    def numa_fit_after_assumed(
        self, gpu_milli: int, cpu_milli: int, assumed_topologies: Mapping[str, NodeTopology]
    ) -> np.ndarray:
        """`numa_fit` with the rows of nodes holding assumed GPU pods judged on their
        charged zones (`DecisionContext.assumed_topologies`); copies only if needed."""
        fit = self.numa_fit(gpu_milli, cpu_milli)
        if not assumed_topologies:
            return fit
        fit = fit.copy()
        for name, topology in assumed_topologies.items():
            row = self.index.get(name)
            if row is not None:
                fit[row] = topology.zone_for(gpu_milli, cpu_milli) is not None
        return fit

    def free_after_assumed(
        self, extra_requested: Mapping[str, Resources]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free columns less the requests of assumed placements (copies only if needed)."""
        if not extra_requested:
            return self.free_gpu, self.free_cpu, self.free_memory
        gpu, cpu, memory = self.free_gpu.copy(), self.free_cpu.copy(), self.free_memory.copy()
        for name, extra in extra_requested.items():
            row = self.index.get(name)
            if row is not None:
                gpu[row] -= extra.gpu_milli
                cpu[row] -= extra.cpu_milli
                memory[row] -= extra.memory_bytes
        return gpu, cpu, memory

    def fit_job_into_groups(
        self,
        remaining: tuple[tuple[Resources, int], ...],
        extra_requested: Mapping[str, Resources],
        max_pods_per_node: int | None = None,
    ) -> dict[str, GroupFit]:
        """`context.fit_job_into_groups` over the columns (same greedy, same result)."""
        needed = sum(count for _, count in remaining)
        if self._group_order is None:
            self._group_order = np.argsort(self.group_codes, kind="stable")
        order = self._group_order
        order = order[self.group_codes[order] >= 0]
        codes = self.group_codes[order]
        if len(order) == 0:
            return {}
        gpu, cpu, memory = self.free_after_assumed(extra_requested)
        gpu, cpu, memory = gpu[order], cpu[order], memory[order]
        room = np.full(len(order), max_pods_per_node if max_pods_per_node else needed,
                       dtype=np.int64)
        room[self.closed[order]] = 0
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        row_group = np.cumsum(np.r_[False, codes[1:] != codes[:-1]])
        fitted = np.zeros(len(starts), dtype=np.int64)
        for request, count in remaining:
            copies = np.minimum(room, count)
            if request.gpu_milli > 0:
                copies = np.minimum(copies, np.maximum(gpu, 0) // request.gpu_milli)
            if request.cpu_milli > 0:
                copies = np.minimum(copies, np.maximum(cpu, 0) // request.cpu_milli)
            if request.memory_bytes > 0:
                copies = np.minimum(copies, np.maximum(memory, 0) // request.memory_bytes)
            before = np.cumsum(copies) - copies
            before_in_group = before - before[starts][row_group]
            take = np.clip(count - before_in_group, 0, copies)
            gpu = gpu - take * request.gpu_milli
            cpu = cpu - take * request.cpu_milli
            memory = memory - take * request.memory_bytes
            room = room - take
            fitted += np.bincount(row_group, weights=take, minlength=len(starts)).astype(np.int64)
        return {
            self.groups[codes[start]]: GroupFit(self.groups[codes[start]], int(fit), needed)
            for start, fit in zip(starts.tolist(), fitted.tolist(), strict=True)
        }


def filter_table(context: DecisionContext, table: NodeTable, names: Sequence[str]) -> FilterResult:
    """`filter_nodes` over the candidate `names`, with numpy. Names the table does not
    know fail (resolvable) with UNKNOWN_NODE_REASON for pods of a job; pods of no job
    pass everywhere."""
    if context.identity is None:
        return FilterResult(tuple(names))
    rows = table.rows_of(names)
    size = len(table)
    policy = context.policy
    request = context.pod.request
    codes = np.r_[table.group_codes, -1]

    # Reason codes per row (0 = passes), the first failing rule wins as in node_verdict:
    # 1 unknown, 2 outside home group, 3 no group, 4 group too small, 5 NUMA, 6..8 fit.
    verdict = np.zeros(size + 1, dtype=np.int8)
    unresolved = verdict == 0
    if policy.placement_group is Locality.REQUIRED:
        home = context.home_group
        if home is not None:
            home_code = table.groups.index(home) if home in table.groups else -2
            mark = unresolved & (codes != home_code)
            verdict[mark] = 2
        else:
            holds = np.array(
                [bool((fit := context.group_fits.get(group)) and fit.holds_job)
                 for group in table.groups] + [False],
                dtype=bool,
            )
            verdict[unresolved & (codes < 0)] = 3
            verdict[(verdict == 0) & (codes >= 0) & ~holds[codes]] = 4
        unresolved = verdict == 0
    if (
        request.gpu_milli > 0 and policy.numa is Locality.REQUIRED and table.topology_rows
    ):
        has_topology = np.zeros(size + 1, dtype=bool)
        has_topology[list(table.topology_rows)] = True
        fit = np.r_[table.numa_fit_after_assumed(
            request.gpu_milli, context.pod.pinned_cpu_milli, context.assumed_topologies), False]
        verdict[unresolved & has_topology & ~fit] = 5
        unresolved = verdict == 0
    gpu, cpu, memory = table.free_after_assumed(context.extra_requested)
    if request.gpu_milli:
        verdict[unresolved & (np.r_[gpu, 0] < request.gpu_milli)] = 6
        unresolved = verdict == 0
    if request.cpu_milli:
        verdict[unresolved & (np.r_[cpu, 0] < request.cpu_milli)] = 7
        unresolved = verdict == 0
    if request.memory_bytes:
        verdict[unresolved & (np.r_[memory, 0] < request.memory_bytes)] = 8
    verdict[size] = 1

    picked = _gather(verdict.tolist(), rows)
    if not any(picked):
        return FilterResult(tuple(names))
    passed = tuple(compress(names, map(not_, picked)))
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    codes: dict[str, ReasonCode] = {}
    fit_reasons = {
        6: insufficient_reason("GPU", gpus_text(request.gpu_milli)),
        7: insufficient_reason("CPU", cpus_text(request.cpu_milli)),
        8: insufficient_reason("memory", gib_text(request.memory_bytes)),
    }
    for position, code in enumerate(picked):
        if not code:
            continue
        name = names[position]
        row = rows[position]
        codes[name] = _REASON_CODES[code]
        if code == 1:
            failed[name] = UNKNOWN_NODE_REASON
        elif code >= 6:
            failed[name] = fit_reasons[code]
        elif code == 5:
            # Resolvable where placeholders sit: preempting them frees their zone.
            (failed if table.holds_placeholders[row] else unresolvable)[name] = (
                numa_reason(context))
        else:
            group = table.states[row].placement_group
            if code == 2:
                unresolvable[name] = outside_group_reason(context, group)
            elif code == 3:
                unresolvable[name] = NO_GROUP_REASON
            else:
                unresolvable[name] = group_too_small_reason(context, group or "")
    return FilterResult(passed, failed, unresolvable, codes)


def score_table(context: DecisionContext, table: NodeTable, names: Sequence[str]) -> list[int]:
    """`score_totals` over the candidate `names` with numpy: the totals (0..10) in the
    order of `names` (pair them with zip); unknown names score 0."""
    if context.identity is None:
        return [0] * len(names)
    totals = score_columns(context, table).sum(axis=0).tolist()
    totals.append(0)
    return list(_gather(totals, table.rows_of(names)))


def _gather(values: list[int], rows: tuple[int, ...]) -> tuple[int, ...]:
    # itemgetter over a Python list beats numpy fancy indexing plus tolist() here.
    if not rows:
        return ()
    picked = itemgetter(*rows)(values)
    return (picked,) if len(rows) == 1 else picked


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
    # Same operations, same order as node_scorer, so the floats round identically.
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

    codes = table.group_codes
    group_policy_none = policy.placement_group is Locality.NONE
    if group_policy_none:
        group = np.zeros(size, dtype=np.int64)
    elif context.home_group is not None:
        home_code = table.groups.index(context.home_group) if (
            context.home_group in table.groups) else -2
        group = np.where(codes == home_code, GROUP, 0)
    else:
        preferred = context.preferred_groups
        holds = np.array([g in preferred for g in table.groups] + [False], dtype=bool)
        group = np.where(holds[codes], GROUP, 0)  # code -1 reads the trailing False

    if gpu_request > 0 and policy.numa is not Locality.NONE:
        numa = table.numa_fit_after_assumed(
            gpu_request, context.pod.pinned_cpu_milli, context.assumed_topologies,
        ).astype(np.int64) * NUMA
    else:
        numa = np.zeros(size, dtype=np.int64)

    right_group = np.ones(size, dtype=bool) if group_policy_none else group > 0
    placeholder = (table.holds_placeholders & right_group).astype(np.int64) * PLACEHOLDER
    return np.stack([node, group, numa, placeholder])
