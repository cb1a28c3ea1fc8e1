"""A gang after admission: when it is Running, short, or evicted whole to start again.

Admission is not binding, and binding is not running: between lifting the gates and
binding, the room can vanish (a node lost, another scheduler's pods, no instances); a
bound member may never become Ready (an image that cannot be pulled, a crash loop, a
device plugin that never reports); a running gang loses members (a node lost, a pod
failed or evicted). As Kueue's `waitForPodsReady` does, a gang that is not whole and
Ready in time is evicted whole and admitted again, whole, after a backoff:

- `Admitted`: every live member bound (on a node that exists) and Ready: `Running`. Not
  all bound `bind_timeout_seconds` after admission, or bound but not all Ready
  `ready_timeout_seconds` after it (a job's `headstart.io/ready-timeout` within the
  admin's bounds: `ready_timeout_of`): evict.
- `Running` and a member short (not bound, bound to a node that is gone, fewer members
  than its size) or not Ready: `Recovering`, from now; its replacement joins its domain
  when it has room there (`assign`). Whole and Ready again: `Running`. Still short
  `bind_timeout_seconds` later, or un-Ready `ready_timeout_seconds` later: evict.
- Fail fast (Kueue TAS's node replacement): a gang holding a domain whose replacement
  pods wait because that domain cannot hold them now, even with the nodes the
  autoscaler can add (`assign`'s `no_fit` for a job with a recorded domain), or whose
  members on a lost node it cannot hold now (`rooms`), is evicted at once and may be
  admitted again at once, elsewhere: waiting out the bind timeout would only hold the
  survivors' GPUs. Not counted toward its backoff or its limit. An elastic gang whose
  missing workers are its newest, its minimum still bound, is resized back to its bound
  workers at once instead (as below, without the wait).
- Evicting: every member pod of the current attempt that an owner recreates (a
  controller owner reference) goes: the admitter suspends their owners when it may
  (`locality.admission.suspend_owners`: a suspension counts no pod as a failure), else evicts
  each through the Eviction API; the record becomes `Evicted` with `requeueAt` = now +
  backoff, backoff = `backoff_base_seconds` x 2^(evictions - 1), at most
  `backoff_max_seconds` (Kueue's requeuing strategy: 60 s, doubling, capped at an
  hour). The eviction past `requeue_limit` is the last (`Eviction.final`): the record
  becomes `Inadmissible` (`REQUEUE_LIMIT`) and nothing resumes or admits the job again.
  Pods nothing recreates are left alone (headstart never deletes what it cannot give
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

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kube.labels import READY_TIMEOUT_ANNOTATION
from locality.admission.config import AdmissionConfig
from locality.admission.model import Resize, WaitCode, Waiting, demand_of
from locality.admission.pack import open_bins, pack
from locality.admission.record import GangRecord, GangState, is_member, whole
from locality.admission.resize import pod_index, resized
from locality.admission.snapshot import LevelRoom
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
    `requeue_at`. kept: members left alone (no owner recreates them). counted: adds to
    the record's evictions (its backoff and limit); a fail-fast eviction does not.
    final: past `requeue_limit`: recorded `Inadmissible`, never resumed or admitted
    again (`requeue_at` is then when it was evicted)."""

    record: GangRecord
    pods: tuple[Pod, ...]
    kept: tuple[Pod, ...]
    requeue_at: float
    message: str
    counted: bool = True
    final: bool = False


def backoff_seconds(evictions: int, base: float, maximum: float) -> float:
    """The wait before the `evictions`-th re-admission (1: base, then doubling, never
    past `maximum`, however many evictions a gang has had)."""
    doublings = min(max(evictions - 1, 0), 64)  # 2**64 x any base is past any maximum
    return min(base * 2.0 ** doublings, maximum)


def ready_timeout_of(pods: Sequence[Pod], config: AdmissionConfig
                     ) -> tuple[float, str | None]:
    """The gang's ready timeout: its pods' `headstart.io/ready-timeout` (seconds) when
    one sets it within [`bind_timeout_seconds`, `ready_timeout_max_seconds`], else
    `ready_timeout_seconds`; with why the annotation was not taken (None: it was, or
    there is none). A bad value never shortens the timeout."""
    raw = next((pod.annotations[READY_TIMEOUT_ANNOTATION] for pod in pods
                if READY_TIMEOUT_ANNOTATION in pod.annotations), None)
    default = config.ready_timeout_seconds
    if raw is None:
        return default, None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    low, high = config.bind_timeout_seconds, config.ready_timeout_max_seconds
    if not low <= seconds <= high:  # NaN fails too
        return default, (
            f"annotation {READY_TIMEOUT_ANNOTATION}={raw!r} is not a number of seconds "
            f"from {low:g} (admission.bind_timeout_seconds) to {high:g} "
            f"(admission.ready_timeout_max_seconds): {default:g} s used")
    return seconds, None


def recovery(records: Iterable[GangRecord], pods_of_job: Callable[[JobKey], Sequence[Pod]],
             now: float, config: AdmissionConfig, nodes: Collection[str] | None = None,
             waiting: Sequence[Waiting] = (), rooms: Mapping[str, LevelRoom] | None = None,
             ) -> list[Transition | Eviction | Resize]:
    """What each admitted gang's state calls for now. nodes: the names of the nodes that
    exist (None: every node a pod names does); a member bound to another is lost.
    waiting: this round's waiting jobs (`assign`): a gang holding a domain whose
    replacement waits for room it cannot have there is evicted at once. rooms: this
    round's room per level (`snapshot.level_room`): a gang whose members on a lost node
    its domain cannot hold now (free room, placeholders, new nodes) is evicted at once,
    without waiting for PodGC and the owner's replacement."""
    blocked = {w.job: w.reason for w in waiting if w.code is WaitCode.NO_FIT}
    actions: list[Transition | Eviction | Resize] = []
    for record in records:
        if not record.state.holds_domain:
            continue
        pods = pods_of_job(record.job)
        members = [pod for pod in pods if is_member(pod)]
        if nodes is not None:
            # A member bound to a node that is gone is lost, though its pod stays until
            # PodGC deletes it (about 40 s) and its owner replaces it.
            lost = [pod for pod in members
                    if pod.node_name is not None and pod.node_name not in nodes]
            pods = [_unbound(pod) if pod.node_name is not None and pod.node_name not in nodes
                    else pod for pod in pods]
            members = [pod for pod in pods if is_member(pod)]
            if lost and rooms is not None and record.job not in blocked:
                why = _unreplaceable(record, lost, rooms)
                if why is not None:
                    blocked[record.job] = why
        finished = bool(members) and all(pod.terminal for pod in members)
        is_whole = whole(record, pods)
        unready = [pod for pod in members if not pod.terminal and not pod.ready]
        if finished and not (is_whole and record.state is not GangState.RUNNING):
            continue  # finished: a member gone since (its node deleted) is no loss
        running = is_whole and not unready
        ready_timeout, _ = ready_timeout_of(members, config)
        fast = _fail_fast(record, members, now, blocked[record.job],
                          config.bind_timeout_seconds) \
            if not is_whole and record.job in blocked else None
        if record.state is GangState.RUNNING:
            if running:
                continue
            if fast is not None:
                actions.append(fast)
            elif not is_whole:
                actions.append(Transition(record, GangState.RECOVERING, (
                    f"short of members ({_bound(record, pods)}); a replacement joins "
                    f"{record.domain} when it has room, else the gang is evicted whole")))
            else:
                actions.append(Transition(record, GangState.RECOVERING, (
                    f"{_ready(members)}; evicted whole unless every member is Ready "
                    f"within {ready_timeout:g} s")))
            continue
        if running:
            actions.append(Transition(record, GangState.RUNNING,
                                      "every member bound and Ready"))
            continue
        if fast is not None:
            actions.append(fast)
            continue
        waited = now - record.since
        if waited < (config.bind_timeout_seconds if not is_whole else ready_timeout):
            continue
        live = [pod for pod in members if not pod.terminal]
        back = _shrink_back(record, live, config.bind_timeout_seconds) \
            if not is_whole else None
        if back is not None:
            actions.append(back)
            continue
        eviction = _evict(record, pods, live, now, config, not is_whole, ready_timeout)
        if eviction is not None:
            actions.append(eviction)
    return actions


def _evict(record: GangRecord, pods: Sequence[Pod], live: Sequence[Pod], now: float,
           config: AdmissionConfig, unbound: bool, ready_timeout: float) -> Eviction | None:
    """The gang evicted whole for not being whole (`unbound`) or Ready in time; None when
    nothing an owner recreates would go."""
    owned = tuple(pod for pod in live if pod.controller is not None)
    kept = tuple(pod for pod in live if pod.controller is None)
    if not owned:
        return None  # nothing an owner would give back: evicting would only lose pods
    evictions = record.evictions + 1
    final = config.requeue_limit is not None and evictions > config.requeue_limit
    requeue_at = now + backoff_seconds(evictions, config.backoff_base_seconds,
                                       config.backoff_max_seconds)
    since = record.state.value.lower()
    if unbound:
        what = "not whole" if record.state is GangState.ADMITTED else "still short"
        why = (f"{what} {config.bind_timeout_seconds:g} s after it was {since} "
               f"({_bound(record, pods)})")
    else:
        why = f"not Ready {ready_timeout:g} s after it was {since} ({_ready(live)})"
    if final:
        message = (f"{why}: evicted whole (eviction {evictions}, past admission."
                   f"requeue_limit {config.requeue_limit}); not admitted again: fix the "
                   "job and create it anew")
        requeue_at = now
    else:
        message = (f"{why}: evicted whole (eviction {evictions}); admitted again, whole, "
                   f"from {requeue_at - now:g} s on")
    if kept:
        message += (f"; {len(kept)} pod(s) without a controlling owner left alone "
                    "(nothing would recreate them)")
    return Eviction(record, owned, kept, requeue_at, message, final=final)


def _fail_fast(record: GangRecord, members: Sequence[Pod], now: float,
               reason: str, timeout: float) -> Eviction | Resize | None:
    """A gang whose lost members its domain cannot replace now, at once: an elastic one
    whose missing workers are its newest, with its minimum still bound, resized back to
    its bound workers (`_shrink_back`); any other evicted, and re-admitted at once,
    wherever one domain holds it whole."""
    live = [pod for pod in members if not pod.terminal]
    if not any(pod.node_name is not None for pod in live):
        return None  # no survivor holds room: the job is admitted afresh, wherever it fits
    back = _shrink_back(record, live, timeout)
    if back is not None:
        return back
    owned = tuple(pod for pod in live if pod.controller is not None)
    kept = tuple(pod for pod in live if pod.controller is None)
    message = (f"lost members its domain cannot replace now ({reason}): evicted whole at "
               "once, admitted again, whole, wherever one domain holds it")
    if kept:
        message += (f"; {len(kept)} pod(s) without a controlling owner left alone "
                    "(nothing would recreate them)")
    if not owned:
        return None  # nothing an owner would give back: the timeouts apply as before
    return Eviction(record, owned, kept, now, message, counted=False)


def _unreplaceable(record: GangRecord, lost: Sequence[Pod],
                   rooms: Mapping[str, LevelRoom]) -> str | None:
    """Why the gang's domain cannot hold its members lost with their node now, even with
    the nodes the autoscaler can add; None when it can (or its level's room is not in
    this round's view: the replacement's own wait decides then)."""
    domain = record.domain
    room = rooms.get(domain.level) if domain is not None else None
    domain_room = room.domains.get(domain.value) if room is not None and domain else None
    if domain is None or room is None:
        return None
    if domain_room is None:
        return f"{domain} has no node now and no node group that can add one"
    kinds = sorted({kind for pod in lost for kind, _ in pod.request.devices})
    placed = pack(open_bins(domain_room, kinds), demand_of(lost))
    if placed == len(lost):
        return None
    return (f"{domain} holds {placed} of the {len(lost)} pod(s) lost with their node now, "
            "even with the nodes the autoscaler can add")


def _unbound(pod: Pod) -> Pod:
    """`pod` as a member that is not bound (its node is gone)."""
    return replace(pod, node_name=None, ready=False)


def _ready(members: Sequence[Pod]) -> str:
    live = [pod for pod in members if not pod.terminal]
    return f"{sum(1 for pod in live if pod.ready)} of {len(live)} Ready"


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
        f"its {len(unbound)} newest worker(s) found no room in {record.domain} (waited "
        f"at most {timeout:g} s): resized back to the {len(bound)} bound (minimum "
        f"{owner.bounds.minimum}) rather than evicted"))


def _bound(record: GangRecord, pods: Sequence[Pod]) -> str:
    members = [pod for pod in pods if is_member(pod)]
    bound = sum(1 for pod in members if pod.node_name is not None)
    size = record.size if record.size is not None else len(members)
    return f"{bound} of {size} bound"
