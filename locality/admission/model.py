"""The values the admission decisions work on and produce.

Decides nothing. `gather` builds `GatedJob`s and `Reservation`s from pods, `snapshot`
builds `DomainRoom`s from nodes and node groups, `assign` returns a `Plan`.

Must not: parse JSON, log, read the clock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from bucketing.resources import ZERO, Resources
from locality.constraints import PodConstraints
from locality.elastic import ElasticOwner
from locality.model import JobKey, JobPolicy, Locality, Pod

Demand = tuple[tuple[Resources, PodConstraints, int], ...]
"""(request, the nodes it may use, count) per pod shape, largest GPU request first (the
order the first-fit packs them in)."""


def demand_of(pods: Iterable[Pod]) -> Demand:
    """The pods summed per (request, constraints)."""
    counts: dict[tuple[Resources, PodConstraints], int] = {}
    for pod in pods:
        shape = (pod.request, pod.constraints)
        counts[shape] = counts.get(shape, 0) + 1
    return tuple((request, constraints, count) for (request, constraints), count in sorted(
        counts.items(), key=lambda item: (-item[0][0].gpu_milli, -item[0][0].cpu_milli,
                                          -item[0][0].memory_bytes, repr(item[0][1]))))


def bound_requests(pods: Iterable[Pod]) -> dict[str, Resources]:
    """Per node, the summed requests of the bound ones of `pods` (room they give back
    when they go)."""
    by_node: dict[str, Resources] = {}
    for pod in pods:
        if pod.node_name is not None:
            by_node[pod.node_name] = by_node.get(pod.node_name, ZERO) + pod.request
    return by_node


class WaitCode(enum.Enum):
    """Why a job stays gated (the metric's `reason` label; the text says more)."""

    INCOMPLETE = "incomplete"  # fewer pods than its declared size
    SIZE_UNKNOWN = "size_unknown"  # its PodGroup not seen yet, or settling without a size
    NO_LEVEL = "no_level"  # no node (and no node group) has a domain at its level
    NO_FIT = "no_fit"  # no domain holds it, even with the nodes the autoscaler can add
    HELD = "held"  # it would take room an older job that waits longer needs
    INADMISSIBLE = "inadmissible"  # no domain could ever hold it: holds nothing
    BACKOFF = "backoff"  # evicted (not whole in time): not admitted again before requeueAt
    PREEMPTING = "preempting"  # lower-priority gangs are evicted for it; admitted once gone
    SIZE_MISMATCH = "size_mismatch"  # declares more pods than its owner creates: never whole
    RESIZING = "resizing"  # elastic: its owner is set to the size a domain holds now
    SCALING_IN = "scaling_in"  # lighter elastic jobs are scaled in for it; admitted once done


@dataclass(frozen=True, slots=True)
class Domain:
    """A topology domain: a level name and the domain's label value there."""

    level: str
    value: str

    def __str__(self) -> str:
        return f"{self.level}={self.value}"

    @classmethod
    def parse(cls, text: str) -> Domain | None:
        """`LEVEL=VALUE` (the domain annotation) to a Domain; None when malformed."""
        level, sep, value = text.partition("=")
        return cls(level, value) if sep and level and value else None


@dataclass(frozen=True, slots=True)
class GatedJob:
    """A job with pods behind the admission gate.

    gated: its pods behind the gate (not bound, not finished), by name.
    known_pods: its pods that count toward the declared size (any not Failed).
    size: the declared size (`JobPolicy.job_size`), None when it declares none.
    awaiting_group: the PodGroup it names while that object has not been seen.
    owner_wait: why the owner its pods name gives no size although it is seen (counts
    that do not parse, a TrainJob without its JobSet): it waits rather than settle.
    level: the topology level its policy applies at (the placement group's by default).
    priority: the highest priority of its gated pods. created_at: its first gated
    pod's creation; last_created_at: its last one's (when it became complete).
    recorded: the domain earlier admissions of this job wrote into its pods (a crash
    between two pods' patches), which the rest must join.
    """

    key: JobKey
    gated: tuple[Pod, ...]
    policy: JobPolicy
    known_pods: int
    size: int | None
    awaiting_group: str | None
    level: str
    priority: int
    created_at: float
    last_created_at: float
    demand: Demand
    """The gated pods per shape (`demand_of`), summed once: every domain a round tries
    asks it."""
    recorded: Domain | None = None
    owner_wait: str | None = None
    requeue_at: float | None = None
    """Evicted earlier: not admitted again before this time (`recovery`)."""
    rules_per_node: int | None = None
    """At most this many of its pods on one node by their own rules (pod anti-affinity,
    host ports, hostname spread: `locality.pod_rules`); None: no such rule."""
    unmodelled: str | None = None
    """The first inter-pod rule of its pods the admitter does not model (refused at once,
    `assign`), else None."""
    finished: int = 0
    """Its members that Succeeded (an earlier stage's pods: a JobSet's or TrainJob's
    initializers): counted in its size, but gone from the scheduler's view, so never
    counted in the PodGroup's `minMember` (`live_size`)."""
    deactivated: str | None = None
    """Evicted past `admission.requeue_limit`: why it is never admitted again (its
    record's message), else None."""
    preempts: bool = True
    """Every gated pod may preempt (none has `preemptionPolicy: Never`)."""
    owner_size: int | None = None
    """The pods its owner creates (`Pod.owner_size`: a Kubeflow job's or JobSet's
    replicas, an Indexed Job's parallelism), when its pods name one that is seen."""
    elastic: ElasticOwner | None = None
    """Its owner, when it opted in to resizing and can be resized (`locality.elastic`)."""
    elastic_problem: str | None = None
    """Why its owner, which opted in to resizing, cannot be resized (kept at its size)."""
    group_size: int | None = None
    """The pods the whole group will have when this is an earlier stage of it (a
    LeaderWorkerSet leader whose workers come once it is Ready): its domain is chosen to
    hold that many pods of its shape, so the later stage can join it."""

    @property
    def live_size(self) -> int | None:
        """The members kube-scheduler will see together: its size less those that
        finished (kube-scheduler's pod informer leaves out Succeeded and Failed pods, so
        Coscheduling counts only live ones against `minMember`)."""
        return None if self.size is None else max(self.size - self.finished, 1)

    @property
    def pods_per_node(self) -> int | None:
        """1 for a `spread` job (a node per pod), else its pods' own limit
        (`rules_per_node`), else no limit."""
        return 1 if self.policy.packing.value == "spread" else self.rules_per_node


@dataclass(frozen=True, slots=True)
class Reservation:
    """Pods admitted into `domain` that are not bound yet: room they will take."""

    domain: Domain
    demand: Demand


@dataclass(frozen=True, slots=True)
class Admission:
    """Lift the gate of `job`'s pods, writing `domain` into them.

    domain None: released without a domain (policy `none`, or `preferred` with no
    domain that holds it). label_key: the node label the affinity selects on.
    new_nodes: nodes the autoscaler has to add for it (0: fits the free room).
    room_unknown: the autoscaler's groups whose room is unknown when the job was
    released to it without known room (`assign`, rule 4); empty for a job that fits.
    """

    job: JobKey
    pods: tuple[Pod, ...]
    domain: Domain | None
    label_key: str | None
    locality: Locality
    new_nodes: int
    note: str
    room_unknown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Waiting:
    """`job` stays gated, whole, for `reason`. position: (its place, of how many) among
    the jobs waiting for room, in admission order; None for other waits."""

    job: JobKey
    pods: tuple[Pod, ...]
    code: WaitCode
    reason: str
    position: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Release:
    """A gated pod that is not the admitter's to place: its gate is lifted as is."""

    pod: Pod
    reason: str


@dataclass(frozen=True, slots=True)
class Gang:
    """A gang headstart admitted, as a job that fits nowhere may preempt it: its live
    members (not finished, not Terminating) and its priority (their highest)."""

    job: JobKey
    priority: int
    pods: tuple[Pod, ...]

    @property
    def gpu_milli(self) -> int:
        return sum(pod.request.gpu_milli for pod in self.pods)

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset(pod.node_name for pod in self.pods if pod.node_name is not None)


@dataclass(frozen=True, slots=True)
class Preemption:
    """Evict `victims`, whole, so that `job` fits `domain` (it waits, `preempting`,
    until their pods are gone). No victims: the pods of gangs evicted earlier are still
    leaving; nothing more is evicted."""

    job: JobKey
    priority: int
    domain: Domain
    victims: tuple[Gang, ...]
    note: str


@dataclass(frozen=True, slots=True)
class Plan:
    """One admission round's decisions, jobs in admission order."""

    admissions: tuple[Admission, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    releases: tuple[Release, ...] = ()
    preemptions: tuple[Preemption, ...] = ()
    unknown_room: tuple[str, ...] = ()
    """The autoscaler's groups whose room the round could not know (`assign`, rule 4)."""
    resizes: tuple[Resize, ...] = ()
    """Elastic jobs whose owners are set to a new size (`assign`, rules 7-9)."""
    held_growth: tuple[JobKey, ...] = ()
    """Running elastic gangs below their size to grow to whose room a waiting job could
    use (`growth.contested`): growth announced for them is not likely to be used now."""


@dataclass(frozen=True, slots=True)
class Resize:
    """Set `job`'s owner (`owner`) from `before` to `after` pods; `removed`: the
    workers its owner is expected to remove (scale-in), in removal order."""

    job: JobKey
    owner: ElasticOwner
    before: int
    after: int
    reason: str
    removed: tuple[Pod, ...] = ()
