"""What headstart knows about one kind of training workload: the record every kind module fills.

Decides: the shape of a kind's record (`WorkloadKind`) and of the pods it declares
(`PodSet`). Each kind lives in its own module of `kube.kinds`; every table the rest of
headstart keeps per kind (the owners the extender watches, the kinds it suspends, the
resources the known-demand sources read) is derived from `kube.kinds.KINDS`.

Must not: do I/O, log, read the clock; a malformed field raises `InputError` naming its path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

StatusTest = Callable[[Mapping[str, Any]], bool]
"""An object's `status` -> whether it is in some state."""


def any_condition(*types: str) -> StatusTest:
    """True when a condition of one of `types` is True in `status.conditions`."""
    def test(status: Mapping[str, Any]) -> bool:
        conditions = status.get("conditions")
        return any(isinstance(c, Mapping) and c.get("type") in types and c.get("status") == "True"
                   for c in (conditions if isinstance(conditions, list) else ()))
    return test


def status_in(field_name: str, *values: str) -> StatusTest:
    """True when `status.<field_name>` is one of `values`."""
    return lambda status: status.get(field_name) in values


def _never(status: Mapping[str, Any]) -> bool:
    return False


PodSetsReader = Callable[[Mapping[str, Any], str, str], tuple["PodSet", ...]]
"""(the object's spec, where for messages, the API version it was read at) -> its pods."""


@dataclass(frozen=True, slots=True)
class PodSet:
    """Pods of one replica type, replicated job or group role, and the stage they start in
    (stage 0 first; a later stage's pods are created only once earlier ones run)."""

    name: str
    pods: int
    stage: int = 0
    template: Any = None
    """Its raw PodTemplateSpec, when the object holds one (None: the kind gives none)."""
    template_at: str = ""
    """The template's field path, for messages."""
    owned: bool = True
    """Its pods name the object as their controller and carry its `pod_label`, so the
    ones that exist can be counted (an mpi-operator launcher's controller is its
    launcher Job: while the job runs, its missing pods cannot be told)."""


@dataclass(frozen=True, slots=True)
class ElasticSize:
    """What an elastic owner's spec says: the size a resize changes and its other pods."""

    size: int
    others: int = 0
    """Pods a resize never touches (a PyTorchJob's Master)."""
    low: int = 1
    high: int | None = None
    """The sizes its own spec allows (a PyTorchJob's elasticPolicy), None: unbounded."""
    limits: str = ""
    """Where `low`..`high` come from, for messages."""


@dataclass(frozen=True, slots=True)
class Resizing:
    """How headstart resizes a kind: its controller adds or removes pods to match."""

    read: Callable[[Mapping[str, Any], str], ElasticSize]
    """(its spec, where for messages) -> its size; `InputError` when it cannot change size."""
    spec_patch: Callable[[int], dict[str, Any]]
    """size -> the `spec` of the merge patch that sets it."""


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    """One kind of workload object whose pods headstart admits as a gang."""

    kind: str
    group: str
    plural: str
    versions: tuple[str, ...]
    """The API versions headstart reads it at, preferred first. A cluster serves one of
    them (an MPIJob: the training operator's v1 or mpi-operator's v2beta1)."""
    pod_sets: PodSetsReader
    """How its declared size is read from its spec."""
    pod_label: str | None = None
    """The label its controller puts on every pod, naming it. Kinds that share a label
    (a TrainJob's pods carry its JobSet's) share one owner family. None: its pods name it
    otherwise (an Indexed Job: their controller reference)."""
    part_labels: tuple[str, ...] = ()
    """Pod labels naming the pod's part (`PodSet.name`, case-insensitive), first present wins."""
    role_labels: tuple[str, ...] | None = None
    """Pod labels naming the pod's role in the job (PS, worker, chief: `locality.jobs`),
    first present wins; None: its `part_labels`; (): its pods' job is found otherwise
    (a LeaderWorkerSet's groups)."""
    managers: Mapping[str, str] = field(default_factory=dict)
    """Per version headstart may suspend it at: the `managedBy` value by which its own
    controller reconciles it there. Empty: headstart never suspends it."""
    suspend_in: tuple[str, ...] = ("spec",)
    """The path of the object holding its `suspend` and `managedBy` fields."""
    controls_pods: bool = True
    """Its pods name it as their controller (a JobSet's pods name its Jobs)."""
    demand: str | None = None
    """How the overprovisioner's known-demand sources read its announced pods: `pod-sets`
    (the generic reader, from `pod_sets`' templates), or a reader of its own (`job`,
    `jobset`, `trainjob`); None: it announces nothing."""
    demand_source: str = ""
    """The known-demand source that reads it (one of `predictor.known.model.SOURCES`)."""
    sized_by: str | None = None
    """The kind of the object it makes whose pod sets size its pods, when that one is
    seen (a TrainJob's: the JobSet the trainer makes, with its initializers)."""
    finished: StatusTest = _never
    """Whether it is done and announces nothing more."""
    suspend_acknowledged: StatusTest = any_condition("Suspended")
    """Whether its controller has acted on its suspension (deleted its pods, suspended
    what it made)."""
    suspend_refused: Callable[[Mapping[str, Any]], str | None] = lambda spec: None
    """(its spec) -> why its controller would refuse a suspension of this object (a
    RayJob's operator fails one it may not suspend), None: it would not."""
    resizing: Resizing | None = None
    """How an elastic job of this kind is resized (`locality.elastic`); None: it is not."""

    @property
    def family(self) -> str:
        """Which owner key its pods map to: the pod label, else the kind."""
        return self.pod_label or self.kind

    @property
    def roles(self) -> tuple[str, ...]:
        return self.part_labels if self.role_labels is None else self.role_labels

    @property
    def suspendable(self) -> bool:
        return bool(self.managers)

    @property
    def run_policy(self) -> bool:
        return self.suspend_in == ("spec", "runPolicy")

    def api_version(self, version: str | None = None) -> str:
        """`group/version` (the preferred version when none is given); `v1` for the core group."""
        version = version or self.versions[0]
        return f"{self.group}/{version}" if self.group else version

    def watch_name(self, version: str) -> str:
        """The name of its watch at `version`: `plural.group`, with the version too when
        the kind is read at several (`mpijobs.v2beta1.kubeflow.org`)."""
        if len(self.versions) > 1 and version != self.versions[0]:
            return f"{self.plural}.{version}.{self.group}"
        return f"{self.plural}.{self.group}"
