"""Which Jobs, JobSets, TrainJobs or Kubeflow jobs to suspend to evict a gang whole, and
which of those headstart suspended to resume now (`locality.suspension` says why
suspending beats evicting).

- Suspend: a gang to evict whose every live member an owner recreates is suspended
  through its owners when each of those members is controlled by a batch/v1 Job or a
  Kubeflow job that headstart may suspend, and the admitter is told to
  (`admission.suspend_jobs`). What is suspended is the top of the member's chain of
  controllers of kinds headstart suspends: a JobSet's Job goes by its JobSet, a
  TrainJob's JobSet by its TrainJob (each decides the suspension of the one below).
  Any other member (an operator's pod, a Job another controller manages, a chain whose
  top is not seen) makes the whole gang go by eviction, as before: one rule per gang,
  never half and half.
- Release: an object that carries headstart's mark is resumed and unmarked once the time
  the mark names has come (the gang record's `requeueAt`, written on it when it was
  suspended) and its controller has acted on the suspension (its `Suspended` condition;
  and each object below it that it controls, its JobSet's and Jobs' for a TrainJob,
  since only the Job controller deletes the pods): a preempted gang's Job, due at once,
  resumed before the controller got to it, would keep its pods and free nothing. A
  marked one that is not suspended (its owner resumed it) is unmarked at once, so that a
  suspension its owner makes later is never taken for headstart's and undone.

Must not: talk to the API, read the clock (`now` is passed), log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from locality.model import Pod
from locality.suspension import POD_CONTROLLER_KINDS, SUSPENDABLE, JobName, JobSuspension

MAX_JOBS = 64
"""Most Jobs or JobSets one gang is evicted by suspending (the Gang CRD's
`suspendedJobs` bound); a gang of more goes by eviction."""


CHAIN = 4
"""Most controllers followed up from a pod's (pod -> Job -> JobSet -> TrainJob)."""


def suspension_of(pod: Pod, jobs: Mapping[JobName, JobSuspension]) -> JobSuspension | None:
    """What to suspend to take `pod` away: its controller, or that one's controller,
    and so on while each is of a kind headstart suspends; None when the pod's is none
    of these, or one in the chain is not seen (or it is longer than `CHAIN`)."""
    if pod.controller is None or pod.controller[0] not in POD_CONTROLLER_KINDS:
        return None
    job = jobs.get((pod.controller[0], pod.namespace, pod.controller[1]))
    for _ in range(CHAIN):
        if job is None or job.controller is None or job.controller[0] not in SUSPENDABLE:
            return job
        job = jobs.get((job.controller[0], job.namespace, job.controller[1]))
    return None


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


def _acknowledged(job: JobSuspension, jobs: Mapping[JobName, JobSuspension],
                  depth: int = CHAIN) -> bool:
    """Its controller has acted on the suspension, and so has each one below it seen (a
    JobSet's Jobs; a TrainJob's JobSet and its Jobs)."""
    if not job.acknowledged:
        return False
    return depth > 0 and all(
        _acknowledged(child, jobs, depth - 1) for child in jobs.values()
        if child.namespace == job.namespace and child.controller == (job.kind, job.name))
