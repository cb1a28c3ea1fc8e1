"""Which Jobs to suspend to evict a gang whole, and which Jobs headstart suspended to
resume now (`locality.suspension` says why suspending beats evicting for a Job).

- Suspend: a gang to evict whose every live member an owner recreates is suspended
  through its Jobs when each of those members is controlled by a batch/v1 Job headstart
  may suspend (`JobSuspension.problem` is None) and the admitter is told to
  (`admission.suspend_jobs`); any other member (a JobSet's or an operator's pod) makes
  the whole gang go by eviction, as before: one rule per gang, never half and half.
- Release: a Job that carries headstart's mark is resumed and unmarked once the time
  the mark names has come (the gang record's `requeueAt`, written on the Job when it
  was suspended) and the Job controller has acted on the suspension (its `Suspended`
  condition): a preempted gang's Job, due at once, resumed before the controller got
  to it, would keep its pods and free nothing. A marked Job that is not suspended
  (its owner resumed it) is unmarked at once, so that a suspension its owner makes
  later is never taken for headstart's and undone.

Must not: talk to the API, read the clock (`now` is passed), log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from locality.model import Pod
from locality.suspension import JobName, JobSuspension

MAX_JOBS = 64
"""Most Jobs one gang is evicted by suspending (the Gang CRD's `suspendedJobs` bound);
a gang of more goes by eviction."""


def jobs_to_suspend(pods: Sequence[Pod], jobs: Mapping[JobName, JobSuspension]
                    ) -> tuple[JobSuspension, ...]:
    """The Jobs whose suspension evicts `pods` (the live members an owner recreates),
    each once, in name order; () when any member's controller is not such a Job, or
    there are more than `MAX_JOBS` (then the pods are evicted)."""
    found: dict[JobName, JobSuspension] = {}
    for pod in pods:
        if pod.controller is None or pod.controller[0] != "Job":
            return ()
        job = jobs.get((pod.namespace, pod.controller[1]))
        if job is None or job.problem is not None or job.suspended:
            return ()
        found[job.key] = job
    if len(found) > MAX_JOBS:
        return ()
    return tuple(found[key] for key in sorted(found))


def jobs_to_release(jobs: Iterable[JobSuspension], now: float) -> list[JobSuspension]:
    """The Jobs carrying headstart's mark to resume (or, not suspended, unmark) now."""
    return sorted((job for job in jobs if job.resume_at is not None
                   and (not job.suspended or (job.acknowledged and job.resume_at <= now))),
                  key=lambda job: job.key)
