"""The admitter's writes: one round's decisions applied, in the admitter's worker thread.

In order, while this replica leads (asked again before each job, and before each pod):
- the admitted jobs, `job_workers` at once, each first its gang record (state Admitted,
  the domain: `extender.admission.records`; a job whose record cannot be written is not
  admitted this round), then its PodGroup and its pods (`extender.admission.ungate`); a
  job cut short between two pods' patches is completed into the same domain by a later
  round (`locality.admission.assign`); then the admitted pods' Events;
- pods that are not the admitter's are released (`HeadstartReleased`);
- a waiting job's record and `HeadstartWaiting` Events when its wait code changes
  (Waiting, or Inadmissible);
- preemptions, then resizes (`extender.admission.resizer`: the owner, then the record's
  size and the PodGroup's minMember), then what the admitted gangs' state calls for
  (`locality.admission.recovery`: Running once all pods are bound, Recovering, evicted
  whole: `extender.admission.evictions`), and records whose job has no pod left deleted;
- Jobs headstart suspended whose time has come resumed.
Every API call is paced by one rate limit and retried on 429/5xx after `Retry-After`
(`extender.admission.throttle`). A write that fails is left for the next round, which
plans again from the cache. What was written (`written`, `gates.ungated`) is put into
the cache by the admitter, on the event loop, before the watch brings it.

Must not: decide (the core did), touch the cache, read the clock (`now` is passed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from extender.admission.events import EventRecorder
from extender.admission.evictions import GangEvictor
from extender.admission.planning_process import Decided, JobFacts
from extender.admission.podgroups import PodGroupWriter
from extender.admission.records import RecordWriter
from extender.admission.resizer import OwnerResizer
from extender.admission.throttle import Throttle, Throttled
from extender.admission.ungate import GatePatcher
from kube.kinds import BY_KIND
from locality.admission.budgets import Budget
from locality.admission.config import AdmissionConfig
from locality.admission.coscheduling import POD_GROUP_LABEL, pod_group_name
from locality.admission.model import Admission, Resize, WaitCode, Waiting
from locality.admission.record import REQUEUE_LIMIT, GangRecord, GangState, gang_body, timestamp
from locality.admission.recovery import Transition
from locality.config import PLACEMENT_GROUP_LEVEL, LocalityConfig
from locality.model import JobKey, Locality, Pod
from locality.suspension import JobName, JobSuspension

log = logging.getLogger("headstart.extender.admitter")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one round wrote: pods patched, and pods whose patch is left for later."""

    patched: int = 0
    failed: int = 0


class RoundWriter:
    """Applies rounds' decisions; keeps what must outlive a round (Events not sent yet,
    the wait codes and refusals already said) and the counts the metrics export."""

    def __init__(self, api_client: Any, throttle: Throttle, locality: LocalityConfig,
                 config: AdmissionConfig, is_leader: Callable[[], bool], identity: str,
                 budgets: Callable[[Sequence[Pod]], list[Budget] | None]) -> None:
        """budgets: reads PodDisruptionBudgets (`observe.AdmissionReader`)."""
        self.config = config
        self.is_leader = is_leader
        core = Throttled(k8s.CoreV1Api(api_client), throttle)
        self.events = EventRecorder(core, identity)
        self._records = RecordWriter(api_client, throttle)
        self._pod_groups = PodGroupWriter(api_client, throttle)
        self._resizer = OwnerResizer(api_client, throttle)
        self.gates = GatePatcher(core, config, is_leader, self.events, self._pod_groups)
        self.evictor = GangEvictor(core, self._resizer, self.events, budgets, locality,
                                   config)
        self._jobs_at_once = ThreadPoolExecutor(config.job_workers,
                                                thread_name_prefix="headstart-admitter-job")
        self.written: list[dict[str, Any]] = []
        """Gang records this round applied, as the API server answered."""
        self._jobs: Mapping[JobKey, JobFacts] = {}  # the round's gated jobs
        self._seen_records: Mapping[JobKey, GangRecord] = {}  # the round's records
        self._announced: dict[JobKey, WaitCode] = {}
        self._refused: set[tuple[str, str, str, int]] = set()
        """Resizes the API refused, each said once (an Event on the owner)."""
        self.admitted_jobs_total = 0
        self.evicted_jobs_total = 0
        self.preempted_gangs_total = 0
        self.resized_jobs_total = 0

    def apply(self, decided: Decided, records: Mapping[JobKey, GangRecord],
              batch_jobs: Mapping[JobName, JobSuspension], now: float) -> Outcome:
        """Write the round `decided` from `records` and `batch_jobs` (worker thread)."""
        planned = decided.plan
        self._jobs, self._seen_records = decided.jobs, records
        self.evictor.batch_jobs = batch_jobs
        self.events.send_unsent()
        patched = failed = 0
        # Jobs are independent (their domains are decided, their pods disjoint): a few
        # at once, so a round of many small gangs is not a queue of round trips.
        for admission, (done, missed) in zip(planned.admissions, self._jobs_at_once.map(
                lambda admission: self._admit(admission, now), planned.admissions),
                strict=True):
            patched += done
            failed += missed
            if not missed:
                self.admitted_jobs_total += 1
                self._announced.pop(admission.job, None)
        self.gates.send_events()  # after every gate of the round is lifted
        if not self.is_leader():
            # Fenced by the lease: a replica that lost it stops before each job (and each
            # pod, `GatePatcher.admit`); the new leader completes a job cut short into the
            # domain its record names.
            log.warning("leadership lost mid-round: the rest is left to the new leader")
            return Outcome(patched, failed)
        for release in planned.releases:
            if self.gates.ungate(release.pod, None, Locality.NONE):
                patched += 1
                self.events.on_pod(release.pod, "HeadstartReleased", release.reason, now)
            else:
                failed += 1
        for waiting in planned.waiting:
            self._announce(waiting, now)
        for preemption in planned.preemptions:
            for victim in preemption.victims:
                message = (f"preempted whole by {preemption.job} (priority "
                           f"{preemption.priority}) in {preemption.domain}; admitted again, "
                           "whole, when there is room")
                # Evicted, to be admitted again at once behind the job that preempted it
                # (no backoff: it did nothing wrong), its eviction count unchanged.
                if self._evict(victim.job, victim.pods, message, now, now,
                               self._seen_records.get(victim.job)):
                    self.preempted_gangs_total += 1
        for resize in planned.resizes:
            self._resize(resize, now)
        self._keep_records(decided, now)
        self.evictor.release(now)
        return Outcome(patched, failed)

    def _admit(self, admission: Admission, now: float) -> tuple[int, int]:
        """The job's record, its PodGroup, then its pods: (pods ungated, pods left); none
        once this replica no longer leads (a job worker's thread)."""
        if not self.is_leader():
            return 0, len(admission.pods)
        gang_uid = self._record(admission.job, GangState.ADMITTED, now, admission=admission)
        group = self.gates.pod_group(admission, gang_uid, self._jobs.get(admission.job)) \
            if gang_uid else None
        if group is None:
            return 0, len(admission.pods)
        labels, group_uid = group
        done, missed = self.gates.admit(admission, now, labels)
        if done and group_uid:
            # Coscheduling turned away the pods ungated before their siblings: the
            # PodGroup's update makes kube-scheduler try them all again now.
            self._pod_groups.touch(admission.job.namespace, labels[POD_GROUP_LABEL],
                                   group_uid, timestamp(now))
        return done, missed

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
        self.written.append(applied)
        return str((applied.get("metadata") or {}).get("uid") or "") or None

    def _evict(self, job: JobKey, pods: Sequence[Pod], message: str,
               requeue_at: float | None, now: float, record: GangRecord | None,
               counted: bool = False, final: bool = False) -> bool:
        """Evict the gang whole (`evictions.GangEvictor`) and record it: Evicted until
        `requeue_at` (counted as an eviction or not), or Inadmissible for good when
        `final`. A refusal by budgets is said on its `record`, the state kept (so the
        bind and ready timeouts keep counting). Whether all of it went."""
        evicted = self.evictor.evict(pods, message, requeue_at, now, record is not None)
        if evicted.refused is not None and record is not None:
            refused_job, why = evicted.refused
            self._record(refused_job, record.state, record.since or now, message=why)
        if not evicted.done:
            return False  # the next round plans it again (without it, if budgets refused)
        if final:  # past the requeue limit: never admitted again
            self._record(job, GangState.INADMISSIBLE, now, message=message,
                         reason=REQUEUE_LIMIT, counted=True)
        else:
            self._record(job, GangState.EVICTED, now, message=message,
                         requeue_at=requeue_at, counted=counted,
                         suspended=evicted.suspended)
        return True

    def _keep_records(self, decided: Decided, now: float) -> None:
        """Gangs after admission (`locality.admission.recovery`): Running once whole,
        Recovering when short, evicted whole when not whole in time; records whose job
        has no pod left are deleted."""
        for action in decided.after:
            if isinstance(action, Resize):
                self._resize(action, now)
            elif isinstance(action, Transition):
                self._record(action.record.job, action.state, now, message=action.message)
            elif self._evict(action.record.job, action.pods, action.message,
                             None if action.final else action.requeue_at, now,
                             action.record, action.counted, action.final):
                self.evicted_jobs_total += 1
        for record in decided.orphans:
            self._records.delete(record)

    def _resize(self, resize: Resize, now: float) -> None:
        """Write an elastic job's new size to its owner (`extender.admission.resizer`);
        once written, a gang holding a domain gets the size on its record (the recovery
        clock counts members against it) and on its PodGroup's minMember, and the owner
        an Event saying why. A refused write is decided again next round."""
        owner = resize.owner
        involved = {"apiVersion": BY_KIND[owner.kind].api_version(), "kind": owner.kind,
                    "name": owner.name, "namespace": owner.namespace}
        refused = self._resizer.resize(owner, resize.after)
        attempt = (owner.kind, owner.namespace, owner.name, resize.after)
        if refused is not None:
            if attempt not in self._refused:  # said once per size, not every round
                self._refused.add(attempt)
                self.events.on(involved, "HeadstartResizeRefused", (
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
            if self.config.pod_groups:
                self._pod_groups.resize(resize.job, pod_group_name(resize.job.name), pods)
        self.events.on(involved, "HeadstartResized",
                       f"{resize.before} -> {resize.after}: {resize.reason}", now)

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
            self.events.on_pod(pod, "HeadstartWaiting", waiting.reason, now,
                               "Warning" if waiting.code in (WaitCode.NO_FIT, WaitCode.NO_LEVEL,
                                                             WaitCode.INADMISSIBLE,
                                                             WaitCode.SIZE_MISMATCH)
                               else "Normal")
