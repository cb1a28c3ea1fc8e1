"""Which Jobs, JobSets or PyTorchJobs to suspend to evict a gang whole, and which of
those headstart suspended to resume now (`locality.suspension` says why suspending
beats evicting).

- Suspend: a gang to evict whose every live member an owner recreates is suspended
  through its owners when each of those members is controlled by a batch/v1 Job or a
  PyTorchJob that headstart may suspend, or by a Job of a JobSet that headstart may
  suspend (the JobSet is suspended then: its controller decides its Jobs'
  suspension), and the admitter is
  told to (`admission.suspend_jobs`); any other member (an operator's pod, a Job
  another controller manages) makes the whole gang go by eviction, as before: one rule
  per gang, never half and half.
- Release: a Job or JobSet that carries headstart's mark is resumed and unmarked once
  the time the mark names has come (the gang record's `requeueAt`, written on it when
  it was suspended) and its controller has acted on the suspension (its `Suspended`
  condition; for a JobSet, its Jobs' too, since only the Job controller deletes the
  pods): a preempted gang's Job, due at once, resumed before the controller got to it,
  would keep its pods and free nothing. A marked one that is not suspended (its owner
  resumed it) is unmarked at once, so that a suspension its owner makes later is never
  taken for headstart's and undone.

Must not: talk to the API, read the clock (`now` is passed), log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from locality.model import Pod
from locality.suspension import POD_CONTROLLER_KINDS, JobName, JobSuspension

MAX_JOBS = 64
"""Most Jobs or JobSets one gang is evicted by suspending (the Gang CRD's
`suspendedJobs` bound); a gang of more goes by eviction."""


def suspension_of(pod: Pod, jobs: Mapping[JobName, JobSuspension]) -> JobSuspension | None:
    """What to suspend to take `pod` away: its controlling Job or PyTorchJob, or the
    Job's JobSet; None when it has none of these, or they are not seen."""
    if pod.controller is None or pod.controller[0] not in POD_CONTROLLER_KINDS:
        return None
    job = jobs.get((pod.controller[0], pod.namespace, pod.controller[1]))
    if job is not None and job.controller is not None and job.controller[0] == "JobSet":
        return jobs.get(("JobSet", pod.namespace, job.controller[1]))
    return job


def jobs_to_suspend(pods: Sequence[Pod], jobs: Mapping[JobName, JobSuspension]
                    ) -> tuple[JobSuspension, ...]:
    """The Jobs or JobSets whose suspension evicts `pods` (the live members an owner
    recreates), each once, in key order; () when any member's is not one headstart may
    suspend, or there are more than `MAX_JOBS` (then the pods are evicted)."""
    found: dict[JobName, JobSuspension] = {}
    for pod in pods:
        job = suspension_of(pod, jobs)
        if job is None or job.problem is not None or job.suspended:
            return ()
        found[job.key] = job
    if len(found) > MAX_JOBS:
        return ()
    return tuple(found[key] for key in sorted(found))


def jobs_to_release(jobs: Mapping[JobName, JobSuspension], now: float
                    ) -> list[JobSuspension]:
    """The Jobs and JobSets carrying headstart's mark to resume (or, not suspended,
    unmark) now."""
    return sorted((job for job in jobs.values() if job.resume_at is not None
                   and (not job.suspended
                        or (_acknowledged(job, jobs) and job.resume_at <= now))),
                  key=lambda job: job.key)


def _acknowledged(job: JobSuspension, jobs: Mapping[JobName, JobSuspension]) -> bool:
    """Its controller has acted on the suspension; for a JobSet, so has the Job
    controller on each of its Jobs seen."""
    if not job.acknowledged:
        return False
    if job.kind != "JobSet":
        return True
    return all(child.acknowledged for child in jobs.values()
               if child.kind == "Job" and child.namespace == job.namespace
               and child.controller == ("JobSet", job.name))
