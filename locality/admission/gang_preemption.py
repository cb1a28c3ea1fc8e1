"""Gang-aware preemption: which whole lower-priority gangs a job that fits nowhere evicts,
inside the one domain chosen.

Why: kube-scheduler's DefaultPreemption picks victims node by node, so a job of eight
pods could take one member from each of eight gangs and leave every one of them holding
its GPUs, broken. Here the unit is the gang, as Kueue's preemption takes whole
Workloads, and the extender's preempt verb refuses candidates that would take a member
of a gang (`locality.preempt_verb`), so the two agree.

Rule:
- Only a job that no domain at its level holds now, even with the nodes the autoscaler
  can add, and that some domain could hold (not inadmissible), preempts (`assign`).
  Placeholders' room already counts as free, so placeholders always go first (kube-
  scheduler preempts them when the pods bind).
- Candidates (`candidates`): gangs headstart admitted (a record in Admitted, Running or
  Recovering) whose priority, the highest of their live members, is below the job's,
  and whose every live member has a controlling owner (a Job, a JobSet's Job) that
  recreates it: headstart never removes what nothing gives back.
- Room already leaving (`leaving`): bound pods of gangs, Terminating, count as free, so
  a preemption under way is waited for and never widened.
- Per domain: candidates with a bound member on the domain's nodes, lowest priority
  first, then fewest GPUs, then name, are added until the job's pods all pack with
  their bound members' room given back; then each chosen victim, last first, is kept
  when the job still fits without it (Kueue's minimal set). Domains compare by the
  highest victim priority, then the victims' GPUs, then their number, then name
  (`ranking.gentlest_preemption`).
- Members not bound free nothing here (their room is a reservation `assign` packed
  already): a conservative count, never an optimistic one.

Must not: read the clock, log, mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from bucketing.resources import Resources
from locality.admission.model import Demand, Domain, Gang, GatedJob, Preemption, bound_requests
from locality.admission.pack import Bins, pack
from locality.admission.ranking import gentlest_preemption
from locality.admission.record import GangRecord, is_member
from locality.model import JobKey, Pod


def candidates(records: Iterable[GangRecord],
               pods_of_job: Callable[[JobKey], Sequence[Pod]],
               undisruptable: Collection[JobKey] = ()) -> tuple[Gang, ...]:
    """The gangs a higher-priority job may evict (any priority: `choose` compares), but
    those whose eviction PodDisruptionBudgets refused lately (`undisruptable`: other
    victims are chosen, or the job waits)."""
    gangs = []
    for record in records:
        if not record.state.holds_domain or record.job in undisruptable:
            continue
        live = tuple(pod for pod in pods_of_job(record.job)
                     if is_member(pod) and not pod.terminal)
        if not live or any(pod.controller is None for pod in live):
            continue
        gangs.append(Gang(record.job, max(pod.priority for pod in live), live))
    return tuple(sorted(gangs, key=_victim_order))


def leaving(records: Iterable[GangRecord],
            pods_of_job: Callable[[JobKey], Sequence[Pod]]) -> dict[str, Resources]:
    """Per node, the requests of gangs' bound pods that are Terminating."""
    return bound_requests(pod for record in records for pod in pods_of_job(record.job)
                    if pod.deleting and not pod.terminal)


ROOM_CHECK = True
"""Skip a domain whose room with every lower gang freed falls short of the job's total
request (a necessary condition: no subset of those gangs can do better); off only for
bench/bench_preemption.py's baseline."""
MEMORY = True
"""`Unsatisfied` remembers shapes preemption could not satisfy within a round; off only
for the benchmark's baseline."""


class Unsatisfied:
    """Within one round: the questions `choose` answered None, by the job's shape
    (demand, pods per node, size, priority), the gangs already taken and the round's
    room (`RoundBins.changes`): a later job asking the same question gets None without
    packing (the answer is a function of exactly these)."""

    def __init__(self) -> None:
        self._asked: set[tuple] = set()

    def key(self, job: GatedJob, asked: object, taken: frozenset[JobKey],
            changes: int) -> tuple:
        return (asked, len(job.gated), job.priority, job.level, taken, changes)

    def known(self, key: tuple) -> bool:
        return MEMORY and key in self._asked

    def add(self, key: tuple) -> None:
        self._asked.add(key)


def choose(job: GatedJob, demand: Demand, domains: Mapping[Domain, Bins],
           gangs: Sequence[Gang], gone: Mapping[str, Resources],
           taken: frozenset[JobKey] = frozenset()) -> Preemption | None:
    """The preemption that lets `job` fit one of `domains` (its level's domains, as
    `assign` left them this round), None when none does. gangs: `candidates`; gone:
    `leaving`; taken: gangs another job of this round preempts already."""
    size = len(job.gated)
    lower = [gang for gang in gangs if gang.priority < job.priority and gang.job not in taken]
    best: tuple[tuple, Preemption] | None = None
    # Each lower gang under every domain it has a member in, in `lower`'s order: one
    # pass over the gangs, not one per domain (200 jobs x 100 domains x 500 gangs asked
    # `nodes` 10 million times: bench/bench_preemption.py).
    domain_of = {node.name: domain for domain, bins in domains.items() for node in bins.nodes}
    by_domain: dict[Domain, list[Gang]] = {}
    for gang in lower:
        for domain in dict.fromkeys(domain_of[name] for name in gang.nodes
                                    if name in domain_of):
            by_domain.setdefault(domain, []).append(gang)
    wanted = _totals(request for request, _, count in demand for _ in range(count))
    leaving_in: dict[Domain, list[Resources]] = {}
    for name, resources in gone.items():
        if name in domain_of:
            leaving_in.setdefault(domain_of[name], []).append(resources)
    for domain, bins in domains.items():
        here = by_domain.get(domain, [])
        if ROOM_CHECK and not _could_hold(bins, wanted, leaving_in.get(domain, ()), here):
            continue  # not even with every lower gang here gone: no packing needed
        base = bins.freed(gone)  # only this domain's nodes count: `freed` skips others
        if _fits(base, demand, size, job):
            victims: list[Gang] = []
        else:
            chosen = _enough(base, demand, size, job, here)
            if chosen is None:
                continue
            victims = chosen
        rank = gentlest_preemption(victims, domain.value)
        if best is None or rank < best[0]:
            best = (rank, Preemption(job.key, job.priority, domain, tuple(victims),
                                     _note(job, domain, victims)))
    return best[1] if best is not None else None


def _enough(base: Bins, demand: Demand, size: int, job: GatedJob, lower: Sequence[Gang]
            ) -> list[Gang] | None:
    """The fewest of `lower` (in order) whose bound members' room lets the job fit."""
    chosen: list[Gang] = []
    for gang in lower:
        chosen.append(gang)
        if _fits(base.freed(_freed(chosen)), demand, size, job):
            break
    else:
        return None
    for gang in reversed(chosen[:-1]):  # the last one was needed: it tipped the fit
        rest = [g for g in chosen if g is not gang]
        if _fits(base.freed(_freed(rest)), demand, size, job):
            chosen = rest
    return chosen


def _totals(requests: Iterable[Resources]) -> tuple[int, int, int]:
    gpu = cpu = memory = 0
    for request in requests:
        gpu += request.gpu_milli
        cpu += request.cpu_milli
        memory += request.memory_bytes
    return gpu, cpu, memory


def _could_hold(bins: Bins, wanted: tuple[int, int, int], leaving: Iterable[Resources],
                gangs: Sequence[Gang]) -> bool:
    """Whether the domain's room with every one of `gangs` and the `leaving` pods gone
    could cover the demand's totals (`wanted`: GPU, CPU, memory), its groups' new nodes
    counted: an upper bound on that room (a row's negative room counted as none), so a
    False is certain: no choice of those gangs lets any packing place the demand."""
    room = bins.room
    have = [int(room.gpu.clip(min=0).sum()), int(room.cpu.clip(min=0).sum()),
            int(room.memory.clip(min=0).sum())]
    for _, allocatable, count, _ in bins.pool:
        have[0] += allocatable.gpu_milli * count
        have[1] += allocatable.cpu_milli * count
        have[2] += allocatable.memory_bytes * count
    freed = _totals([*leaving, *(pod.request for gang in gangs for pod in gang.pods
                                 if pod.node_name is not None)])
    return all(h + f >= w for h, f, w in zip(have, freed, wanted, strict=True))


def _fits(bins: Bins, demand: Demand, size: int, job: GatedJob) -> bool:
    return pack(bins.copy(), demand, job.pods_per_node) == size


def _freed(gangs: Iterable[Gang]) -> dict[str, Resources]:
    return bound_requests(pod for gang in gangs for pod in gang.pods)


def _victim_order(gang: Gang) -> tuple:
    return (gang.priority, gang.gpu_milli, gang.job.namespace, gang.job.name)


def _note(job: GatedJob, domain: Domain, victims: Sequence[Gang]) -> str:
    if not victims:
        return (f"fits {domain} once the pods of the gangs evicted for it are gone; "
                "waiting for them to end")
    names = ", ".join(f"{v.job} (priority {v.priority}, {len(v.pods)} pods)" for v in victims)
    return (f"no domain holds it now; evicting lower-priority gang(s) whole in {domain} "
            f"for it (priority {job.priority}): {names}; admitted once their pods are gone")
