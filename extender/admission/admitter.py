"""The job admitter: a leader-elected task in the extender that lifts the placement gate.

Observe -> plan -> apply, every `interval_seconds` after the cache changed:
- observe: the cache's gated pods, the gang records (`headstart.io/v1alpha1` Gangs,
  watched like pods: an admitted job's unbound pods reserve room in its record's
  domain, read back from the API, so a new leader or a restarted replica counts the
  same), the nodes' room per topology level (`planner.snapshot_of`), and what
  `extender.admission.observe` last read besides: the node groups' sizes from
  cluster-autoscaler's status ConfigMap, Karpenter's NodePools (groups whose room is
  unknown are passed on, so jobs are released rather than held) and the
  overprovisioner's worker plans, which steer Running elastic gangs' sizes;
- plan: `locality.admission` (pure);
- apply, only while this replica leads (`kube.leader`, Lease
  `admission.lease_name`): for each admitted job, first its gang record (state
  Admitted, the domain: `extender.admission.records`; a job whose record cannot be
  written is not admitted this round), then each pod is read fresh and patched,
  `write_workers` pods at once, every API call paced by one rate limit and retried on
  429/5xx after `Retry-After` (`extender.admission.throttle`)
  (`extender.admission.patch`: domain affinity, domain annotation and gate removal in
  one JSON patch guarded by `test`s); Events on the pods (`HeadstartAdmitted`,
  `HeadstartWaiting` when a job's wait reason changes, `HeadstartReleased` for pods
  that are not the admitter's); a waiting job's record is written when its wait code
  changes (Waiting, or Inadmissible), an admitted one's becomes Running once all its
  pods are bound, and a record whose job has no pod left is deleted. A failed patch
  (422: the pod changed; 404: gone; any API fault) is left for the next round, which
  plans again from the cache; a job cut short between two pods' patches is completed
  into the same domain
  (`locality.admission.assign`).

A follower plans too (for /explain and the metric) but writes nothing.

Threads and processes: the round's inputs are copied from the cache on the event loop
(`snapshot`: references to immutable pods and node states, milliseconds at 5,000
nodes and 8,000 gated pods); the plan is made in the planning process from its replica
of the cache (`extender.admission.planner`, `admission.planning: process`), or from the
snapshot in a worker thread (`thread`, or once that process is lost), and the API calls
run in a worker thread too, so kube-scheduler's filter and bind keep being answered
during a round (bench/bench_admission_rounds.py; a planning thread holds the GIL while
it packs, hence `GIL_SWITCH_SECONDS`).

Must not: decide admissions (the core does); touch the cache from a worker thread.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from common.errors import InputError
from extender.admission.observe import AdmissionReader, catalog_shapes, read_json
from extender.admission.patch import label_patch, ungate_patch
from extender.admission.planner import (
    Decided,
    JobFacts,
    PlannerGone,
    PlanningProcess,
    RoundAsk,
    decide,
    facts_of,
    headroom_of,
    snapshot_of,
)
from extender.admission.podgroups import Outcome as PodGroupOutcome
from extender.admission.podgroups import PodGroupWriter
from extender.admission.records import RecordWriter
from extender.admission.resizer import OwnerResizer
from extender.admission.throttle import Throttle, Throttled
from extender.cache import ClusterCache
from kube.kinds import BY_KIND
from locality.admission.budgets import blocking
from locality.admission.config import AdmissionConfig
from locality.admission.coscheduling import POD_GROUP_LABEL, pod_group_body, pod_group_name
from locality.admission.model import (
    Admission,
    GatedJob,
    Plan,
    Preemption,
    Resize,
    WaitCode,
    Waiting,
)
from locality.admission.record import (
    REQUEUE_LIMIT,
    GangRecord,
    GangState,
    gang_body,
    parse_gang,
    timestamp,
)
from locality.admission.recovery import Eviction, Transition, ready_timeout_of
from locality.admission.round import Inputs, RoundMemo, plan_round, wider_levels
from locality.admission.snapshot import LevelRoom
from locality.admission.suspend import jobs_to_release, jobs_to_suspend, suspension_of
from locality.config import PLACEMENT_GROUP_LEVEL, LocalityConfig
from locality.jobs import job_key_of
from locality.model import JobKey, Locality, Pod
from locality.suspension import JobName, JobSuspension

EVENT_TRIES = 12
"""Tries per Event before it is dropped: client-go's event recorder's maxTriesPerEvent
(tools/record/event.go); here one try per applied round."""
UNSENT_EVENTS = 1000
"""Events kept for another try at most (the oldest goes first)."""
log = logging.getLogger("headstart.extender.admitter")

COMPONENT = "headstart-admitter"


UNDISRUPTABLE_SECONDS = 60.0
"""How long a gang whose eviction PodDisruptionBudgets refused is no preemption victim:
long enough for a round to choose others, short enough to try it again once the
budget's disruption controller has counted its pods anew."""

PLANNER_STARTS = 3
"""Planning processes started in a row without one answering a round before rounds
plan in a worker thread for good (a process killed by a memory limit each time would
otherwise cost a start and the whole cache shipped every round)."""

GIL_SWITCH_SECONDS = 0.001
"""The extender's thread switch interval (`sys.setswitchinterval`; Python's default is
5 ms). With `admission.planning: thread` (or once the planning process is lost) a round
plans in a worker thread that holds the GIL while it packs; the event loop answering
kube-scheduler gets it back after at most this long (bench/bench_admission_rounds.py:
1 ms against Python's 5 ms with `--switch-seconds 0.005`)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one round wrote: pods patched, and pods whose patch is left for later."""

    patched: int = 0
    failed: int = 0


class Admitter:
    """Plans every round; applies while `is_leader()`."""

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
        the process that plans rounds (`extender.admission.planner`); None: a worker
        thread plans them."""
        self.cache = cache
        self.locality = locality
        self.config = config
        self.is_leader = is_leader
        self.identity = identity
        self.planner = planner
        self.planner_failures_total = 0
        """Planning processes lost (each replaced, until `PLANNER_STARTS` in a row)."""
        self._planner_losses = 0  # in a row, since the last round a process answered
        self.sizes_listed = sizes_listed
        self.batch_jobs = batch_jobs
        self._round_jobs: Mapping[JobName, JobSuspension] = {}  # the applied round's Jobs
        # Every API call of the admitter goes through one rate limit, retried on 429/5xx.
        self.throttle = Throttle(config.api_qps, config.api_burst)
        self._core = Throttled(k8s.CoreV1Api(api_client), self.throttle) \
            if api_client is not None else None
        self._records = RecordWriter(api_client, self.throttle) \
            if api_client is not None else None
        self._pod_groups = PodGroupWriter(api_client, self.throttle) \
            if api_client is not None else None
        self._resizer = OwnerResizer(api_client, self.throttle) \
            if api_client is not None else None
        self._workers = ThreadPoolExecutor(config.write_workers,
                                           thread_name_prefix="headstart-admitter-write")
        custom = policy = None
        if api_client is not None:
            custom = Throttled(k8s.CustomObjectsApi(api_client), self.throttle)
            policy = Throttled(k8s.PolicyV1Api(api_client), self.throttle)
        self.reader = AdmissionReader(self._core, custom, policy, config)
        """The reads besides the cache (`extender.admission.observe`)."""
        self._undisruptable: dict[JobKey, float] = {}
        """Gangs whose eviction PodDisruptionBudgets refused, until when they are no
        preemption victims (`UNDISRUPTABLE_SECONDS` after; a new leader finds out anew)."""
        self._blocked_said: dict[JobKey, str] = {}
        """Why each gang's eviction was last refused (said once on its record)."""
        self._written_records: list[dict[str, Any]] = []
        """Gang records this round applied, as the API server answered (`_assume`)."""
        self._ungated: list[Pod] = []
        """Pods this round lifted the gate of (`_assume`)."""
        self._jobs: dict[JobKey, JobFacts] = {}  # the last round's jobs, for their records
        self._seen_records: dict[JobKey, GangRecord] = {}  # the round's records (a copy)
        self.last_plan = Plan()
        self.last_round_wall: float | None = None
        self.admitted_jobs_total = 0
        self.patch_failures_total = 0
        self.evicted_jobs_total = 0
        self.preempted_gangs_total = 0
        self.resized_jobs_total = 0
        self.suspended_jobs_total = 0
        self.released_jobs_total = 0
        self._refused: set[tuple[str, str, str, int]] = set()
        """Resizes the API refused, each said once (an Event on the owner)."""
        self._unsent_events: collections.deque[tuple[int, dict[str, Any]]] = \
            collections.deque(maxlen=UNSENT_EVENTS)
        """Events the API did not take (a fault, not a refusal): (tries so far, body),
        sent again at the start of each applied round."""
        self.events_dropped_total = 0
        self._announced: dict[JobKey, WaitCode] = {}
        self._seen_version = -1
        self.last_headroom: list[dict[str, Any]] = []
        """The last round's nodes to come per domain (`planner.headroom_of`)."""
        self._shapes = catalog_shapes(locality)
        self._wider = wider_levels(locality)
        self._memo = RoundMemo()
        """What earlier rounds worked out: a round redoes only what changed."""
        self._planning = threading.Lock()  # one round at a time uses `_memo`
        self.loop_seconds = 0.0
        """What the last round held the event loop for (its snapshot, or the planning
        process's journal and answer): kube-scheduler's requests wait meanwhile."""
        """Per topology level, the wider ones, nearest first (a `preferred` job's widening)."""

    # ---- plan (event loop) --------------------------------------------------------

    def plan_now(self, now: float) -> Plan:
        """One round's plan, here and now (tests, benchmarks): `snapshot` then `plan`."""
        planned, jobs, rooms = self.plan(self.snapshot(), now)
        self._jobs, self.last_headroom = facts_of(jobs), headroom_of(rooms)
        return planned

    def snapshot(self) -> Inputs:
        """What a round plans from, read from the cache (event loop only): references
        to immutable pods and node states, copied containers, so the worker thread
        never reads the cache while watches change it (`planner.snapshot_of`)."""
        return snapshot_of(self.cache, self.config.gate, self._ask(0.0))

    def _ask(self, now: float) -> RoundAsk:
        self._undisruptable = {job: until for job, until in self._undisruptable.items()
                               if until > now}
        return self.reader.observe(now, self.batch_jobs(), frozenset(self._undisruptable))

    def plan(self, inputs: Inputs, now: float
             ) -> tuple[Plan, dict[JobKey, GatedJob], dict[str, LevelRoom]]:
        """The round's decisions from `inputs` alone (`locality.admission.round`): safe
        in a worker thread."""
        with self._planning:
            return plan_round(inputs, now, self.locality, self.config, self._shapes,
                              self._wider, self._memo)

    def explain(self, pod: Pod) -> dict[str, Any] | None:
        """The admission state of `pod`'s job in the last round, None when not gated."""
        if self.config.gate not in pod.scheduling_gates:
            return None
        job = job_key_of(pod, self.locality)
        for waiting in self.last_plan.waiting:
            if waiting.job == job:
                said = {"state": "waiting", "code": waiting.code.value, "reason": waiting.reason}
                if waiting.position is not None:
                    said["queue_position"], said["queue_length"] = waiting.position
                return said
        for admission in self.last_plan.admissions:
            if admission.job == job:
                return {"state": "admitting", "domain": str(admission.domain or ""),
                        "note": admission.note}
        for release in self.last_plan.releases:
            if release.pod.uid == pod.uid:
                return {"state": "releasing", "reason": release.reason}
        return {"state": "not planned yet", "leader": self.is_leader()}

    def summary(self) -> dict[str, Any]:
        """Every gated job and its reason (GET /admission)."""
        last = self.last_plan
        return {
            "leader": self.is_leader(),
            "waiting": [{"job": str(w.job), "pods": len(w.pods), "code": w.code.value,
                         "reason": w.reason,
                         "queue_position": w.position[0] if w.position else None}
                        for w in last.waiting],
            "admitting": [{"job": str(a.job), "pods": len(a.pods),
                           "domain": str(a.domain or ""), "new_nodes": a.new_nodes,
                           "note": a.note} for a in last.admissions],
            "releasing": [{"pod": r.pod.full_name, "reason": r.reason}
                          for r in last.releases],
            "preempting": [{"job": str(p.job), "domain": str(p.domain),
                            "victims": [str(v.job) for v in p.victims]}
                           for p in last.preemptions],
            **self.reader.summary(),
            "unknown_room": list(last.unknown_room),
            "headroom": self.last_headroom,
        }

    def longest_gated_seconds(self, now: float) -> float:
        """How long the oldest pod still behind the placement gate has waited (0: none):
        what an alert on a stuck or absent admitter reads."""
        created = [pod.created_at for pod in self.cache.gated_pods()
                   if self.config.gate in pod.scheduling_gates and pod.created_at]
        return max(0.0, now - min(created)) if created else 0.0

    def waiting_by_code(self) -> dict[str, int]:
        counts = {code.value: 0 for code in WaitCode}
        for waiting in self.last_plan.waiting:
            counts[waiting.code.value] += 1
        return counts

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
        decided, records = await self._decided(ask)
        self._jobs, self.last_headroom = decided.jobs, decided.headroom
        self.last_plan = decided.plan
        self.last_round_wall = now
        if not self.is_leader() or self._core is None:
            return Outcome()
        self._round_jobs = ask.batch_jobs
        self._written_records, self._ungated = [], []
        try:
            outcome = await asyncio.to_thread(self._apply, decided.plan, now, records,
                                              decided.after, decided.orphans)
        finally:
            self._assume(records)
        self.patch_failures_total += outcome.failed
        return outcome

    def _assume(self, records: Mapping[JobKey, GangRecord]) -> None:
        """Put this round's own writes into the cache before the watch brings them (event
        loop), as Kueue assumes a Workload it admitted: the next round must not place a
        job again, or the rest of a job elsewhere, because the watch is late. A record
        or pod the watch has changed since it was planned from is left as the watch has
        it (newer than this round's view)."""
        assumed: set[JobKey] = set()
        for applied in reversed(self._written_records):  # a job's last write is its record
            try:
                record = parse_gang(applied)
            except InputError:
                continue  # not the shape we wrote: the watch's copy decides
            if record.job in assumed:
                continue
            assumed.add(record.job)
            if self.cache.gangs.get(record.job) is records.get(record.job):
                self.cache.apply_gang(record)
        for pod in self._ungated:
            if self.cache.pod(pod.namespace, pod.name) is pod:
                self.cache.apply_pod(replace(pod, scheduling_gates=tuple(
                    gate for gate in pod.scheduling_gates if gate != self.config.gate)))
        self._written_records, self._ungated = [], []

    async def _decided(self, ask: RoundAsk) -> tuple[Decided, dict[JobKey, GangRecord]]:
        """The round's decisions and the gang records they were made from: from the
        planning process when there is one (it plans the cache as it is now), else in a
        worker thread from a snapshot taken now. Sets `loop_seconds`, what the round
        held the event loop for."""
        if self.planner is not None:
            # Read in the same step of the loop as the journal is taken (`plan` runs
            # up to its first await before this one yields): the replica's records.
            records = dict(self.cache.gangs)
            try:
                decided = await self.planner.plan(ask)
                self.loop_seconds = self.planner.loop_seconds
                self._planner_losses = 0
                return decided, records
            except PlannerGone as gone:
                self._planner_lost(gone)
        started = time.perf_counter()
        inputs = snapshot_of(self.cache, self.config.gate, ask)
        self.loop_seconds = time.perf_counter() - started
        return await asyncio.to_thread(self._decide, inputs, ask.now), inputs.records

    def _decide(self, inputs: Inputs, now: float) -> Decided:
        with self._planning:
            return decide(inputs, now, self.locality, self.config, self._shapes, self._wider,
                          self._memo)

    def _planner_lost(self, gone: PlannerGone) -> None:
        """This round plans in a thread; the next in a new process, whose replica starts
        from the cache as it is now, unless `PLANNER_STARTS` were lost in a row (a
        process that cannot live here: rounds plan in a thread from then on)."""
        assert self.planner is not None
        self.planner.close(lost=True)
        self.planner = None
        self.planner_failures_total += 1
        self._planner_losses += 1
        if self._planner_losses < PLANNER_STARTS:
            self.start_planning_process()
            log.error("planning process lost: a new one starts from the cache as it is",
                      extra={"reason": str(gone), "lost_in_a_row": self._planner_losses})
        else:
            log.error("planning processes lost %d times in a row: rounds plan in a worker "
                      "thread from now on", self._planner_losses, extra={"reason": str(gone)})

    def start_planning_process(self) -> None:
        """Plan rounds in a process of their own from now on (`admission.planning:
        process`; `extender.admission.planner`). The extender starts it before its
        watches; started later, its first round ships the cache as it is."""
        self.planner = PlanningProcess(self.cache, self.locality, self.config, self._shapes,
                                       self._wider)

    def close(self) -> None:
        """Stop the planning process, if any (shutdown)."""
        if self.planner is not None:
            self.planner.close()
            self.planner = None

    # ---- apply (worker thread: API calls only) ------------------------------------

    def _apply(self, planned: Plan, now: float, records: dict[JobKey, GangRecord],
               after: list[Transition | Eviction | Resize], orphans: list[GangRecord]
               ) -> Outcome:
        self._seen_records = records
        self._send_unsent_events()
        patched = failed = 0
        for admission in planned.admissions:
            if not self.is_leader():
                # Fenced by the lease: a replica that lost it stops between two jobs (and
                # between two pods, `_admit`); the new leader completes a job cut short
                # into the domain its record names.
                log.warning("leadership lost mid-round: the rest is left to the new leader")
                failed += sum(len(a.pods) for a in planned.admissions[
                    planned.admissions.index(admission):])
                return Outcome(patched, failed)
            gang_uid = self._record(admission.job, GangState.ADMITTED, now, admission=admission)
            group = self._pod_group(admission, gang_uid) if gang_uid else None
            if group is None:
                failed += len(admission.pods)
                continue
            labels, group_uid = group
            done, missed = self._admit(admission, now, labels)
            if done and group_uid and self._pod_groups is not None:
                # Coscheduling turned away the pods ungated before their siblings: the
                # PodGroup's update makes kube-scheduler try them all again now.
                self._pod_groups.touch(admission.job.namespace, labels[POD_GROUP_LABEL],
                                       group_uid, timestamp(now))
            patched += done
            failed += missed
            if not missed:
                self.admitted_jobs_total += 1
                self._announced.pop(admission.job, None)
        for release in planned.releases:
            if self._ungate(release.pod, None, Locality.NONE):
                patched += 1
                self._event(release.pod, "HeadstartReleased", release.reason, now)
            else:
                failed += 1
        for waiting in planned.waiting:
            self._announce(waiting, now)
        self._preempt(planned.preemptions, now)
        for resize in planned.resizes:
            self._resize(resize, now)
        self._keep_records(now, after, orphans)
        self._release_jobs(now)
        return Outcome(patched, failed)

    def _record(self, job: JobKey, state: GangState, now: float,
                admission: Admission | None = None, waiting: Waiting | None = None,
                message: str = "", requeue_at: float | None = None,
                counted: bool = True, size: int | None = None,
                suspended: tuple[JobSuspension, ...] = (),
                reason: str | None = None) -> str | None:
        """Apply the job's gang record: its uid, None when it could not be written. The domain
        and evictions of its last record carry over unless an admission sets a domain;
        an eviction (Evicted, or Inadmissible past the requeue limit) adds one unless
        not `counted` (a preemption, a fail-fast eviction). size: a resize's new size
        (else the job's declared size, or the record's). suspended: the Jobs an eviction
        suspended. reason: the record's reason (default: the state's name)."""
        assert self._records is not None
        gathered = self._jobs.get(job)
        record = self._seen_records.get(job)
        if size is None:
            size = gathered.size if gathered is not None else (record.size if record else None)
        level = gathered.level if gathered is not None else \
            (record.level if record else PLACEMENT_GROUP_LEVEL)
        policy = gathered.policy if gathered is not None else \
            (record.policy if record else Locality.REQUIRED.value)
        evictions = record.evictions if record is not None else 0
        common = {"size": size, "level": level, "policy": policy, "now": now}
        if admission is not None:
            body = gang_body(job, state, domain=admission.domain, label_key=admission.label_key,
                             new_nodes=admission.new_nodes,
                             reason="RoomUnknown" if admission.room_unknown else "Admitted",
                             message=admission.note, evictions=evictions, **common)
        elif waiting is not None:
            body = gang_body(job, state, reason=waiting.code.value, message=waiting.reason,
                             evictions=evictions, **common)
        else:
            assert record is not None
            keeps_domain = state.holds_domain
            evicted = state is GangState.EVICTED or reason == REQUEUE_LIMIT
            body = gang_body(job, state, domain=record.domain if keeps_domain else None,
                             label_key=record.label_key if keeps_domain else None,
                             reason=reason or state.value, message=message,
                             evictions=evictions + (evicted and counted),
                             requeue_at=requeue_at,
                             suspended_jobs=tuple((job.kind, job.name, job.uid)
                                                  for job in suspended),
                             **common)
        applied = self._records.apply(body)
        if applied is None:
            return None
        self._written_records.append(applied)
        return str((applied.get("metadata") or {}).get("uid") or "") or None

    def _keep_records(self, now: float, after: list[Transition | Eviction | Resize],
                      orphans: list[GangRecord]) -> None:
        """Gangs after admission (`locality.admission.recovery`): Running once whole,
        Recovering when short, evicted whole when not whole in time; records whose job
        has no pod left are deleted."""
        assert self._records is not None
        for action in after:
            if isinstance(action, Resize):
                self._resize(action, now)
                continue
            if isinstance(action, Transition):
                self._record(action.record.job, action.state, now, message=action.message)
                continue
            done, suspended = self._evict_gang(
                action.pods, action.message, None if action.final else action.requeue_at, now,
                action.record)
            if not done:
                continue
            self.evicted_jobs_total += 1
            if action.final:  # past the requeue limit: never admitted again
                self._record(action.record.job, GangState.INADMISSIBLE, now,
                             message=action.message, reason=REQUEUE_LIMIT,
                             counted=True)
            else:
                self._record(action.record.job, GangState.EVICTED, now,
                             message=action.message, requeue_at=action.requeue_at,
                             suspended=suspended, counted=action.counted)
        for record in orphans:
            self._records.delete(record)

    def _preempt(self, preemptions: tuple[Preemption, ...], now: float) -> None:
        """Evict each victim gang whole (`locality.admission.preempt`) and record it
        `Evicted`, to be admitted again at once behind the job that preempted it (no
        backoff: it did nothing wrong), its eviction count unchanged."""
        for preemption in preemptions:
            for victim in preemption.victims:
                message = (f"preempted whole by {preemption.job} (priority "
                           f"{preemption.priority}) in {preemption.domain}; admitted again, "
                           "whole, when there is room")
                record = self._seen_records.get(victim.job)
                done, suspended = self._evict_gang(victim.pods, message, now, now, record)
                if not done:
                    continue  # the next round plans it again (without it, if budgets refused)
                self.preempted_gangs_total += 1
                self._record(victim.job, GangState.EVICTED, now, message=message,
                             requeue_at=now, counted=False, suspended=suspended)

    def _resize(self, resize: Resize, now: float) -> None:
        """Write an elastic job's new size to its owner (`extender.admission.resizer`);
        once written, a gang holding a domain gets the size on its record (the recovery
        clock counts members against it) and on its PodGroup's minMember, and the owner
        an Event saying why. A refused write is decided again next round."""
        assert self._resizer is not None
        owner = resize.owner
        involved = {"apiVersion": BY_KIND[owner.kind].api_version(), "kind": owner.kind,
                    "name": owner.name, "namespace": owner.namespace}
        refused = self._resizer.resize(owner, resize.after)
        attempt = (owner.kind, owner.namespace, owner.name, resize.after)
        if refused is not None:
            if attempt not in self._refused:  # said once per size, not every round
                self._refused.add(attempt)
                self._event_on(involved, "HeadstartResizeRefused", (
                    f"{resize.before} -> {resize.after} refused ({refused}); kept at "
                    f"{resize.before}, decided again when the cluster changes"), now, "Warning")
            return
        self._refused.discard(attempt)
        self.resized_jobs_total += 1
        record = self._seen_records.get(resize.job)
        if record is not None and record.state.holds_domain:
            # The gang's pods, not the owner's count: a PyTorchJob's master stays.
            pods = owner.pods(resize.after)
            self._record(resize.job, record.state, now, message=resize.reason, size=pods)
            if self.config.pod_groups and self._pod_groups is not None:
                self._pod_groups.resize(resize.job, pod_group_name(resize.job.name), pods)
        self._event_on(involved, "HeadstartResized",
                       f"{resize.before} -> {resize.after}: {resize.reason}", now)

    def _evict_gang(self, pods: Sequence[Pod], message: str, requeue_at: float | None,
                    now: float, record: GangRecord | None = None
                    ) -> tuple[bool, tuple[JobSuspension, ...]]:
        """Evict a gang's `pods` whole: by suspending their Jobs until `requeue_at` where
        that applies (`locality.admission.suspend`; None: for good, headstart never
        resumes them), else through the Eviction API, one pod at a time.
        (whether all of it went, the Jobs suspended). A suspension the API refuses falls
        back to evicting the pods."""
        jobs = jobs_to_suspend(pods, self._round_jobs) if self.config.suspend_jobs else ()
        assert self._resizer is not None
        suspended = []
        for job in jobs:
            if self._resizer.suspend(job, requeue_at) is not None:
                break
            suspended.append(job)
            self.suspended_jobs_total += 1
            until = ("suspended for good: resume it yourself once fixed" if requeue_at is None
                     else f"suspended until {timestamp(requeue_at)}, then resumed by headstart")
            self._event_on(_job_reference(job), "HeadstartSuspended",
                           f"{message}; {until} (its pods count as no failure)", now, "Warning")
        if jobs and len(suspended) == len(jobs):
            return True, tuple(suspended)
        # Not every Job could be suspended: the pods of the others go by eviction.
        taken = {job.key for job in suspended}

        def suspended_with(pod: Pod) -> bool:
            job = suspension_of(pod, self._round_jobs)
            return job is not None and job.key in taken

        rest = [pod for pod in pods if not suspended_with(pod)]
        refused = self._budgets_refuse(rest)
        if refused is None:
            return False, tuple(suspended)  # budgets unreadable now: the next round tries
        if refused:
            self._eviction_refused(record, rest, refused, now)
            return False, tuple(suspended)
        evicted = sum(self._evict(pod, message, now) for pod in rest)
        return evicted == len(rest), tuple(suspended)

    def _budgets_refuse(self, pods: Sequence[Pod]) -> list[str] | None:
        """Why PodDisruptionBudgets would stop the Eviction API part way through `pods`
        (`locality.admission.budgets`; empty: they would not); None when they could not
        be read (a fault: nothing is evicted this round)."""
        budgets = self.reader.disruption_budgets(pods)
        return None if budgets is None else blocking(pods, budgets)

    def _eviction_refused(self, record: GangRecord | None, pods: Sequence[Pod],
                          refused: list[str], now: float) -> None:
        """Budgets would refuse part of the gang: none of it is evicted. As a preemption
        victim it is passed over for `UNDISRUPTABLE_SECONDS`; why is said once on its
        record (the state kept) and in the log."""
        if not pods:
            return
        job = job_key_of(pods[0], self.locality)
        self._undisruptable[job] = now + UNDISRUPTABLE_SECONDS
        why = ("not evicted: " + "; ".join(refused) + " (a gang is evicted whole or not at "
               "all: retried when the budgets allow it, other victims chosen meanwhile)")
        log.warning("gang eviction refused by PodDisruptionBudgets",
                    extra={"job": str(job), "why": why})
        if record is None or self._blocked_said.get(job) == why:
            return
        self._blocked_said[job] = why
        # Its state and the time it entered it are kept: the message alone changes, so
        # the bind and ready timeouts keep counting.
        self._record(job, record.state, record.since or now, message=why)

    def _release_jobs(self, now: float) -> None:
        """Resume the Jobs headstart suspended whose time has come (or unmark those
        their owner resumed first), with an Event on each."""
        if self._resizer is None:
            return
        for job in jobs_to_release(self._round_jobs, now):
            if self._resizer.release(job) is not None:
                continue  # logged; the next round tries again
            if job.suspended:
                self.released_jobs_total += 1
                self._event_on(_job_reference(job), "HeadstartResumed",
                               "resumed after its gang's backoff: its pods are created "
                               "again and admitted whole", now)

    def _evict(self, pod: Pod, message: str, now: float) -> bool:
        """Evict one member through the Eviction API (its uid a precondition; PDBs
        honoured), with an Event saying why. A 404 is done already."""
        core = self._core
        assert core is not None
        body = k8s.V1Eviction(
            metadata=k8s.V1ObjectMeta(name=pod.name, namespace=pod.namespace),
            delete_options=k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=pod.uid)))
        try:
            core.create_namespaced_pod_eviction(pod.name, pod.namespace, body,
                                                _request_timeout=10)
        except ApiException as error:
            if error.status == 404:
                return True
            log.warning("could not evict a gang's pod; next round retries",
                        extra={"pod": pod.full_name, "status": error.status,
                               "error": str(error.reason)})
            return False
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            log.warning("could not evict a gang's pod; next round retries",
                        extra={"pod": pod.full_name,
                               "error": f"{type(error).__name__}: {error}"})
            return False
        self._event(pod, "HeadstartEvicted", message, now, "Warning")
        return True

    def _pod_group(self, admission: Admission, gang_uid: str
                   ) -> tuple[dict[str, str], str] | None:
        """(the labels that put the gang's pods in its PodGroup, created first and owned
        by its Gang: `locality.admission.coscheduling`; the PodGroup's uid); no labels
        for none (off, not served, pods naming their own, the name taken); None to
        retry next round."""
        if not self.config.pod_groups or self._pod_groups is None or any(
                POD_GROUP_LABEL in pod.labels for pod in admission.pods):
            return {}, ""
        gathered = self._jobs.get(admission.job)
        # A later stage's PodGroup counts only live pods: an earlier stage's Succeeded
        # ones are gone from kube-scheduler's view, and Coscheduling would wait for them.
        size = (gathered.live_size if gathered is not None else None) or len(admission.pods)
        body = pod_group_body(admission.job, size, self.config.pod_group_timeout_seconds,
                              gang_uid)
        outcome, uid = self._pod_groups.ensure(admission.job, body)
        if outcome is PodGroupOutcome.RETRY:
            return None
        if outcome is PodGroupOutcome.NONE:
            return {}, ""
        return {POD_GROUP_LABEL: body["metadata"]["name"]}, uid

    def _admit(self, admission: Admission, now: float,
               labels: dict[str, str] | None = None) -> tuple[int, int]:
        domain = None
        if admission.domain is not None and admission.label_key is not None:
            domain = (admission.label_key, admission.domain.value, str(admission.domain))
        message = (f"admitted with its job {admission.job} ({len(admission.pods)} pods): "
                   f"{admission.note}")
        # Released without known room: said where people look (kubectl describe pod).
        reason, kind = ("HeadstartRoomUnknown", "Warning") if admission.room_unknown \
            else ("HeadstartAdmitted", "Normal")

        def one(pod: Pod) -> bool:
            if not self.is_leader():
                return False  # the lease is lost mid-apply: the new leader completes it
            if not self._ungate(pod, domain, admission.locality, labels):
                return False
            self._ungated.append(pod)
            self._event(pod, reason, message, now, kind)
            return True

        # Every member carries the gang's PodGroup label before any is ungated
        # (`patch.label_patch` says why); then the pods at once (`write_workers`), paced
        # by the throttle. A member not labelled leaves the job to the next round.
        if labels and not all(self._workers.map(
                lambda pod: self._patch_pod(pod, lambda current: label_patch(
                    current, self.config.gate, labels)), admission.pods)):
            return 0, len(admission.pods)
        done = sum(self._workers.map(one, admission.pods))
        _, ignored = ready_timeout_of(admission.pods, self.config)
        if done and ignored is not None:  # said once, on the job's first pod
            self._event(admission.pods[0], "HeadstartReadyTimeoutIgnored", ignored, now,
                        "Warning")
        return done, len(admission.pods) - done

    def _ungate(self, pod: Pod, domain: tuple[str, str, str] | None,
                locality: Locality, labels: dict[str, str] | None = None) -> bool:
        return self._patch_pod(pod, lambda current: ungate_patch(
            current, self.config.gate, domain, locality, self.config.domain_annotation, labels))

    def _patch_pod(self, pod: Pod, operations: Callable[[dict[str, Any]], Any]) -> bool:
        """Read the pod and apply the JSON patch `operations` makes of it (None: nothing
        to do); False when it failed or the pod was replaced (the next round retries)."""
        core = self._core
        assert core is not None
        try:
            raw = core.read_namespaced_pod(pod.name, pod.namespace,
                                           _preload_content=False, _request_timeout=10)
            try:
                current = read_json(raw)
            finally:
                raw.release_conn()
            if (current.get("metadata") or {}).get("uid") != pod.uid:
                return False  # replaced by a pod of the same name: plan it afresh
            ops = operations(current)
            if ops is None:
                return True  # nothing left to do (someone lifted the gate already)
            core.patch_namespaced_pod(pod.name, pod.namespace, ops,
                                      _content_type="application/json-patch+json",
                                      _request_timeout=10)
            return True
        except ApiException as error:
            level = logging.DEBUG if error.status in (404, 409, 422) else logging.WARNING
            log.log(level, "could not patch the pod (label or gate); next round retries",
                    extra={"pod": pod.full_name, "status": error.status,
                           "error": str(error.reason)})
            return False
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            log.warning("could not patch the pod (label or gate); next round retries",
                        extra={"pod": pod.full_name, "error": f"{type(error).__name__}: {error}"})
            return False

    def _announce(self, waiting: Waiting, now: float) -> None:
        """The job's record, and one HeadstartWaiting Event per pod, whenever the job's
        wait code changes."""
        if self._announced.get(waiting.job) is waiting.code:
            return
        state = GangState.INADMISSIBLE if waiting.code is WaitCode.INADMISSIBLE \
            else GangState.WAITING
        # A backoff is the Evicted record's own (its requeueAt), and a replacement that
        # waits for room in its running gang's domain leaves the gang's record (it holds
        # the domain, and recovery's clock): only the Events say why it waits.
        record = self._seen_records.get(waiting.job)
        keep = waiting.code is WaitCode.BACKOFF or (record is not None and (
            record.state.holds_domain or record.deactivated))
        if not keep and not self._record(waiting.job, state, now, waiting=waiting):
            return
        self._announced[waiting.job] = waiting.code
        for pod in waiting.pods:
            self._event(pod, "HeadstartWaiting", waiting.reason, now,
                        "Warning" if waiting.code in (WaitCode.NO_FIT, WaitCode.NO_LEVEL,
                                                      WaitCode.INADMISSIBLE,
                                                      WaitCode.SIZE_MISMATCH)
                        else "Normal")

    def _event(self, pod: Pod, reason: str, message: str, now: float,
               kind: str = "Normal") -> None:
        self._event_on({"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                        "namespace": pod.namespace, "uid": pod.uid}, reason, message, now, kind)

    def _event_on(self, involved: dict[str, str], reason: str, message: str, now: float,
                  kind: str = "Normal") -> None:
        core = self._core
        assert core is not None
        stamp = timestamp(now)
        namespace = involved["namespace"]
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason, "message": message[:1024], "type": kind,
            "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
            "reportingInstance": self.identity, "firstTimestamp": stamp,
            "lastTimestamp": stamp, "count": 1,
        }
        self._send_event(body, 0)

    def _send_event(self, body: dict[str, Any], tries: int) -> None:
        """Create the Event. A fault (the API unreachable, a 5xx, a timeout) keeps it for
        the next round, up to EVENT_TRIES tries in all, as client-go's event recorder
        retries; a refusal (4xx) drops it. Never a failure of the round."""
        assert self._core is not None
        try:
            self._core.create_namespaced_event(body["metadata"]["namespace"], body,
                                               _request_timeout=10)
            return
        except ApiException as error:
            if error.status is not None and 400 <= error.status < 500 and error.status != 429:
                self.events_dropped_total += 1
                return
        except Exception:  # noqa: BLE001 - transport faults: kept for the next round
            pass
        if tries + 1 >= EVENT_TRIES:
            self.events_dropped_total += 1
        else:
            if len(self._unsent_events) == self._unsent_events.maxlen:
                self.events_dropped_total += 1  # the oldest goes
            self._unsent_events.append((tries + 1, body))

    def _send_unsent_events(self) -> None:
        for _ in range(len(self._unsent_events)):
            tries, body = self._unsent_events.popleft()
            self._send_event(body, tries)


def _job_reference(job: JobSuspension) -> dict[str, str]:
    """A batch/v1 Job or a JobSet as an Event's involvedObject."""
    return {"apiVersion": job.api_version, "kind": job.kind,
            "name": job.name, "namespace": job.namespace, "uid": job.uid}
