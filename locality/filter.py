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

Reasons carry no per-node numbers (kube-scheduler counts nodes per distinct reason).
Each excluded node also gets a `ReasonCode`, the stable name of the rule that failed:
metrics and dashboards key on it, so rewording a reason never changes a label.
`locality.table.filter_table` applies the same rules to numpy columns.

Must not: mutate the nodes or the context; do more than O(1) work per node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from locality.context import DecisionContext
from locality.model import Locality, NodeState
from locality.numa import NodeTopology, NumaFit, TopologyManagerPolicy
from locality.topology import domain_at, domains_of


class ReasonCode(StrEnum):
    """Which rule excluded a node; the value is the metrics' `reason` label."""

    INSUFFICIENT_GPU = "insufficient_gpu"
    INSUFFICIENT_CPU = "insufficient_cpu"
    INSUFFICIENT_MEMORY = "insufficient_memory"
    # Outside the job's group or domain, none, or too small, at any topology level.
    PLACEMENT_GROUP = "placement_group"
    NUMA = "numa"  # kubelet's Topology Manager would reject, or policy required unmet
    UNKNOWN_NODE = "unknown_node"  # only the numpy path: a name its table does not know
    # No rule yields OTHER today; it keeps the documented label set stable for a future rule
    # that does not deserve its own label.
    OTHER = "other"


@dataclass(frozen=True)
class FilterResult:
    """Passed node names (input order), failed (resolvable) and unresolvable, with reasons,
    and `codes`: the ReasonCode of every failed and unresolvable node."""

    passed: tuple[str, ...]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)
    codes: dict[str, ReasonCode] = field(default_factory=dict)


def filter_nodes(context: DecisionContext, nodes: Sequence[NodeState]) -> FilterResult:
    """Apply the rules above to every candidate node."""
    if context.identity is None:
        return FilterResult(tuple(state.name for state in nodes))
    passed: list[str] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    codes: dict[str, ReasonCode] = {}
    for state in nodes:
        reason, code, resolvable = node_verdict(context, state)
        if reason is None or code is None:
            passed.append(state.name)
            continue
        codes[state.name] = code
        if resolvable:
            failed[state.name] = reason
        else:
            unresolvable[state.name] = reason
    return FilterResult(tuple(passed), failed, unresolvable, codes)


def node_verdict(
    context: DecisionContext, state: NodeState
) -> tuple[str | None, ReasonCode | None, bool]:
    """(None, None, True) when the node passes, else (reason, code, resolvable)."""
    if context.identity is None:
        return None, None, True
    policy = context.policy
    request = context.pod.request

    if policy.placement_group is Locality.REQUIRED:
        reason = group_verdict(context, state)
        if reason is not None:
            return reason, ReasonCode.PLACEMENT_GROUP, False

    if policy.numa is not Locality.NONE and context.pod.takes_numa_zone:
        topology = context.numa_topology(state)  # zones less assumed pods
        if topology is not None:
            demand = context.pod.numa_request
            fit = topology.fit(demand)
            if fit is NumaFit.REJECTED:
                return numa_rejected_reason(context, topology), ReasonCode.NUMA, False
            if (fit is NumaFit.UNALIGNED and policy.numa is Locality.REQUIRED
                    and demand.gpu_milli > 0):
                return numa_reason(context, topology), ReasonCode.NUMA, False

    free_gpu = state.free_gpu_milli
    free_cpu = state.free_cpu_milli
    free_memory = state.free_memory_bytes
    extra = context.extra_requested.get(state.name)
    if extra is not None:
        free_gpu -= extra.gpu_milli
        free_cpu -= extra.cpu_milli
        free_memory -= extra.memory_bytes
    # Like kube-scheduler's fit, a dimension the pod does not request is not checked.
    if request.gpu_milli and request.gpu_milli > free_gpu:
        return (insufficient_reason("GPU", gpus_text(request.gpu_milli)),
                ReasonCode.INSUFFICIENT_GPU, True)
    for kind, amount in request.devices:
        free = state.free_device(kind) - (extra.device(kind) if extra is not None else 0)
        if amount > free:
            return (insufficient_reason(kind, gpus_text(amount)),
                    ReasonCode.INSUFFICIENT_GPU, True)
    if request.cpu_milli and request.cpu_milli > free_cpu:
        return (insufficient_reason("CPU", cpus_text(request.cpu_milli)),
                ReasonCode.INSUFFICIENT_CPU, True)
    if request.memory_bytes and request.memory_bytes > free_memory:
        return (insufficient_reason("memory", gib_text(request.memory_bytes)),
                ReasonCode.INSUFFICIENT_MEMORY, True)
    return None, None, True


def group_verdict(context: DecisionContext, state: NodeState) -> str | None:
    """The reason a `required` policy excludes the node, None when it does not."""
    level = context.required_level
    if level is None:
        group = state.placement_group
        home = context.home_group
        if home is not None:
            return outside_group_reason(context, group) if group != home else None
        if group is None:
            return NO_GROUP_REASON
        fit = context.group_fits.get(group)
        if fit is None or not fit.holds_job:
            return group_too_small_reason(context, group)
        return None
    domain = domain_at(domains_of(state.node.domains, state.placement_group), level)
    home = context.required_home
    if home is not None:
        return outside_domain_reason(context, level, domain) if domain != home else None
    if domain is None:
        return no_domain_reason(level)
    fit = context.required_fits.get(domain)
    if fit is None or not fit.holds_job:
        return domain_too_small_reason(context, level, domain)
    return None


def insufficient_reason(resource: str, requested: str) -> str:
    # The same text on every node: kube-scheduler counts nodes per distinct reason in
    # the pod's FailedScheduling event ("3 insufficient GPU ..."), so per-node numbers
    # would turn one line into thousands.
    return f"insufficient {resource} (pod requests {requested})"


def outside_group_reason(context: DecisionContext, group: str | None) -> str:
    where = f"placement group {group}" if group is not None else "no placement group"
    return (
        f"job {context.identity.key if context.identity else '?'} is in placement group "
        f"{context.home_group} (policy required); node is in {where}"
    )


def group_too_small_reason(context: DecisionContext, group: str) -> str:
    fit = context.group_fits.get(group)
    can = fit.pods_that_fit if fit is not None else 0
    needed = context.placement.remaining_pods if context.placement else 1
    return (
        f"placement group {group} can hold {can} of the job's {needed} remaining pods "
        "(policy required)"
    )


NO_GROUP_REASON = "node has no placement-group label (placement-group policy required)"


def outside_domain_reason(context: DecisionContext, level: str, domain: str | None) -> str:
    where = f"{level} domain {domain}" if domain is not None else f"no {level} domain"
    return (
        f"job {context.identity.key if context.identity else '?'} is in {level} domain "
        f"{context.required_home} (policy required); node is in {where}"
    )


def no_domain_reason(level: str) -> str:
    return f"node has no {level} domain label (placement-group policy required at {level})"


def domain_too_small_reason(context: DecisionContext, level: str, domain: str) -> str:
    fit = context.required_fits.get(domain)
    can = fit.pods_that_fit if fit is not None else 0
    needed = context.placement.remaining_pods if context.placement else 1
    return (
        f"{level} domain {domain} can hold {can} of the job's {needed} remaining pods "
        "(policy required)"
    )


def numa_reason(context: DecisionContext, topology: NodeTopology | None = None) -> str:
    """Policy `required` unmet: the pod would not sit in one NUMA zone."""
    if topology is not None and topology.policy is TopologyManagerPolicy.NONE:
        return (f"topology manager policy none does not align {_numa_what(context, topology)} "
                "(policy required)")
    return f"no NUMA zone holds {_numa_what(context, topology)} (policy required)"


def numa_rejected_reason(context: DecisionContext, topology: NodeTopology) -> str:
    """kubelet's Topology Manager would refuse the pod (TopologyAffinityError)."""
    what = _numa_what(context, topology)
    where = f"topology manager {topology.policy.value}, {topology.scope.value} scope"
    if topology.policy is TopologyManagerPolicy.RESTRICTED:
        return f"no preferred NUMA placement for {what} ({where}, would reject the pod)"
    return f"no NUMA zone holds {what} ({where}, would reject the pod)"


def _numa_what(context: DecisionContext, topology: NodeTopology | None) -> str:
    demand = context.pod.numa_request
    gpus = demand.gpu_milli if topology is None or topology.gpu_reported else 0
    cpus = demand.cpu_milli
    if gpus and cpus:
        return f"{gpus_text(gpus)} GPU and {cpus_text(cpus)} pinned CPU together"
    if gpus:  # kubelet aligns only this pod's GPUs
        return f"{gpus_text(gpus)} GPU"
    return f"{cpus_text(cpus)} pinned CPU"


def gpus_text(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli / 1000:g}"


def cpus_text(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"


def gib_text(memory_bytes: int) -> str:
    return f"{memory_bytes / 1024**3:.3g}Gi"
