"""The extender's Prometheus metrics, in a registry of its own per app instance.

Decides: metric names, labels and buckets. The filter's `reason` label is the
`ReasonCode` the core gives each excluded node, never derived from the reason text
(the text carries numbers and group names, and rewording it must not move a series).
Cache sizes, ages and watch errors are read from the cache and the watch statuses at
scrape time, so the request path pays nothing for them.

Metrics:
- headstart_extender_requests_total{verb, outcome}: outcome ok | error (protocol
  `Error` field) | rejected (HTTP 4xx)
- headstart_extender_request_duration_seconds{verb}: histogram, handler time
- headstart_extender_filtered_nodes_total{reason, resolvable}: nodes failed by filter,
  reason = a `locality.filter.ReasonCode` value
- headstart_extender_bind_wait_seconds{outcome}: histogram of the waits of filter and
  prioritize calls for binds of the same job in flight; outcome bound (the binds came)
  or timeout (`bind_wait_seconds` reached: a held or lost bind)
- headstart_extender_preemption_nodes_total{outcome, reason}: candidate nodes of
  kube-scheduler's preemption (the preempt verb), kept (reason "") or dropped (reason =
  the `ReasonCode` of the filter rule the pod would fail there)
- headstart_extender_bind_refused_total{reason}: /bind calls refused: `empty_uid`,
  `scheduler_name` (the pod is another scheduler's), `unknown_pod` (not in the cache),
  `unknown_node`, `node_refused` (the pod's own constraints rule the node out)
- headstart_extender_gate_reviews_total{outcome}: the gate webhook's admission reviews:
  gated, passed, rejected (not an AdmissionReview)
- headstart_extender_cache_objects{kind}: nodes, pods, noderesourcetopologies,
  assumed_placements
- headstart_extender_cache_synced{kind}, headstart_extender_watch_streaming{kind}
- headstart_extender_cache_age_seconds{kind}: since the last list or watch event
- headstart_extender_watch_errors_total{kind}, headstart_extender_watch_relists_total{kind},
  headstart_extender_watch_parse_errors_total{kind}
- headstart_admitter_jobs_waiting{reason}: gated jobs the last admission round left
  waiting, by `locality.admission.model.WaitCode` (incomplete, size_unknown, no_level,
  no_fit, held, inadmissible, backoff, preempting, size_mismatch);
  headstart_admitter_leader: 1 on the replica that admits; headstart_admitter_jobs_admitted_total,
  headstart_admitter_patch_failures_total, headstart_admitter_jobs_evicted_total,
  headstart_admitter_gangs_preempted_total, headstart_admitter_longest_gated_seconds,
  headstart_admitter_api_retries_total, headstart_admitter_api_throttled_seconds_total,
  headstart_admitter_unknown_room_groups

Must not: decide anything; hold a global registry (two apps in one process must not clash).
"""

from __future__ import annotations

import time
from collections import Counter as Tally  # prometheus_client's Counter is the metric
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.cache import NODES, PODS, TOPOLOGIES, ClusterCache
from kube.informer import WatchStatus
from locality.filter import FilterResult, ReasonCode

_LATENCY_BUCKETS = (
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)


class ExtenderMetrics:
    """The per-app registry and the request-path metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "headstart_extender_requests",
            "Extender requests by verb and outcome (ok, error = protocol Error field, "
            "rejected = HTTP 4xx).",
            ("verb", "outcome"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "headstart_extender_request_duration_seconds",
            "Time spent handling an extender request, by verb.",
            ("verb",),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.filtered = Counter(
            "headstart_extender_filtered_nodes",
            "Nodes failed by filter, by reason category and whether preemption could help.",
            ("reason", "resolvable"),
            registry=self.registry,
        )
        self.bind_wait = Histogram(
            "headstart_extender_bind_wait_seconds",
            "Time a filter or prioritize call waited for binds of its job in flight, by "
            "outcome (bound, or timeout at bind_wait_seconds).",
            ("outcome",),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.preemption_nodes = Counter(
            "headstart_extender_preemption_nodes",
            "Candidate nodes of kube-scheduler's preemption, kept or dropped (with the "
            "filter rule's reason) by the preempt verb.",
            ("outcome", "reason"),
            registry=self.registry,
        )
        self.bind_refused = Counter(
            "headstart_extender_bind_refused",
            "/bind calls refused: the pod is another scheduler's (scheduler_name) or not in "
            "the extender's cache (unknown_pod).",
            ("reason",),
            registry=self.registry,
        )
        self.gate_reviews = Counter(
            "headstart_extender_gate_reviews",
            "Admission reviews of the placement gate webhook: gated (the gate added), "
            "passed (no gate for this pod), rejected (not an AdmissionReview: HTTP 400).",
            ("outcome",),
            registry=self.registry,
        )
        # Label children are cached: .labels() per request costs a dict lookup and a lock.
        self._latency_children: dict[str, object] = {}
        self._request_children: dict[tuple[str, str], object] = {}
        self._filtered_children: dict[tuple[ReasonCode, str], object] = {}

    def count_gate_review(self, outcome: str) -> None:
        self.gate_reviews.labels(outcome).inc()

    def observe(self, verb: str, outcome: str, seconds: float) -> None:
        child = self._request_children.get((verb, outcome))
        if child is None:
            child = self._request_children[(verb, outcome)] = self.requests.labels(verb, outcome)
        child.inc()  # type: ignore[attr-defined]
        histogram = self._latency_children.get(verb)
        if histogram is None:
            histogram = self._latency_children[verb] = self.latency.labels(verb)
        histogram.observe(seconds)  # type: ignore[attr-defined]

    def observe_bind_wait(self, seconds: float, timed_out: bool) -> None:
        self.bind_wait.labels("timeout" if timed_out else "bound").observe(seconds)

    def count_preemption(self, kept: int, dropped: Iterable[ReasonCode]) -> None:
        if kept:
            self.preemption_nodes.labels("kept", "").inc(kept)
        for code, count in Tally(dropped).items():
            self.preemption_nodes.labels("dropped", code.value).inc(count)

    def count_bind_refused(self, reason: str) -> None:
        self.bind_refused.labels(reason).inc()

    def count_filtered(self, result: FilterResult) -> None:
        """Count the excluded nodes by their reason code and resolvability."""
        code_of = result.codes.__getitem__  # every failed/unresolvable node has a code
        for nodes, resolvable in ((result.failed, "true"), (result.unresolvable, "false")):
            if not nodes:
                continue
            for code, count in Tally(map(code_of, nodes)).items():
                key = (code, resolvable)
                child = self._filtered_children.get(key)
                if child is None:
                    child = self._filtered_children[key] = self.filtered.labels(
                        code.value, resolvable)
                child.inc(count)  # type: ignore[attr-defined]

    def watch_cache(
        self, cache: ClusterCache, statuses: Callable[[], Iterable[WatchStatus]]
    ) -> None:
        """Export the cache's size and the watches' health at scrape time."""
        self.registry.register(_CacheCollector(cache, statuses))

    def watch_admitter(self, admitter: Any) -> None:
        """Export the job admitter's last round at scrape time (`extender.admission`)."""
        self.registry.register(_AdmitterCollector(admitter))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _CacheCollector(Collector):
    def __init__(self, cache: ClusterCache, statuses: Callable[[], Iterable[WatchStatus]]):
        self._cache = cache
        self._statuses = statuses

    def collect(self) -> Iterable[Metric]:
        cache = self._cache
        objects = GaugeMetricFamily(
            "headstart_extender_cache_objects", "Objects in the extender's cache.", labels=["kind"]
        )
        objects.add_metric([NODES], len(cache.nodes))
        objects.add_metric([PODS], cache.pod_count())
        objects.add_metric([TOPOLOGIES], cache.topology_count())
        objects.add_metric(["assumed_placements"], len(cache.assumed))
        yield objects

        synced = GaugeMetricFamily(
            "headstart_extender_cache_synced",
            "1 once the kind's first full list has arrived.", labels=["kind"],
        )
        for kind, done in cache.synced.items():
            synced.add_metric([kind], 1.0 if done else 0.0)
        yield synced

        now = time.monotonic()
        streaming = GaugeMetricFamily(
            "headstart_extender_watch_streaming", "1 while the watch is connected.",
            labels=["kind"],
        )
        age = GaugeMetricFamily(
            "headstart_extender_cache_age_seconds",
            "Seconds since the kind's last list or watch event.", labels=["kind"],
        )
        errors = CounterMetricFamily(
            "headstart_extender_watch_errors", "Failed list or watch calls (retried with "
            "backoff).", labels=["kind"],
        )
        relists = CounterMetricFamily(
            "headstart_extender_watch_relists", "Relists after 410 Gone.", labels=["kind"]
        )
        parse_errors = CounterMetricFamily(
            "headstart_extender_watch_parse_errors", "Objects skipped because they do not "
            "parse.", labels=["kind"],
        )
        for status in self._statuses():
            streaming.add_metric([status.kind], 1.0 if status.streaming else 0.0)
            if status.last_event is not None:
                age.add_metric([status.kind], now - status.last_event)
            errors.add_metric([status.kind], status.errors_total)
            relists.add_metric([status.kind], status.relists_total)
            parse_errors.add_metric([status.kind], status.parse_errors_total)
        yield from (streaming, age, errors, relists, parse_errors)


class _AdmitterCollector(Collector):
    def __init__(self, admitter: Any) -> None:
        self._admitter = admitter

    def collect(self) -> Iterable[Metric]:
        admitter = self._admitter
        waiting = GaugeMetricFamily(
            "headstart_admitter_jobs_waiting",
            "Jobs behind the placement gate the last admission round left waiting, by reason.",
            labels=["reason"],
        )
        for code, count in admitter.waiting_by_code().items():
            waiting.add_metric([code], count)
        yield waiting
        yield GaugeMetricFamily(
            "headstart_admitter_longest_gated_seconds",
            "Seconds the oldest pod still behind the placement gate has waited (0: none).",
            value=admitter.longest_gated_seconds(time.time()))
        yield GaugeMetricFamily("headstart_admitter_leader",
                                "1 on the replica that admits jobs.",
                                value=1.0 if admitter.is_leader() else 0.0)
        yield CounterMetricFamily("headstart_admitter_jobs_admitted",
                                  "Jobs whose pods all had their gate lifted.",
                                  value=admitter.admitted_jobs_total)
        yield CounterMetricFamily("headstart_admitter_patch_failures",
                                  "Pod patches left for the next round (the pod changed, "
                                  "went away, or the API failed).",
                                  value=admitter.patch_failures_total)
        yield CounterMetricFamily("headstart_admitter_jobs_evicted",
                                  "Gangs evicted whole for not being whole in time "
                                  "(bind_timeout_seconds).",
                                  value=admitter.evicted_jobs_total)
        yield CounterMetricFamily("headstart_admitter_gangs_preempted",
                                  "Gangs evicted whole for a higher-priority job.",
                                  value=admitter.preempted_gangs_total)
        yield CounterMetricFamily("headstart_admitter_jobs_suspended",
                                  "batch/v1 Jobs, JobSets, TrainJobs and Kubeflow jobs suspended "
                                  "to evict their gang whole (admission.suspend_jobs).",
                                  value=admitter.suspended_jobs_total)
        yield CounterMetricFamily("headstart_admitter_jobs_resumed",
                                  "Jobs, JobSets, TrainJobs and Kubeflow jobs headstart "
                                  "suspended, resumed once their gang's backoff was over.",
                                  value=admitter.released_jobs_total)
        yield CounterMetricFamily("headstart_admitter_planner_failures",
                                  "Planning processes lost (admission.planning: process); "
                                  "each is replaced, until 3 are lost in a row: rounds "
                                  "plan in a worker thread from then on.",
                                  value=admitter.planner_failures_total)
        yield CounterMetricFamily("headstart_admitter_events_dropped",
                                  "Events the admitter gave up on: refused by the API, or "
                                  "not taken in 12 tries (one per round).",
                                  value=admitter.events_dropped_total)
        yield CounterMetricFamily("headstart_admitter_jobs_resized",
                                  "Elastic jobs whose owner was set to a new size "
                                  "(admitted smaller, scaled in or out).",
                                  value=admitter.resized_jobs_total)
        yield CounterMetricFamily("headstart_admitter_api_retries",
                                  "API calls retried after a 429 or 5xx answer or a "
                                  "transport fault (admission.api_qps).",
                                  value=admitter.throttle.retries_total)
        yield CounterMetricFamily("headstart_admitter_api_throttled_seconds",
                                  "Seconds API calls waited for the admitter's own rate "
                                  "limit (admission.api_qps, api_burst).",
                                  value=admitter.throttle.waited_seconds_total)
        yield GaugeMetricFamily("headstart_admitter_unknown_room_groups",
                                "Autoscaler groups whose room the admitter cannot know "
                                "(GET /admission: unknown_room); jobs beyond known room "
                                "are released to the autoscaler while it is not 0.",
                                value=len(admitter.last_plan.unknown_room))
