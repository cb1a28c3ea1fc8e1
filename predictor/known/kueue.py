"""Known demand of Kueue Workloads not yet admitted, and when each is likely admitted.

Fields (kubernetes-sigs/kueue apis/kueue/v1beta2, served beside the deprecated v1beta1
with the same names for what is read here):
- Workload: `spec.podSets[]` {`name`, `count`, `template`}, `spec.queueName` (a
  LocalQueue in the Workload's namespace), `spec.priority`, `spec.active` (false =
  deactivated), conditions `QuotaReserved`, `Admitted`, `Finished`,
  `status.admissionChecks[]` {`name`, `state`: Pending, Ready, Retry or Rejected}; the
  job it stands for is its controller owner (`metadata.ownerReferences`).
- LocalQueue: `spec.clusterQueue`.
- ClusterQueue: `spec.resourceGroups[].flavors[].resources[]` {`name`, `nominalQuota`},
  `spec.queueingStrategy` (`BestEffortFIFO` default, or `StrictFIFO`),
  `status.flavorsReservation[].resources[]` {`name`, `total`} (quota reserved by the
  workloads holding it; `flavorsUsage` when no reservation is reported), and the
  admission checks its Workloads must pass: `spec.admissionChecksStrategy
  .admissionChecks[]` {`name`, `onFlavors`} (v1beta2 and v1beta1) or v1beta1's
  `spec.admissionChecks[]` (names).
- AdmissionCheck (cluster-scoped): `spec.controllerName`; Kueue's own controllers are
  `kueue.x-k8s.io/provisioning-request` (`ProvisioningRequestControllerName`) and
  `kueue.x-k8s.io/multikueue` (`MultiKueueControllerName`).

The estimate, kept simple on purpose:
- a Workload that is admitted, finished or deactivated announces nothing. Neither does
  one with a MultiKueue check (it runs in a worker cluster, not here) or a Rejected
  check (Kueue deactivates it);
- one whose ClusterQueue sends it to the ProvisioningRequest controller (a check of
  that controller on the Workload, Pending or Ready, or on its ClusterQueue for every
  flavor) is *covered*: Kueue creates a ProvisioningRequest for its pods and
  cluster-autoscaler provisions nodes for that request, so placeholders for it would
  launch its nodes a second time. It is listed and announced, never counted;
- one that has reserved quota but is not admitted yet is expected now (its other
  checks are about to pass), unless a check is in Retry: then Kueue releases its quota
  and requeues it later, so its time is unknown;
- Kueue's plain-Pod integration (a Workload owned by its Pods) is read like any other:
  its pods exist but are held by Kueue's `kueue.x-k8s.io/admission` scheduling gate,
  which cluster-autoscaler ignores, so they are not observed demand (see
  `predictor.known.gated`) and this Workload is what says when they will need nodes;
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


PROVISIONING_REQUEST_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"


@dataclass(frozen=True)
class CheckState:
    """One entry of a Workload's `status.admissionChecks`."""

    name: str
    state: str  # Pending, Ready, Retry or Rejected


@dataclass(frozen=True)
class AdmissionCheck:
    """A kueue.x-k8s.io AdmissionCheck: its name and the controller that runs it."""

    name: str
    controller: str


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
    checks: tuple[CheckState, ...] = ()

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
    """checks: the admission checks every Workload of the queue must pass (those limited
    to some flavors are left out: which flavor a Workload gets is not modelled)."""

    name: str
    strict_fifo: bool
    quota: Quantities
    reserved: Quantities
    checks: tuple[str, ...] = ()


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
    checks = []
    for index, raw in enumerate(status.get("admissionChecks") or []):
        raw = mapping(raw, f"{where}.status.admissionChecks[{index}]")
        checks.append(CheckState(str(raw.get("name", "")), str(raw.get("state", ""))))
    return Workload(
        meta=meta,
        queue_name=str(spec.get("queueName") or ""),
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        pod_sets=tuple(pod_sets),
        quota_reserved=condition_true(status, "QuotaReserved"),
        admitted=condition_true(status, "Admitted"),
        finished=condition_true(status, "Finished"),
        active=spec.get("active") is not False,
        checks=tuple(checks),
    )


def parse_admission_check(obj: Mapping[str, Any]) -> AdmissionCheck:
    meta, _, spec, _ = open_object(obj, "admissioncheck")
    return AdmissionCheck(meta.name, str(spec.get("controllerName") or ""))


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
    checks = [str(name) for name in spec.get("admissionChecks") or []]  # v1beta1 only
    strategy = mapping(spec.get("admissionChecksStrategy"),
                       f"{where}.spec.admissionChecksStrategy")
    for index, rule in enumerate(strategy.get("admissionChecks") or []):
        rule = mapping(rule, f"{where}.spec.admissionChecksStrategy.admissionChecks[{index}]")
        if not rule.get("onFlavors"):
            checks.append(str(rule.get("name", "")))
    return ClusterQueue(meta.name, spec.get("queueingStrategy") == "StrictFIFO", quota, reserved,
                        tuple(checks))


def _fits(need: Mapping[str, int], room: Mapping[str, int]) -> bool:
    return all(need[name] <= room[name] for name in need if need[name] > 0)


def workload_items(workloads: Iterable[Workload], local_queues: Iterable[LocalQueue],
                   cluster_queues: Iterable[ClusterQueue], now_s: float,
                   admission_checks: Iterable[AdmissionCheck] = ()) -> list[KnownItem]:
    """Items of the Workloads not admitted yet, expected now, unknown or covered (module
    docstring)."""
    queues = {(q.namespace, q.name): q.cluster_queue for q in local_queues}
    cqs = {q.name: q for q in cluster_queues}
    controllers = {check.name: check.controller for check in admission_checks}
    waiting: dict[str, list[Workload]] = defaultdict(list)
    decided: list[tuple[Workload, float | None, str, bool]] = []
    for workload in workloads:
        states = {check.state for check in workload.checks}
        if (workload.admitted or workload.finished or not workload.active
                or "Rejected" in states):
            continue
        cq = cqs.get(queues.get((workload.meta.namespace, workload.queue_name), ""))
        # A check on the Workload in Retry or Rejected no longer provisions anything; one
        # on its ClusterQueue applies before the Workload lists it.
        live = [c.name for c in workload.checks if c.state in ("Pending", "Ready")]
        live += list(cq.checks if cq else ())
        if any(controllers.get(name) == MULTIKUEUE_CONTROLLER
               for name in live + [c.name for c in workload.checks]):
            continue
        provisioning = sorted({name for name in live
                               if controllers.get(name) == PROVISIONING_REQUEST_CONTROLLER})
        if provisioning:
            decided.append((workload, None, f"admission check {', '.join(provisioning)}: "
                            "a ProvisioningRequest, cluster-autoscaler provisions its nodes",
                            True))
            continue
        if workload.quota_reserved:
            if "Retry" in states:
                retry = [c.name for c in workload.checks if c.state == "Retry"]
                decided.append((workload, None, f"admission check {', '.join(retry)} in "
                                "Retry: Kueue requeues it later", False))
            else:
                decided.append((workload, now_s,
                                "quota reserved, waiting for admission checks", False))
            continue
        if cq is None:
            decided.append((workload, None, f"queue {workload.queue_name!r} not found", False))
            continue
        waiting[cq.name].append(workload)
    for cq_name, members in waiting.items():
        cq = cqs[cq_name]
        room = {name: cq.quota[name] - cq.reserved[name] for name in cq.quota}
        blocked_by = ""
        members.sort(key=lambda w: (-w.priority, w.meta.created_s or 0.0, w.meta.name))
        for position, workload in enumerate(members, start=1):
            place = f"position {position} in ClusterQueue {cq_name}"
            need = workload.total()
            if blocked_by:
                decided.append((workload, None, f"{place}, behind {blocked_by} (StrictFIFO)",
                                False))
            elif _fits(need, room):
                for name in room:
                    room[name] -= need[name]
                decided.append((workload, now_s, f"{place}: nominal quota has room", False))
            else:
                decided.append((workload, None, f"{place}: waiting for quota", False))
                if cq.strict_fifo:
                    blocked_by = workload.meta.name
    items = []
    for workload, expected, reason, covered in decided:
        for pod_set in workload.pod_sets:
            if pod_set.count:
                items.append(KnownItem(
                    "kueue", "Workload", workload.meta.namespace, workload.meta.name,
                    workload.key, pod_set.count, pod_set.request, expected,
                    f"{pod_set.name}: {reason}", covered,
                ))
    return items
