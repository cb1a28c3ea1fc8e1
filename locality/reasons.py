"""The words of the filter: why a node was excluded, as text and as a stable code.

`ReasonCode` is the rule that failed, the `reason` label of the extender's metrics and
dashboards, so rewording a reason never changes a label. The texts carry no per-node
numbers: kube-scheduler counts nodes per distinct reason in the pod's FailedScheduling
event ("3 insufficient GPU ..."), so per-node numbers would turn one line into thousands.
`FilterResult` is what a filter returns. The rules themselves are in `locality.filter`.

Must not: read the clock, log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from locality.columns import GroupFit
from locality.context import DecisionContext
from locality.numa import NodeTopology, TopologyManagerPolicy

UNKNOWN_NODE_REASON = "node not (yet) in the extender's node cache"


class ReasonCode(StrEnum):
    """Which rule excluded a node; the value is the metrics' `reason` label."""

    INSUFFICIENT_GPU = "insufficient_gpu"
    INSUFFICIENT_CPU = "insufficient_cpu"
    INSUFFICIENT_MEMORY = "insufficient_memory"
    # Outside the job's group or domain, none, or too small, at any topology level.
    PLACEMENT_GROUP = "placement_group"
    NUMA = "numa"  # kubelet's Topology Manager would reject, or policy required unmet
    UNKNOWN_NODE = "unknown_node"  # only the numpy path: a name its table does not know
    # The preempt verb: a victim is a member of a gang headstart admitted (gangs are
    # preempted whole, by the admitter: locality.admission.gang_preemption).
    GANG_MEMBER = "gang_member"
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
    return _too_small(context, f"placement group {group}", context.group_fits.get(group))


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
    return _too_small(context, f"{level} domain {domain}", context.required_fits.get(domain))


def _too_small(context: DecisionContext, where: str, fit: GroupFit | None) -> str:
    can = fit.pods_that_fit if fit is not None else 0
    needed = context.placement.remaining_pods if context.placement else 1
    return f"{where} can hold {can} of the job's {needed} remaining pods (policy required)"


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
