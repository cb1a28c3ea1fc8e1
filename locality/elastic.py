"""Elastic jobs: which owners may be resized by headstart, between which bounds, and how.

A job is elastic only when its owner opts in, on the owner object (never on a pod, which
any tenant who can create one can write, and never by default):
- `headstart.io/min-size` and `headstart.io/max-size` annotations, both whole numbers,
  1 <= min <= max, on
- a batch/v1 Indexed Job whose `completions` equals `parallelism` (the elastic Indexed
  Job rule, GA in Kubernetes 1.31: both may change, together; the Job controller then
  removes the pods whose index is at or above the new count, or creates the missing
  indices). Its size is `parallelism`; or
- a Kubeflow PyTorchJob (`kubeflow.org/v1`): the size is its `Worker` replicas (its
  `Master`, if any, is not resized). When it declares `spec.elasticPolicy`, the
  annotations must lie within `minReplicas`..`maxReplicas`. The training operator
  removes the workers whose replica index is at or above the new count. Its other
  replicas (the Master) are still the job's pods: the job is `size + others` pods.
Both owners remove the highest indices, so headstart cannot choose which workers go
(`Removal.HIGHEST_INDEX`); KOD2's order (workers on nodes without the job's PS first,
`Removal.PS_NODES_LAST`) is the rule where an owner removes the pods it is told to.

An owner that opts in but cannot be resized says why (`ElasticOwner.problem`): min >
max, a size outside its bounds, a kind or a Job that cannot change size. Such a job is
kept at its current size, never resized on a guess.

Must not: log, read the clock, talk to the API (the admitter writes `scale_patch`),
import `locality.model` (the model's pods carry an `ElasticOwner`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.errors import InputError
from kube.kinds import BY_KIND, KINDS, kubeflow, pytorchjob
from kube.labels import MAX_SIZE_ANNOTATION, MIN_SIZE_ANNOTATION
from kube.replicas import mapping

KUBEFLOW_INDEX_LABEL = kubeflow.REPLICA_INDEX_LABEL
KUBEFLOW_TYPE_LABEL = kubeflow.REPLICA_TYPE_LABEL
PYTORCH_WORKER = pytorchjob.WORKER


class Removal(enum.Enum):
    """Which workers go first when an elastic job is scaled in."""

    HIGHEST_INDEX = "highest-index"
    """The owner's controller removes the highest indices (Indexed Jobs, PyTorchJobs)."""
    PS_NODES_LAST = "ps-nodes-last"
    """KOD2's order, where headstart names the pods: workers on nodes without the job's
    PS (or chief) first, nodes holding fewer of the job's workers first, then the
    highest index."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """The sizes an elastic job may run at, both inclusive."""

    minimum: int
    maximum: int

    def clamp(self, size: int) -> int:
        return max(self.minimum, min(self.maximum, size))


@dataclass(frozen=True, slots=True)
class ElasticOwner:
    """An owner that opted in: its bounds, its current size, and how it removes workers;
    or why it cannot be resized (`problem`; then `bounds` is None)."""

    kind: str
    namespace: str
    name: str
    size: int
    bounds: Bounds | None
    removal: Removal = Removal.HIGHEST_INDEX
    problem: str | None = None
    resource_version: str = ""
    """The owner's resourceVersion when read: the resize patch's precondition."""
    uid: str = ""
    """The owner's uid: a worker plan (`locality.worker_plans`) names the very object."""
    others: int = 0
    """The pods the owner creates that a resize never touches (a PyTorchJob's Master and
    any other non-Worker replicas; none for an Indexed Job)."""

    def pods(self, size: int) -> int:
        """The job's pods when the owner is at `size`: the gang's size, its PodGroup's
        minMember."""
        return size + self.others

    @property
    def where(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def elastic_owner(obj: Any, kind: str) -> ElasticOwner | None:
    """The owner object as an elastic job; None when it did not opt in (neither
    annotation). Never raises on the object's content: a problem is returned."""
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    annotations = metadata.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    if MIN_SIZE_ANNOTATION not in annotations and MAX_SIZE_ANNOTATION not in annotations:
        return None
    namespace = str(metadata.get("namespace") or "default")
    name = str(metadata.get("name") or "")
    version = str(metadata.get("resourceVersion") or "")
    uid = str(metadata.get("uid") or "")
    where = f"{kind} {namespace}/{name}"
    try:
        bounds = _bounds(annotations, where)
        spec = mapping(obj.get("spec"), f"{where}: spec")
        size, others = _size(spec, kind, bounds, where)
    except InputError as error:
        return ElasticOwner(kind, namespace, name, 0, None, problem=str(error),
                            resource_version=version, uid=uid)
    if not bounds.minimum <= size <= bounds.maximum:
        return ElasticOwner(kind, namespace, name, size, None, problem=(
            f"{where}: its size {size} is outside {MIN_SIZE_ANNOTATION}={bounds.minimum} .. "
            f"{MAX_SIZE_ANNOTATION}={bounds.maximum}; set the size within them"),
            resource_version=version, uid=uid)
    return ElasticOwner(kind, namespace, name, size, bounds, resource_version=version, uid=uid,
                        others=others)


def _bounds(annotations: Mapping[str, Any], where: str) -> Bounds:
    values = []
    for key in (MIN_SIZE_ANNOTATION, MAX_SIZE_ANNOTATION):
        raw = annotations.get(key)
        if raw is None:
            raise InputError(f"{where}: annotation {key} is missing (an elastic job sets "
                             f"both {MIN_SIZE_ANNOTATION} and {MAX_SIZE_ANNOTATION})")
        text = str(raw).strip()
        if not text.isdigit() or int(text) < 1:
            raise InputError(f"{where}: annotation {key}: expected a whole number >= 1, "
                             f"got {raw!r}")
        values.append(int(text))
    minimum, maximum = values
    if minimum > maximum:
        raise InputError(f"{where}: {MIN_SIZE_ANNOTATION}={minimum} is above "
                         f"{MAX_SIZE_ANNOTATION}={maximum}")
    return Bounds(minimum, maximum)


def _size(spec: Mapping[str, Any], kind: str, bounds: Bounds, where: str) -> tuple[int, int]:
    """(the size a resize changes, the owner's other pods)."""
    resizing = BY_KIND[kind].resizing if kind in BY_KIND else None
    if resizing is None:
        kinds = " and ".join(f"{k.kind}s" for k in KINDS if k.resizing)
        raise InputError(f"{where}: a {kind} cannot be resized by headstart (elastic jobs are "
                         f"{kinds})")
    elastic = resizing.read(spec, where)
    if bounds.minimum < elastic.low or (elastic.high is not None
                                        and bounds.maximum > elastic.high):
        high = elastic.high if elastic.high is not None else "unset"
        raise InputError(
            f"{where}: {MIN_SIZE_ANNOTATION}..{MAX_SIZE_ANNOTATION} "
            f"({bounds.minimum}..{bounds.maximum}) must lie within {elastic.limits} "
            f"({elastic.low}..{high})")
    return elastic.size, elastic.others


def scale_patch(owner: ElasticOwner, size: int) -> dict[str, Any]:
    """The merge patch that sets the owner's size (its controller adds or removes pods),
    guarded by the resourceVersion it was decided on (a changed owner: 409, decided
    again next round)."""
    guard = {"metadata": {"resourceVersion": owner.resource_version}} \
        if owner.resource_version else {}
    resizing = BY_KIND[owner.kind].resizing
    if resizing is None:
        raise ValueError(f"{owner.where} is not resizable")
    return guard | {"spec": resizing.spec_patch(size)}
