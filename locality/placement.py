"""Where a job's pods are: bound pods the cache sees plus placements assumed but not visible.

The binding reaches the extender's cache a watch event after kube-scheduler decides,
so pods of one job scheduled back to back would all look like the job's first pod.
With the bind verb kube-scheduler tells the extender the node it chose for each pod;
the extender records it as an `Assumption` (with an expiry), and a job's placement is
the union of bound pods and live assumptions. An assumption is dropped when the cache
shows the pod bound or gone (`AssumedPlacements.observe`), when it expires, or when the
pod is scheduled again.

`AssumedPlacements` is an immutable value: every change returns a new one, so a
request handler can read a consistent snapshot while the watch task swaps in the next.
Its changes copy two small dicts (live assumptions only, seconds' worth of pods).

Decides: which pods of a job count as placed, and the job's remaining demand (pods
not placed yet, including the pod being scheduled, plus unseen pods when the job
declares its size), from the running totals of the job's pods (`locality.tally`), so
the work does not grow with the job's pods. Must not: read the clock (`now` is passed
in), log, or mutate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bucketing.resources import Resources
from locality.config import LocalityConfig
from locality.jobs import identify, role_of
from locality.layout import JobLayout
from locality.model import JobKey, JobPolicy, Pod, Role
from locality.numa import NO_NUMA_DEMAND, NumaDemand
from locality.tally import JobTally


@dataclass(frozen=True, slots=True)
class Assumption:
    """Pod `uid` of `job` is being bound to `node_name`; trusted until `expires_at`.

    numa: the pod's `Pod.numa_request` (what its NUMA zones are charged).
    nominated: from the pod's `status.nominatedNodeName` (`nominated_assumption`), not
    from a bind: it never expires, and ends when the nomination changes or is cleared.
    """

    job: JobKey
    uid: str
    pod_name: str
    role: Role
    node_name: str
    request: Resources
    expires_at: float
    numa: NumaDemand = NO_NUMA_DEMAND
    nominated: bool = False

    @property
    def numa_request(self) -> NumaDemand:
        """What the pod takes from its NUMA zones (`Pod.numa_request`)."""
        return self.numa


@dataclass(frozen=True, eq=False)
class AssumedPlacements:
    """Live assumptions, by pod uid and by job. Treat the mappings as read-only."""

    by_uid: Mapping[str, Assumption] = field(default_factory=dict)
    by_job: Mapping[JobKey, tuple[Assumption, ...]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.by_uid)

    def assume(self, assumption: Assumption) -> AssumedPlacements:
        """A new store with `assumption` added (replacing any earlier one for the same pod)."""
        base = self.forget(assumption.uid)
        by_uid = dict(base.by_uid)
        by_uid[assumption.uid] = assumption
        by_job = dict(base.by_job)
        by_job[assumption.job] = by_job.get(assumption.job, ()) + (assumption,)
        return AssumedPlacements(by_uid, by_job)

    def forget(self, uid: str) -> AssumedPlacements:
        """A new store without the assumption for pod `uid` (self when there is none)."""
        old = self.by_uid.get(uid)
        if old is None:
            return self
        by_uid = dict(self.by_uid)
        del by_uid[uid]
        by_job = dict(self.by_job)
        rest = tuple(a for a in by_job[old.job] if a.uid != uid)
        if rest:
            by_job[old.job] = rest
        else:
            del by_job[old.job]
        return AssumedPlacements(by_uid, by_job)

    def observe(self, pod: Pod, deleted: bool = False) -> AssumedPlacements:
        """Drop the pod's assumption once the cache shows it bound, finished or deleted;
        an assumption from a nomination also when the nomination moved or was cleared."""
        assumption = self.by_uid.get(pod.uid)
        if assumption is None:
            return self
        if deleted or pod.terminal or pod.node_name is not None:
            return self.forget(pod.uid)
        if assumption.nominated and pod.nominated_node_name != assumption.node_name:
            return self.forget(pod.uid)
        return self

    def expire(self, now: float) -> AssumedPlacements:
        """A new store without assumptions whose expiry is at or before `now`."""
        stale = [uid for uid, a in self.by_uid.items() if a.expires_at <= now]
        store = self
        for uid in stale:
            store = store.forget(uid)
        return store

    def for_job(self, job: JobKey, now: float) -> tuple[Assumption, ...]:
        """The job's live assumptions."""
        return tuple(a for a in self.by_job.get(job, ()) if a.expires_at > now)

    def requested_by_node(self, now: float, excluding: str | None = None) -> dict[str, Resources]:
        """Requests of live assumptions summed per node (they are not in NodeState yet).

        excluding: the uid of the pod being scheduled; its own assumption is stale (it
        is being scheduled again) and must not take room from the node it fits.
        """
        totals: dict[str, Resources] = {}
        for a in self.by_uid.values():
            if a.expires_at > now and a.uid != excluding:
                current = totals.get(a.node_name)
                totals[a.node_name] = a.request if current is None else current + a.request
        return totals

    def numa_requests_by_node(
        self, now: float, excluding: str | None = None
    ) -> dict[str, list[NumaDemand]]:
        """NUMA demands (`Pod.numa_request`: GPUs and pinned CPUs) of live assumptions
        that take a zone (GPUs or pinned CPUs), per node, oldest first.

        The order is the order the pods were steered (a re-steered pod moves to the
        end), the likeliest order of their bindings and kubelet admissions: the NUMA
        zone each one takes depends on the zones the earlier ones took
        (`NodeTopology.charged`).
        excluding: as in `requested_by_node`.
        """
        by_node: dict[str, list[NumaDemand]] = {}
        for a in self.by_uid.values():
            numa = a.numa
            if not numa.is_zero() and a.expires_at > now and a.uid != excluding:
                by_node.setdefault(a.node_name, []).append(numa)
        return by_node


def add_requests(*maps: Mapping[str, Resources]) -> dict[str, Resources]:
    """Per-node sums of request mappings (assumptions, claims)."""
    total: dict[str, Resources] = {}
    for requests in maps:
        for name, request in requests.items():
            current = total.get(name)
            total[name] = request if current is None else current + request
    return total


def assumption_for(
    pod: Pod, node_name: str, now: float, config: LocalityConfig
) -> Assumption | None:
    """The assumption to record when `pod` is bound to `node_name`; None for pods of no job."""
    identity = identify(pod, config)
    if identity is None:
        return None
    return Assumption(
        identity.key, pod.uid, pod.name, identity.role, node_name, pod.request,
        now + config.assumed_ttl_seconds, pod.numa_request,
    )


def nominated_assumption(pod: Pod, config: LocalityConfig) -> Assumption | None:
    """A pending pod of a job with `status.nominatedNodeName` counts as assumed on that
    node until it is bound or the nomination is cleared: kube-scheduler nominates the
    node it preempted for, and (1.35+) the node it chose before the pod waits in Permit
    or PreBind, and holds the room there for it. None when the pod is not such a pod."""
    if pod.node_name is not None or pod.terminal or pod.nominated_node_name is None:
        return None
    identity = identify(pod, config)
    if identity is None:
        return None
    return Assumption(
        identity.key, pod.uid, pod.name, identity.role, pod.nominated_node_name, pod.request,
        math.inf, pod.numa_request, nominated=True,
    )


@dataclass(frozen=True, slots=True)
class PlacedPod:
    """A pod of the job that is on a node, bound (seen by the cache) or assumed."""

    uid: str
    role: Role
    node_name: str
    request: Resources
    assumed: bool


@dataclass(frozen=True, eq=False)
class JobPlacement:
    """A job's placed pods and its remaining demand.

    placed: the placed pods one by one, when the caller listed them (`job_placement`,
    the simulator); the cache's incremental path (`placement_of_tally`) lists none.
    placed_on: (node, role) -> placed pods there, always set (from `placed` when not
    given): what the decisions read. placed_pods: their total count.
    remaining: (request, count) of the pods not placed yet, the pod being scheduled
    included, largest GPU request first. remaining_pods: their total count.
    roles: the roles of the job's known pods, placed or not (a job with a PS pod is
    centred on it; one without is centred on its chief / master / leader).
    layout: `placed_on` summed by role, node, group and domain (`locality.layout`),
    when the caller kept one (the cache's tally); else the context sums `placed_on`.
    """

    key: JobKey
    placed: tuple[PlacedPod, ...]
    remaining: tuple[tuple[Resources, int], ...]
    roles: frozenset[Role] = frozenset()
    placed_on: Mapping[tuple[str, Role], int] | None = None
    layout: JobLayout | None = None

    def __post_init__(self) -> None:
        if self.placed_on is None:
            counts = Counter((p.node_name, p.role) for p in self.placed)
            object.__setattr__(self, "placed_on", dict(counts))

    @property
    def placed_pods(self) -> int:
        assert self.placed_on is not None  # set in __post_init__
        return sum(self.placed_on.values())

    @property
    def remaining_pods(self) -> int:
        return sum(count for _, count in self.remaining)


def job_placement(
    pod: Pod,
    job: JobKey,
    policy: JobPolicy,
    job_pods: Sequence[Pod],
    assumed: AssumedPlacements,
    now: float,
    config: LocalityConfig,
) -> JobPlacement:
    """Combine the cache's view of the job's pods with live assumptions, listing the
    placed pods one by one (`placement_of_tally` over the tally of `job_pods`).

    job_pods: the job's pods as the cache sees them (bound or pending, `pod` itself may
    be among them). Cost: O(job pods).
    """
    return placement_of_tally(pod, job, policy, JobTally.of(job_pods, config), assumed, now,
                              config, list_placed=True)


def placement_of_tally(
    pod: Pod,
    job: JobKey,
    policy: JobPolicy,
    tally: JobTally,
    assumed: AssumedPlacements,
    now: float,
    config: LocalityConfig,
    list_placed: bool = False,
) -> JobPlacement:
    """The job's placement from the running totals of its pods (`locality.tally`).

    A bound pod counts where the cache says, even if an assumption disagrees; a pod not
    bound counts on its live assumption's node (a bind, or its nomination), else as
    remaining. Assumed pods the cache has not seen (its pod watch lags behind the
    requests) count as placed. The pod being scheduled is never counted as placed (an
    earlier assumption for it is stale: it is being scheduled again). When the policy
    gives a job size larger than the pods known (Succeeded pods count as known, Failed
    ones do not: their replacements will be), the missing pods are assumed to request
    what the job's known workers request (`unseen_request`): a job's PS or chief is
    created and scheduled first, and its unseen pods are mostly workers.

    Cost: O(job's nodes) C-level dict copies plus O(the job's live assumptions) Python
    work (the tally's layout copied and corrected likewise), plus O(job pods) with
    `list_placed` (the pods listed one by one, in the tally's order, for
    `JobPlacement.placed`).
    """
    members = tally.members
    placed_on = Counter(tally.on_node)  # a C-level copy; corrections below are few
    remaining = Counter(tally.waiting)
    roles = Counter(tally.roles)
    seen = tally.counted
    own = members.get(pod.uid)
    corrected = []  # keys of placed_on decremented: the only ones that can reach zero
    layout = tally.layout.copy() if tally.layout is not None else None
    if own is not None and not own.terminal:  # judged below as the pod being scheduled
        own_role = tally.role_of[pod.uid]
        seen -= 1
        roles[own_role] -= 1
        if own.node_name is not None:
            placed_on[(own.node_name, own_role)] -= 1
            corrected.append((own.node_name, own_role))
            if layout is not None:
                layout.add(own.node_name, own_role, -1)
        else:
            remaining[own.request] -= 1
    elif own is not None and own.succeeded:
        seen -= 1
    live = {a.uid: a for a in assumed.for_job(job, now)}
    for uid, a in live.items():
        if uid == pod.uid:
            continue
        member = members.get(uid)
        if member is None or (member.terminal and not member.succeeded):
            seen += 1  # not among the pods the cache counts: placed where assumed
            roles[a.role] += 1
            placed_on[(a.node_name, a.role)] += 1
            if layout is not None:
                layout.add(a.node_name, a.role, 1)
        elif not member.terminal and member.node_name is None:
            remaining[member.request] -= 1
            placed_on[(a.node_name, a.role)] += 1
            if layout is not None:
                layout.add(a.node_name, a.role, 1)
    remaining[pod.request] += 1
    roles[role_of(pod, config)] += 1
    seen += 1
    if policy.job_size is not None and policy.job_size > seen:
        workers = _workers(pod, tally, live, config)
        remaining[unseen_request(pod, workers)] += policy.job_size - seen
    ordered = sorted(
        ((request, count) for request, count in remaining.items() if count > 0),
        key=lambda item: (-item[0].gpu_milli, -item[0].cpu_milli, -item[0].memory_bytes,
                          item[0].devices),
    )
    listed = _listed(pod, tally, live) if list_placed else ()
    for key in [key for key in corrected if placed_on[key] <= 0]:
        del placed_on[key]
    return JobPlacement(
        job, listed, tuple(ordered), frozenset(role for role, n in roles.items() if n > 0),
        placed_on, layout,
    )


def _listed(pod: Pod, tally: JobTally, live: Mapping[str, Assumption]) -> tuple[PlacedPod, ...]:
    """The placed pods one by one, as `placement_of_tally` counts them."""
    placed = []
    for uid, member in tally.members.items():
        if uid == pod.uid or member.terminal:
            continue
        if member.node_name is not None:
            placed.append(PlacedPod(uid, tally.role_of[uid], member.node_name, member.request,
                                    False))
        elif uid in live:
            a = live[uid]
            placed.append(PlacedPod(a.uid, a.role, a.node_name, a.request, True))
    for uid, a in live.items():
        member = tally.members.get(uid)
        if uid != pod.uid and (member is None or (member.terminal and not member.succeeded)):
            placed.append(PlacedPod(a.uid, a.role, a.node_name, a.request, True))
    return tuple(placed)


def _workers(pod: Pod, tally: JobTally, live: Mapping[str, Assumption],
             config: LocalityConfig) -> Counter[Resources]:
    """Request -> count of the job's known unfinished workers: `pod`, the cache's pods
    and assumed pods the cache has not seen unfinished (`worker_requests`' count)."""
    workers = Counter(tally.workers)
    own = tally.members.get(pod.uid)
    if not pod.terminal:
        if own is not None and not own.terminal and tally.role_of[pod.uid] is Role.WORKER:
            workers[own.request] -= 1
        if role_of(pod, config) is Role.WORKER:
            workers[pod.request] += 1
    for uid, a in live.items():
        member = tally.members.get(uid)
        known = (uid == pod.uid and not pod.terminal) or (
            member is not None and not member.terminal)
        if not known and a.role is Role.WORKER:
            workers[a.request] += 1
    return +workers


def worker_requests(
    pod: Pod, job_pods: Sequence[Pod], live: Iterable[Assumption], config: LocalityConfig
) -> Counter[Resources]:
    """Request -> count of the job's known unfinished workers: `pod`, the job's pods as
    the cache sees them, and assumed pods it has not seen yet. Only jobs with unseen
    pods pay for this second pass."""
    workers: Counter[Resources] = Counter()
    uids: set[str] = set()
    for other in (pod, *job_pods):
        if other.uid in uids or other.terminal:
            continue
        uids.add(other.uid)
        if role_of(other, config) is Role.WORKER:
            workers[other.request] += 1
    for a in live:
        if a.uid not in uids and a.role is Role.WORKER:
            workers[a.request] += 1
    return workers


def unseen_request(pod: Pod, workers: Mapping[Resources, int]) -> Resources:
    """What each of a job's unseen pods is assumed to request.

    workers: request -> count of the job's known unfinished workers (placed or not).
    The most common worker request (a tie goes to the larger: GPUs, then CPU, then
    memory), else, with no worker known, what `pod` (the pod being judged) requests.
    """
    if not workers:
        return pod.request
    return max(workers.items(), key=lambda item: (
        item[1], item[0].gpu_milli, item[0].cpu_milli, item[0].memory_bytes))[0]
