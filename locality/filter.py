"""Which candidate nodes a pod may go to, each excluded node with a human-readable reason.

Rules, in this order (the first that fails gives the reason):
1. Pods of no job pass everywhere: filtering them is not the extender's business
   (kube-scheduler's own plugins already checked fit, taints and affinity).
2. Placement group, policy `required` only. A job with a home group: a node outside it
   (or without a group label) is unresolvable. A job's first pod: a node in a group that
   cannot hold the job's remaining pods, or in no group, is unresolvable. Unresolvable
   because evicting pods on that node could never make it acceptable, so kube-scheduler
   must not preempt there.
3. Single-NUMA fit, policy `required`, pods requesting GPUs, nodes publishing NUMA
   zones: no zone holds the pod's GPUs and pinned CPUs together (`Pod.numa_request`;
   only a Guaranteed pod's whole CPUs are pinned) -> unresolvable, except on a node
   holding headstart placeholders: NFD's zones count their devices too, and preempting
   them can free a zone, so there it is resolvable. Nodes without
   NodeResourceTopology data are not NUMA-filtered. The zones are the published ones
   less the GPU pods assumed on the node, each charged to the zone kubelet would admit
   it to (`DecisionContext.numa_topology`, `NodeTopology.zone_for`).
4. Resource fit: the request against allocatable minus bound real pods minus assumed
   placements; capacity held by headstart placeholders counts as free (a real pod
   preempts them). Failing it is resolvable (preemption may free room).

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


class ReasonCode(StrEnum):
    """Which rule excluded a node; the value is the metrics' `reason` label."""

    INSUFFICIENT_GPU = "insufficient_gpu"
    INSUFFICIENT_CPU = "insufficient_cpu"
    INSUFFICIENT_MEMORY = "insufficient_memory"
    PLACEMENT_GROUP = "placement_group"  # outside the home group, no group, group too small
    NUMA = "numa"
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
    group = state.placement_group

    if policy.placement_group is Locality.REQUIRED:
        home = context.home_group
        if home is not None:
            if group != home:
                return outside_group_reason(context, group), ReasonCode.PLACEMENT_GROUP, False
        elif group is None:
            return NO_GROUP_REASON, ReasonCode.PLACEMENT_GROUP, False
        else:
            fit = context.group_fits.get(group)
            if fit is None or not fit.holds_job:
                return group_too_small_reason(context, group), ReasonCode.PLACEMENT_GROUP, False

    if request.gpu_milli > 0 and policy.numa is Locality.REQUIRED:
        topology = context.numa_topology(state)  # zones less assumed GPU pods
    else:
        topology = None
    if topology is not None and topology.zone_for(
        request.gpu_milli, context.pod.pinned_cpu_milli
    ) is None:
        # The NRT counts the devices of headstart placeholders too, and a real pod
        # preempts them: on their nodes eviction can free a zone, so resolvable there.
        return numa_reason(context), ReasonCode.NUMA, state.holds_placeholders

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
    if request.cpu_milli and request.cpu_milli > free_cpu:
        return (insufficient_reason("CPU", cpus_text(request.cpu_milli)),
                ReasonCode.INSUFFICIENT_CPU, True)
    if request.memory_bytes and request.memory_bytes > free_memory:
        return (insufficient_reason("memory", gib_text(request.memory_bytes)),
                ReasonCode.INSUFFICIENT_MEMORY, True)
    return None, None, True


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


def numa_reason(context: DecisionContext) -> str:
    pod = context.pod
    gpus = gpus_text(pod.request.gpu_milli)
    if not pod.pinned_cpu_milli:  # kubelet aligns only this pod's GPUs
        return f"no NUMA zone holds {gpus} GPU (policy required)"
    return (
        f"no NUMA zone holds {gpus} GPU and {cpus_text(pod.pinned_cpu_milli)} pinned CPU "
        "together (policy required)"
    )


def gpus_text(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli / 1000:g}"


def cpus_text(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"


def gib_text(memory_bytes: int) -> str:
    return f"{memory_bytes / 1024**3:.3g}Gi"
