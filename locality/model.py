"""The typed values the locality decisions work on: pods, nodes, NUMA zones, jobs, roles.

Decides nothing. Kubernetes JSON becomes these frozen dataclasses in `locality.parse`
(the edge); the filter and the score never see a dict from the API.

`NodeState` carries the few integers the per-node hot loop needs (free GPU, CPU and
memory counting placeholder capacity as free) precomputed once, so that filter and
score stay O(1) per node. The cluster cache (extender) and the simulator
(overprovisioner) hold `NodeState` objects and replace them with `with_pod` /
`without_pod` when a pod is bound or removed, instead of re-summing a node's pods.

Must not: parse JSON, log, read the clock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bucketing.resources import ZERO, Resources


class Role(enum.Enum):
    """A pod's role inside its distributed-training job."""

    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"  # chief / master / launcher: talks to the PS like a worker
    OTHER = "other"  # evaluator or any role we do not know


class Packing(enum.Enum):
    """`pack`: as few nodes as possible, the PS's node first. `spread`: one pod per node."""

    PACK = "pack"
    SPREAD = "spread"


class Locality(enum.Enum):
    """How hard a rule is: never break it, keep it when possible, or ignore it."""

    REQUIRED = "required"
    PREFERRED = "preferred"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class JobKey:
    """A job's identity: its namespace and the job name from the pod labels."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class JobIdentity:
    """Which job a pod belongs to and its role there."""

    key: JobKey
    role: Role


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """A job's placement policy, read from the pod's annotations (defaults from config).

    problems: human-readable notes about annotation values that were invalid and
    replaced by the default (shown by /explain); never an exception.
    job_size: total number of pods the job will have, when the pod says so
    (`headstart.io/job-size`); None when unknown.
    """

    packing: Packing = Packing.PACK
    placement_group: Locality = Locality.PREFERRED
    numa: Locality = Locality.PREFERRED
    job_size: int | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class Pod:
    """A pod as the locality decisions see it.

    request: the effective request (`bucketing.resources.pod_effective_request`).
    node_name: the node it is bound to, None while pending.
    is_placeholder: a headstart placeholder (label `headstart.io/placeholder: "true"`);
    real pods preempt it, so its request counts as free capacity for them.
    placement_group: for placeholders, the group they hold capacity in (label
    `headstart.io/placement-group`), else None.
    terminal: phase Succeeded or Failed (holds no resources any more).
    succeeded: phase Succeeded: the pod's work is done and nothing will replace it
    (a Failed pod is usually replaced by its operator, under a new uid).
    pinned_cpu_milli: the CPUs kubelet's static CPU manager gives the pod exclusively
    (Guaranteed QoS, whole CPUs; `locality.parse`), 0 otherwise. Only these CPUs are
    NUMA-aligned by the topology manager and counted in NodeResourceTopology zones, so
    the NUMA rules ask a zone for these, not for `request.cpu_milli`.
    """

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    request: Resources
    node_name: str | None = None
    priority: int = 0
    is_placeholder: bool = False
    placement_group: str | None = None
    terminal: bool = False
    succeeded: bool = False
    pinned_cpu_milli: int = 0

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def numa_request(self) -> Resources:
        """What one NUMA zone must hold for kubelet's single-numa-node policy: the GPUs,
        and the CPUs only when they are pinned (`pinned_cpu_milli`)."""
        return Resources(self.request.gpu_milli, self.pinned_cpu_milli, 0)

    @property
    def takes_numa_zone(self) -> bool:
        """Kubelet aligns it to a zone: it asks for GPUs or has pinned CPUs."""
        return self.request.gpu_milli > 0 or self.pinned_cpu_milli > 0


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """A node: its allocatable resources and the labels the decisions read.

    placement_group: from the first configured node label present (None if none is).
    unschedulable: `spec.unschedulable` (cordoned).
    ready: the node's Ready condition is True (True when the node reports none).
    blocking_taints: keys of its NoSchedule/NoExecute taints that mean the node is
    going away or not usable (`LocalityConfig.unavailable_node_taints`: not-ready,
    unreachable, pressure, scale-down by cluster-autoscaler or Karpenter).
    """

    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    placement_group: str | None = None
    instance_type: str | None = None
    unschedulable: bool = False
    ready: bool = True
    blocking_taints: tuple[str, ...] = ()

    @property
    def takes_new_pods(self) -> bool:
        """False when no pod of a job can land here now: cordoned, not Ready, or tainted
        away. Such a node's free capacity must not make its group look big enough."""
        return not self.unschedulable and self.ready and not self.blocking_taints


@dataclass(frozen=True, slots=True)
class NumaZone:
    """One NUMA node of a machine and what is still free on it (NRT `available`)."""

    name: str
    cpu_free_milli: int
    gpu_free_milli: int

    def holds(self, gpu_milli: int, cpu_milli: int) -> bool:
        return self.gpu_free_milli >= gpu_milli and self.cpu_free_milli >= cpu_milli


@dataclass(frozen=True, slots=True)
class NodeTopology:
    """The NUMA zones of a node, from its NodeResourceTopology object.

    zones: in NUMA-id order (`locality.parse` sorts NFD's `node-N` zone names by N),
    because that order is how kubelet breaks ties between zones.
    """

    node_name: str
    zones: tuple[NumaZone, ...]

    def zone_for(self, gpu_milli: int, cpu_milli: int) -> NumaZone | None:
        """The zone kubelet's single-numa-node topology manager admits such a pod to:
        the lowest-numbered zone that holds both amounts; None if none can.

        cpu_milli: the pod's pinned CPUs (`Pod.numa_request`), not its CPU request: the
        CPU manager gives a topology hint only for a Guaranteed pod's whole CPUs, so for
        any other pod kubelet picks the zone by its GPUs alone, and NFD counts only
        those pinned CPUs in a zone's `available`.

        Why the lowest: every single-zone hint that fits is "preferred" and equally
        narrow, and kubelet's merge keeps the narrower mask, breaking equal widths
        towards the lower-numbered NUMA node (topologymanager bitmask
        `IsNarrowerThan`). The fit check, the score and the charge for assumed
        placements (`charged`) all use this one rule.
        """
        index = _first_holding(self.zones, gpu_milli, cpu_milli)
        return None if index is None else self.zones[index]

    def charged(self, requests: Iterable[Resources]) -> NodeTopology:
        """The topology after pods with these NUMA requests (`Pod.numa_request`: GPUs
        and pinned CPUs) are admitted, in this order.

        Each request takes its GPUs and pinned CPUs from `zone_for`'s zone at that
        moment; that includes a CPU-only Guaranteed pod's pinned CPUs (the CPU manager's
        hints follow the same lowest-fitting-zone rule). A request with neither takes
        nothing, and so does one no zone holds: kubelet with single-numa-node would
        reject that pod. Returns self when nothing is charged.
        """
        zones = list(self.zones)
        changed = False
        for request in requests:
            gpu, cpu = request.gpu_milli, request.cpu_milli
            if gpu <= 0 and cpu <= 0:
                continue
            index = _first_holding(zones, gpu, cpu)
            if index is not None:
                zone = zones[index]
                zones[index] = NumaZone(
                    zone.name, zone.cpu_free_milli - cpu, zone.gpu_free_milli - gpu
                )
                changed = True
        return NodeTopology(self.node_name, tuple(zones)) if changed else self


def _first_holding(zones: Sequence[NumaZone], gpu_milli: int, cpu_milli: int) -> int | None:
    """The index of the lowest-numbered zone holding both amounts (`zone_for`'s rule)."""
    for index, zone in enumerate(zones):
        if zone.holds(gpu_milli, cpu_milli):
            return index
    return None


@dataclass(frozen=True, slots=True, eq=False)
class NodeState:
    """A node with what its bound pods take, precomputed for O(1) per-node decisions.

    requested: sum of the requests of real (non-placeholder, non-terminal) pods bound here.
    placeholder_requested: sum of the requests of headstart placeholders bound here.
    topology: NUMA zones, None when the node publishes no NodeResourceTopology.

    The free_*, allocatable_* and holds_placeholders fields are derived here once (the
    per-node loops read flat integers). free_* is allocatable minus `requested`:
    capacity held by placeholders counts as free because a real pod preempts them. It
    may be negative when the cache saw more pods than the allocatable holds.
    """

    node: Node
    requested: Resources = ZERO
    placeholder_requested: Resources = ZERO
    topology: NodeTopology | None = None
    name: str = field(init=False)
    placement_group: str | None = field(init=False)
    free_gpu_milli: int = field(init=False)
    free_cpu_milli: int = field(init=False)
    free_memory_bytes: int = field(init=False)
    allocatable_gpu_milli: int = field(init=False)
    allocatable_cpu_milli: int = field(init=False)
    allocatable_memory_bytes: int = field(init=False)
    holds_placeholders: bool = field(init=False)

    def __post_init__(self) -> None:
        allocatable = self.node.allocatable
        object.__setattr__(self, "allocatable_gpu_milli", allocatable.gpu_milli)
        object.__setattr__(self, "allocatable_cpu_milli", allocatable.cpu_milli)
        object.__setattr__(self, "allocatable_memory_bytes", allocatable.memory_bytes)
        object.__setattr__(
            self, "holds_placeholders", not self.placeholder_requested.is_zero()
        )
        object.__setattr__(self, "name", self.node.name)
        object.__setattr__(self, "placement_group", self.node.placement_group)
        object.__setattr__(
            self, "free_gpu_milli", allocatable.gpu_milli - self.requested.gpu_milli
        )
        object.__setattr__(
            self, "free_cpu_milli", allocatable.cpu_milli - self.requested.cpu_milli
        )
        object.__setattr__(
            self, "free_memory_bytes", allocatable.memory_bytes - self.requested.memory_bytes
        )

    @property
    def free(self) -> Resources:
        """Free for a real pod (placeholders count as free)."""
        return Resources(self.free_gpu_milli, self.free_cpu_milli, self.free_memory_bytes)

    @property
    def free_without_preemption(self) -> Resources:
        """Free without evicting any placeholder."""
        return self.free - self.placeholder_requested

    def with_pod(self, pod: Pod) -> NodeState:
        """A new state with `pod` bound here (terminal pods change nothing)."""
        if pod.terminal:
            return self
        if pod.is_placeholder:
            return NodeState(
                self.node, self.requested, self.placeholder_requested + pod.request, self.topology
            )
        return NodeState(
            self.node, self.requested + pod.request, self.placeholder_requested, self.topology
        )

    def without_pod(self, pod: Pod) -> NodeState:
        """A new state with `pod` gone from here (the inverse of `with_pod`)."""
        if pod.terminal:
            return self
        if pod.is_placeholder:
            return NodeState(
                self.node, self.requested, self.placeholder_requested - pod.request, self.topology
            )
        return NodeState(
            self.node, self.requested - pod.request, self.placeholder_requested, self.topology
        )

    def with_node(self, node: Node) -> NodeState:
        """A new state after the Node object changed (labels, allocatable)."""
        return NodeState(node, self.requested, self.placeholder_requested, self.topology)

    def with_topology(self, topology: NodeTopology | None) -> NodeState:
        """A new state after the node's NodeResourceTopology changed or went away."""
        return NodeState(self.node, self.requested, self.placeholder_requested, topology)


def node_state(
    node: Node, pods: tuple[Pod, ...] | list[Pod] = (), topology: NodeTopology | None = None
) -> NodeState:
    """Build a node's state from the pods bound to it (terminal pods are ignored)."""
    requested = ZERO
    placeholders = ZERO
    for pod in pods:
        if pod.terminal:
            continue
        if pod.is_placeholder:
            placeholders = placeholders + pod.request
        else:
            requested = requested + pod.request
    return NodeState(node, requested, placeholders, topology)
