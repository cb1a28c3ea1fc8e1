"""One tick of demand from the cluster's pods: pure, shared by the recorder and Prometheus.

Decides: what counts as demand and where. `pod_demand` types one Pod's JSON at the edge
(skipping headstart's placeholder pods and finished pods), `node_group` reads a Node's
placement-group label, `snapshot_values` embeds the current pods into bucket counts per
placement group plus totals, and `plan_tick` decides which tick to write at `now` and
which ticks before it were missed (gaps).

A pod is demand while its phase is Pending or Running (Succeeded, Failed and Unknown are
not). It is *pending* until bound to a node (no `spec.nodeName`), *running* after. Its
request is `pod_effective_request`. A bound pod on a node with a placement-group label
counts in `bucket@group`; every other pod (pending, or on a node without a group) counts
in `bucket`. Pods that fit no bucket are counted in `total:pods_unbucketable`, never
dropped silently.

A pending pod held by scheduling gates (`spec.schedulingGates`) is not counted in the
buckets or the running/pending totals, only in `total:pods_gated`: cluster-autoscaler
ignores gated pods, so counting one as observed demand would make the plan subtract it
(`in_use`) as capacity on its way when no node is. It is known demand instead
(`predictor.known.gated`).

A pod pinned to a zone or a capacity type (`predictor.history.pinning.pod_pin`) is counted in its
bucket as any other, and, in addition, in the `pinned:` series of its bucket, zone and
capacity type (embedded apart from the unpinned pods), so the history shows where
placeholders must be pinned too. Only non-zero pinned series are written: a tick without
one reads back as 0 for it (predictor.live.store).

Must not: do I/O, read the clock, or log (predictor.live.recorder and predictor.live.prometheus
are the adapters).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bucketing.catalog import InstanceType
from bucketing.embed import embed
from bucketing.resources import DEFAULT_GPU_RESOURCE, Resources, pod_effective_request
from common.errors import InputError
from kube.labels import PLACEHOLDER_LABEL, PLACEMENT_GROUP_LABELS
from predictor.history.pinning import UNPINNED, Pin, pinned_column, pod_pin
from predictor.history.series import TOTAL_PREFIX, bucket_vectors, series_column

DEMAND_PHASES = frozenset({"Pending", "Running"})


@dataclass(frozen=True)
class PodDemand:
    """One pod that wants capacity: its effective request and where it is bound (None = not)."""

    key: str
    request: Resources
    node: str | None
    gates: tuple[str, ...] = ()  # scheduling gates still on the pod (only while unbound)
    pin: Pin = UNPINNED  # the zone and capacity type it requires

    @property
    def pending(self) -> bool:
        return self.node is None

    @property
    def gated(self) -> bool:
        return bool(self.gates)


def pod_demand(pod: Mapping[str, Any], gpu_resource: str = DEFAULT_GPU_RESOURCE
               ) -> PodDemand | None:
    """The demand of a Pod (JSON), or None when it is a placeholder or no longer wants capacity."""
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    if labels.get(PLACEHOLDER_LABEL) == "true":
        return None
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase not in DEMAND_PHASES:
        return None
    key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    try:
        request = pod_effective_request(pod, gpu_resource)
    except InputError as error:
        raise InputError(f"pod {key}: {error}") from None
    spec = pod.get("spec") or {}
    node = spec.get("nodeName") or None
    gates = () if node else tuple(str((gate or {}).get("name", ""))
                                  for gate in spec.get("schedulingGates") or [])
    return PodDemand(key, request, node, gates, pod_pin(pod))


def node_group(node: Mapping[str, Any], keys: Sequence[str] = PLACEMENT_GROUP_LABELS
               ) -> tuple[str, str | None]:
    """(node name, its placement group from the first of `keys` it carries, or None)."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    for key in keys:
        if labels.get(key):
            return metadata.get("name", ""), labels[key]
    return metadata.get("name", ""), None


def snapshot_values(
    pods: Iterable[PodDemand],
    node_groups: Mapping[str, str | None],
    bucket_types: Sequence[InstanceType],
) -> dict[str, float]:
    """The values of one tick: bucket counts per placement group, and `total:` sums.

    Every configured bucket gets a value in the ungrouped columns (0 when idle); a
    group's columns appear when some pod runs in that group. Gated pods are only counted
    in `total:pods_gated` (module docstring).
    """
    buckets = bucket_vectors(bucket_types)
    by_group: dict[str | None, list[PodDemand]] = {None: []}
    gated = 0
    for pod in pods:
        if pod.gated:
            gated += 1
            continue
        group = None if pod.node is None else node_groups.get(pod.node)
        by_group.setdefault(group, []).append(pod)
    values: dict[str, float] = {}
    unbucketable = 0
    for group, members in by_group.items():
        vectors = (np.stack([p.request.as_vector() for p in members]) if members
                   else np.zeros((0, 3)))
        result = embed(vectors, buckets)
        unbucketable += len(result.unbucketable)
        for bucket_type, count in zip(bucket_types, result.counts, strict=True):
            values[series_column(bucket_type.name, group)] = float(count)
    all_pods = [p for members in by_group.values() for p in members]
    for state, chosen in (("running", [p for p in all_pods if not p.pending]),
                          ("pending", [p for p in all_pods if p.pending])):
        values[f"{TOTAL_PREFIX}gpus_{state}"] = sum(p.request.gpus for p in chosen)
        values[f"{TOTAL_PREFIX}cpus_{state}"] = sum(p.request.cpus for p in chosen)
        values[f"{TOTAL_PREFIX}memory_gib_{state}"] = sum(p.request.memory_gib for p in chosen)
        values[f"{TOTAL_PREFIX}pods_{state}"] = float(len(chosen))
    values[f"{TOTAL_PREFIX}pods_unbucketable"] = float(unbucketable)
    values[f"{TOTAL_PREFIX}pods_gated"] = float(gated)
    values.update(_pinned_values(by_group, buckets, bucket_types))
    return values


def _pinned_values(by_group: Mapping[str | None, list[PodDemand]], buckets: np.ndarray,
                   bucket_types: Sequence[InstanceType]) -> dict[str, float]:
    """Per group, zone and capacity type, the bucket counts of the pods pinned there."""
    pinned: dict[tuple[str | None, Pin], list[PodDemand]] = {}
    for group, members in by_group.items():
        for pod in members:
            if pod.pin:
                pinned.setdefault((group, pod.pin), []).append(pod)
    values: dict[str, float] = {}
    for (group, pin), members in pinned.items():
        result = embed(np.stack([p.request.as_vector() for p in members]), buckets)
        for bucket_type, count in zip(bucket_types, result.counts, strict=True):
            if count:
                values[pinned_column(bucket_type.name, group, pin)] = float(count)
    return values


@dataclass(frozen=True)
class TickPlan:
    """What to write at `now`: the tick time, and the missed ticks [gap_from, gap_to) before it.

    tick_s_time is None when the tick at `now` was already written and is not rewritten
    (a clock that went backwards); rewriting the newest tick is allowed (idempotent).
    """

    tick_time: float | None
    gap_from: float
    gap_to: float


def plan_tick(last_written: float | None, now_s: float, tick_s: float) -> TickPlan:
    """The tick containing `now_s` and the gaps since `last_written` (None = empty store)."""
    tick_time = math.floor(now_s / tick_s) * tick_s
    if last_written is None:
        return TickPlan(tick_time, tick_time, tick_time)
    if tick_time < last_written:
        return TickPlan(None, tick_time, tick_time)
    return TickPlan(tick_time, last_written + tick_s, tick_time)
