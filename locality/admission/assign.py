"""Which gated jobs are admitted now, into which domain, and why the others wait.

The policy, numbered as the rules' docstrings cite it. `plan` runs it: rule 10 first,
then each job whole (1) in admission order (2) through `rules.RULES`, the per-job rules
(3 to 8) as an ordered list of named functions, the first that decides deciding
(`python -m locality.admission.rules` lists them), then rule 9:

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
   jobs), then name (`ranking.best_fit`: every order domains are ranked by is there).
   The job takes that room.
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
   pods (`ranking.most_placed`), with `Admission.room_unknown` set, for the
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
from locality.admission.pack import open_bins
from locality.admission.resize import (
    ElasticGang,
    at_size,
    scale_out,
    scale_to_plan,
)
from locality.admission.round_state import Candidate, Capacity, RoundState
from locality.admission.rules import decide
from locality.admission.snapshot import LevelRoom
from locality.admission.trials import RoundBins, TrialMemo
from locality.model import JobKey, Locality
from locality.worker_plans import WorkerPlan


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
    for level, room in rooms.items():
        for value, domain_room in room.domains.items():
            bins.open(Domain(level, value), open_bins(domain_room, kinds))
    for reservation in reservations:
        if reservation.domain in bins:
            bins.take(reservation.domain, reservation.demand)
    ever = Capacity(rooms, kinds, bins.memo)
    state = RoundState(bins, rooms, ever, now, config, unknown, wider or {}, gangs, leaving,
                       elastic, shrinking, plans, donors=donors)
    admissions: list[Admission] = []
    preemptions: list[Preemption] = []
    for job in sorted(ready, key=admission_order):
        candidate = Candidate(job, bins.asked(job.demand, job.pods_per_node),
                              rooms.get(job.level))
        decision = decide(candidate, state)  # `rules.RULES`, in order
        if decision.admission is not None:
            admissions.append(decision.admission)
        if decision.waiting is not None:
            waiting.append(decision.waiting)
        if decision.preemption is not None:
            preemptions.append(decision.preemption)
        resizes.extend(decision.resizes)
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
            rooms: Mapping[str, LevelRoom], bins: RoundBins, ever: Capacity) -> list[Claim]:
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
