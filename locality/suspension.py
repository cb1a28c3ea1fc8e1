"""A training workload as something headstart may suspend, to evict a gang whole unfailed.

Evicting a Job's pods counts each as a failure toward its `backoffLimit` (the Job
controller's `isPodFailed` counts a deleted pod that did not succeed), unless the Job's
`podFailurePolicy` ignores `DisruptionTarget`: a default Job (backoffLimit 6) whose
8-pod gang is evicted once fails for good. Suspending the owner instead makes its
controller delete the pods as no failure and create them again on resume; Kueue evicts
the jobs it manages the same way. Which kinds, at which versions, and where each keeps
`suspend` and `managedBy` is the kind registry's (`kube.kinds.SUSPENDABLE`; each kind's
module says what its controller does). headstart marks an object it suspended with the
label `headstart.io/suspended=<when to resume it, seconds since the epoch>` and resumes
only objects carrying it. The time is on the object itself, so resuming never waits on
the gang record's watch (nor on the record existing at all); the object's owner may
change it, which gives them nothing they lack: they may resume it anyway.

headstart suspends one of these only when it alone decides its suspension: not one
whose `managedBy` names another controller, not one Kueue manages (its
`kueue.x-k8s.io/queue-name` label), not one its controller would refuse to suspend
(the kind's `suspend_refused`: a RayJob KubeRay would fail), not one another object
controls (a JobSet's Jobs, whose JobSet is suspended instead; a TrainJob's JobSet; a
RayJob's RayCluster), except a Job a CronJob made
(the CronJob controller never touches `suspend` of the Jobs it made). The
ValidatingAdmissionPolicies in manifests/base/admission/owner-resize.yaml enforce the
same conditions on the extender's ServiceAccount.

Decides: how such an object reads as a `JobSuspension`, and the merge patches that
suspend and release it. Must not: talk to the API, log, read the clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube.kinds import SUSPENDABLE
from kube.labels import KUEUE_QUEUE_LABEL, SUSPENDED_LABEL

__all__ = ["FOR_GOOD", "KUEUE_QUEUE_LABEL", "POD_CONTROLLER_KINDS", "SUSPENDABLE",
           "SUSPENDABLE_KINDS", "SUSPENDED_LABEL", "JobName", "JobSuspension",
           "job_suspension", "release_patch", "suspend_patch", "suspendable"]

SUSPENDABLE_KINDS = tuple(SUSPENDABLE)
POD_CONTROLLER_KINDS = tuple(kind for kind, how in SUSPENDABLE.items() if how.controls_pods)


def suspendable(kind: str, version: str) -> bool:
    """Whether headstart suspends a `kind` listed at API `version`."""
    return kind in SUSPENDABLE and version in SUSPENDABLE[kind].managers


JobName = tuple[str, str, str]  # (kind, namespace, name)


@dataclass(frozen=True, slots=True)
class JobSuspension:
    """A batch/v1 Job or a JobSet as headstart sees its suspension."""

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
    """Its status says its controller has acted on the suspension (its kind's
    `suspend_acknowledged`: a Job's condition `Suspended` once it deleted its running
    pods; a JobSet's once it suspended its Jobs)."""
    kind: str = "Job"
    """One of `SUSPENDABLE_KINDS`."""
    controller: tuple[str, str] | None = None
    """Its controlling owner (kind, name), if any: a JobSet's Jobs name their JobSet."""
    version: str = "v1"
    """The API version it was read at, and is patched at."""

    @property
    def api_version(self) -> str:
        return SUSPENDABLE[self.kind].api_version(self.version)

    @property
    def ours(self) -> bool:
        return self.resume_at is not None

    @property
    def key(self) -> JobName:
        return (self.kind, self.namespace, self.name)

    @property
    def where(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def job_suspension(obj: Any, kind: str = "Job", version: str = "") -> JobSuspension:
    """An object of one of the SUSPENDABLE kinds (`kind`, as listed or watched at API
    `version`; "": its `apiVersion`'s, else the kind's first) as a `JobSuspension`.
    Never raises on the object's content: what headstart cannot read makes it not
    suspendable."""
    obj = obj if isinstance(obj, Mapping) else {}
    if not version:
        version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    if not version and kind in SUSPENDABLE:
        version = next(iter(SUSPENDABLE[kind].managers))
    metadata = _mapping(obj.get("metadata"))
    spec = _suspension_spec(kind, _mapping(obj.get("spec")))
    labels = _mapping(metadata.get("labels"))
    namespace = str(metadata.get("namespace") or "default")
    name = str(metadata.get("name") or "")
    uid = str(metadata.get("uid") or "")
    mark = labels.get(SUSPENDED_LABEL)
    resume_at = None if mark is None else \
        float(mark) if isinstance(mark, str) and mark.isdigit() else 0.0
    status = _mapping(obj.get("status"))
    acknowledged = kind in SUSPENDABLE and SUSPENDABLE[kind].suspend_acknowledged(status)
    return JobSuspension(namespace, name, uid, spec.get("suspend") is True, resume_at,
                         _problem(kind, version, metadata, spec, labels, uid), acknowledged,
                         kind, _controller(metadata), version)


def _suspension_spec(kind: str, spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """Where the kind keeps `suspend` and `managedBy`."""
    run_policy = kind in SUSPENDABLE and SUSPENDABLE[kind].run_policy
    return _mapping(spec.get("runPolicy")) if run_policy else spec


def _controller(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    owners = metadata.get("ownerReferences")
    for owner in owners if isinstance(owners, list) else ():
        owner = _mapping(owner)
        if owner.get("controller") is True:
            return (str(owner.get("kind") or ""), str(owner.get("name") or ""))
    return None


def _problem(kind: str, version: str, metadata: Mapping[str, Any], spec: Mapping[str, Any],
             labels: Mapping[str, Any], uid: str) -> str | None:
    if kind not in SUSPENDABLE:
        return f"headstart does not suspend a {kind}"
    if version not in SUSPENDABLE[kind].managers:
        return (f"headstart does not suspend a {kind} of "
                f"{SUSPENDABLE[kind].group}/{version}")
    if not uid:
        return "it has no uid to make the patch conditional on"
    if spec.get("managedBy") not in (None, SUSPENDABLE[kind].managers[version]):
        field = "spec.runPolicy.managedBy" if SUSPENDABLE[kind].run_policy else "spec.managedBy"
        return f"its {field} names {spec.get('managedBy')!r}, which decides its suspension"
    refused = SUSPENDABLE[kind].suspend_refused(spec)
    if refused is not None:
        return refused
    if KUEUE_QUEUE_LABEL in labels:
        return f"Kueue manages it (label {KUEUE_QUEUE_LABEL})"
    owners = metadata.get("ownerReferences")
    for owner in owners if isinstance(owners, list) else ():
        owner = _mapping(owner)
        if owner.get("controller") is True and not (kind == "Job"
                                                    and owner.get("kind") == "CronJob"):
            return (f"its controller {owner.get('kind')} {owner.get('name')} decides its "
                    "suspension")
    return None


FOR_GOOD = 253402300799
"""The mark of an object suspended for good (9999-12-31T23:59:59Z): headstart never
resumes it; its owner may, and headstart then removes the mark (`jobs_to_release`)."""


def suspend_patch(job: JobSuspension, resume_at: float | None) -> dict[str, Any]:
    """The merge patch that suspends the object and marks it headstart's to resume at
    `resume_at` (rounded up to a whole second; None: `FOR_GOOD`); its uid a
    precondition (an object deleted and created again under its name is refused)."""
    mark = FOR_GOOD if resume_at is None else math.ceil(resume_at)
    return {"metadata": {"uid": job.uid, "labels": {SUSPENDED_LABEL: str(mark)}},
            "spec": _suspend_field(job.kind, True)}


def release_patch(job: JobSuspension) -> dict[str, Any]:
    """The merge patch that resumes an object headstart suspended and removes its mark
    (for one already resumed, only the mark goes)."""
    return {"metadata": {"uid": job.uid, "labels": {SUSPENDED_LABEL: None}},
            "spec": _suspend_field(job.kind, False)}


def _suspend_field(kind: str, suspend: bool) -> dict[str, Any]:
    return {"runPolicy": {"suspend": suspend}} if SUSPENDABLE[kind].run_policy else \
        {"suspend": suspend}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
