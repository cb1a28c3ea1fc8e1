"""Where the admitter's rounds are decided: the planning process, else a worker thread.

The decision itself is pure (`planner.decide`: `locality.admission.round.plan_round`,
then recovery and orphaned records). With `admission.planning: process` it is made in
the planning process from its replica of the cache (`extender.admission.planning_process`);
with `thread`, or once that process is lost, from a snapshot of the cache taken on the
event loop, in a worker thread. A lost process is replaced by a new one, whose replica
starts from the cache as it is then, until `PLANNER_STARTS` were lost in a row: rounds
plan in a thread from then on.

Must not: decide admissions (the core does), read the cache off the event loop, talk
to the API.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from extender.admission.observe import catalog_shapes
from extender.admission.planning_process import (
    Decided,
    PlannerGone,
    PlanningProcess,
    RoundAsk,
    decide,
    snapshot_of,
)
from extender.cache import ClusterCache
from locality.admission.config import AdmissionConfig
from locality.admission.model import GatedJob, Plan
from locality.admission.record import GangRecord
from locality.admission.round import Inputs, RoundMemo, plan_round, wider_levels
from locality.admission.snapshot import LevelRoom
from locality.config import LocalityConfig
from locality.model import JobKey

log = logging.getLogger("headstart.extender.admitter")

PLANNER_STARTS = 3
"""Planning processes started in a row without one answering a round before rounds
plan in a worker thread for good (a process killed by a memory limit each time would
otherwise cost a start and the whole cache shipped every round)."""


class RoundDecider:
    """Decides the rounds of one admitter, keeping what earlier rounds worked out."""

    def __init__(self, cache: ClusterCache, locality: LocalityConfig,
                 config: AdmissionConfig, planner: PlanningProcess | None = None) -> None:
        """planner: the process that plans rounds; None: a worker thread plans them."""
        self.cache = cache
        self.locality = locality
        self.config = config
        self.planner = planner
        self.failures_total = 0
        """Planning processes lost (each replaced, until `PLANNER_STARTS` in a row)."""
        self._losses = 0  # in a row, since the last round a process answered
        self.shapes = catalog_shapes(locality)
        self.wider = wider_levels(locality)
        """Per topology level, the wider ones, nearest first (a `preferred` job's widening)."""
        self.memo = RoundMemo()
        """What earlier rounds worked out: a round redoes only what changed."""
        self._planning = threading.Lock()  # one round at a time uses `memo`
        self.loop_seconds = 0.0
        """What the last round held the event loop for (its snapshot, or the planning
        process's journal and answer): kube-scheduler's requests wait meanwhile."""

    def plan(self, inputs: Inputs, now: float
             ) -> tuple[Plan, dict[JobKey, GatedJob], dict[str, LevelRoom]]:
        """The round's plan from `inputs` alone (`locality.admission.round`): safe in a
        worker thread."""
        with self._planning:
            return plan_round(inputs, now, self.locality, self.config, self.shapes,
                              self.wider, self.memo)

    async def decided(self, ask: RoundAsk) -> tuple[Decided, dict[JobKey, GangRecord]]:
        """The round's decisions and the gang records they were made from: from the
        planning process when there is one (it plans the cache as it is now), else in a
        worker thread from a snapshot taken now. Sets `loop_seconds`."""
        if self.planner is not None:
            # Read in the same step of the loop as the journal is taken (`plan` runs
            # up to its first await before this one yields): the replica's records.
            records = dict(self.cache.gangs)
            try:
                decided = await self.planner.plan(ask)
                self.loop_seconds = self.planner.loop_seconds
                self._losses = 0
                return decided, records
            except PlannerGone as gone:
                self._lost(gone)
        started = time.perf_counter()
        inputs = snapshot_of(self.cache, self.config.gate, ask)
        self.loop_seconds = time.perf_counter() - started
        return await asyncio.to_thread(self._decide, inputs, ask.now), inputs.records

    def _decide(self, inputs: Inputs, now: float) -> Decided:
        with self._planning:
            return decide(inputs, now, self.locality, self.config, self.shapes, self.wider,
                          self.memo)

    def _lost(self, gone: PlannerGone) -> None:
        """This round plans in a thread; the next in a new process, whose replica starts
        from the cache as it is now, unless `PLANNER_STARTS` were lost in a row (a
        process that cannot live here: rounds plan in a thread from then on)."""
        assert self.planner is not None
        self.planner.close(lost=True)
        self.planner = None
        self.failures_total += 1
        self._losses += 1
        if self._losses < PLANNER_STARTS:
            self.start_process()
            log.error("planning process lost: a new one starts from the cache as it is",
                      extra={"reason": str(gone), "lost_in_a_row": self._losses})
        else:
            log.error("planning processes lost %d times in a row: rounds plan in a worker "
                      "thread from now on", self._losses, extra={"reason": str(gone)})

    def start_process(self) -> None:
        """Plan rounds in a process of their own from now on (`admission.planning:
        process`). The extender starts it before its watches; started later, its first
        round ships the cache as it is."""
        self.planner = PlanningProcess(self.cache, self.locality, self.config, self.shapes,
                                       self.wider)

    def close(self) -> None:
        """Stop the planning process, if any (shutdown)."""
        if self.planner is not None:
            self.planner.close()
            self.planner = None
