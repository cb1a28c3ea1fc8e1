"""A gang after admission: when it is whole, short, or evicted whole to start again.

Admission is not binding: between lifting the gates and binding, the room can vanish
(a node lost, another scheduler's pods, no instances), and a running gang loses members
(a node lost, a pod failed or evicted). As Kueue's `waitForPodsReady` does, a gang
that is not whole in time is evicted whole and admitted again, whole, after a backoff:

- `Admitted` and not whole (`record.whole`) `bind_timeout_seconds` after it was
  admitted: evict.
- `Running` and a member short (one not bound, or fewer members than its size):
  `Recovering`, from now; its replacement joins its domain when it has room there
  (`assign`). Whole again: `Running`. Still short `bind_timeout_seconds` later: evict.
- Evicting: every member pod of the current attempt that an owner recreates (a
  controller owner reference) goes: the admitter suspends their Jobs when they are all
  batch/v1 Jobs' it may suspend (`locality.admission.suspend`: a suspension counts no
  pod as a failure), else evicts each through the Eviction API; the record becomes
  `Evicted` with `requeueAt` = now + backoff, backoff = `backoff_base_seconds` x
  2^(evictions - 1), at most `backoff_max_seconds` (Kueue's requeuing strategy: 60 s,
  doubling, capped at an hour). The owner's new pods are
  gated by the placement policy at creation and wait (`backoff`) until then. Pods
  nothing recreates are left alone (headstart never deletes what it cannot give
  back): a gang of only such pods stays as it is; in a mixed one the eviction message
  names how many were left.
- An elastic gang (`locality.elastic`) still short after `bind_timeout_seconds` whose
  unbound members all have higher indices than its bound ones (its owner grew it and
  the new workers found no room) is resized back to its bound members, at least its
  minimum, instead of evicted: its owner removes exactly the unbound ones.
- A gang whose members have all finished is done: a member that disappears after (its
  node deleted, PodGC) is no loss.

Must not: talk to the API, read the clock (`now` is passed), log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from locality.admission.model import Resize
from locality.admission.record import GangRecord, GangState, is_member, whole
from locality.admission.resize import pod_index, resized
from locality.model import JobKey, Pod


@dataclass(frozen=True, slots=True)
class Transition:
    """Write `record` in `state` (from now), with `message`."""

    record: GangRecord
    state: GangState
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    """Evict `pods` (the members an owner recreates) and record `Evicted` until
    `requeue_at`. kept: members left alone (no owner recreates them)."""

    record: GangRecord
    pods: tuple[Pod, ...]
    kept: tuple[Pod, ...]
    requeue_at: float
    message: str


def backoff_seconds(evictions: int, base: float, maximum: float) -> float:
    """The wait before the `evictions`-th re-admission (1: base, then doubling, never
    past `maximum`, however many evictions a gang has had)."""
    doublings = min(max(evictions - 1, 0), 64)  # 2**64 x any base is past any maximum
    return min(base * 2.0 ** doublings, maximum)


def recovery(records: Iterable[GangRecord], pods_of_job: Callable[[JobKey], Sequence[Pod]],
             now: float, bind_timeout_seconds: float, backoff_base_seconds: float,
             backoff_max_seconds: float) -> list[Transition | Eviction | Resize]:
    """What each admitted gang's state calls for now."""
    actions: list[Transition | Eviction | Resize] = []
    for record in records:
        pods = pods_of_job(record.job)
        if record.state not in (GangState.ADMITTED, GangState.RUNNING, GangState.RECOVERING):
            continue
        members = [pod for pod in pods if is_member(pod)]
        finished = bool(members) and all(pod.terminal for pod in members)
        is_whole = whole(record, pods)
        if finished and not (is_whole and record.state is not GangState.RUNNING):
            continue  # finished: a member gone since (its node deleted) is no loss
        if record.state is GangState.RUNNING:
            if not is_whole:
                actions.append(Transition(record, GangState.RECOVERING, (
                    f"short of members ({_bound(record, pods)}); a replacement joins "
                    f"{record.domain} when it has room, else the gang is evicted whole "
                    f"after {bind_timeout_seconds:g} s")))
            continue
        if is_whole:
            actions.append(Transition(record, GangState.RUNNING, "every member bound"))
            continue
        if now - record.since < bind_timeout_seconds:
            continue
        live = [pod for pod in members if not pod.terminal]
        back = _shrink_back(record, live, bind_timeout_seconds)
        if back is not None:
            actions.append(back)
            continue
        owned = tuple(pod for pod in live if pod.controller is not None)
        kept = tuple(pod for pod in live if pod.controller is None)
        if not owned:
            continue  # nothing an owner would give back: evicting would only lose pods
        evictions = record.evictions + 1
        requeue_at = now + backoff_seconds(evictions, backoff_base_seconds,
                                           backoff_max_seconds)
        what = "not whole" if record.state is GangState.ADMITTED else "still short"
        message = (f"{what} {bind_timeout_seconds:g} s after it was "
                   f"{record.state.value.lower()} ({_bound(record, pods)}): evicted whole "
                   f"(eviction {evictions}); admitted again, whole, from "
                   f"{requeue_at - now:g} s on")
        if kept:
            message += (f"; {len(kept)} pod(s) without a controlling owner left alone "
                        "(nothing would recreate them)")
        actions.append(Eviction(record, owned, kept, requeue_at, message))
    return actions


def _shrink_back(record: GangRecord, live: Sequence[Pod], timeout: float) -> Resize | None:
    """An elastic gang whose unbound workers are its highest indices, resized to its
    bound ones (at least its minimum; its other members, a PyTorchJob's master, all
    bound); None when that does not apply."""
    owner = next((pod.elastic for pod in live if pod.elastic is not None), None)
    if owner is None or owner.bounds is None:
        return None
    # The workers a resize changes: a PyTorchJob's master is kept whatever its index.
    workers = [pod for pod in live if resized(pod)]
    if len(workers) < len(live) and any(pod.node_name is None for pod in live
                                        if not resized(pod)):
        return None  # an unbound master: no resize brings the gang back whole
    bound = [pod for pod in workers if pod.node_name is not None]
    unbound = [pod for pod in workers if pod.node_name is None]
    indices = [pod_index(pod) for pod in unbound]
    bound_indices = [pod_index(pod) for pod in bound]
    if not bound or not unbound or None in indices or None in bound_indices or \
            len(bound) < owner.bounds.minimum or len(bound) >= owner.size or \
            max(i for i in bound_indices if i is not None) >= \
            min(i for i in indices if i is not None):
        return None
    return Resize(record.job, owner, owner.size, len(bound), (
        f"its {len(unbound)} newest worker(s) found no room in {record.domain} within "
        f"{timeout:g} s: resized back to the {len(bound)} bound (minimum "
        f"{owner.bounds.minimum}) rather than evicted"))


def _bound(record: GangRecord, pods: Sequence[Pod]) -> str:
    members = [pod for pod in pods if is_member(pod)]
    bound = sum(1 for pod in members if pod.node_name is not None)
    size = record.size if record.size is not None else len(members)
    return f"{bound} of {size} bound"
