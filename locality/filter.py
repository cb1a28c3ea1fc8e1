"""Which candidate nodes a pod may go to, each excluded node with a human-readable reason.

Rules, in this order (the first that fails gives the reason):
1. Pods of no job pass everywhere: filtering them is not the extender's business
   (kube-scheduler's own plugins already checked fit, taints and affinity).
2. Placement group / topology domain, policy `required` only, at the placement-group
   level or at the level the pod names (`headstart.io/topology-level`). A job with a
   home there: a node outside it (or without a label of that level) is unresolvable.
   A job's first pod: a node whose group / domain cannot hold the job's remaining
   pods, or that has none, is unresolvable. Unresolvable because evicting pods on that
   node could never make it acceptable, so kube-scheduler must not preempt there.
3. NUMA, for pods with something kubelet aligns (device-plugin GPUs, pinned CPUs), on
   nodes publishing NodeResourceTopology zones, NUMA policy not `none`: kubelet's
   Topology Manager would reject the pod there (policy `single-numa-node` or
   `restricted`, `locality.numa`), or, for a GPU pod under NUMA policy `required`,
   its GPUs and pinned CPUs would not each sit in one zone. Always unresolvable, even
   on nodes holding placeholders whose devices a preemption could free: preemption's
   dry run (kube-scheduler pkg/scheduler/framework/preemption, `DryRunPreemption` and
   defaultpreemption `SelectVictimsOnNode`) re-runs only the filter *plugins* with
   the victims removed. The extender's filter only ever sees nodes that passed those
   plugins, so the dry run reprieves every victim, finds none, and reports "expected
   at least one victim pod" as an error; extenders enter preemption only through a
   `preemptVerb` (`ProcessPreemption`), which may trim the candidates the dry run
   found but cannot add a node it found no victims on. The zones are the published
   ones less the pods assumed on the node (`DecisionContext.numa_topology`).
4. Resource fit: the request against allocatable minus bound real pods minus assumed
   placements, and every device kind the pod asks for (a vendor's GPUs, MIG slices,
   DRA GPUs) against the node's free devices of that kind; capacity held by headstart
   placeholders counts as free (a real pod preempts them). Failing it is resolvable.

Cordons, readiness, taints and affinity are not checked: kube-scheduler's filter
plugins run before the extender and every candidate has passed them. (Group
capacity in rule 2 is summed over all nodes, so there `Node.takes_new_pods` counts.)

Each excluded node gets a reason text and a `ReasonCode` (`locality.reasons`).

The rules are written once, over the columns of a `NodeTable` (`locality.columns`):
kube-scheduler calls the extender inside its scheduling cycle, so every millisecond is a
millisecond per pod, and over columns the rules cost tens of microseconds plus one dict
lookup per candidate name. `filter_nodes` and `node_verdict` (the preempt verb,
/explain, callers holding a few `NodeState`s) are views: they build a table of the
nodes they are given and run the same rules.

Must not: mutate the nodes, the table or the context; read the clock; log.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import not_

import numpy as np

from locality.columns import NodeTable, gather
from locality.context import DecisionContext
from locality.model import Locality, NodeState
from locality.numa import NumaFit
from locality.reasons import (
    NO_GROUP_REASON,
    UNKNOWN_NODE_REASON,
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
from locality.topology import domain_at, domains_of

__all__ = ["FilterResult", "ReasonCode", "filter_nodes", "filter_table", "node_verdict"]

# filter_table's verdict numbers (the rule that failed) -> its ReasonCode.
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


def filter_table(context: DecisionContext, table: NodeTable, names: Sequence[str]) -> FilterResult:
    """The rules above for each candidate in `names` (the passed ones in input order).
    Names the table does not know fail (resolvable) with UNKNOWN_NODE_REASON for pods
    of a job; pods of no job pass everywhere."""
    if context.identity is None:
        return FilterResult(tuple(names))
    rows = table.rows_of(names)
    size = len(table)
    policy = context.policy
    request = context.pod.request

    # Reason codes per row (0 = passes), the first failing rule wins, in the order above:
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

    picked = gather(verdict.tolist(), rows)
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


def filter_nodes(context: DecisionContext, nodes: Sequence[NodeState]) -> FilterResult:
    """`filter_table` over a table of these nodes, every one a candidate."""
    if context.identity is None:
        return FilterResult(tuple(state.name for state in nodes))
    table = NodeTable(nodes)
    return filter_table(context, table, table.names)


def node_verdict(
    context: DecisionContext, state: NodeState
) -> tuple[str | None, ReasonCode | None, bool]:
    """One node's verdict: (None, None, True) when it passes, else (reason, code,
    resolvable)."""
    result = filter_nodes(context, (state,))
    name = state.name
    if name in result.failed:
        return result.failed[name], result.codes[name], True
    if name in result.unresolvable:
        return result.unresolvable[name], result.codes[name], False
    return None, None, True
