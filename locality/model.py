"""The typed values the locality decisions work on: pods, nodes, NUMA zones, jobs, roles.

Decides nothing. Kubernetes JSON becomes these frozen dataclasses in `locality.parse`
(the edge); the filter and the score never see a dict from the API.

`NodeState` carries the few integers a `NodeTable`'s columns are built from (free GPU,
CPU and memory counting placeholder capacity as free) precomputed once, so that
building or updating a row is O(1). The cluster cache (extender) and the simulator
(overprovisioner) hold `NodeState` objects and replace them with `with_pod` /
`without_pod` when a pod is bound or removed, instead of re-summing a node's pods.

Must not: parse JSON, log, read the clock.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from bucketing.resources import ZERO, Devices, Resources
from locality.constraints import NO_CONSTRAINTS, PodConstraints, Taint
from locality.elastic import ElasticOwner
from locality.numa import NodeTopology, NumaDemand, NumaZone, pod_numa_demand
from locality.pod_rules import NO_RULES, PodRules

__all__ = [  # NodeTopology and NumaZone live in locality.numa; kept importable from here
    "JobIdentity", "JobKey", "JobPolicy", "Locality", "Node", "NodeState", "NodeTopology",
    "NumaZone", "Packing", "Pod", "Role", "node_state",
]


class Role(enum.Enum):
    """A pod's role inside its distributed-training job."""

    PS = "ps"
    WORKER = "worker"
    # chief / master / leader / driver: a worker that coordinates. Its counterpart is the
    # PS; in a job without a PS (PyTorchJob master + workers, JobSet leader) it is the
    # coordinator the workers gather around, as a PS is in a PS job.
    CHIEF = "chief"
    LAUNCHER = "launcher"  # MPIJob / Trainer launcher: starts the workers, joins none
    OTHER = "other"  # evaluator, initializers, or any role we do not know


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
    (`headstart.io/job-size`, else its PodGroup's `minMember`, else its owner's replica
    counts: `Pod.owner_size`); None when unknown.
    topology_level: the index (in `LocalityConfig.topology_levels`) of the level the
    placement-group policy applies at (`headstart.io/topology-level`); None means the
    placement-group level, as before levels existed.
    """

    packing: Packing = Packing.PACK
    placement_group: Locality = Locality.PREFERRED
    numa: Locality = Locality.PREFERRED
    job_size: int | None = None
    problems: tuple[str, ...] = ()
    topology_level: int | None = None


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
    numa: what kubelet aligns, per container and for the pod (`locality.numa`);
    None for hand-built pods, which count as one container (GPUs + pinned CPUs).
    claims: the pod's ResourceClaims, as (kind, name): ("claim", generated or named
    claim) or ("template", template name) while the claim is not generated yet.
    pod_group: (API group, name) of the PodGroup the pod names (Volcano's annotation
    `scheduling.k8s.io/group-name`, or scheduler-plugins' label
    `scheduling.x-k8s.io/pod-group`). group_min_member: that PodGroup's
    `spec.minMember` once the extender has seen the object (`extender.resolve`), else
    None.
    owner_size: the size the pod's owner declares (a Kubeflow training job's replicas, a
    JobSet's replicated jobs: `locality.owners`) once the extender has seen the owner,
    else None. owner_wait: why that owner gives no size yet although it is seen (its
    counts do not parse; a TrainJob whose JobSet is not seen), else None.
    scheduling_gates: the names in `spec.schedulingGates`, in order (kube-scheduler
    leaves a gated pod alone; the job admitter lifts `headstart.io/placement`).
    created_at: `metadata.creationTimestamp` in seconds since the epoch (0 when absent:
    hand-built pods).
    scheduler_name: `spec.schedulerName` (the API defaults it to `default-scheduler`);
    the bind verb binds only pods of the schedulers it serves.
    nominated_node_name: `status.nominatedNodeName` of a pod not bound yet: the node
    kube-scheduler preempted for it, or (1.35+) chose for it before it waits in Permit
    or PreBind. The job's placement counts the pod there until it is bound or the
    nomination is cleared (`locality.placement.job_placement`).
    constraints: its node selector, required node affinity and tolerations
    (`locality.constraints`): which nodes it may ever run on.
    deleting: `metadata.deletionTimestamp` is set (Terminating). Its node still holds its
    request, but it is no member of its job's next attempt: never counted toward a
    job's size, never fixing a job's domain.
    elastic: its owner as an elastic job (`locality.elastic`) when the owner opted in to
    resizing and is seen, else None.
    controller: (kind, name) of its controlling owner (`metadata.ownerReferences` with
    `controller: true`: a Job, a JobSet's Job, a training operator's job), None for a
    pod nothing recreates.
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
    numa: NumaDemand | None = None
    claims: tuple[tuple[str, str], ...] = ()
    pod_group: tuple[str, str] | None = None
    group_min_member: int | None = None
    owner_size: int | None = None
    owner_wait: str | None = None
    elastic: ElasticOwner | None = None
    scheduling_gates: tuple[str, ...] = ()
    created_at: float = 0.0
    scheduler_name: str = "default-scheduler"
    nominated_node_name: str | None = None
    constraints: PodConstraints = NO_CONSTRAINTS
    deleting: bool = False
    controller: tuple[str, str] | None = None
    preempts: bool = True
    """`spec.preemptionPolicy` is not `Never` (its PriorityClass lets it preempt)."""
    rules: PodRules = NO_RULES
    """Its inter-pod rules as the admitter models them (`locality.pod_rules`): how many
    of its job's pods one node may take, or the first rule it does not model."""
    ready: bool = False
    """Its `Ready` condition is True (kubelet: every container started and passing its
    readiness probe). A gang is Running once every live member is bound and Ready
    (`locality.admission.recovery`); an image that cannot be pulled or a crash loop
    keeps a bound pod un-Ready for ever."""

    @property
    def full_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def numa_request(self) -> NumaDemand:
        """What kubelet aligns to NUMA zones: the device-plugin GPUs and the pinned CPUs,
        per container and for the pod (`locality.numa.NumaDemand`)."""
        if self.numa is not None:
            return self.numa
        return pod_numa_demand(self.request.gpu_milli, self.pinned_cpu_milli)

    @property
    def takes_numa_zone(self) -> bool:
        """Kubelet aligns it to a zone: it asks for GPUs or has pinned CPUs."""
        return not self.numa_request.is_zero()


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """A node: its allocatable resources and the labels the decisions read.

    placement_group: from the first configured node label present (None if none is).
    unschedulable: `spec.unschedulable` (cordoned).
    ready: the node's Ready condition is True (True when the node reports none).
    blocking_taints: keys of its NoSchedule/NoExecute taints that mean the node is
    going away or not usable (`LocalityConfig.unavailable_node_taints`: not-ready,
    unreachable, pressure, scale-down by cluster-autoscaler or Karpenter).
    domains: (level name, domain) for each configured topology level the node has a
    label of, widest first (`LocalityConfig.topology_levels`, `locality.topology`).
    Empty for hand-built nodes: then the placement group is their only level.
    taints: all its NoSchedule/NoExecute taints (a pod must tolerate each of them:
    `locality.constraints`).
    """

    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    placement_group: str | None = None
    instance_type: str | None = None
    unschedulable: bool = False
    ready: bool = True
    blocking_taints: tuple[str, ...] = ()
    domains: tuple[tuple[str, str], ...] = ()
    taints: tuple[Taint, ...] = ()

    @property
    def takes_new_pods(self) -> bool:
        """False when no pod of a job can land here now: cordoned, not Ready, or tainted
        away. Such a node's free capacity must not make its group look big enough."""
        return not self.unschedulable and self.ready and not self.blocking_taints


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
    free_devices: the same per device kind (`Resources.devices`: whole GPUs of each
    vendor, MIG slices), empty on nodes and pods without per-kind devices.
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
    free_devices: Devices = field(init=False)

    def __post_init__(self) -> None:
        allocatable = self.node.allocatable
        object.__setattr__(
            self, "free_devices",
            (allocatable - self.requested).devices if self.requested.devices
            else allocatable.devices,
        )
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
        return Resources(
            self.free_gpu_milli, self.free_cpu_milli, self.free_memory_bytes, self.free_devices
        )

    def free_device(self, kind: str) -> int:
        """Free amount of one device kind (thousandths; 0 when the node has none)."""
        for name, amount in self.free_devices:
            if name == kind:
                return amount
        return 0

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
