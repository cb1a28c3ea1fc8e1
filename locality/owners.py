"""A job's declared size from the object that owns its pods, read through the kind registry.

Decides how an owner object becomes a size and how a pod learns it: which owner a pod's
labels name (`kube.kinds.POD_LABELS` in order, then an Indexed Job's controller), which
of the owner's pod sets the pod belongs to (its kind's `part_labels`; a
LeaderWorkerSet group's leader or workers), and the pods of the stages up to its own.
What each kind declares is its module's in `kube.kinds` (docs/extender.md, "Job size").
A TrainJob's pods are sized by the JobSet the trainer makes (seen without it, they wait
for it). An owner whose counts do not parse gives no size and says why
(`OwnerSize.problem`): its pods wait with that reason rather than be sized by a guess.

Must not: log, read the clock, keep state (the extender's resolver does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from common.errors import InputError
from kube.kinds import BY_KIND, KINDS, POD_LABELS, PodSet, WorkloadKind
from kube.kinds.job import INDEX_ANNOTATION
from kube.kinds.leaderworkerset import LEADER, WORKER, group_of
from kube.replicas import mapping
from locality.elastic import ElasticOwner, elastic_owner
from locality.model import Pod
from locality.parse import json_object, json_string
from locality.suspension import JobSuspension, job_suspension, suspendable

__all__ = ["INDEX_ANNOTATION", "OWNER_APIS", "OwnerApi", "OwnerKey", "OwnerSize",
           "indexed_job", "lws_group", "owner_of", "parse_owner", "with_owner_size"]


@dataclass(frozen=True, slots=True)
class OwnerApi:
    """One kind at one API version: one watch of the extender's."""

    workload: WorkloadKind
    version: str

    @property
    def kind(self) -> str:
        return self.workload.kind

    @property
    def group(self) -> str:
        return self.workload.group

    @property
    def plural(self) -> str:
        return self.workload.plural

    @property
    def watch_name(self) -> str:
        return self.workload.watch_name(self.version)


OWNER_APIS: tuple[OwnerApi, ...] = tuple(
    OwnerApi(kind, version) for kind in KINDS for version in kind.versions)

OwnerKey = tuple[str, str, str]  # (family, namespace, name)


@dataclass(frozen=True, slots=True)
class OwnerSize:
    """What one owner object declares: its parts, or why they cannot be read."""

    kind: str
    namespace: str
    name: str
    parts: tuple[PodSet, ...] = ()
    problem: str | None = None
    version: str = ""
    elastic: ElasticOwner | None = None
    """The owner as an elastic job, when it opted in (`locality.elastic`)."""
    suspension: JobSuspension | None = None
    """A batch/v1 Job's suspension (`locality.suspension`); None for other kinds."""

    @property
    def key(self) -> OwnerKey:
        return (BY_KIND[self.kind].family, self.namespace, self.name)

    @property
    def source(self) -> str:
        """The API it was listed from (`MPIJob/v2beta1`): each watch replaces its own."""
        return f"{self.kind}/{self.version}"

    def size_for(self, part: str | None) -> int:
        """Pods of the stages up to `part`'s (all stages when `part` is unknown);
        Kubeflow's replica types match the pods' lower-case labels."""
        part = (part or "").lower()
        stage = next((p.stage for p in self.parts if p.name.lower() == part),
                     max((p.stage for p in self.parts), default=0))
        return sum(p.pods for p in self.parts if p.stage <= stage)


def parse_owner(obj: Any, kind: str, where: str | None = None, version: str = "") -> OwnerSize:
    """An owner object of `kind` (one of OWNER_APIS) listed from API `version`. Bad
    metadata raises `InputError` (the watch skips the object); counts that do not parse
    become `problem`."""
    where = where or kind
    obj = json_object(obj, where, required=True)
    metadata = json_object(obj.get("metadata"), f"{where}.metadata", required=True)
    name = json_string(metadata.get("name"), f"{where}.metadata.name")
    namespace = json_string(metadata.get("namespace", "default"), f"{where}.metadata.namespace")
    where = f"{kind} {namespace}/{name}"
    elastic = elastic_owner(obj, kind)
    suspension = job_suspension(obj, kind, version) if suspendable(kind, version) else None
    try:
        spec = mapping(obj.get("spec"), f"{where}: spec")
        # Sizes only: a template is the pods' business, not the size's (and big).
        parts = tuple(PodSet(part.name, part.pods, part.stage) for part in
                      BY_KIND[kind].pod_sets(spec, f"{where}: spec", version))
    except InputError as error:
        return OwnerSize(kind, namespace, name, problem=str(error), version=version,
                         elastic=elastic, suspension=suspension)
    return OwnerSize(kind, namespace, name, parts, version=version, elastic=elastic,
                     suspension=suspension)


def owner_of(pod: Pod) -> OwnerKey | None:
    """The owner a pod's labels name (an Indexed Job: its controller), None when none."""
    for label in POD_LABELS:
        name = pod.labels.get(label)
        if name:
            return (label, pod.namespace, name)
    name = indexed_job(pod)
    if name:
        return (BY_KIND["Job"].family, pod.namespace, name)
    return None


def lws_group(pod: Pod) -> tuple[str, bool] | None:
    """(the job name of the pod's LeaderWorkerSet group, whether it is the group's
    leader), None for a pod of no LeaderWorkerSet. Each group (`group-index`) of a
    LeaderWorkerSet is its own gang: `NAME-GROUP`."""
    return group_of(pod.labels)


def indexed_job(pod: Pod) -> str | None:
    """The Indexed batch/v1 Job that controls the pod, None when none."""
    if pod.controller is not None and pod.controller[0] == "Job" and \
            INDEX_ANNOTATION in pod.annotations:
        return pod.controller[1]
    return None


def with_owner_size(pod: Pod, owners: Mapping[OwnerKey, Mapping[str, OwnerSize]]) -> Pod:
    """The pod with the size its owner declares (`Pod.owner_size`), or why the owner
    gives none yet (`Pod.owner_wait`). Both None when the pod names no owner or its
    owner is not seen (then the job declares no size here)."""
    key = owner_of(pod)
    listed = (owners.get(key) or {}) if key else {}
    size, wait = _size(pod, listed) if key else (None, None)
    elastic = next((owner.elastic for owner in listed.values() if owner.elastic), None)
    if size == pod.owner_size and wait == pod.owner_wait and elastic == pod.elastic:
        return pod
    return replace(pod, owner_size=size, owner_wait=wait, elastic=elastic)


def _size(pod: Pod, listed: Mapping[str, OwnerSize]) -> tuple[int | None, str | None]:
    # By kind: an MPIJob served at two versions is one object.
    seen = {owner.kind: owner for owner in listed.values()}
    if not seen:
        return None, None
    sizers = {BY_KIND[kind].sized_by or kind for kind in seen}
    if len(sizers) > 1:
        kinds = " and ".join(sorted(seen))
        first = next(iter(seen.values()))
        return None, (f"{kinds} are both named {first.namespace}/{first.name}: its pods' "
                      f"label {BY_KIND[first.kind].pod_label} cannot tell which one sizes "
                      "the job")
    sizer = sizers.pop()
    owner = seen.get(sizer)
    if owner is None:
        maker = next(iter(seen.values()))
        return None, (f"its {maker.kind} {maker.namespace}/{maker.name} is seen but not the "
                      f"{sizer} it creates, which gives the job's size")
    if owner.problem is not None:
        return None, f"its owner's replica counts do not parse: {owner.problem}"
    part = next((pod.labels[label] for label in BY_KIND[sizer].part_labels
                 if pod.labels.get(label)), None)
    group = lws_group(pod)
    if group is not None:
        part = LEADER if group[1] else WORKER
    size = owner.size_for(part)
    return (size, None) if size > 0 else (None, None)
