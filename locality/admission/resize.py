"""KOD2's scale-in and scale-out: resizing running elastic jobs inside one domain.

Scale-in (`scale_in`), to admit a waiting job into a domain whose room it does not fit:
- Who gives room: priority first, as Kubernetes ranks pods: running elastic jobs in the
  domain of lower priority than the waiting job's, whatever their weight (a scale-in is
  the gentlest preemption: the job keeps running), and never one of higher priority.
  At equal priority, KOD2: those whose weight is below the waiting job's, or equal to
  it when they are younger (equal weights keep the older job whole). Lowest priority
  first, then lowest weight, then the youngest, then by name.
- Which workers: as their owner removes them (`locality.elastic.Removal`): the highest
  indices, or KOD2's order (workers on nodes without the job's PS or chief first, nodes
  holding fewer of its workers first, then the highest index) where headstart names
  them.
- How far: the fewest workers, in that order, whose nodes' room given back lets the
  waiting job pack (`pack`; found by bisection, as the room only grows with each
  worker); never below a job's minimum. When even every candidate at its minimum does
  not make room, nothing is resized (None): room is never taken for a job that still
  would not fit.
Scale-out (`scale_out`), into room no waiting job could use (`growth.growth_room`):
each running elastic job that has run at its size for `scale_out_after_seconds`,
highest weight first (then the oldest), grows toward its maximum by as many workers of
its own shape as the domain's idle room packs; a later job gets what the earlier left.
A `spread` job (one pod per node) is not grown here: the packer does not know which
nodes already hold one of its pods.

Worker plans (`locality.worker_plans`, KALE's estimator run by the overprovisioner): a
gang whose owner has a fresh plan of its own uid has a `target`, the plan's size within
the owner's bounds. Scale-out grows it toward the target, never beyond, and not at all
at or above it; `scale_to_plan` scales a gang above its target in to it, whether or not
a job waits (never below its minimum: the target is within the bounds). Scale-in for a
waiting job ignores the target: such a job may still take a planned job toward
its minimum, and scale-out brings it back toward its plan once nothing waits.

Workers not bound free nothing (their room is a reservation admission packed already).

Must not: read the clock, log, mutate its inputs (`Bins` are copied before packing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from bucketing.resources import ZERO, Resources
from locality.admission.model import Demand, Domain, Resize, bound_requests, demand_of
from locality.admission.pack import Bins, pack
from locality.admission.record import GangRecord, GangState, is_member
from locality.admission.weight import WeightConfig, weight
from locality.config import LocalityConfig
from locality.elastic import (
    KUBEFLOW_INDEX_LABEL,
    KUBEFLOW_TYPE_LABEL,
    PYTORCH_WORKER,
    Bounds,
    ElasticOwner,
    Removal,
)
from locality.jobs import job_policy
from locality.model import JobKey, Packing, Pod
from locality.owners import INDEX_ANNOTATION
from locality.worker_plans import WorkerPlan, target_of


@dataclass(frozen=True, slots=True)
class ElasticGang:
    """A running elastic job in one domain.

    workers: its live members that the resize adds or removes (`resized`: an Indexed
    Job's pods, a PyTorchJob's workers); anchors: the nodes of its members that are never removed
    (its PS, chief or master). weight: `job_weight`, as a waiting job's.
    """

    job: JobKey
    owner: ElasticOwner
    weight: float
    created_at: float
    workers: tuple[Pod, ...]
    anchors: frozenset[str] = frozenset()
    priority: int = 0
    """The highest priority of its live members (as `preempt` reads a gang's)."""
    pods_per_node: int | None = None
    since: float = 0.0
    """When its record entered its state (Running at this size)."""
    target: int | None = None
    """The size its worker plan asks, within its bounds (None: no fresh plan of its own;
    KOD2's rules alone)."""
    plan_reason: str = ""
    """Why the plan asks that size (the plan's reason), cited by the resizes it makes."""

    @property
    def size(self) -> int:
        return len(self.workers)

    @property
    def bounds(self) -> Bounds:
        assert self.owner.bounds is not None
        return self.owner.bounds

    @property
    def removal(self) -> Removal:
        return self.owner.removal

    @property
    def limit(self) -> int:
        """The size scale-out grows it toward: its target, else its maximum."""
        return self.bounds.maximum if self.target is None else self.target


@dataclass(frozen=True, slots=True)
class Claimant:
    """The waiting job room is made for: its pods at the size it must fit (an elastic
    job's minimum), its weight and when it was created."""

    job: JobKey
    demand: Demand
    weight: float
    created_at: float
    pods_per_node: int | None = None
    priority: int = 0

    @property
    def size(self) -> int:
        return sum(count for _, _, count in self.demand)


def pod_index(pod: Pod) -> int | None:
    """The pod's index in its owner (an Indexed Job's completion index, a training
    operator's replica index), None when it has none."""
    raw = pod.annotations.get(INDEX_ANNOTATION) or pod.labels.get(KUBEFLOW_INDEX_LABEL)
    return int(raw) if raw is not None and raw.isdigit() else None


def removal_order(gang: ElasticGang) -> tuple[Pod, ...]:
    """The gang's workers in the order a scale-in removes them."""
    def index(pod: Pod) -> int:
        found = pod_index(pod)
        return -1 if found is None else found

    if gang.removal is Removal.HIGHEST_INDEX:
        return tuple(sorted(gang.workers, key=lambda pod: (-index(pod), pod.name)))
    per_node: dict[str | None, int] = {}
    for pod in gang.workers:
        per_node[pod.node_name] = per_node.get(pod.node_name, 0) + 1
    return tuple(sorted(gang.workers, key=lambda pod: (
        pod.node_name in gang.anchors, per_node[pod.node_name], -index(pod), pod.name)))


def gives_room_to(gang: ElasticGang, claimant: Claimant) -> bool:
    """A lower priority gives room, a higher one never; at equal priority, KOD2: a lower
    weight gives room, an equal weight only when younger."""
    if gang.priority != claimant.priority:
        return gang.priority < claimant.priority
    if gang.weight != claimant.weight:
        return gang.weight < claimant.weight
    return gang.created_at > claimant.created_at


def scale_in(claimant: Claimant, bins: Bins, gangs: Sequence[ElasticGang]
             ) -> tuple[Resize, ...] | None:
    """The resizes that let `claimant` fit `bins` (one domain's room); () when it fits
    already, None when no resize within the jobs' minimums makes it fit."""
    if _fits(bins, claimant, {}):
        return ()
    donors = sorted((gang for gang in gangs if gives_room_to(gang, claimant)),
                    key=lambda gang: (gang.priority, gang.weight, -gang.created_at,
                                      gang.job.namespace, gang.job.name))
    # Every worker that may go, in the order they would: the room grows with each one,
    # so the fewest that make room are found by bisection (a few packs, not one each).
    order = [(gang, pod) for gang in donors
             for pod in removal_order(gang)[:max(0, gang.size - gang.bounds.minimum)]]

    def freed(count: int) -> dict[str, Resources]:
        return bound_requests(pod for _, pod in order[:count])

    if not order or not _fits(bins, claimant, freed(len(order))):
        return None
    low, high = 1, len(order)
    while low < high:
        middle = (low + high) // 2
        if _fits(bins, claimant, freed(middle)):
            high = middle
        else:
            low = middle + 1
    removed: dict[JobKey, list[Pod]] = {}
    for gang, pod in order[:low]:
        removed.setdefault(gang.job, []).append(pod)
    return _resizes(donors, removed, claimant)


def _resizes(donors: Sequence[ElasticGang], removed: dict[JobKey, list[Pod]],
             claimant: Claimant) -> tuple[Resize, ...]:
    out = []
    for gang in donors:
        pods = removed.get(gang.job)
        if pods:
            after = gang.size - len(pods)
            out.append(Resize(gang.job, gang.owner, gang.size, after, (
                f"scaled in from {gang.size} to {after} (minimum {gang.bounds.minimum}) so "
                f"that {claimant.job} fits its domain ({_why_gives(gang, claimant)})"),
                tuple(pods)))
    return tuple(out)


def scale_out(bins: Bins, gangs: Sequence[ElasticGang], waiting: bool, now: float = 0.0,
              after_seconds: float = 0.0) -> tuple[Resize, ...]:
    """Growth of `gangs` into `bins`' idle room, each toward its target when it has one,
    else its maximum; () while a job waits for the domain. A gang grows only once it has
    been in its state `after_seconds` (`since`)."""
    if waiting:
        return ()
    room = bins.copy()
    out = []
    for gang in sorted(gangs, key=lambda gang: (-gang.weight, gang.created_at,
                                                gang.job.namespace, gang.job.name)):
        wanted = gang.limit - gang.size
        if wanted <= 0 or not gang.workers or gang.pods_per_node == 1 or \
                now - gang.since < after_seconds:
            continue
        shape = gang.workers[0]
        grown = pack(room, ((shape.request, shape.constraints, wanted),))
        if grown > 0:
            toward = f"maximum {gang.bounds.maximum}" if gang.target is None else \
                f"toward its worker plan's {gang.target}: {gang.plan_reason}"
            out.append(Resize(gang.job, gang.owner, gang.size, gang.size + grown, (
                f"scaled out from {gang.size} to {gang.size + grown} ({toward}) into idle "
                "room of its domain; no job waits for it")))
    return tuple(out)


def scale_to_plan(gangs: Sequence[ElasticGang]) -> tuple[Resize, ...]:
    """The gangs above their target scaled in to it, their workers in removal order."""
    out = []
    for gang in gangs:
        if gang.target is None or gang.size <= gang.target:
            continue
        removed = removal_order(gang)[:gang.size - gang.target]
        out.append(Resize(gang.job, gang.owner, gang.size, gang.target, (
            f"scaled in from {gang.size} to {gang.target}: its worker plan needs "
            f"{gang.target} ({gang.plan_reason})"), removed))
    return tuple(out)


def _fits(bins: Bins, claimant: Claimant, freed: dict[str, Resources]) -> bool:
    return pack(bins.freed(freed), claimant.demand, claimant.pods_per_node) == claimant.size


def _why_gives(gang: ElasticGang, claimant: Claimant) -> str:
    if gang.priority != claimant.priority:
        return f"priority {claimant.priority}; this job's {gang.priority}"
    return f"weight {claimant.weight:.3f}; this job's {gang.weight:.3f}"


def job_weight(pods: Sequence[Pod], waited_seconds: float, weights: WeightConfig) -> float:
    """KOD2's weight of a job from its pods, the one rule for a waiting job and a running
    gang: its workers at its minimum (an elastic owner's resized pods, at its minimum;
    every pod of any other job) over its whole request at that size (a PyTorchJob's
    Master is in the request, never a worker)."""
    owner = next((pod.elastic for pod in pods if resized(pod)), None)
    if owner is not None and owner.bounds is not None:
        pods = at_size(pods, owner.bounds.minimum)
        workers = sum(1 for pod in pods if resized(pod))
    else:
        workers = len(pods)
    return weight(workers, sum((pod.request for pod in pods), ZERO), waited_seconds, weights)


def claimant_of(job: JobKey, pods: Sequence[Pod], weight: float, created_at: float,
                pods_per_node: int | None = None, priority: int = 0) -> Claimant:
    """A claimant for `pods` (the pods that must fit: an elastic job's first `minimum`)."""
    return Claimant(job, demand_of(pods), weight, created_at, pods_per_node, priority)


def resized(pod: Pod) -> bool:
    """Whether a resize of the pod's elastic owner adds or removes pods like it: every
    pod of an Indexed Job, a PyTorchJob's workers (not its master)."""
    owner = pod.elastic
    if owner is None or owner.bounds is None:
        return False
    if owner.kind == "PyTorchJob":
        return pod.labels.get(KUBEFLOW_TYPE_LABEL, "").lower() == PYTORCH_WORKER.lower()
    return True


def at_size(pods: Sequence[Pod], size: int) -> list[Pod]:
    """The pods an elastic job keeps at `size`: those a resize does not touch, and the
    `size` lowest-index ones of those it does."""
    kept = [pod for pod in pods if not resized(pod)]
    part = sorted((pod for pod in pods if resized(pod)), key=_index_order)
    return kept + part[:size]


def _index_order(pod: Pod) -> tuple:
    index = pod_index(pod)
    return (index is None, index or 0, pod.name)


def beyond_size(pod: Pod) -> bool:
    """A pod of an elastic owner whose index is at or above the owner's size: the owner
    removes it (a scale-in under way), so it is no member of the job."""
    if not resized(pod):
        return False
    index = pod_index(pod)
    return index is not None and pod.elastic is not None and index >= pod.elastic.size


def elastic_gangs(records: Iterable[GangRecord], pods_of_job: Callable[[JobKey], Sequence[Pod]],
                  locality: LocalityConfig, weights: WeightConfig,
                  plans: Mapping[str, WorkerPlan] | None = None, now: float | None = None
                  ) -> dict[Domain, list[ElasticGang]]:
    """Per domain, the Running gangs whose owner is elastic and settled (every member
    bound, as many workers as the owner's size, none leaving): the gangs a resize may
    change. plans: the worker plans by key (`locality.worker_plans.decode`), read at
    `now` (seconds since the epoch, required with plans): each gang's `target`."""
    if plans and now is None:
        raise ValueError("elastic_gangs: worker plans need the round's now (a plan's "
                         "freshness is read against it)")
    out: dict[Domain, list[ElasticGang]] = {}
    for record in records:
        if record.state is not GangState.RUNNING or record.domain is None:
            continue
        pods = pods_of_job(record.job)
        if any(not pod.terminal and (pod.deleting or beyond_size(pod)) for pod in pods):
            continue  # a change under way (workers leaving): resized again once gone
        members = [pod for pod in pods if is_member(pod) and not pod.terminal]
        owner = next((pod.elastic for pod in members if pod.elastic is not None), None)
        if owner is None or owner.bounds is None or any(p.node_name is None for p in members):
            continue
        workers = tuple(pod for pod in members if resized(pod))
        if len(workers) != owner.size:
            continue  # a change under way: resized again once it has settled
        others = [pod for pod in members if not resized(pod)]
        spread = job_policy(members[0], locality).packing is Packing.SPREAD
        target, why = _target(owner, plans or {}, now or 0.0)
        out.setdefault(record.domain, []).append(ElasticGang(
            record.job, owner, job_weight(members, 0.0, weights),
            min(pod.created_at for pod in members), workers,
            frozenset(pod.node_name for pod in others if pod.node_name is not None),
            max(pod.priority for pod in members), 1 if spread else None, record.since,
            target, why))
    return out


def _target(owner: ElasticOwner, plans: Mapping[str, WorkerPlan], now: float
            ) -> tuple[int | None, str]:
    """The owner's target and its reason: its fresh plan's size within its bounds."""
    assert owner.bounds is not None
    found = target_of(plans, owner.kind, owner.namespace, owner.name, owner.uid, now)
    if found is None:
        return None, ""
    target = owner.bounds.clamp(found.size)
    why = found.reason or "no reason given"
    if target != found.size:
        why += (f"; the plan's {found.size} kept within its bounds "
                f"{owner.bounds.minimum}..{owner.bounds.maximum}")
    return target, why


def shrinking(records: Iterable[GangRecord], pods_of_job: Callable[[JobKey], Sequence[Pod]]
              ) -> dict[str, Resources]:
    """Per node, the requests of elastic gangs' bound workers on their way out (Terminating,
    or beyond their owner's new size): room a scale-in already made."""
    return bound_requests(pod for record in records for pod in pods_of_job(record.job)
                          if not pod.terminal and resized(pod)
                          and (pod.deleting or beyond_size(pod)))
