"""The admission rules that resize elastic jobs (`locality.elastic`), as `rules.RULES`
runs them: a worker plan's size (7b), the largest size that fits (7), and KOD2's
scale-in of lighter gangs (8). The numbers are those of `assign`'s docstring.

Must not: read the clock (`state.now` is passed), log, mutate its inputs.
"""

from __future__ import annotations

from locality.admission.model import Domain, Resize, WaitCode, Waiting, demand_of
from locality.admission.ranking import fewest_removed, largest_size
from locality.admission.resize import at_size, claimant_of, job_weight, resized, scale_in
from locality.admission.round_state import Candidate, Decision, RoundState, cluster_holds
from locality.admission.trials import Asked, Trial
from locality.worker_plans import target_of


def resize_to_worker_plan(candidate: Candidate, state: RoundState) -> Decision | None:
    """Elastic, with a fresh worker plan a domain holds: resized to it, `resizing` (7b)."""
    job, room, bins = candidate.job, candidate.room, state.bins
    owner = job.elastic
    if not state.config.elastic.enabled or owner is None or not state.plans:
        return None
    assert room is not None
    found = target_of(state.plans, owner.kind, owner.namespace, owner.name, owner.uid,
                      state.now)
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
    best = bins.search(job.level, room.domains, asked).best  # `ranking.best_fit`, as in 3
    if best is None:
        return None
    _, domain = best
    bins.take(domain, demand, job.pods_per_node)
    resize = Resize(job.key, owner, owner.size, size, (
        f"resized from {owner.size} to {size} by its worker plan ({found.reason}), which "
        f"{domain} holds: admitted once its owner has that size"))
    return Decision(waiting=Waiting(job.key, job.gated, WaitCode.RESIZING, resize.reason),
                    resizes=(resize,))


def resize_to_fit(candidate: Candidate, state: RoundState) -> Decision | None:
    """Elastic: the largest size down to its minimum a domain holds, `resizing` (7)."""
    job, room, bins = candidate.job, candidate.room, state.bins
    owner = job.elastic
    if not state.config.elastic.enabled or owner is None:
        return None
    assert room is not None and owner.bounds is not None
    # Per domain the largest size by bisection (a domain that holds k pods of the job
    # holds k - 1), so a job of thousands of workers costs a few packs per domain.
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
        rank = largest_size(size, trial.new_nodes, trial.free_gpu_milli, value)
        if best is None or rank < best[0]:
            best = (rank, size, domain)
    if best is None:
        return None
    _, size, domain = best
    bins.take(domain, asked[size].demand, job.pods_per_node)
    resize = Resize(job.key, owner, owner.size, size, (
        f"no {job.level} domain holds all {owner.size} pods now; resized to {size} "
        f"(its minimum is {owner.bounds.minimum}), which {domain} holds: admitted "
        "once its owner has that size"))
    return Decision(waiting=Waiting(job.key, job.gated, WaitCode.RESIZING, resize.reason),
                    resizes=(resize,))


def scale_in_lighter(candidate: Candidate, state: RoundState) -> Decision | None:
    """Lighter elastic gangs scaled in in one domain of its level, `scaling_in` (8)."""
    job, room, bins = candidate.job, candidate.room, state.bins
    if not (state.elastic or state.shrinking) or cluster_holds(candidate, state):
        return None
    assert room is not None
    pods = list(job.gated)
    if job.elastic is not None and job.elastic.bounds is not None:
        pods = at_size(pods, job.elastic.bounds.minimum)
    claimant = claimant_of(job.key, pods, job_weight(job.gated, state.now - job.created_at,
                                                     state.config.elastic.weight),
                           job.created_at, job.pods_per_node, job.priority)
    best: tuple[tuple, Domain, tuple[Resize, ...]] | None = None
    for value in room.domains:
        domain = Domain(job.level, value)
        if domain not in bins:
            continue
        gangs = [gang for gang in state.elastic.get(domain, ())
                 if gang.job not in state.donors]
        made = scale_in(claimant, bins[domain].freed(state.shrinking), gangs)
        if made is None:
            continue
        rank = fewest_removed(sum(len(resize.removed) for resize in made), value)
        if best is None or rank < best[0]:
            best = (rank, domain, made)
    if best is None:
        return None
    _, domain, made = best
    bins.take(domain, claimant.demand, job.pods_per_node)  # what it can use now is its
    state.donors.update(resize.job for resize in made)
    return Decision(waiting=Waiting(job.key, job.gated, WaitCode.SCALING_IN, "; ".join(
        f"{resize.job} {resize.reason}" for resize in made) or (
        f"fits {domain} once the workers leaving it are gone")), resizes=tuple(made))

