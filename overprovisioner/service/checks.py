"""After each plan: count the hits and find the buckets whose placeholders cannot work.

Decides (the rules are pure, in observe.py and diagnose.py; this is the stateful adapter
around them):
- hits: `Preempted` events on placeholder pods (Deployment backend), and with
  CapacityBuffers, free nodes of a buffered bucket taken by a real pod since the
  previous observation (`observe.buffer_nodes_taken`); each hit also adds one horizon
  to the estimated pending time avoided;
- problems (`diagnose.diagnose`): exported as a gauge, shown per bucket in `/plan`, and
  logged once when a bucket's problem appears, changes or clears, never every tick.

Reading events or the autoscaler's status can fail: that is logged and the checks run on
what was read (no events: no hits and no event-based problems this tick).

Must not: plan, write to the cluster, or read the clock (`now_s` comes in).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bucketing.resources import Resources
from common.errors import HeadstartError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.service.diagnose import (
    AutoscalerStatus,
    BucketProblem,
    diagnose,
    latest_scale_up_events,
    parse_autoscaler_status,
)
from overprovisioner.service.metrics import Metrics
from overprovisioner.service.objects import placeholder_name
from overprovisioner.service.observe import (
    ClusterReader,
    ClusterView,
    buffer_nodes_taken,
    new_preemptions,
    pod_bucket,
)
from overprovisioner.service.observed import Observed

log = logging.getLogger("headstart.overprovisioner")
Bucket = tuple[str, str]
# CA repeats its NotTriggerScaleUp event while a pod stays pending, but suppresses
# duplicates for 5 minutes by default (--record-duplicated-events=false): an event older
# than this no longer describes the placeholders of now.
MIN_EVENT_AGE_S = 900.0


@dataclass(frozen=True)
class CheckReport:
    problems: Mapping[Bucket, BucketProblem] = field(default_factory=dict)
    autoscaler: AutoscalerStatus = AutoscalerStatus()


class PlaceholderChecks:
    """One per loop: remembers events counted, free nodes seen and problems logged."""

    def __init__(self, config: OverprovisionerConfig, reader: ClusterReader | None,
                 metrics: Metrics) -> None:
        self.config = config
        self.reader = reader
        self.metrics = metrics
        self._events_seen: dict[str, int] = {}
        self._free_before: Mapping[Bucket, frozenset[str]] | None = None
        self._logged: dict[Bucket, tuple[str, str]] = {}

    def run(self, now_s: float, buckets: Sequence[Bucket], requests: Mapping[str, Resources],
            view: ClusterView | None, observed: Observed | None, count_hits: bool,
            object_names: Mapping[str, Bucket] | None = None) -> CheckReport:
        """object_names: every placeholder object's name -> its bucket (a bucket split over
        zones and capacity types has several); default one per bucket, unpinned."""
        if self.reader is None or view is None:
            return CheckReport()
        namespace = self.config.placeholders.namespace
        names = {placeholder_name(t, g): (t, g) for t, g in buckets}
        names.update(object_names or {})
        try:
            events = self.reader.events(namespace)
        except HeadstartError as error:
            log.warning("reading events in %s failed (no hits or CA verdicts this tick): %s",
                        namespace, error)
            events = []
        if count_hits:
            self._count_hits(events, names, view, observed)
        self._free_before = view.free_node_names
        status = self._autoscaler_status()
        pods = {pod: bucket for pod in view.placeholder_pods
                if (bucket := pod_bucket(pod, names)) is not None}
        max_age = max(MIN_EVENT_AGE_S, 2 * self.config.tick_s)
        scale_ups = latest_scale_up_events(events, pods, names, now_s, max_age)
        buffers = observed.buffers() if observed is not None else {}
        problems = diagnose(buckets, requests, view.rooms, view.nodes, scale_ups, status,
                            now_s, buffers)
        self._report(buckets, problems)
        return CheckReport(problems, status)

    def _count_hits(self, events: list[dict], names: Mapping[str, Bucket], view: ClusterView,
                    observed: Observed | None) -> None:
        hits, self._events_seen = new_preemptions(events, self._events_seen, names)
        horizon_s = self.config.horizon_ticks * self.config.tick_s
        for (instance_type, group), count in hits.items():
            self.metrics.hits.labels(instance_type, group).inc(count)
            self.metrics.pending_avoided.inc(count * horizon_s)
        buffers = observed.buffer_replicas() if observed is not None else {}
        if self._free_before is None or not buffers:
            return
        taken = buffer_nodes_taken(self._free_before, view.real_pod_nodes, buffers)
        for (instance_type, group), count in taken.items():
            self.metrics.buffer_hits.labels(instance_type, group).inc(count)
            self.metrics.pending_avoided.inc(count * horizon_s)

    def _autoscaler_status(self) -> AutoscalerStatus:
        reference = self.config.placeholders.autoscaler_status
        if not reference or self.reader is None:
            return AutoscalerStatus()
        try:
            return parse_autoscaler_status(self.reader.configmap(reference))
        except HeadstartError as error:
            log.warning("reading cluster-autoscaler's status %s failed: %s", reference, error)
            return AutoscalerStatus(detail=f"unreadable: {error}")

    def _report(self, buckets: Sequence[Bucket], problems: Mapping[Bucket, BucketProblem]
                ) -> None:
        gauge = self.metrics.problems
        gauge.clear()
        for (instance_type, group), problem in problems.items():
            gauge.labels(instance_type, group, problem.problem).set(1)
        for bucket in buckets:
            problem = problems.get(bucket)
            now = (problem.problem, problem.detail) if problem else None
            before = self._logged.get(bucket)
            if now == before:
                continue
            label = f"{bucket[0]}{'/' + bucket[1] if bucket[1] else ''}"
            if problem is not None:
                # Only the kind decides whether to log again: CA's message text (counts
                # of node groups, ordering) changes without anything new to say.
                if before is None or before[0] != problem.problem:
                    log.warning("placeholders of %s cannot work (%s): %s", label,
                                problem.problem, problem.detail)
                self._logged[bucket] = now  # type: ignore[assignment]
            else:
                log.info("placeholders of %s: the %s problem is gone", label, before[0])
                del self._logged[bucket]
