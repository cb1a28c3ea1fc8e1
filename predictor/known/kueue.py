"""Known demand of Kueue Workloads not yet admitted, and when each is likely admitted.

Fields (kubernetes-sigs/kueue apis/kueue/v1beta2, served beside the deprecated v1beta1
with the same names for what is read here):
- Workload: `spec.podSets[]` {`name`, `count`, `template`}, `spec.queueName` (a
  LocalQueue in the Workload's namespace), `spec.priority`, `spec.active` (false =
  deactivated), conditions `QuotaReserved`, `Admitted`, `Finished`; the job it stands
  for is its controller owner (`metadata.ownerReferences`).
- LocalQueue: `spec.clusterQueue`.
- ClusterQueue: `spec.resourceGroups[].flavors[].resources[]` {`name`, `nominalQuota`},
  `spec.queueingStrategy` (`BestEffortFIFO` default, or `StrictFIFO`),
  `status.flavorsReservation[].resources[]` {`name`, `total`} (quota reserved by the
  workloads holding it; `flavorsUsage` when no reservation is reported).

The estimate, kept simple on purpose:
- a Workload that is admitted, finished, deactivated, or stands for existing pods
  (Kueue's plain-Pod integration: owned by Pods, which the recorder already counts as
  pending) announces nothing;
- one that has reserved quota but is not admitted yet (waiting on admission checks,
  e.g. a ProvisioningRequest) is expected now;
- the others wait in their ClusterQueue, ordered as Kueue orders them (higher
  `spec.priority` first, then older first). Walking that order, a Workload whose total
  cpu, memory and GPU requests fit in the queue's room (nominal quota summed over its
  flavors, less what is reserved) is expected now and takes its share of the room; one
  that does not fit waits for quota: expected unknown, so not counted; with StrictFIFO
  everything behind it waits too. Borrowing from the cohort, flavor assignment, and
  resources other than cpu, memory and the GPU are not modelled; a request the queue
  has no quota for at all never fits.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, parse_resource_quantity
from predictor.known.model import (
    JOBSET,
    KnownItem,
    Meta,
    condition_true,
    mapping,
    open_object,
    owner_key,
    parse_meta,
    template_request,
    whole,
    workload_key,
)

Quantities = Mapping[str, int]  # "cpu" / "memory" / "gpu" in milli-cores, bytes, milli-GPUs


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    request: Resources


@dataclass(frozen=True)
class Workload:
    """A kueue.x-k8s.io Workload, as far as its demand goes."""

    meta: Meta
    queue_name: str
    priority: int
    pod_sets: tuple[PodSet, ...]
    quota_reserved: bool
    admitted: bool
    finished: bool
    active: bool

    @property
    def stands_for_pods(self) -> bool:
        """Kueue's plain-Pod integration: the Workload is owned by the pods themselves."""
        return any(o.kind == "Pod" and o.api_version == "v1" for o in self.meta.owners)

    @property
    def key(self) -> str:
        owner = self.meta.controller
        if owner is None:
            return workload_key("kueue.x-k8s.io", "Workload", self.meta.namespace,
                                self.meta.name)
        if owner.kind == "TrainJob":  # its pods are the JobSet of the same name
            return f"{JOBSET}/{self.meta.namespace}/{owner.name}"
        return owner_key(owner, self.meta.namespace)

    def total(self) -> dict[str, int]:
        total = {"cpu": 0, "memory": 0, "gpu": 0}
        for pod_set in self.pod_sets:
            total["cpu"] += pod_set.count * pod_set.request.cpu_milli
            total["memory"] += pod_set.count * pod_set.request.memory_bytes
            total["gpu"] += pod_set.count * pod_set.request.gpu_milli
        return total


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    strict_fifo: bool
    quota: Quantities
    reserved: Quantities


def parse_workload(obj: Mapping[str, Any], gpu_resource: str) -> Workload:
    meta, where, spec, status = open_object(obj, "workload")
    pod_sets = []
    for index, raw in enumerate(spec.get("podSets") or []):
        path = f"{where}.spec.podSets[{index}]"
        raw = mapping(raw, path)
        pod_sets.append(PodSet(
            str(raw.get("name", "")), whole(raw.get("count"), f"{path}.count", 1),
            template_request(raw.get("template"), gpu_resource, f"{path}.template"),
        ))
    priority = spec.get("priority")
    return Workload(
        meta=meta,
        queue_name=str(spec.get("queueName") or ""),
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        pod_sets=tuple(pod_sets),
        quota_reserved=condition_true(status, "QuotaReserved"),
        admitted=condition_true(status, "Admitted"),
        finished=condition_true(status, "Finished"),
        active=spec.get("active") is not False,
    )


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueue:
    meta = parse_meta(obj, "localqueue")
    spec = mapping(obj.get("spec"), f"localqueue {meta.namespace}/{meta.name}.spec")
    return LocalQueue(meta.namespace, meta.name, str(spec.get("clusterQueue") or ""))


def _quantities(items: Any, gpu_resource: str, where: str, field_name: str) -> dict[str, int]:
    """Sum `field_name` of a list of {name, <field>} per cpu / memory / gpu."""
    names = {"cpu": "cpu", "memory": "memory", gpu_resource: "gpu"}
    total = {"cpu": 0, "memory": 0, "gpu": 0}
    for index, item in enumerate(items or []):
        item = mapping(item, f"{where}[{index}]")
        ours = names.get(str(item.get("name", "")))
        if ours is None or item.get(field_name) is None:
            continue
        value = parse_resource_quantity(item[field_name], f"{where}[{index}].{field_name}")
        scale = 1 if ours == "memory" else 1000
        total[ours] += int((value * scale).to_integral_value("ROUND_CEILING"))
    return total


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        into[name] += value


def parse_cluster_queue(obj: Mapping[str, Any], gpu_resource: str) -> ClusterQueue:
    meta, where, spec, status = open_object(obj, "clusterqueue")
    quota = {"cpu": 0, "memory": 0, "gpu": 0}
    for g, group in enumerate(spec.get("resourceGroups") or []):
        group = mapping(group, f"{where}.spec.resourceGroups[{g}]")
        for f, flavor in enumerate(group.get("flavors") or []):
            path = f"{where}.spec.resourceGroups[{g}].flavors[{f}]"
            flavor = mapping(flavor, path)
            _add(quota, _quantities(flavor.get("resources"), gpu_resource, f"{path}.resources",
                                    "nominalQuota"))
    usage = status.get("flavorsReservation")
    usage_field = "flavorsReservation" if usage is not None else "flavorsUsage"
    reserved = {"cpu": 0, "memory": 0, "gpu": 0}
    for f, flavor in enumerate(status.get(usage_field) or []):
        path = f"{where}.status.{usage_field}[{f}]"
        flavor = mapping(flavor, path)
        _add(reserved, _quantities(flavor.get("resources"), gpu_resource, f"{path}.resources",
                                   "total"))
    return ClusterQueue(meta.name, spec.get("queueingStrategy") == "StrictFIFO", quota, reserved)


def _fits(need: Mapping[str, int], room: Mapping[str, int]) -> bool:
    return all(need[name] <= room[name] for name in need if need[name] > 0)


def workload_items(workloads: Iterable[Workload], local_queues: Iterable[LocalQueue],
                   cluster_queues: Iterable[ClusterQueue], now_s: float) -> list[KnownItem]:
    """Items of the Workloads not admitted yet, expected now or unknown (module docstring)."""
    queues = {(q.namespace, q.name): q.cluster_queue for q in local_queues}
    cqs = {q.name: q for q in cluster_queues}
    waiting: dict[str, list[Workload]] = defaultdict(list)
    decided: list[tuple[Workload, float | None, str]] = []
    for workload in workloads:
        if (workload.admitted or workload.finished or not workload.active
                or workload.stands_for_pods):
            continue
        if workload.quota_reserved:
            decided.append((workload, now_s, "quota reserved, waiting for admission checks"))
            continue
        cq_name = queues.get((workload.meta.namespace, workload.queue_name))
        if cq_name is None or cq_name not in cqs:
            decided.append((workload, None, f"queue {workload.queue_name!r} not found"))
            continue
        waiting[cq_name].append(workload)
    for cq_name, members in waiting.items():
        cq = cqs[cq_name]
        room = {name: cq.quota[name] - cq.reserved[name] for name in cq.quota}
        blocked_by = ""
        members.sort(key=lambda w: (-w.priority, w.meta.created_s or 0.0, w.meta.name))
        for position, workload in enumerate(members, start=1):
            place = f"position {position} in ClusterQueue {cq_name}"
            need = workload.total()
            if blocked_by:
                decided.append((workload, None, f"{place}, behind {blocked_by} (StrictFIFO)"))
            elif _fits(need, room):
                for name in room:
                    room[name] -= need[name]
                decided.append((workload, now_s, f"{place}: nominal quota has room"))
            else:
                decided.append((workload, None, f"{place}: waiting for quota"))
                if cq.strict_fifo:
                    blocked_by = workload.meta.name
    items = []
    for workload, expected, reason in decided:
        for pod_set in workload.pod_sets:
            if pod_set.count:
                items.append(KnownItem(
                    "kueue", "Workload", workload.meta.namespace, workload.meta.name,
                    workload.key, pod_set.count, pod_set.request, expected,
                    f"{pod_set.name}: {reason}",
                ))
    return items
