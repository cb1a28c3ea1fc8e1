"""The job admitter: a leader-elected task in the extender that lifts the placement gate.

Observe -> decide -> apply, every `interval_seconds` after the cache changed, as the
overprovisioner's tick does (three places, this loop wiring them):
- observe: the cache's gated pods, the gang records (`headstart.io/v1alpha1` Gangs,
  watched like pods: an admitted job's unbound pods reserve room in its record's
  domain, read back from the API, so a new leader or a restarted replica counts the
  same), the nodes' room per topology level (`planner.snapshot_of`), and what
  `extender.admission.observe` last read besides, as one frozen `RoundAsk`: the node
  groups' sizes from cluster-autoscaler's status ConfigMap, Karpenter's NodePools
  (groups whose room is unknown are passed on, so jobs are released rather than held)
  and the overprovisioner's worker plans, which steer Running elastic gangs' sizes;
- decide: `locality.admission` (pure: `planner.decide`, `round.plan_round`), in the
  planning process or a worker thread (`extender.admission.deciding`);
- apply, only while this replica leads (`kube.leader`, Lease `admission.lease_name`):
  `extender.admission.apply` (records, gate patches, PodGroups, Events, evictions,
  suspensions, resizes), then the round's own writes are put into the cache before
  the watch brings them (`_assume`).

A follower plans too (for /explain and the metric) but writes nothing.

Threads and processes: the round's inputs are copied from the cache on the event loop
(`snapshot`: references to immutable pods and node states, milliseconds at 5,000
nodes and 8,000 gated pods); the plan is made in the planning process from its replica
of the cache (`extender.admission.planning_process`, `admission.planning: process`), or from the
snapshot in a worker thread (`thread`, or once that process is lost), and the API calls
run in a worker thread too, so kube-scheduler's filter and bind keep being answered
during a round (bench/bench_admission_rounds.py; a planning thread holds the GIL while
it packs, hence `GIL_SWITCH_SECONDS`).

Must not: decide admissions (the core does); call the API itself (observe.py and
apply.py do); touch the cache from a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from kubernetes import client as k8s

from common.errors import InputError
from extender.admission.apply import Outcome, RoundWriter
from extender.admission.deciding import RoundDecider
from extender.admission.events import COMPONENT
from extender.admission.observe import AdmissionReader
from extender.admission.planning_process import (
    PlanningProcess,
    RoundAsk,
    headroom_of,
    snapshot_of,
)
from extender.admission.report import explained, longest_gated, summarised, waiting_by_code
from extender.admission.throttle import Throttle, Throttled
from extender.cache import ClusterCache
from locality.admission.config import AdmissionConfig
from locality.admission.model import GatedJob, Plan
from locality.admission.record import GangRecord, parse_gang
from locality.admission.round import Inputs
from locality.admission.snapshot import LevelRoom
from locality.config import LocalityConfig
from locality.model import JobKey, Pod
from locality.suspension import JobName, JobSuspension

log = logging.getLogger("headstart.extender.admitter")

GIL_SWITCH_SECONDS = 0.001
"""The extender's thread switch interval (`sys.setswitchinterval`; Python's default is
5 ms). With `admission.planning: thread` (or once the planning process is lost) a round
plans in a worker thread that holds the GIL while it packs; the event loop answering
kube-scheduler gets it back after at most this long (bench/bench_admission_rounds.py:
1 ms against Python's 5 ms with `--switch-seconds 0.005`)."""


def _of(part: str, path: str) -> property:
    """What one of the admitter's parts keeps, as the metrics and tests read it (0 for
    the writer's counts when there is no writer: no API client)."""
    get = operator.attrgetter(path)
    return property(lambda self: 0 if getattr(self, part) is None
                    else get(getattr(self, part)))


class Admitter:
    """Plans every round; applies while `is_leader()`."""

    admitted_jobs_total = _of("writer", "admitted_jobs_total")
    evicted_jobs_total = _of("writer", "evicted_jobs_total")
    preempted_gangs_total = _of("writer", "preempted_gangs_total")
    resized_jobs_total = _of("writer", "resized_jobs_total")
    suspended_jobs_total = _of("writer", "evictor.suspended_jobs_total")
    released_jobs_total = _of("writer", "evictor.released_jobs_total")
    events_dropped_total = _of("writer", "events.dropped_total")
    planner = _of("decider", "planner")
    """The planning process, None while rounds plan in a worker thread."""
    planner_failures_total = _of("decider", "failures_total")
    loop_seconds = _of("decider", "loop_seconds")
    """What the last round held the event loop for (`RoundDecider.loop_seconds`)."""

    def __init__(
        self,
        cache: ClusterCache,
        locality: LocalityConfig,
        config: AdmissionConfig,
        api_client: Any | None,
        is_leader: Callable[[], bool],
        identity: str = COMPONENT,
        sizes_listed: Callable[[], bool] = lambda: True,
        batch_jobs: Callable[[], Mapping[JobName, JobSuspension]] = dict,
        planner: PlanningProcess | None = None,
    ) -> None:
        """sizes_listed: whether the objects that size jobs (PodGroups, owners) have
        been listed once; no round runs before (`ClusterSync.sizes_listed`). batch_jobs:
        the batch/v1 Jobs seen (`Resolver.batch_jobs`), read on the event loop. planner:
        the process that plans rounds (`extender.admission.planning_process`); None: a worker
        thread plans them. api_client None: nothing is read or written (plans only)."""
        self.cache = cache
        self.locality = locality
        self._config = config
        self.is_leader = is_leader
        self.decider = RoundDecider(cache, locality, config, planner)
        """Where rounds are decided (`extender.admission.deciding`)."""
        self.sizes_listed = sizes_listed
        self.batch_jobs = batch_jobs
        # Every API call of the admitter goes through one rate limit, retried on 429/5xx.
        self.throttle = Throttle(config.api_qps, config.api_burst)
        apis = (None, None, None) if api_client is None else tuple(
            Throttled(api(api_client), self.throttle)
            for api in (k8s.CoreV1Api, k8s.CustomObjectsApi, k8s.PolicyV1Api))
        self.reader = AdmissionReader(*apis, config)
        """The reads besides the cache (`extender.admission.observe`)."""
        self.writer = None if api_client is None else RoundWriter(
            api_client, self.throttle, locality, config, is_leader, identity,
            self.reader.disruption_budgets)
        """The writes (`extender.admission.apply`)."""
        self.last_plan = Plan()
        self.last_round_wall: float | None = None
        self.patch_failures_total = 0
        self._seen_version = -1
        self.last_headroom: list[dict[str, Any]] = []
        """The last round's nodes to come per domain (`planner.headroom_of`)."""

    @property
    def config(self) -> AdmissionConfig:
        return self._config

    @config.setter
    def config(self, config: AdmissionConfig) -> None:
        """Every part reads `config` from the next round on (a planning process keeps
        the one it started with)."""
        self._config = config
        parts: list[Any] = [self.reader, self.decider]
        if self.writer is not None:
            parts += [self.writer, self.writer.gates, self.writer.evictor]
        for part in parts:
            part.config = config

    # ---- observe and decide (event loop) ------------------------------------------

    def plan_now(self, now: float) -> Plan:
        """One round's plan, here and now (tests, benchmarks): `snapshot` then `plan`."""
        planned, _, rooms = self.plan(self.snapshot(), now)
        self.last_headroom = headroom_of(rooms)
        return planned

    def snapshot(self) -> Inputs:
        """What a round plans from, read from the cache (event loop only): references
        to immutable pods and node states, copied containers, so the worker thread
        never reads the cache while watches change it (`planner.snapshot_of`)."""
        return snapshot_of(self.cache, self.config.gate, self._ask(0.0))

    def _ask(self, now: float) -> RoundAsk:
        undisruptable = self.writer.evictor.undisruptable(now) if self.writer is not None \
            else frozenset()
        return self.reader.observe(now, self.batch_jobs(), undisruptable)

    def plan(self, inputs: Inputs, now: float
             ) -> tuple[Plan, dict[JobKey, GatedJob], dict[str, LevelRoom]]:
        """The round's decisions from `inputs` alone (`locality.admission.round`): safe
        in a worker thread."""
        return self.decider.plan(inputs, now)

    def explain(self, pod: Pod) -> dict[str, Any] | None:
        """The admission state of `pod`'s job in the last round, None when not gated."""
        return explained(self.last_plan, pod, self.config.gate, self.locality,
                         self.is_leader)

    def summary(self) -> dict[str, Any]:
        """Every gated job and its reason (GET /admission)."""
        return summarised(self.last_plan, self.is_leader(), self.reader.summary(),
                          self.last_headroom)

    def longest_gated_seconds(self, now: float) -> float:
        """How long the oldest pod still behind the placement gate has waited (0: none):
        what an alert on a stuck or absent admitter reads."""
        return longest_gated(self.cache.gated_pods(), self.config.gate, now)

    def waiting_by_code(self) -> dict[str, int]:
        return waiting_by_code(self.last_plan)

    # ---- the loop -----------------------------------------------------------------

    async def run(self) -> None:
        """Rounds until cancelled: one after every cache change, at most one per
        `interval_seconds`; a round that wrote nothing while jobs wait is repeated on
        the next change only (or every 10 intervals: reasons that depend on time)."""
        idle = 0
        while True:
            await asyncio.sleep(self.config.interval_seconds)
            cache = self.cache
            if not cache.ready() or not self.sizes_listed():
                continue
            idle += 1
            await self.refresh_autoscaler(time.monotonic())
            await self.refresh_worker_plans(time.monotonic())
            if cache.version == self._seen_version and idle < 10:
                continue
            idle = 0
            self._seen_version = cache.version
            try:
                await self.round(time.time())
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug must not end admissions: log, retry next round
                log.exception("admission round failed")

    async def refresh_autoscaler(self, now: float) -> None:
        """Read CA's status ConfigMap and Karpenter's NodePools when their time has come
        (`observe.AUTOSCALER_STATUS_SECONDS`; now: time.monotonic()); a change of either
        replans."""
        if await self.reader.refresh_autoscaler(now):
            self._seen_version = -1  # the headroom changed: plan again now

    async def refresh_worker_plans(self, now: float) -> None:
        """Read the worker plans when `refresh_seconds` have passed (now:
        time.monotonic()); a change replans."""
        if await self.reader.refresh_worker_plans(now):
            self._seen_version = -1  # the sizes asked changed: plan again now

    async def round(self, now: float) -> Outcome:
        """Plan off the event loop (the planning process, or a worker thread from a
        snapshot taken here: the loop keeps answering kube-scheduler meanwhile), and
        apply when leading."""
        ask = self._ask(now)
        decided, records = await self.decider.decided(ask)
        self.last_headroom = decided.headroom
        self.last_plan = decided.plan
        self.last_round_wall = now
        writer = self.writer
        if not self.is_leader() or writer is None:
            return Outcome()
        writer.written, writer.gates.ungated = [], []
        try:
            outcome = await asyncio.to_thread(writer.apply, decided, records,
                                              ask.batch_jobs, now)
        finally:
            self._assume(records, writer.written, writer.gates.ungated)
            writer.written, writer.gates.ungated = [], []
        self.patch_failures_total += outcome.failed
        return outcome

    def _assume(self, records: Mapping[JobKey, GangRecord], written: list[dict[str, Any]],
                ungated: list[Pod]) -> None:
        """Put this round's own writes into the cache before the watch brings them (event
        loop), as Kueue assumes a Workload it admitted: the next round must not place a
        job again, or the rest of a job elsewhere, because the watch is late. A record
        or pod the watch has changed since it was planned from is left as the watch has
        it (newer than this round's view)."""
        assumed: set[JobKey] = set()
        for applied in reversed(written):  # a job's last write is its record
            try:
                record = parse_gang(applied)
            except InputError:
                continue  # not the shape we wrote: the watch's copy decides
            if record.job in assumed:
                continue
            assumed.add(record.job)
            if self.cache.gangs.get(record.job) is records.get(record.job):
                self.cache.apply_gang(record)
        for pod in ungated:
            if self.cache.pod(pod.namespace, pod.name) is pod:
                self.cache.apply_pod(replace(pod, scheduling_gates=tuple(
                    gate for gate in pod.scheduling_gates if gate != self.config.gate)))

    def start_planning_process(self) -> None:
        """Plan rounds in a process of their own from now on (`admission.planning:
        process`; `extender.admission.deciding`)."""
        self.decider.start_process()

    def close(self) -> None:
        """Stop the planning process, if any (shutdown)."""
        self.decider.close()
