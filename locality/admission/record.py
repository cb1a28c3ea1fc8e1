"""The gang record: a job's admission decision as an API object only headstart writes.

One `Gang` (`headstart.io/v1alpha1`, namespaced, in the job's namespace) per job the
admitter has decided on. `spec` holds what the pods declared when it was decided (the
job label value, size, topology level, policy); `status` the decision: `state`
(Waiting, Inadmissible, Admitted, Running), the domain (`LEVEL=VALUE`) and the node
label that selects it, the new nodes it counted on, a reason code and message, and when
the state last changed. RBAC lets only the extender's ServiceAccount write Gangs, so a
reservation read from a record is headstart's own: the admitter counts the room of an
admitted job's unbound pods in the domain its record names, and a job's later pods
join that domain; a `headstart.io/domain` annotation on a pod (which any tenant who
can create the pod can write) decides nothing.

States: `Waiting` (not whole, or no room now; `reason` is the wait code), `Inadmissible`
(no domain could ever hold it), `Admitted` (its gates lifted into `domain`; pods not all
bound yet), `Running` (every pod of its declared size bound), `Recovering` (it was
Running and lost a member: a node lost, a pod failed or evicted; its replacement may
fill it in its domain), `Evicted` (not whole in time: its pods were evicted for its
owner to recreate behind the gate, or its Jobs suspended until then, `suspendedJobs`;
`requeueAt` says when it may be admitted again, `evictions` how often it was:
`locality.admission.recovery`, `locality.admission.suspend_owners`). A record whose job has no
pod left is deleted by the admitter that wrote it.

Decides: the record's name and body, how one is read back, which records reserve room,
and which need a state change or deletion. Must not: talk to the API, read the clock
(`now` is passed), log.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from common.errors import InputError
from kube.labels import GANG_JOB_ANNOTATION as JOB_ANNOTATION
from locality.admission.model import Domain, Reservation, demand_of
from locality.model import JobKey, Pod
from locality.parse import rfc3339_seconds

GROUP = "headstart.io"
VERSION = "v1alpha1"
PLURAL = "gangs"
KIND = "Gang"
API_VERSION = f"{GROUP}/{VERSION}"
MANAGED_BY = {"app.kubernetes.io/managed-by": "headstart"}


class GangState(enum.Enum):
    WAITING = "Waiting"
    INADMISSIBLE = "Inadmissible"
    ADMITTED = "Admitted"
    RUNNING = "Running"
    RECOVERING = "Recovering"
    EVICTED = "Evicted"

    @property
    def holds_domain(self) -> bool:
        return self in (GangState.ADMITTED, GangState.RUNNING, GangState.RECOVERING)


REQUEUE_LIMIT = "RequeueLimit"
"""The reason of an `Inadmissible` record whose job was evicted past
`admission.requeue_limit`: never admitted again (`recovery`)."""


@dataclass(frozen=True, slots=True)
class GangRecord:
    """A Gang as read back. domain: None unless admitted into one."""

    job: JobKey
    state: GangState
    domain: Domain | None = None
    label_key: str | None = None
    size: int | None = None
    reason: str = ""
    message: str = ""
    name: str = ""
    uid: str = ""
    level: str = "placement-group"
    policy: str = "required"
    since: float = 0.0
    """When it entered its state (status.lastTransitionTime, seconds since the epoch)."""
    evictions: int = 0
    requeue_at: float | None = None
    """Evicted: not admitted again before this time."""
    resource_version: str = ""
    suspended_jobs: tuple[tuple[str, str, str], ...] = ()
    """Evicted by suspending these Jobs or JobSets (kind, name, uid;
    `locality.admission.suspend_owners`): they are resumed once `requeue_at` has passed."""

    @property
    def deactivated(self) -> bool:
        """Evicted past `admission.requeue_limit`: not admitted again."""
        return self.state is GangState.INADMISSIBLE and self.reason == REQUEUE_LIMIT


_NAME_OK = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def record_name(job_name: str) -> str:
    """An object name for the job's record: the job name when it is one (a DNS
    subdomain), else a lowercased, cleaned form with a hash of the original appended
    (job labels allow `_` and capitals, object names do not)."""
    if _NAME_OK.match(job_name):
        return job_name
    cleaned = re.sub(r"[^-a-z0-9.]", "-", job_name.lower()).strip("-.")[:200] or "job"
    return f"{cleaned}-{hashlib.sha256(job_name.encode()).hexdigest()[:8]}"


def timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def gang_body(job: JobKey, state: GangState, *, size: int | None, level: str, policy: str,
              domain: Domain | None = None, label_key: str | None = None,
              new_nodes: int = 0, reason: str = "", message: str = "",
              now: float, evictions: int = 0,
              requeue_at: float | None = None,
              suspended_jobs: tuple[tuple[str, str, str], ...] = ()) -> dict[str, Any]:
    """The whole record as headstart applies it (server-side apply: the fields it sends
    are the fields it owns)."""
    status: dict[str, Any] = {"state": state.value, "reason": reason,
                              "message": message[:1024], "lastTransitionTime": timestamp(now)}
    if domain is not None:
        status.update(domain=str(domain), labelKey=label_key or "", newNodes=new_nodes)
    if evictions:
        status["evictions"] = evictions
    if requeue_at is not None:
        status["requeueAt"] = timestamp(requeue_at)
    if suspended_jobs:
        status["suspendedJobs"] = [{"kind": kind, "name": name, "uid": uid}
                                   for kind, name, uid in suspended_jobs]
    spec: dict[str, Any] = {"job": job.name, "level": level, "policy": policy}
    if size is not None:
        spec["size"] = size
    return {
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": record_name(job.name), "namespace": job.namespace,
                     "labels": dict(MANAGED_BY), "annotations": {JOB_ANNOTATION: job.name}},
        "spec": spec, "status": status,
    }


def parse_gang(obj: Any, where: str = "gang") -> GangRecord:
    """A Gang object (as listed or watched) to a `GangRecord`."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata, spec, status = (obj.get(key) if obj.get(key) is not None else {}
                              for key in ("metadata", "spec", "status"))
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping) \
            or not isinstance(status, Mapping):
        raise InputError(f"{where}: metadata, spec and status must be objects")
    name = metadata.get("name")
    namespace = metadata.get("namespace", "default")
    job = spec.get("job") or (metadata.get("annotations") or {}).get(JOB_ANNOTATION) or name
    if not isinstance(name, str) or not isinstance(namespace, str) or not isinstance(job, str):
        raise InputError(f"{where}.metadata: name, namespace and spec.job must be strings")
    raw_state = status.get("state", GangState.WAITING.value)
    try:
        state = GangState(raw_state)
    except ValueError:
        raise InputError(f"{where}.status.state: expected one of "
                         f"{', '.join(s.value for s in GangState)}, got {raw_state!r}") from None
    raw_domain = status.get("domain")
    domain = Domain.parse(raw_domain) if isinstance(raw_domain, str) and raw_domain else None
    size = spec.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
        raise InputError(f"{where}.spec.size: expected an integer, got {size!r}")
    evictions = status.get("evictions", 0)
    if isinstance(evictions, bool) or not isinstance(evictions, int) or evictions < 0:
        raise InputError(f"{where}.status.evictions: expected a non-negative integer, "
                         f"got {evictions!r}")
    return GangRecord(JobKey(namespace, job), state, domain,
                      status.get("labelKey") or None, size, str(status.get("reason", "")),
                      str(status.get("message", "")), name, str(metadata.get("uid") or ""),
                      str(spec.get("level") or "placement-group"),
                      str(spec.get("policy") or "required"),
                      _seconds(status.get("lastTransitionTime"),
                               f"{where}.status.lastTransitionTime") or 0.0,
                      evictions,
                      _seconds(status.get("requeueAt"), f"{where}.status.requeueAt"),
                      str(metadata.get("resourceVersion") or ""),
                      _suspended_jobs(status.get("suspendedJobs"), where))


def _suspended_jobs(raw: Any, where: str) -> tuple[tuple[str, str, str], ...]:
    """(kind, name, uid) of each; `kind` may be absent (records written before JobSets
    were suspended): a Job."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(
            isinstance(item, Mapping) and isinstance(item.get("name"), str)
            and isinstance(item.get("uid"), str)
            and isinstance(item.get("kind", "Job"), str) for item in raw):
        raise InputError(f"{where}.status.suspendedJobs: expected a list of "
                         f"{{kind, name, uid}} strings, got {raw!r}")
    return tuple((item.get("kind", "Job"), item["name"], item["uid"]) for item in raw)


def _seconds(raw: Any, where: str) -> float | None:
    return None if raw is None else rfc3339_seconds(raw, where)


def is_member(pod: Pod) -> bool:
    """A pod that is part of its job's current attempt: not finished with a failure
    (replaced), not Terminating."""
    return not (pod.terminal and not pod.succeeded) and not pod.deleting


def reservations(records: Iterable[GangRecord], pods_of_job: Callable[[JobKey], Sequence[Pod]],
                 gate: str) -> tuple[Reservation, ...]:
    """Per domain, the pods of admitted jobs that are not bound yet (ungated, not
    finished, not Terminating): the room they will take."""
    by_domain: dict[Domain, list[Pod]] = {}
    for record in records:
        if not record.state.holds_domain or record.domain is None:
            continue
        for pod in pods_of_job(record.job):
            if (pod.node_name is None and not pod.terminal and not pod.deleting
                    and gate not in pod.scheduling_gates):
                by_domain.setdefault(record.domain, []).append(pod)
    return tuple(Reservation(domain, demand_of(pods))
                 for domain, pods in sorted(by_domain.items(), key=lambda item: str(item[0])))


def whole(record: GangRecord, pods: Sequence[Pod]) -> bool:
    """The job has all its members bound: as many as its size (or, with no size, every
    member), none gated or pending."""
    members = [pod for pod in pods if is_member(pod)]
    if not members or any(pod.node_name is None for pod in members):
        return False
    return record.size is None or len(members) >= record.size


EVICTED_GRACE_SECONDS = 300.0
"""How long after its requeueAt an Evicted record whose job has no pod is kept: its
owner may still be recreating the pods (the evicted ones must end first), and the
eviction count must outlive that for the next backoff to double."""


def orphaned(records: Iterable[GangRecord], pods_of_job: Callable[[JobKey], Sequence[Pod]],
             now: float) -> list[GangRecord]:
    """Records whose job has no pod left at all: the admitter deletes them. An Evicted
    record is kept until `EVICTED_GRACE_SECONDS` after its requeueAt."""
    return [record for record in records if not pods_of_job(record.job)
            and not (record.state is GangState.EVICTED and record.requeue_at is not None
                     and now < record.requeue_at + EVICTED_GRACE_SECONDS)]
