"""Known demand of suspended batch Jobs and JobSets.

A suspended Job (`batch/v1`, `spec.suspend: true`) has no running pods (the Job
controller deletes them on suspension); when resumed it starts
min(`spec.parallelism` (default 1), `spec.completions` - `status.succeeded`) pods of
`spec.template` (completions unset: `parallelism` pods). Finished Jobs (condition
`Complete` or `Failed` True) announce nothing.

A suspended JobSet (`jobset.x-k8s.io/v1alpha2`, `spec.suspend`) announces, per
`spec.replicatedJobs[]`, `replicas` (default 1) Jobs of `template` (a JobTemplateSpec),
each starting its Job's pods as above. Field names: kubernetes-sigs/jobset
api/jobset/v1alpha2/jobset_types.go (`ReplicatedJob.Replicas` +kubebuilder:default=1,
`Template batchv1.JobTemplateSpec`, `JobSetSpec.Suspend`, conditions `Completed`,
`Failed`, `Suspended`).

When: suspended work is expected now while it has been suspended for at most the
configured window (`model.suspended_expected`), since the `Suspended` condition's
lastTransitionTime, else the object's creation. Work Kueue suspended (label
`kueue.x-k8s.io/queue-name`) is never expected here: its Workload says when. A Job or
JobSet headstart's admitter suspended to evict its gang whole (label
`headstart.io/suspended`) is expected when the label says the admitter resumes it (now,
if that has passed), whatever the window: it is not parked, it waits out its backoff.

Keys: a Job's pods are its own (their controller), unless it is a JobSet's child (its
`jobset.sigs.k8s.io/jobset-name` label): then the JobSet's, so a suspended JobSet and
its suspended child Jobs count once (jobsets win). A Kueue Workload for either names
the same key and wins over both.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources
from kube.kinds.job import JOB
from kube.kinds.jobset import JOBSET as JOBSET_KIND
from kube.replicas import job_spec_pods, jobset_replicated_jobs
from predictor.known.model import (
    JOBSET,
    KnownItem,
    Meta,
    condition_since,
    condition_true,
    headstart_resume_time,
    open_object,
    suspended_until,
    template_request,
    whole,
    workload_key,
)


@dataclass(frozen=True)
class Job:
    """A batch/v1 Job, as far as its demand goes."""

    meta: Meta
    suspended: bool
    suspended_since_s: float | None
    finished: bool
    resumed_at_s: float | None
    """When headstart's admitter resumes it (its `headstart.io/suspended` label); None:
    headstart did not suspend it, or the label is not a time."""
    pods: int
    request: Resources

    @property
    def key(self) -> str:
        jobset = self.meta.labels.get(JOBSET_KIND.pod_label)
        if jobset:
            return f"{JOBSET}/{self.meta.namespace}/{jobset}"
        return workload_key(JOB.group, JOB.kind, self.meta.namespace, self.meta.name)


def parse_job(obj: Mapping[str, Any], gpu_resource: str) -> Job:
    meta, where, spec, status = open_object(obj, "job")
    succeeded = whole(status.get("succeeded"), f"{where}.status.succeeded", 0)
    return Job(
        meta=meta,
        suspended=spec.get("suspend") is True,
        suspended_since_s=condition_since(status, "Suspended", where) or meta.created_s,
        finished=condition_true(status, "Complete") or condition_true(status, "Failed"),
        resumed_at_s=headstart_resume_time(meta),
        pods=job_spec_pods(spec, succeeded, f"{where}.spec"),
        request=template_request(spec.get("template"), gpu_resource,
                                 f"{where}.spec.template"),
    )


def job_items(jobs: Iterable[Job], now_s: float, window_s: float) -> list[KnownItem]:
    """One item per suspended, unfinished Job with pods to start."""
    items = []
    for job in jobs:
        if not job.suspended or job.finished or job.pods == 0:
            continue
        expected, reason = suspended_until(job.meta, "Job", job.suspended_since_s,
                                           job.resumed_at_s, now_s, window_s)
        items.append(KnownItem("jobs", "Job", job.meta.namespace, job.meta.name, job.key,
                               job.pods, job.request, expected, reason))
    return items


@dataclass(frozen=True)
class ReplicatedJob:
    name: str
    replicas: int
    pods_per_job: int
    request: Resources


@dataclass(frozen=True)
class JobSet:
    """A jobset.x-k8s.io/v1alpha2 JobSet, as far as its demand goes."""

    meta: Meta
    suspended: bool
    suspended_since_s: float | None
    finished: bool
    replicated_jobs: tuple[ReplicatedJob, ...]
    resumed_at_s: float | None = None
    """When headstart's admitter resumes it (its `headstart.io/suspended` label)."""

    @property
    def key(self) -> str:
        return f"{JOBSET}/{self.meta.namespace}/{self.meta.name}"


def parse_jobset(obj: Mapping[str, Any], gpu_resource: str) -> JobSet:
    meta, where, spec, status = open_object(obj, "jobset")
    replicated = [
        ReplicatedJob(
            name=entry.name, replicas=entry.replicas, pods_per_job=entry.pods_per_job,
            request=template_request(entry.job_spec.get("template"), gpu_resource,
                                     f"{where}.spec.replicatedJobs[{index}].template.spec.template"),
        )
        for index, entry in enumerate(jobset_replicated_jobs(spec, f"{where}.spec"))
    ]
    return JobSet(
        meta=meta,
        suspended=spec.get("suspend") is True,
        suspended_since_s=condition_since(status, "Suspended", where) or meta.created_s,
        finished=condition_true(status, "Completed") or condition_true(status, "Failed"),
        replicated_jobs=tuple(replicated),
        resumed_at_s=headstart_resume_time(meta),
    )


def jobset_items(jobsets: Iterable[JobSet], now_s: float, window_s: float) -> list[KnownItem]:
    """One item per replicated job of each suspended, unfinished JobSet."""
    items = []
    for jobset in jobsets:
        if not jobset.suspended or jobset.finished:
            continue
        expected, reason = suspended_until(jobset.meta, "JobSet", jobset.suspended_since_s,
                                           jobset.resumed_at_s, now_s, window_s)
        for replicated in jobset.replicated_jobs:
            pods = replicated.replicas * replicated.pods_per_job
            if pods:
                items.append(KnownItem(
                    "jobsets", "JobSet", jobset.meta.namespace, jobset.meta.name, jobset.key,
                    pods, replicated.request, expected, f"{replicated.name}: {reason}",
                ))
    return items
