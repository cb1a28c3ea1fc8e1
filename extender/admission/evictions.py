"""Evicts a gang whole for the admitter: by suspending its Jobs, else pod by pod.

Where `admission.suspend_jobs` applies (`locality.admission.suspend_owners`), the gang's
batch/v1 Jobs and JobSets are suspended until its requeue time (for good when there is
none) and resumed by `release` once it comes; a suspension the API refuses falls back
to evicting the pods. The rest go through the Eviction API, one pod at a time (its uid a
precondition), but only when the namespaces' PodDisruptionBudgets would let every one
go (`locality.admission.budgets`): a gang is evicted whole or not at all. One the budgets
refuse is no preemption victim for `UNDISRUPTABLE_SECONDS` (`undisruptable`, read into
the next rounds' observations). Runs in the admitter's worker thread; a failed call is
left for the next round.

Must not: decide who is evicted (`locality.admission.recovery`, `preempt`), write gang
records (the writer does, with what this says).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from extender.admission.events import EventRecorder, job_reference
from extender.admission.resizer import OwnerResizer
from locality.admission.budgets import Budget, blocking
from locality.admission.config import AdmissionConfig
from locality.admission.record import timestamp
from locality.admission.suspend_owners import jobs_to_release, jobs_to_suspend, suspension_of
from locality.config import LocalityConfig
from locality.jobs import job_key_of
from locality.model import JobKey, Pod
from locality.suspension import JobName, JobSuspension

log = logging.getLogger("headstart.extender.admitter")

UNDISRUPTABLE_SECONDS = 60.0
"""How long a gang whose eviction PodDisruptionBudgets refused is no preemption victim:
long enough for a round to choose others, short enough to try it again once the
budget's disruption controller has counted its pods anew."""


@dataclass(frozen=True, slots=True)
class Evicted:
    """What one gang's eviction did: whether all of it went, the Jobs it suspended, and
    the message its record is to carry when the budgets refused it (said once)."""

    done: bool
    suspended: tuple[JobSuspension, ...] = ()
    refused: tuple[JobKey, str] | None = None
    """(the gang, why) when budgets refused it for a reason not said before."""


class GangEvictor:
    """core: a (throttled) CoreV1Api; budgets: reads the PodDisruptionBudgets of pods
    (`observe.AdmissionReader.disruption_budgets`)."""

    def __init__(self, core: Any, resizer: OwnerResizer, events: EventRecorder,
                 budgets: Callable[[Sequence[Pod]], list[Budget] | None],
                 locality: LocalityConfig, config: AdmissionConfig) -> None:
        self._core = core
        self._resizer = resizer
        self._events = events
        self._budgets = budgets
        self.locality = locality
        self.config = config
        self.batch_jobs: Mapping[JobName, JobSuspension] = {}
        """The batch/v1 Jobs seen as the applied round observed them."""
        self.suspended_jobs_total = 0
        self.released_jobs_total = 0
        self._undisruptable: dict[JobKey, float] = {}
        """Gangs whose eviction PodDisruptionBudgets refused, until when they are no
        preemption victims (`UNDISRUPTABLE_SECONDS` after; a new leader finds out anew)."""
        self._blocked_said: dict[JobKey, str] = {}
        """Why each gang's eviction was last refused (said once on its record)."""

    def undisruptable(self, now: float) -> frozenset[JobKey]:
        """The gangs budgets refused lately: no preemption victims at `now`."""
        self._undisruptable = {job: until for job, until in self._undisruptable.items()
                               if until > now}
        return frozenset(self._undisruptable)

    def evict(self, pods: Sequence[Pod], message: str, requeue_at: float | None,
              now: float, has_record: bool = False) -> Evicted:
        """Evict a gang's `pods` whole: by suspending their Jobs until `requeue_at` where
        that applies (None: for good, headstart never resumes them), else through the
        Eviction API, one pod at a time. has_record: the gang has a record, on which a
        refusal by budgets is said (`Evicted.refused`)."""
        jobs = jobs_to_suspend(pods, self.batch_jobs) if self.config.suspend_jobs else ()
        suspended = []
        for job in jobs:
            if self._resizer.suspend(job, requeue_at) is not None:
                break
            suspended.append(job)
            self.suspended_jobs_total += 1
            until = ("suspended for good: resume it yourself once fixed" if requeue_at is None
                     else f"suspended until {timestamp(requeue_at)}, then resumed by headstart")
            self._events.on(job_reference(job), "HeadstartSuspended",
                            f"{message}; {until} (its pods count as no failure)", now,
                            "Warning")
        if jobs and len(suspended) == len(jobs):
            return Evicted(True, tuple(suspended))
        # Not every Job could be suspended: the pods of the others go by eviction.
        taken = {job.key for job in suspended}

        def suspended_with(pod: Pod) -> bool:
            job = suspension_of(pod, self.batch_jobs)
            return job is not None and job.key in taken

        rest = [pod for pod in pods if not suspended_with(pod)]
        budgets = self._budgets(rest)
        if budgets is None:
            return Evicted(False, tuple(suspended))  # unreadable now: the next round tries
        refused = blocking(rest, budgets)
        if refused:
            return Evicted(False, tuple(suspended),
                           self._refused(rest, refused, now, has_record))
        evicted = sum(self._evict(pod, message, now) for pod in rest)
        return Evicted(evicted == len(rest), tuple(suspended))

    def release(self, now: float) -> None:
        """Resume the Jobs headstart suspended whose time has come (or unmark those
        their owner resumed first), with an Event on each."""
        for job in jobs_to_release(self.batch_jobs, now):
            if self._resizer.release(job) is not None:
                continue  # logged; the next round tries again
            if job.suspended:
                self.released_jobs_total += 1
                self._events.on(job_reference(job), "HeadstartResumed",
                                "resumed after its gang's backoff: its pods are created "
                                "again and admitted whole", now)

    def _refused(self, pods: Sequence[Pod], refused: list[str], now: float,
                 has_record: bool) -> tuple[JobKey, str] | None:
        """Budgets would refuse part of the gang: none of it is evicted. As a preemption
        victim it is passed over for `UNDISRUPTABLE_SECONDS`; why is said in the log, and
        returned once per reason for its record (the state kept)."""
        if not pods:
            return None
        job = job_key_of(pods[0], self.locality)
        self._undisruptable[job] = now + UNDISRUPTABLE_SECONDS
        why = ("not evicted: " + "; ".join(refused) + " (a gang is evicted whole or not at "
               "all: retried when the budgets allow it, other victims chosen meanwhile)")
        log.warning("gang eviction refused by PodDisruptionBudgets",
                    extra={"job": str(job), "why": why})
        if not has_record or self._blocked_said.get(job) == why:
            return None
        self._blocked_said[job] = why
        return job, why

    def _evict(self, pod: Pod, message: str, now: float) -> bool:
        """Evict one member through the Eviction API (its uid a precondition; PDBs
        honoured), with an Event saying why. A 404 is done already."""
        body = k8s.V1Eviction(
            metadata=k8s.V1ObjectMeta(name=pod.name, namespace=pod.namespace),
            delete_options=k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=pod.uid)))
        try:
            self._core.create_namespaced_pod_eviction(pod.name, pod.namespace, body,
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
        self._events.on_pod(pod, "HeadstartEvicted", message, now, "Warning")
        return True
