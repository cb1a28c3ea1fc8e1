"""Why a bucket's placeholders cannot work: too big for every node, or no node group.

Decides, per bucket (instance type, placement group), one of:
- `too_big`: the placeholder requests more than any settled node of its type has left
  after its DaemonSet pods (sizing.fit_problem), or cluster-autoscaler's latest
  `NotTriggerScaleUp` event for it names an `Insufficient <resource>` (the template of
  the type's node group cannot hold it, so CA launches nothing);
- `no_node_group`: no node of the bucket exists and cluster-autoscaler says no node
  group can make one: its latest `NotTriggerScaleUp` event for the bucket lists only
  node groups that do not match the placeholder's node selector or tolerations (or no
  node group at all), or its status ConfigMap says it runs with no node group;
- `group_at_max`: the latest `NotTriggerScaleUp` says the matching node group (or the
  cluster) is at its maximum size;
- `buffer_not_processed`: a CapacityBuffer asking for replicas that the autoscaler
  has not made ready and injected within `BUFFER_GRACE_S` of its creation. Its
  controller sets condition `ReadyForProvisioning` (capacitybuffer/common/common.go),
  and its pod-list processor sets `Provisioning` True (reason FakePodsInjected) or
  False with why (capacitybuffer pod-list processor); neither appears unless CA runs
  with `--capacity-buffer-controller-enabled` and `--capacity-buffer-pod-injection-
  enabled`, and then nothing scales up for the buffer. Karpenter (feature gate
  CapacityBuffer) sets `Provisioning` False with reason `RequiresNewCapacity` while it
  launches nodes for the buffer ("N/M virtual pods required new capacity, F failed",
  provisioning/buffers.go) and `BufferEmpty` at zero replicas: both are normal, and
  only F > 0 (virtual pods it could not place) is a problem.

- `gpu_label_missing`: cluster-autoscaler runs (its status ConfigMap is there) and a
  node of a GPU bucket carries none of the providers' GPU labels
  (sizing.GPU_NODE_LABELS): while such a node's device plugin has not registered its
  GPUs, CA counts it as ready without GPUs and launches another node for the
  placeholder still pending on it (kubernetes/autoscaler#1949, #3164). Label the node
  group (and, on EKS, tag its ASG: docs/install-eks.md step 1). Karpenter does not use
  the label, so without CA's status nothing is said.

The events: cluster-autoscaler records `NotTriggerScaleUp` ("pod didn't trigger
scale-up: <count> <reason>, ...", one count per node group, processors/status/
eventing_scale_up_processor.go `ReasonsMessage`) and `TriggeredScaleUp` on pending pods,
and the same two reasons on a CapacityBuffer for its fake pods ("capacity buffer N fake
pods didn't trigger scale-up: ...", capacitybuffer fake-pods scale-up status processor).
Karpenter records on a pending pod it provisions for `Nominated` ("Pod should schedule
on: nodeclaim/...", provisioning/scheduling/events.go NominatePodEvent), the same as
TriggeredScaleUp here, and, when no NodePool can take it, `FailedScheduling` with
"Failed to schedule pod, <error>" (PodFailedToScheduleEvent; kube-scheduler's own
FailedScheduling messages begin "0/N nodes are available" and are not read): the error
names a NodePool whose limits are reached ("all available instance types exceed limits
for nodepool", "node limits have been exhausted": group_at_max, scheduler.go
addToNewNodeClaim), or says no instance type of a matching pool is big enough ("no
instance type has enough resources", requirements met: too_big, nodeclaim.go
InstanceTypeFilterError), or that no pool matches (incompatible requirements, an
untolerated taint, every type filtered out: no_node_group).
The latest verdict per bucket, no older than `max_age_s`, is the verdict.
The status ConfigMap is read by `kube.autoscaler_status` (shared with the
extender's job admitter, which takes node groups' sizes from it).

Must not: read the clock (`now_s` comes in), log, or call the API.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from bucketing.resources import Resources
from kube.autoscaler_status import AutoscalerStatus as AutoscalerStatus  # re-exported
from kube.autoscaler_status import parse_autoscaler_status as parse_autoscaler_status
from overprovisioner.planner.sizing import GPU_NODE_LABELS, NodeRoom, fit_problem

Bucket = tuple[str, str]
Problem = Literal["too_big", "no_node_group", "group_at_max", "buffer_not_processed",
                  "gpu_label_missing"]
# CA's loop runs every 10 s; a buffer still unprocessed after 5 minutes is not coming.
BUFFER_GRACE_S = 300.0
SCALE_UP_REASONS = ("NotTriggerScaleUp", "TriggeredScaleUp", "Nominated", "FailedScheduling")
KARPENTER_FAILED_PREFIX = "Failed to schedule pod,"
KARPENTER_AT_MAX_MARKERS = ("exceed limits for nodepool", "limits have been exhausted")
KARPENTER_TOO_BIG_MARKERS = ("no instance type has enough resources",)
# Provisioning=False reasons of a buffer being served normally (Karpenter's provisioner).
BUFFER_NORMAL_REASONS = ("RequiresNewCapacity", "BufferEmpty")
_FAILED_VIRTUAL_PODS = re.compile(r"(\d+)/(\d+) virtual pods required new capacity, (\d+) failed")
# Reasons a node group gives for a pod it will not take because it does not match: the
# scheduler's node-affinity and taint filters as CA's simulation reports them.
MISMATCH_MARKERS = ("didn't match pod's node affinity", "didn't match node selector",
                    "untolerated taint", "didn't match pod affinity",
                    "didn't tolerate")
AT_MAX_MARKERS = ("max node group size reached", "max total nodes in cluster reached",
                  "max cluster cpu", "max cluster memory", "exceeded quota")


@dataclass(frozen=True)
class BucketProblem:
    instance_type: str
    placement_group: str
    problem: Problem
    detail: str


@dataclass(frozen=True)
class ScaleUpEvent:
    """cluster-autoscaler's latest scale-up verdict for one bucket's placeholders."""

    reason: str  # NotTriggerScaleUp | TriggeredScaleUp | Nominated | FailedScheduling
    message: str
    time_s: float

    @property
    def source(self) -> str:
        """Who said it: Karpenter's reasons are Nominated and its FailedScheduling."""
        return "Karpenter" if self.reason in ("Nominated", "FailedScheduling") \
            else "cluster-autoscaler"

    def verdict(self) -> Problem | None:
        """What the event says of the placeholder (None: it scales up, or says
        something else)."""
        if self.reason == "NotTriggerScaleUp":
            return classify_not_triggered(self.message)
        if self.reason == "FailedScheduling":
            return classify_karpenter_failure(self.message)
        return None


def scale_up_reasons(message: str) -> list[tuple[int, str]]:
    """The `<count> <reason>` items of a NotTriggerScaleUp message ([] = none given)."""
    _, _, tail = message.partition("scale-up:")
    items = []
    for part in tail.split(","):
        part = part.strip()
        if not part:
            continue
        count, _, reason = part.partition(" ")
        if count.isdigit():
            items.append((int(count), reason.strip()))
        else:
            items.append((1, part))
    return items


def classify_not_triggered(message: str) -> Problem | None:
    """What a NotTriggerScaleUp message means for a placeholder (None: something else,
    e.g. a node group in backoff after a failed scale-up)."""
    lower = message.lower()
    if any(marker in lower for marker in ("max total nodes in cluster reached",)):
        return "group_at_max"
    reasons = [reason.lower() for _, reason in scale_up_reasons(message)]
    if any(reason.startswith("insufficient") for reason in reasons):
        return "too_big"
    if any(any(m in reason for m in AT_MAX_MARKERS) for reason in reasons):
        return "group_at_max"
    if all(any(m in reason for m in MISMATCH_MARKERS) for reason in reasons):
        return "no_node_group"  # also when no node group was considered at all
    return None


def classify_karpenter_failure(message: str) -> Problem:
    """What Karpenter's "Failed to schedule pod, ..." says of a placeholder (see the
    module docstring for the errors it joins, one per NodePool)."""
    lower = message.lower()
    if any(marker in lower for marker in KARPENTER_AT_MAX_MARKERS):
        return "group_at_max"
    if any(marker in lower for marker in KARPENTER_TOO_BIG_MARKERS):
        return "too_big"
    return "no_node_group"


def event_time(event: Mapping[str, Any]) -> float | None:
    """An Event's last time: `lastTimestamp`, else `eventTime`, else its creation."""
    metadata = event.get("metadata") or {}
    for text in (event.get("lastTimestamp"), event.get("eventTime"),
                 metadata.get("creationTimestamp")):
        if isinstance(text, str) and text:
            try:
                return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def latest_scale_up_events(
    events: Iterable[Mapping[str, Any]], pod_buckets: Mapping[str, Bucket],
    buffer_buckets: Mapping[str, Bucket], now_s: float, max_age_s: float,
) -> dict[Bucket, ScaleUpEvent]:
    """Per bucket, the newest NotTriggerScaleUp / TriggeredScaleUp event no older than
    `max_age_s`. pod_buckets: placeholder pod name -> bucket (pods that exist now);
    buffer_buckets: CapacityBuffer name -> bucket."""
    latest: dict[Bucket, ScaleUpEvent] = {}
    for event in events:
        if event.get("reason") not in SCALE_UP_REASONS:
            continue
        if event.get("reason") == "FailedScheduling" and not str(
                event.get("message", "")).startswith(KARPENTER_FAILED_PREFIX):
            continue  # kube-scheduler's own: about placement, not about new nodes
        involved = event.get("involvedObject") or {}
        table = {"Pod": pod_buckets, "CapacityBuffer": buffer_buckets}.get(
            involved.get("kind", ""), {})
        bucket = table.get(involved.get("name", ""))
        time_s = event_time(event)
        if bucket is None or time_s is None or now_s - time_s > max_age_s:
            continue
        current = latest.get(bucket)
        if current is None or time_s >= current.time_s:
            latest[bucket] = ScaleUpEvent(event["reason"], str(event.get("message", "")),
                                          time_s)
    return latest


def buffer_problem(buffer: Mapping[str, Any], now_s: float) -> str | None:
    """Why cluster-autoscaler is not provisioning this CapacityBuffer, or None."""
    if not int((buffer.get("spec") or {}).get("replicas") or 0):
        return None
    created = event_time({"metadata": buffer.get("metadata") or {}})
    conditions = {c.get("type"): c for c in (buffer.get("status") or {}).get("conditions") or []}
    ready, provisioning = conditions.get("ReadyForProvisioning"), conditions.get("Provisioning")
    if ready is not None and ready.get("status") == "False":
        return f"the autoscaler: not ready for provisioning: {ready.get('message', '')}"
    if provisioning is not None and provisioning.get("status") == "False":
        reason, message = provisioning.get("reason", ""), provisioning.get("message", "")
        if reason in BUFFER_NORMAL_REASONS:
            failed = _FAILED_VIRTUAL_PODS.search(message)
            if failed is None or int(failed.group(3)) == 0:
                return None  # Karpenter is launching (or there is nothing to launch)
            return (f"Karpenter could not place {failed.group(3)} of the buffer's "
                    f"{failed.group(2)} virtual pods: {message}")
        return f"the autoscaler is not provisioning it ({reason}): {message}"
    if created is None or now_s - created < BUFFER_GRACE_S:
        return None
    if ready is None:
        return (f"no ReadyForProvisioning condition {BUFFER_GRACE_S:.0f} s after creation: "
                "cluster-autoscaler's buffer controller is not running "
                "(--capacity-buffer-controller-enabled)")
    if provisioning is None:
        return (f"ready but no Provisioning condition {BUFFER_GRACE_S:.0f} s after creation: "
                "cluster-autoscaler injects no fake pods for buffers "
                "(--capacity-buffer-pod-injection-enabled)")
    return None


def diagnose(
    buckets: Sequence[Bucket],
    requests: Mapping[str, Resources],
    rooms: Sequence[NodeRoom],
    nodes: Mapping[Bucket, int],
    scale_ups: Mapping[Bucket, ScaleUpEvent],
    status: AutoscalerStatus,
    now_s: float,
    buffers: Mapping[Bucket, Mapping[str, Any]] | None = None,
) -> dict[Bucket, BucketProblem]:
    """The problem of each bucket that has one (see the module docstring). buffers: the
    bucket's CapacityBuffer as observed, when the buffer backend is in use."""
    buffers = buffers or {}
    problems: dict[Bucket, BucketProblem] = {}
    for bucket in buckets:
        instance_type, group = bucket
        event = scale_ups.get(bucket)
        verdict = event.verdict() if event is not None else None
        ca_says = f"{event.source}: {event.message}" if event is not None else ""
        misfit = fit_problem(requests[instance_type], rooms, instance_type, now_s)
        if misfit is not None:
            problem: BucketProblem | None = BucketProblem(instance_type, group, "too_big", misfit)
        elif verdict == "too_big":
            problem = BucketProblem(instance_type, group, "too_big", ca_says)
        elif nodes.get(bucket, 0) == 0 and verdict == "no_node_group":
            problem = BucketProblem(instance_type, group, "no_node_group",
                                    f"no node of this type exists and {ca_says}")
        elif nodes.get(bucket, 0) == 0 and status.running and status.node_groups == 0:
            problem = BucketProblem(instance_type, group, "no_node_group",
                                    "no node of this type exists and cluster-autoscaler's "
                                    f"status says it manages no node group ({status.detail})")
        elif verdict == "group_at_max":
            problem = BucketProblem(instance_type, group, "group_at_max", ca_says)
        elif bucket in buffers and (why := buffer_problem(buffers[bucket], now_s)):
            problem = BucketProblem(instance_type, group, "buffer_not_processed", why)
        elif status.found and (unlabeled := _unlabeled_gpu_nodes(
                rooms, bucket, requests[instance_type])):
            problem = BucketProblem(
                instance_type, group, "gpu_label_missing",
                f"GPU node(s) {', '.join(unlabeled[:3])} carry none of "
                f"{', '.join(GPU_NODE_LABELS)}: cluster-autoscaler cannot tell them from "
                "nodes without GPUs until their device plugin registers, and scales up "
                "again; label the node group with your provider's GPU label")
        else:
            problem = None
        if problem is not None:
            problems[bucket] = problem
    return problems


def _unlabeled_gpu_nodes(rooms: Sequence[NodeRoom], bucket: Bucket, request: Resources
                         ) -> list[str]:
    """Nodes of `bucket` that are GPU nodes (the placeholder asks for GPUs, or the node
    has them) and carry no autoscaler GPU label."""
    instance_type, group = bucket
    return [room.name for room in rooms
            if (room.instance_type, room.placement_group) == (instance_type, group)
            and (request.gpu_milli > 0 or room.allocatable.gpu_milli > 0)
            and not room.gpu_labeled]
