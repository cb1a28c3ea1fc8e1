"""A batch/v1 Job as something headstart may suspend: to evict a gang whole without
failing its Job.

Evicting a Job's pods counts each as a failure toward its `backoffLimit` (the Job
controller's `isPodFailed` counts a deleted pod that did not succeed), unless the Job's
`podFailurePolicy` ignores `DisruptionTarget`: a default Job (backoffLimit 6) whose
8-pod gang is evicted once fails for good. Suspending the Job instead (`spec.suspend`)
makes the Job controller delete its active pods after removing their tracking
finalizer, so they count as nothing, and create them again when it is resumed; Kueue
evicts the Jobs it manages the same way. headstart marks a Job it suspended with the
label `headstart.io/suspended=<when to resume it, seconds since the epoch>` and resumes
only Jobs carrying it. The time is on the Job itself, so resuming never waits on the
gang record's watch catching up (nor on the record existing at all); the Job's owner
may change it, which gives them nothing they lack: they may resume their Job anyway.

headstart suspends a Job only when it alone decides the Job's suspension: not a Job
whose `spec.managedBy` names another controller, not one Kueue manages (its
`kueue.x-k8s.io/queue-name` label), not one another object controls (a JobSet's Jobs:
the JobSet controller sets their `suspend`), except a CronJob's (the CronJob controller
never touches `suspend` of the Jobs it made). The ValidatingAdmissionPolicy
`headstart-extender-job-edits` (manifests/base/admission/owner-resize.yaml) enforces
the same conditions on the extender's ServiceAccount.

Decides: how a Job object reads as a `JobSuspension`, and the merge patches that suspend
and release it. Must not: talk to the API, log, read the clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SUSPENDED_LABEL = "headstart.io/suspended"
"""On a Job headstart suspended: when to resume it (whole seconds since the epoch);
removed when headstart resumes it."""

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""Kueue manages what carries it (its gate and its suspension: `locality.admission.gate`)."""

JobName = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True, slots=True)
class JobSuspension:
    """A batch/v1 Job as headstart sees its suspension."""

    namespace: str
    name: str
    uid: str
    suspended: bool
    """Its `spec.suspend`."""
    resume_at: float | None
    """When headstart resumes it (its `headstart.io/suspended` label; a value that is
    not a time: now). None: no such label, headstart did not suspend it."""
    problem: str | None = None
    """Why headstart may not suspend it (None: it may)."""
    acknowledged: bool = False
    """Its status says Suspended (condition `Suspended` True): the Job controller has
    acted on the suspension and deleted its running pods."""

    @property
    def ours(self) -> bool:
        return self.resume_at is not None

    @property
    def key(self) -> JobName:
        return (self.namespace, self.name)

    @property
    def where(self) -> str:
        return f"Job {self.namespace}/{self.name}"


def job_suspension(obj: Any) -> JobSuspension:
    """A Job object (as listed or watched) as a `JobSuspension`. Never raises on the
    object's content: what headstart cannot read makes it not suspendable."""
    obj = obj if isinstance(obj, Mapping) else {}
    metadata = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    labels = _mapping(metadata.get("labels"))
    namespace = str(metadata.get("namespace") or "default")
    name = str(metadata.get("name") or "")
    uid = str(metadata.get("uid") or "")
    mark = labels.get(SUSPENDED_LABEL)
    resume_at = None if mark is None else \
        float(mark) if isinstance(mark, str) and mark.isdigit() else 0.0
    status = _mapping(obj.get("status"))
    conditions = status.get("conditions")
    acknowledged = any(
        isinstance(c, Mapping) and c.get("type") == "Suspended" and c.get("status") == "True"
        for c in (conditions if isinstance(conditions, list) else ()))
    return JobSuspension(namespace, name, uid, spec.get("suspend") is True, resume_at,
                         _problem(metadata, spec, labels, uid), acknowledged)


def _problem(metadata: Mapping[str, Any], spec: Mapping[str, Any],
             labels: Mapping[str, Any], uid: str) -> str | None:
    if not uid:
        return "it has no uid to make the patch conditional on"
    if spec.get("managedBy") not in (None, "kubernetes.io/job-controller"):
        return f"its spec.managedBy names {spec.get('managedBy')!r}, which decides its suspension"
    if KUEUE_QUEUE_LABEL in labels:
        return f"Kueue manages it (label {KUEUE_QUEUE_LABEL})"
    owners = metadata.get("ownerReferences")
    for owner in owners if isinstance(owners, list) else ():
        owner = _mapping(owner)
        if owner.get("controller") is True and owner.get("kind") != "CronJob":
            return (f"its controller {owner.get('kind')} {owner.get('name')} decides its "
                    "suspension")
    return None


def suspend_patch(job: JobSuspension, resume_at: float) -> dict[str, Any]:
    """The merge patch that suspends the Job and marks it headstart's to resume at
    `resume_at` (rounded up to a whole second); its uid a precondition (a Job deleted
    and created again under its name is refused)."""
    return {"metadata": {"uid": job.uid,
                         "labels": {SUSPENDED_LABEL: str(math.ceil(resume_at))}},
            "spec": {"suspend": True}}


def release_patch(job: JobSuspension) -> dict[str, Any]:
    """The merge patch that resumes a Job headstart suspended and removes its mark (for
    a Job already resumed, only the mark goes)."""
    return {"metadata": {"uid": job.uid, "labels": {SUSPENDED_LABEL: None}},
            "spec": {"suspend": False}}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
