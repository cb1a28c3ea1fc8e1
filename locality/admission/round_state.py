"""What the admission rules (`rules.RULES`) share within one round: the job they are
asked about (`Candidate`), the round's working room and bookkeeping (`RoundState`), what
a rule decides (`Decision`), and whether a job could ever fit (`Capacity`).

Must not: decide (the rules do), read the clock, log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bucketing.resources import Resources
from locality.admission.config import AdmissionConfig
from locality.admission.gang_preemption import Unsatisfied
from locality.admission.model import (
    Admission,
    Domain,
    Gang,
    GatedJob,
    Preemption,
    Resize,
    Waiting,
    demand_of,
)
from locality.admission.pack import Bins, open_bins
from locality.admission.resize import ElasticGang
from locality.admission.snapshot import CLUSTER_LEVEL, LevelRoom
from locality.admission.trials import Asked, RoundBins, Search, TrialMemo
from locality.model import JobKey, Locality
from locality.worker_plans import WorkerPlan


@dataclass(slots=True)
class Candidate:
    """A ready job as the rules see it: its demand made ready to ask domains (`asked`)
    and its level's room (None: no such level)."""

    job: GatedJob
    asked: Asked
    room: LevelRoom | None
    searched: Search | None = None
    """Rule 3's ranking of its level's domains (`search_of`), once asked."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What a rule decided for one job: admitted, or waiting and why; and what else the
    round does for it (the owners resized, the gangs preempted)."""

    admission: Admission | None = None
    waiting: Waiting | None = None
    resizes: tuple[Resize, ...] = ()
    preemption: Preemption | None = None


@dataclass
class RoundState:
    """The round's working room and what its rules have done so far. `bins` is taken
    from as jobs are decided; the sets grow."""

    bins: RoundBins
    rooms: Mapping[str, LevelRoom]
    ever: Capacity
    now: float
    config: AdmissionConfig
    unknown: Sequence[str] = ()
    """The autoscaler's groups whose room is not known, each described (rule 4)."""
    wider: Mapping[str, Sequence[str]] = field(default_factory=dict)
    gangs: Sequence[Gang] = ()
    """The admitted gangs a higher-priority job may evict (rule 5)."""
    leaving: Mapping[str, Resources] = field(default_factory=dict)
    elastic: Mapping[Domain, Sequence[ElasticGang]] = field(default_factory=dict)
    shrinking: Mapping[str, Resources] = field(default_factory=dict)
    plans: Mapping[str, WorkerPlan] | None = None
    unsatisfied: Unsatisfied = field(default_factory=Unsatisfied)
    """Preemption questions answered None this round."""
    donors: set[JobKey] = field(default_factory=set)
    """Gangs scaled in this round already (each gives room to one job per round)."""
    taken: set[JobKey] = field(default_factory=set)
    """Gangs a job of this round evicts already (each is the victim of one job)."""
    head: tuple[GatedJob, Domain, Bins] | None = None
    """The job holding room (rule 6), its domain, and that domain's room before the hold."""


def search_of(candidate: Candidate, state: RoundState) -> Search:
    """Rule 3's ranking of the candidate's level (`RoundBins.search`), for an earlier
    stage of a group only among the domains that hold the whole group
    (`whole_group`). Asked once per candidate: the rules after rule 3 take no room
    unless they decide, so the answer holds for all of them."""
    if candidate.searched is None:
        room = candidate.room
        assert room is not None
        whole = whole_group(candidate.job, room, state.bins)
        candidate.searched = state.bins.search(
            candidate.job.level, room.domains, candidate.asked,
            None if whole is None else frozenset(domain.value for domain in whole))
    return candidate.searched


def whole_group(job: GatedJob, room: LevelRoom, bins: RoundBins) -> set[Domain] | None:
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


def cluster_holds(candidate: Candidate, state: RoundState) -> bool:
    """A `preferred` job the whole cluster holds now: released there, no preemption."""
    if candidate.job.policy.placement_group is not Locality.PREFERRED:
        return False
    cluster = Domain(CLUSTER_LEVEL, CLUSTER_LEVEL)
    return cluster in state.bins and state.bins.fits(cluster, candidate.asked)


class Capacity:
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
