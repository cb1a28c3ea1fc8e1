"""Which gated jobs are admitted now, into which domain, and why the others wait.

The rule, in order:

1. A job evicted for not being whole in time waits until its record's `requeueAt`
   (`backoff`). A job declaring more pods than its owner creates waits with that
   reason (`size_mismatch`): it could never be whole. A job is considered once all
   its pods exist: as many as its declared size
   (`headstart.io/job-size`, else its PodGroup's minMember, else the replica counts of
   the Kubeflow job or JobSet its pods name); a job naming a PodGroup not seen yet
   waits for it, as does one whose owner is seen but gives no size (`owner_wait`); a
   job declaring no size is taken with the pods it has once none has been added for
   `settle_seconds`.
2. Jobs are taken by priority (highest first), then age (first pod created first),
   then namespace/name. Reservations of jobs admitted earlier and not yet bound are
   packed into their domains before any job is considered.
3. An earlier stage of a group whose later stage is created only once it runs (a
   LeaderWorkerSet leader under `LeaderReady`) is placed only in domains that hold the
   whole group at its shape now, when any does, so the later stage can join it.
   A job whose pods already carry a domain (an admission cut short, or a replacement
   pod of a running gang) joins it when that domain holds these pods now (new nodes
   counted), else waits there, whole. Terminating pods carry no domain
   (`gather`). Policy `none`: released without a domain. Otherwise every domain at the
   job's level (the placement group's, or `headstart.io/topology-level`'s) is tried
   with a bin-pack of all its pods (`pack`) onto the nodes each pod may use (node
   selector, required node affinity, tolerations: `locality.constraints`): nodes' free
   room (placeholders count as free) less what earlier jobs took, then whole new nodes
   of the domain's node groups (judged by their node templates). Among the domains that
   hold it: fewest new nodes, then least free GPU left (best fit keeps big holes for big
   jobs), then name. The job takes that room.
4. No domain holds it now. A `preferred` job is widened first: the nearest wider
   topology level (`wider`: subblock, then block, for a placement group) with a domain
   that holds it now takes it, chosen as in 3. Else, if no domain could hold it even
   empty, with every node its groups can add, it is `inadmissible`: it waits with that
   reason and holds nothing. Else `required` waits, whole, with the reason;
   `preferred` is released without a domain when the whole cluster (the level
   `cluster`) holds all its pods now, which it then takes from the cluster's room;
   otherwise it waits, whole (inadmissible when the cluster could never hold it). No
   policy ever releases part of a job.
   When some of the autoscaler's room is unknown (`unknown`: a node group CA's status
   lists that no configured entry names, a NodePool whose types or sizes are not
   known: `node_groups`, `nodepools`), a job that would wait here (no fit, or
   inadmissible on what is known) and that the cluster does not take now as
   `preferred` is not held: it is admitted into the domain that holds the most of its
   pods (fewest new nodes, then name), with `Admission.room_unknown` set, for the
   autoscaler to grow; Coscheduling still binds it whole or not at all, and the bind
   timeout evicts it whole if no node comes (`recovery`).
5. Priority: a job that would wait for room (4) and whose pods may preempt, and that
   the cluster does not take now as `preferred`, evicts whole lower-priority gangs
   inside the one domain `preempt.choose` picks (fewest and lowest first), waits
   `preempting` until their pods are gone, and takes what room it can use there now,
   so no job after it does. A gang is a victim of one job per round.
6. Anti-starvation (as EASY backfill and Kueue's head-of-queue do): the first
   `required` job in this order that waits for room it could have, once it has waited
   `head_reserve_after_seconds` since its last pod was created, takes all the room it
   can use in the domain that holds most of it. Jobs after it get only what is left, so
   capacity freed there goes to it, not to a stream of smaller jobs; a job that would
   have fit but for that hold waits as `held`. Only the first such job holds room; it
   holds it while it waits (`head_hold_seconds` unset, Kueue's StrictFIFO head), or only
   for `head_hold_seconds`, after which it waits without a hold and the next one may
   hold instead. Every job waiting for room is told its place in this order
   (`Waiting.position`).

7. Elastic jobs (`locality.elastic`: the owner opted in with min/max sizes), with
   `admission.elastic.enabled`: a job that no domain at its level holds now at its
   current size is resized to the largest size down to its minimum that one holds
   (its lowest-index pods, the ones its owner keeps), chosen as in 3: it waits
   `resizing`, taking that room, and is admitted at that size once its owner has it.
8. KOD2's scale-in (`resize.scale_in`), before preemption: a job that still waits for
   room takes it from Running elastic gangs of lower priority (whatever their weight:
   the gentlest preemption), or of equal priority and lower weight (`weight`), in one
   domain of its level, scaled in toward their minimums, the domain needing the fewest
   removed workers (then name); it waits `scaling_in` and is admitted once their
   workers are gone. An elastic job claims room at its minimum. A gang gives room to
   one job per round.
9. KOD2's scale-out (`resize.scale_out`): Running elastic gangs grow toward their
   maximum (their worker plan's target, when they have one) into the room left in
   their domain, highest weight first, less the room jobs waiting for room (no_fit,
   held, preempting, resizing, scaling_in) could be admitted into (`growth`: the nodes
   and node groups their pods may use in the domains that could ever hold them), so a
   job that could never use a gang's room does not hold it back. A plan's growth waits
   for that too: the overprovisioner announces it (placeholders for the plan's
   `planned`), so the room is usually there, and a waiting job still comes first.
7b. A waiting elastic job whose owner has a fresh worker plan of its own
   (`locality.worker_plans`: KALE's size or DLRover-RM's warm start, written by the
   overprovisioner) is first resized to the plan's size, within its bounds, when one
   domain holds the job at that size now (its lowest-index pods, plus workers of its
   shape for a larger size), taking that room; it waits `resizing` and is admitted at
   that size once its owner has it. A plan no domain holds changes nothing (rule 7 may
   still shrink the job): a plan never grows a job that could not then be admitted.
10. Worker plans (`resize.scale_to_plan`), before any job is considered: a Running
   elastic gang above its plan's target is scaled in to it, whether or not jobs wait.
   Its workers on the way out count as leaving room for this round's jobs (a job that
   fits once they are gone waits `scaling_in`), and it gives no more room in rule 8
   this round.

Cost: every "does this domain hold it" is a `trials.RoundBins` trial: packed once per
(domain room, demand), remembered across rounds in the caller's memo, and ranked per
demand so a job asks only about domains changed since the last job of its shape.

Bounds: the room of different levels is tracked apart within one round (a job admitted
into a placement group does not shrink the `cluster` room a `preferred` job is released
into in the same round); the next round sees both through the pods.

Must not: read the clock (`now` is passed), log, mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from bucketing.resources import ZERO, Resources
from locality.admission.config import AdmissionConfig
from locality.admission.growth import Claim, claim_of, contested, growth_room
from locality.admission.model import (
    Admission,
    Demand,
    Domain,
    Gang,
    GatedJob,
    Plan,
    Preemption,
    Release,
    Reservation,
    Resize,
    WaitCode,
    Waiting,
    bound_requests,
    demand_of,
)
from locality.admission.pack import Bins, open_bins, pack
from locality.admission.preempt import Unsatisfied, choose
from locality.admission.resize import (
    ElasticGang,
    at_size,
    claimant_of,
    job_weight,
    resized,
    scale_in,
    scale_out,
    scale_to_plan,
)
from locality.admission.snapshot import CLUSTER_LEVEL, LevelRoom
from locality.admission.trials import Asked, RoundBins, Trial, TrialMemo
from locality.model import JobKey, Locality
from locality.worker_plans import WorkerPlan, target_of


def admission_order(job: GatedJob) -> tuple:
    """Priority first (highest), then age (oldest), then name."""
    return (-job.priority, job.created_at, job.key.namespace, job.key.name)


def plan(
    jobs: Sequence[GatedJob],
    rooms: Mapping[str, LevelRoom],
    reservations: Sequence[Reservation],
    now: float,
    config: AdmissionConfig,
    releases: Sequence[Release] = (),
    gangs: Sequence[Gang] = (),
    leaving: Mapping[str, Resources] | None = None,
    unknown: Sequence[str] = (),
    wider: Mapping[str, Sequence[str]] | None = None,
    elastic: Mapping[Domain, Sequence[ElasticGang]] | None = None,
    shrinking: Mapping[str, Resources] | None = None,
    plans: Mapping[str, WorkerPlan] | None = None,
    memo: TrialMemo | None = None,
) -> Plan:
    """rooms: per level name, its domains' room (`snapshot.level_room`); the level
    `cluster` (`CLUSTER_LEVEL`) is what a `preferred` job may use without a domain (absent:
    such a job waits). now: seconds since the epoch, the clock of the pods' creation
    timestamps. gangs: the admitted gangs a higher-priority job may evict
    (`preempt.candidates`); leaving: per node, what Terminating pods of gangs free
    (`preempt.leaving`). unknown: the autoscaler's groups whose room is not known, each
    described (rule 4). wider: per level, the wider topology levels, nearest first, a
    `preferred` job is widened to (rule 4; their rooms must be in `rooms`). elastic: per
    domain, the Running elastic gangs a resize may change (`resize.elastic_gangs`;
    rules 8 to 10); shrinking: per node, what their workers on the way out free
    (`resize.shrinking`: a scale-in already made, waited for, never repeated). plans: the
    worker plans by key (`locality.worker_plans.decode`), for rule 7b. memo: the packing
    trials of earlier rounds (`trials.TrialMemo`: same answers, packed once; None: this
    round's only)."""
    resizing = config.elastic.enabled
    elastic = elastic if resizing and elastic else {}
    shrinking = shrinking if resizing and shrinking else {}
    resizes: list[Resize] = []
    donors: set[JobKey] = set()  # gangs scaled in this round already
    for _, domain_gangs in sorted(elastic.items(), key=lambda item: str(item[0])):
        resizes.extend(scale_to_plan(domain_gangs))  # rule 10
    if resizes:
        donors.update(resize.job for resize in resizes)
        shrinking = _plus(shrinking, bound_requests(
            pod for resize in resizes for pod in resize.removed))
    leaving = leaving or {}
    waiting: list[Waiting] = []
    ready: list[GatedJob] = []
    for job in jobs:
        blocked = _incomplete(job, now, config)
        if blocked is None:
            ready.append(job)
        else:
            waiting.append(Waiting(job.key, job.gated, *blocked))
    kinds = sorted({kind for job in ready for request, _, _ in job.demand
                    for kind, _ in request.devices}
                   | {kind for r in reservations for request, _, _ in r.demand
                      for kind, _ in request.devices}
                   | {kind for gangs_here in elastic.values() for gang in gangs_here
                      for pod in gang.workers[:1] for kind, _ in pod.request.devices})
    bins = RoundBins(memo)
    unsatisfied = Unsatisfied()  # preemption questions answered None this round
    for level, room in rooms.items():
        for value, domain_room in room.domains.items():
            bins.open(Domain(level, value), open_bins(domain_room, kinds))
    for reservation in reservations:
        if reservation.domain in bins:
            bins.take(reservation.domain, reservation.demand)
    ever = _Capacity(rooms, kinds, bins.memo)

    admissions: list[Admission] = []
    preemptions: list[Preemption] = []
    taken: set[JobKey] = set()  # gangs a job of this round evicts already
    head: tuple[GatedJob, Domain, Bins] | None = None  # the held domain, before the hold
    for job in sorted(ready, key=admission_order):
        size = len(job.gated)
        demand = job.demand
        asked = bins.asked(demand, job.pods_per_node)
        if job.recorded is not None:
            _join_recorded(job, demand, bins, rooms, admissions, waiting)
            continue
        if job.policy.placement_group is Locality.NONE:
            admissions.append(Admission(job.key, job.gated, None, None, Locality.NONE, 0,
                                        "placement-group policy none: no domain"))
            continue
        room = rooms.get(job.level)
        if room is None or not room.domains:
            reason = (f"no node carries a {job.level} label and no node group names a "
                      f"{job.level} domain")
            if unknown:
                reason += f"; unknown room: {_described(unknown)}"
            _unplaced(job, asked, WaitCode.NO_LEVEL, reason, bins, ever, admissions, waiting)
            continue
        if resizing and job.elastic is not None and plans:
            toward = _planned(job, plans, now, room, bins)
            if toward is not None:
                resizes.append(toward)
                waiting.append(Waiting(job.key, job.gated, WaitCode.RESIZING, toward.reason))
                continue
        whole = _whole_group(job, room, bins)
        found = bins.search(job.level, room.domains, asked, None if whole is None else
                            frozenset(domain.value for domain in whole))
        best, most = found.best, found.most
        if best is not None:
            _, domain = best
            new_nodes = bins.take(domain, demand, job.pods_per_node)
            admissions.append(Admission(
                job.key, job.gated, domain, room.domains[domain.value].label_key,
                job.policy.placement_group, new_nodes,
                f"fits {domain}" + (f" with {new_nodes} new node(s)" if new_nodes else "")))
            continue
        if resizing and job.elastic is not None:
            smaller = _smaller(job, room, bins)
            if smaller is not None:
                resizes.append(smaller)
                waiting.append(Waiting(job.key, job.gated, WaitCode.RESIZING, smaller.reason))
                continue
        if job.policy.placement_group is Locality.PREFERRED:
            wide = _widened(job, asked, rooms, bins, (wider or {}).get(job.level, ()))
            if wide is not None:
                admissions.append(wide)
                continue
        notes = ""
        if room.unlabeled:
            notes += f" ({room.unlabeled} node(s) carry no {job.level} label: not counted)"
        if room.notes:
            notes += "; " + "; ".join(room.notes)
        assert most is not None
        if not unknown and not ever.holds(asked, job.level):
            _unplaced(job, asked, WaitCode.INADMISSIBLE, (
                f"no {job.level} domain could hold its {size} pods even empty, with every "
                f"node the autoscaler can add, counting only the nodes its pods may use "
                f"(nodeSelector, node affinity, tolerations){notes}"),
                bins, ever, admissions, waiting)
            continue
        held = config.head_reserve_after_seconds
        if head is not None and job.policy.placement_group is Locality.REQUIRED:
            held_job, held_domain, before = head
            if bins.trial(held_domain, asked, before).placed == size:
                waiting.append(Waiting(job.key, job.gated, WaitCode.HELD, (
                    f"{held_domain} would hold it, but that room is held for {held_job.key} "
                    f"(higher in admission order and waiting longer than {held:g} s)")))
                continue
        _, domain, placed = most
        if (elastic or shrinking) and not _cluster_holds(job, asked, bins):
            made = _scale_in(job, room, bins, elastic, donors, shrinking, now, config)
            if made is not None:
                domain, resized = made
                resizes.extend(resized)
                donors.update(resize.job for resize in resized)
                waiting.append(Waiting(job.key, job.gated, WaitCode.SCALING_IN, "; ".join(
                    f"{resize.job} {resize.reason}" for resize in resized) or (
                    f"fits {domain} once the workers leaving it are gone")))
                continue
        if job.preempts and (gangs or leaving) and not _cluster_holds(job, asked, bins):
            question = unsatisfied.key(job, asked, frozenset(taken), bins.changes)
            preemption = None if unsatisfied.known(question) else choose(
                job, demand, {Domain(job.level, v): bins[Domain(job.level, v)]
                              for v in room.domains}, gangs, leaving, frozenset(taken))
            if preemption is None:
                unsatisfied.add(question)
            if preemption is not None:
                preemptions.append(preemption)
                taken.update(victim.job for victim in preemption.victims)
                waiting.append(Waiting(job.key, job.gated, WaitCode.PREEMPTING,
                                       preemption.note))
                # What it can use there now is its: no job after it takes that room.
                bins.take(preemption.domain, demand, job.pods_per_node)
                continue
        if unknown and not _cluster_holds(job, asked, bins):
            admissions.append(_unknown_room(job, room, most, bins, unknown))
            continue
        reason = (f"no {job.level} domain holds its {size} pods now, even with the nodes "
                  f"the autoscaler can add; the most is {placed} in {domain}{notes}")
        _unplaced(job, asked, WaitCode.NO_FIT, reason, bins, ever, admissions, waiting)
        waited = now - job.last_created_at
        expires = config.head_hold_seconds
        if (head is None and job.policy.placement_group is Locality.REQUIRED
                and held <= waited and (expires is None or waited < held + expires)):
            head = (job, domain, bins[domain])
            bins.take(domain, demand, job.pods_per_node)  # all of it that room holds
    held: list[JobKey] = []
    if elastic:
        claims = _claims(waiting, ready, rooms, bins, ever)
        for domain, domain_gangs in sorted(elastic.items(), key=lambda item: str(item[0])):
            if domain in bins:
                room = growth_room(bins[domain], claims)
                resizes.extend(scale_out(room, domain_gangs, False, now,
                                         config.elastic.scale_out_after_seconds))
                held += [gang.job for gang in domain_gangs if gang.workers
                         and gang.size < gang.limit
                         and contested(bins[domain], room, gang.workers[0].constraints)]
    problems = {job.key: job.elastic_problem for job in ready if job.elastic_problem}
    problems |= {job.key: job.elastic_problem for job in jobs if job.elastic_problem}
    if problems:  # said wherever the job's state is read: kept at its size, and why
        admissions = [replace(a, note=f"{a.note}; not resizable: {problems[a.job]}")
                      if a.job in problems else a for a in admissions]
        waiting = [replace(w, reason=f"{w.reason}; not resizable: {problems[w.job]}")
                   if w.job in problems else w for w in waiting]
    return Plan(tuple(admissions), tuple(_positioned(waiting)), tuple(releases),
                tuple(preemptions), tuple(unknown), tuple(resizes), tuple(held))


def _positioned(waiting: Sequence[Waiting]) -> list[Waiting]:
    """The jobs waiting for room numbered in admission order (1: the next to get room),
    as /explain and the Gang status show them; the others as they are."""
    queued = [w for w in waiting if w.code in _WANTS_ROOM]
    places = {w.job: (index + 1, len(queued)) for index, w in enumerate(queued)}
    return [replace(w, position=places[w.job]) if w.job in places else w for w in waiting]


def _plus(a: Mapping[str, Resources], b: Mapping[str, Resources]) -> dict[str, Resources]:
    """Per node, the room of both."""
    return {node: a.get(node, ZERO) + b.get(node, ZERO) for node in {*a, *b}}


_WANTS_ROOM = frozenset({WaitCode.NO_FIT, WaitCode.HELD, WaitCode.PREEMPTING,
                         WaitCode.RESIZING, WaitCode.SCALING_IN})


def _claims(waiting: Sequence[Waiting], ready: Sequence[GatedJob],
            rooms: Mapping[str, LevelRoom], bins: RoundBins, ever: _Capacity) -> list[Claim]:
    """Rule 9: the room each job waiting for room could be admitted into (`growth`)."""
    by_key = {job.key: job for job in ready}
    out = []
    for entry in waiting:
        job = by_key.get(entry.job)
        if entry.code not in _WANTS_ROOM or job is None:
            continue
        if job.recorded is not None:
            room = rooms.get(job.recorded.level)
            found = room.domains.get(job.recorded.value) if room is not None else None
            out.append(claim_of(job.gated, [found] if found is not None else []))
        elif job.policy.placement_group is Locality.PREFERRED:
            out.append(claim_of(job.gated, None))
        else:
            pods = job.gated
            if job.elastic is not None and job.elastic.bounds is not None:
                pods = at_size(pods, job.elastic.bounds.minimum)
            asked = bins.asked(demand_of(pods), job.pods_per_node)
            level = rooms.get(job.level)
            domains = level.domains.items() if level is not None else ()
            out.append(claim_of(job.gated, [room for value, room in domains if
                                            ever.holds_in(asked, Domain(job.level, value))]))
    return out


def _planned(job: GatedJob, plans: Mapping[str, WorkerPlan], now: float, room: LevelRoom,
             bins: RoundBins) -> Resize | None:
    """Rule 7b: the waiting elastic job resized to its worker plan's size, taking the room
    of the domain that holds it at that size (chosen as in 3); None without a fresh plan
    of its own, at its size already, or when no domain holds that size now."""
    owner = job.elastic
    assert owner is not None
    found = target_of(plans, owner.kind, owner.namespace, owner.name, owner.uid, now)
    if found is None or owner.bounds is None:
        return None
    size = owner.bounds.clamp(found.size)
    workers = [pod for pod in job.gated if resized(pod)]
    if size == owner.size or not workers:
        return None
    demand = demand_of(at_size(job.gated, min(size, owner.size)))
    if size > owner.size:
        extra = workers[-1]
        demand = (*demand, (extra.request, extra.constraints, size - owner.size))
    asked = bins.asked(demand, job.pods_per_node)
    best = bins.search(job.level, room.domains, asked).best
    if best is None:
        return None
    _, domain = best
    bins.take(domain, demand, job.pods_per_node)
    return Resize(job.key, owner, owner.size, size, (
        f"resized from {owner.size} to {size} by its worker plan ({found.reason}), which "
        f"{domain} holds: admitted once its owner has that size"))


def _smaller(job: GatedJob, room: LevelRoom, bins: RoundBins) -> Resize | None:
    """Rule 7: the elastic job resized to the largest size a domain of its level holds
    now (its lowest-index pods), taking that room; None when not even its minimum fits.
    Per domain the largest size is found by bisection (a domain that holds k pods of the
    job holds k - 1), so a job of thousands of workers costs a few packs per domain."""
    owner = job.elastic
    assert owner is not None and owner.bounds is not None

    asked: dict[int, Asked] = {}  # per size tried (a few per domain, shared by domains)

    def at(size: int) -> Asked:
        if size not in asked:
            asked[size] = bins.asked(demand_of(at_size(job.gated, size)), job.pods_per_node)
        return asked[size]

    best: tuple[tuple, int, Domain] | None = None
    for value in room.domains:
        domain = Domain(job.level, value)
        low, high = owner.bounds.minimum, owner.size - 1
        found: tuple[int, Trial] | None = None
        while low <= high:
            middle = (low + high + 1) // 2
            trial = bins.trial(domain, at(middle))
            if trial.placed == at(middle).pods:
                found, low = (middle, trial), middle + 1
            else:
                high = middle - 1
        if found is None:
            continue
        size, trial = found
        rank = (-size, trial.new_nodes, trial.free_gpu_milli, value)
        if best is None or rank < best[0]:
            best = (rank, size, domain)
    if best is None:
        return None
    _, size, domain = best
    bins.take(domain, asked[size].demand, job.pods_per_node)
    return Resize(job.key, owner, owner.size, size, (
        f"no {job.level} domain holds all {owner.size} pods now; resized to {size} "
        f"(its minimum is {owner.bounds.minimum}), which {domain} holds: admitted "
        "once its owner has that size"))


def _scale_in(job: GatedJob, room: LevelRoom, bins: RoundBins,
              elastic: Mapping[Domain, Sequence[ElasticGang]], donors: set[JobKey],
              shrinking: Mapping[str, Resources], now: float, config: AdmissionConfig
              ) -> tuple[Domain, tuple[Resize, ...]] | None:
    """Rule 8: the resizes of lighter elastic gangs in the one domain of the job's level
    that makes room for it with the fewest workers removed (none: the room of workers
    a scale-in already sent away is enough); None when no domain does."""
    pods = list(job.gated)
    if job.elastic is not None and job.elastic.bounds is not None:
        pods = at_size(pods, job.elastic.bounds.minimum)
    claimant = claimant_of(job.key, pods, job_weight(job.gated, now - job.created_at,
                                                     config.elastic.weight),
                           job.created_at, job.pods_per_node, job.priority)
    best: tuple[tuple, Domain, tuple[Resize, ...]] | None = None
    for value in room.domains:
        domain = Domain(job.level, value)
        if domain not in bins:
            continue
        gangs = [gang for gang in elastic.get(domain, ()) if gang.job not in donors]
        made = scale_in(claimant, bins[domain].freed(shrinking), gangs)
        if made is None:
            continue
        rank = (sum(len(resize.removed) for resize in made), value)
        if best is None or rank < best[0]:
            best = (rank, domain, made)
    if best is None:
        return None
    _, domain, made = best
    bins.take(domain, claimant.demand, job.pods_per_node)  # what it can use now is its
    return domain, made


def _whole_group(job: GatedJob, room: LevelRoom, bins: RoundBins) -> set[Domain] | None:
    """For an earlier stage of a group (`GatedJob.group_size`), the domains that hold the
    whole group at this stage's shape now; None when it is no such stage or none does
    (then it is placed as itself)."""
    if job.group_size is None:
        return None
    group = list(job.gated) + [job.gated[0]] * (job.group_size - len(job.gated))
    asked = bins.asked(demand_of(group), job.pods_per_node)
    holding = {Domain(job.level, value) for value in room.domains
               if bins.fits(Domain(job.level, value), asked)}
    return holding or None


def _widened(job: GatedJob, asked: Asked, rooms: Mapping[str, LevelRoom],
             bins: RoundBins, levels: Sequence[str]) -> Admission | None:
    """Rule 4's widening of a `preferred` job: the nearest wider level with a domain that
    holds it now (fewest new nodes, then best fit, then name), None when none does."""
    for level in levels:
        room = rooms.get(level)
        if room is None:
            continue
        best = bins.search(level, room.domains, asked).best
        if best is not None:
            _, domain = best
            new_nodes = bins.take(domain, asked.demand, asked.per_node)
            return Admission(
                job.key, job.gated, domain, room.domains[domain.value].label_key,
                Locality.PREFERRED, new_nodes,
                f"no {job.level} domain holds it; widened (policy preferred) to {domain}"
                + (f" with {new_nodes} new node(s)" if new_nodes else ""))
    return None


def _unknown_room(job: GatedJob, room: LevelRoom, most: tuple[tuple, Domain, int],
                  bins: RoundBins, unknown: Sequence[str]) -> Admission:
    """Rule 4's release when room is unknown: into the domain holding most of it."""
    _, domain, placed = most
    new_nodes = bins.take(domain, job.demand, job.pods_per_node)
    return Admission(
        job.key, job.gated, domain, room.domains[domain.value].label_key,
        job.policy.placement_group, new_nodes,
        f"released into {domain} for the autoscaler to grow: what is known holds "
        f"{placed} of its {len(job.gated)} pods there, and the room of "
        f"{_described(unknown)} is unknown (docs/extender.md, \"Room the autoscaler can "
        "add\": make it known, and jobs wait for known room instead)",
        tuple(unknown))


def _described(unknown: Sequence[str]) -> str:
    shown = "; ".join(unknown[:3])
    return shown + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")


class _Capacity:
    """Whether a job could ever fit: one domain's nodes empty plus every node its groups
    can add. Bins per domain are opened once per round, on first use; their trials are
    remembered in the round's memo like any other (the empty room rarely changes)."""

    def __init__(self, rooms: Mapping[str, LevelRoom], kinds: Sequence[str],
                 memo: TrialMemo) -> None:
        self.rooms = rooms
        self.kinds = kinds
        self._bins = RoundBins(memo)
        self._answers: dict[tuple[str, Asked], bool] = {}

    def holds(self, asked: Asked, level: str) -> bool:
        key = (level, asked)
        if key not in self._answers:  # asked once per shape: the empty room never changes
            self._answers[key] = self._holds(asked, level)
        return self._answers[key]

    def _holds(self, asked: Asked, level: str) -> bool:
        room = self.rooms.get(level)
        if room is None:
            return False
        return any(self.holds_in(asked, Domain(level, value)) for value in room.domains)

    def holds_in(self, asked: Asked, domain: Domain) -> bool:
        """Whether `domain` could ever hold it (False: no such domain)."""
        if domain not in self._bins:
            room = self.rooms.get(domain.level)
            domain_room = room.domains.get(domain.value) if room is not None else None
            if domain_room is None:
                return False
            self._bins.open(domain, open_bins(domain_room, self.kinds, empty=True))
        return self._bins.fits(domain, asked)


def _join_recorded(job: GatedJob, demand: Demand, bins: RoundBins,
                   rooms: Mapping[str, LevelRoom], admissions: list[Admission],
                   waiting: list[Waiting]) -> None:
    """A job whose pods already carry a domain (an admission cut short, or a replacement
    pod of a running gang) joins it when the domain has room for these pods; else waits."""
    recorded = job.recorded
    assert recorded is not None
    target = bins.get(recorded)
    room = rooms.get(recorded.level)
    domain_room = room.domains.get(recorded.value) if room else None
    if target is None or domain_room is None:
        waiting.append(Waiting(job.key, job.gated, WaitCode.NO_FIT, (
            f"its job was admitted into {recorded}, which has no node now and no node "
            "group that can add one")))
        return
    trial = target.copy()
    placed = pack(trial, demand, job.pods_per_node)
    if placed < len(job.gated):
        waiting.append(Waiting(job.key, job.gated, WaitCode.NO_FIT, (
            f"its job was admitted into {recorded}, which holds {placed} of these "
            f"{len(job.gated)} pods now, even with the nodes the autoscaler can add")))
        return
    new_nodes = trial.opened - target.opened
    bins[recorded] = trial
    admissions.append(Admission(
        job.key, job.gated, recorded, domain_room.label_key, job.policy.placement_group,
        new_nodes, f"joins {recorded}, where its other pods were admitted"))


def _cluster_holds(job: GatedJob, asked: Asked, bins: RoundBins) -> bool:
    """A `preferred` job the whole cluster holds now: released there, no preemption."""
    if job.policy.placement_group is not Locality.PREFERRED:
        return False
    cluster = Domain(CLUSTER_LEVEL, CLUSTER_LEVEL)
    return cluster in bins and bins.fits(cluster, asked)


def _unplaced(job: GatedJob, asked: Asked, code: WaitCode, reason: str,
              bins: RoundBins, ever: _Capacity, admissions: list[Admission],
              waiting: list[Waiting]) -> None:
    """`required` waits, whole. `preferred` is released without a domain when the whole
    cluster's room holds all its pods now (which it then takes), never in part: else it
    waits, whole, and is inadmissible when the cluster could never hold it."""
    if job.policy.placement_group is Locality.REQUIRED:
        waiting.append(Waiting(job.key, job.gated, code, reason))
        return
    cluster = Domain(CLUSTER_LEVEL, CLUSTER_LEVEL)
    whole = bins.get(cluster)
    size = len(job.gated)
    if whole is not None:
        if bins.fits(cluster, asked):
            bins.take(cluster, asked.demand, asked.per_node)
            admissions.append(Admission(
                job.key, job.gated, None, None, Locality.PREFERRED, 0,
                f"released without a domain (policy preferred): {reason}; the cluster holds "
                f"all {size} pods"))
            return
    if whole is None or not ever.holds(asked, CLUSTER_LEVEL):
        waiting.append(Waiting(job.key, job.gated, WaitCode.INADMISSIBLE, (
            f"{reason}; the whole cluster could not hold its {size} pods even empty, with "
            "every node the autoscaler can add (policy preferred never binds part of a job)")))
        return
    # The cluster could hold it: it waits for room, even if no single domain ever could.
    code = WaitCode.NO_FIT if code is WaitCode.INADMISSIBLE else code
    waiting.append(Waiting(job.key, job.gated, code, (
        f"{reason}; the whole cluster does not hold its {size} pods now either (policy "
        "preferred never binds part of a job)")))


def _incomplete(job: GatedJob, now: float, config: AdmissionConfig
                ) -> tuple[WaitCode, str] | None:
    """Why the job is not whole yet (or not to be admitted yet), None when it is."""
    if job.deactivated is not None:
        return WaitCode.INADMISSIBLE, f"not admitted again: {job.deactivated}"
    if job.unmodelled is not None and job.policy.placement_group is not Locality.NONE:
        return WaitCode.INADMISSIBLE, (
            f"{job.unmodelled}: a rule headstart's admission does not model, so it could "
            "admit the job where it cannot bind; remove the rule, or set the pod "
            "annotation headstart.io/placement-group: none to let kube-scheduler place "
            "the pods as they come")
    if job.requeue_at is not None and now < job.requeue_at:
        return WaitCode.BACKOFF, (
            f"evicted for not being whole in time; admitted again, whole, from "
            f"{job.requeue_at - now:.0f} s on (backoff)")
    if job.size is not None:
        if job.owner_size is not None and job.size > job.owner_size:
            return WaitCode.SIZE_MISMATCH, (
                f"declares {job.size} pods (annotation headstart.io/job-size or its "
                f"PodGroup's minMember) but its owner creates {job.owner_size}: it can "
                "never be whole; make the two agree")
        if job.known_pods < job.size:
            return WaitCode.INCOMPLETE, (
                f"{job.known_pods} of its {job.size} pods exist (declared size); waiting "
                "for the rest before choosing a domain for the whole job")
        return None
    if job.awaiting_group is not None:
        return WaitCode.SIZE_UNKNOWN, (
            f"waiting for its PodGroup {job.awaiting_group} (its minMember is the job's "
            "size), which the extender has not seen")
    if job.owner_wait is not None:
        return WaitCode.SIZE_UNKNOWN, (
            f"declares no size the extender can read: {job.owner_wait}; fix the owner or "
            "set the annotation headstart.io/job-size on its pods")
    quiet = now - job.last_created_at
    if quiet < config.settle_seconds:
        return WaitCode.SIZE_UNKNOWN, (
            f"declares no size (annotation headstart.io/job-size, a PodGroup, or a Kubeflow "
            f"job or JobSet the extender has seen): taken with "
            f"the {len(job.gated)} pods it has once none is added for "
            f"{config.settle_seconds:g} s ({config.settle_seconds - quiet:.0f} s to go)")
    return None
