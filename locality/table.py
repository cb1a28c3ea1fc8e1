"""The numpy filter and score: `filter_nodes` and `score_totals` over a `NodeTable`.

Why: kube-scheduler calls the extender inside its scheduling cycle, so every
millisecond is a millisecond per pod; over the columns of a `NodeTable`
(`locality.columns`) the rules cost tens of microseconds plus one dict lookup per
candidate name. `filter_table` and `score_table` give exactly the results of
`filter_nodes` and `score_totals` (tests check this on generated clusters): the same
rules in the same order, the same reasons and reason codes, the same float
operations for the idle term.

Must not: read the clock, log, or change the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import itemgetter, not_

import numpy as np

from locality.columns import NodeTable
from locality.context import DecisionContext
from locality.filter import (
    NO_GROUP_REASON,
    FilterResult,
    ReasonCode,
    cpus_text,
    domain_too_small_reason,
    gib_text,
    gpus_text,
    group_too_small_reason,
    insufficient_reason,
    no_domain_reason,
    numa_reason,
    numa_rejected_reason,
    outside_domain_reason,
    outside_group_reason,
)
from locality.model import Locality, Packing
from locality.numa import NumaFit
from locality.score import NODE_COUNTERPART, NODE_IDLE_MAX, NODE_JOB, NUMA, PLACEHOLDER
from locality.topology import TOPOLOGY_MAX, domain_at, domains_of

__all__ = ["UNKNOWN_NODE_REASON", "NodeTable", "filter_table", "score_columns", "score_table"]

UNKNOWN_NODE_REASON = "node not (yet) in the extender's node cache"

# filter_table's verdict numbers -> the ReasonCode node_verdict gives for the same rule.
_REASON_CODES: dict[int, ReasonCode] = {
    1: ReasonCode.UNKNOWN_NODE,
    2: ReasonCode.PLACEMENT_GROUP,  # outside the home group / domain
    3: ReasonCode.PLACEMENT_GROUP,  # no group / domain
    4: ReasonCode.PLACEMENT_GROUP,  # group / domain too small
    5: ReasonCode.NUMA,
    6: ReasonCode.INSUFFICIENT_GPU,
    7: ReasonCode.INSUFFICIENT_CPU,
    8: ReasonCode.INSUFFICIENT_MEMORY,
    9: ReasonCode.INSUFFICIENT_GPU,  # a device kind (MIG slice, vendor, DRA GPUs)
}
_NO_CODES = np.full(1, -1, dtype=np.int64)


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

    # Reason codes per row (0 = passes), the first failing rule wins as in node_verdict:
    # 1 unknown, 2 outside home group, 3 no group, 4 group too small, 5 NUMA,
    # 6..8 fit, 9 a device kind.
    verdict = np.zeros(size + 1, dtype=np.int8)
    unresolved = verdict == 0
    if policy.placement_group is Locality.REQUIRED:
        level = context.required_level
        if level is None:
            domains, home, fits = table.groups, context.home_group, context.group_fits
            codes = np.r_[table.group_codes, -1]
        else:
            domains = table.level_domains.get(level, ())
            home, fits = context.required_home, context.required_fits
            codes = np.r_[table.level_codes.get(level, np.full(size, -1, dtype=np.int64)), -1]
        if home is not None:
            home_code = domains.index(home) if home in domains else -2
            verdict[unresolved & (codes != home_code)] = 2
        else:
            holds = np.array(
                [bool((fit := fits.get(domain)) and fit.holds_job) for domain in domains]
                + [False],
                dtype=bool,
            )
            verdict[unresolved & (codes < 0)] = 3
            verdict[(verdict == 0) & (codes >= 0) & ~holds[codes]] = 4
        unresolved = verdict == 0
    demand = context.pod.numa_request
    if policy.numa is not Locality.NONE and not demand.is_zero() and table.topology_rows:
        rejected, unaligned, _ = table.numa_masks(demand, context.assumed_topologies)
        if policy.numa is Locality.REQUIRED and demand.gpu_milli > 0 and unaligned is not None:
            rejected = unaligned if rejected is None else rejected | unaligned
        if rejected is not None:
            verdict[:size][unresolved[:size] & rejected] = 5
            unresolved = verdict == 0
    extra = context.extra_requested
    gpu, cpu, memory = table.free_after_assumed(extra)
    if request.gpu_milli:
        verdict[unresolved & (np.r_[gpu, 0] < request.gpu_milli)] = 6
        unresolved = verdict == 0
    kinds_failed: dict[int, str] = {}
    for kind, amount in _device_checks(table, request):
        short = unresolved & (np.r_[table.device_free_after_assumed(kind, extra), 0] < amount)
        for row in np.flatnonzero(short).tolist():
            kinds_failed.setdefault(row, kind)
        verdict[short] = 9
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
    reason_codes: dict[str, ReasonCode] = {}
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
        reason_codes[name] = _REASON_CODES[code]
        if code == 1:
            failed[name] = UNKNOWN_NODE_REASON
        elif code == 9:
            kind = kinds_failed[row]
            failed[name] = insufficient_reason(kind, gpus_text(request.device(kind)))
        elif code >= 6:
            failed[name] = fit_reasons[code]
        elif code == 5:
            state = table.states[row]
            topology = context.numa_topology(state)
            if topology is not None and topology.fit(demand) is NumaFit.REJECTED:
                unresolvable[name] = numa_rejected_reason(context, topology)
            else:
                unresolvable[name] = numa_reason(context, topology)
        else:
            unresolvable[name] = _group_reason(context, table, row, code)
    return FilterResult(passed, failed, unresolvable, reason_codes)


def _device_checks(table: NodeTable, request) -> list[tuple[str, int]]:
    """The device kinds to check per column: all the pod asks for, except when the
    table's only kind is the pod's only one and equals its GPUs (the GPU check did it)."""
    devices = request.devices
    if not devices:
        return []
    if (not table.device_free and len(devices) == 1 and table.device_kinds == (devices[0][0],)
            and devices[0][1] == request.gpu_milli):
        return []
    return list(devices)


def _group_reason(context: DecisionContext, table: NodeTable, row: int, code: int) -> str:
    state = table.states[row]
    level = context.required_level
    if level is None:
        group = state.placement_group
        if code == 2:
            return outside_group_reason(context, group)
        if code == 3:
            return NO_GROUP_REASON
        return group_too_small_reason(context, group or "")
    domain = domain_at(domains_of(state.node.domains, state.placement_group), level)
    if code == 2:
        return outside_domain_reason(context, level, domain)
    if code == 3:
        return no_domain_reason(level)
    return domain_too_small_reason(context, level, domain or "")


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
