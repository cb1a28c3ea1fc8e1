"""Prometheus metrics of the overprovisioner, on a registry of its own (served at /metrics).

Decides: metric names, labels and meaning. All names start with
`headstart_overprovisioner_`. Labels: `instance_type`, `placement_group` ("" = none),
`zone` and `capacity_type` ("" = any: placeholders not pinned there), `quantile`,
`class` (temporary | permanent), `model`, `reason`, `result`, `problem`
(too_big | no_node_group | group_at_max | buffer_not_processed).

Estimated pending time avoided: each hit (a real pod preempting a placeholder) is
counted as one node start-up (the configured horizon) the pod did not wait. It is an
upper-bound estimate: the pod might have fit elsewhere or the node might have come
sooner.

Must not: compute plans or call the API.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge

from kube.labels import VALID_UNTIL_ANNOTATION

PREFIX = "headstart_overprovisioner_"
BUCKET = ("instance_type", "placement_group")


class Metrics:
    """Every metric the service exposes; one instance per app (tests get fresh registries)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.worker_plans = Gauge(
            PREFIX + "worker_plans",
            "Elastic jobs with a worker plan (KALE) this tick, and jobs that asked for one "
            "but got none (result: planned | problem; the log says why).",
            ("result",), registry=r)
        self.forecast = Gauge(
            PREFIX + "forecast_nodes",
            "Point forecast of nodes real demand occupies at the horizon, per bucket.",
            BUCKET, registry=r)
        self.forecast_quantile = Gauge(
            PREFIX + "forecast_quantile_nodes",
            "Forecast at the configured quantile (what placeholders are sized to), per bucket.",
            (*BUCKET, "quantile"), registry=r)
        self.wanted = Gauge(
            PREFIX + "placeholders_wanted", "Placeholders the current plan wants, per bucket.",
            BUCKET, registry=r)
        self.wanted_pinned = Gauge(
            PREFIX + "placeholders_wanted_pinned",
            "Placeholders the current plan wants per bucket, zone and capacity type (the "
            "split over pinned demand; \"\" = not pinned there). Sums to "
            "placeholders_wanted over zone and capacity_type.",
            (*BUCKET, "zone", "capacity_type"), registry=r)
        self.running = Gauge(
            PREFIX + "placeholders_running",
            "Placeholder pods running on a node (Deployment ready replicas or CapacityBuffer "
            "status), per bucket.", BUCKET, registry=r)
        self.hits = Counter(
            PREFIX + "placeholder_preemptions",
            "Placeholder pods preempted by real pods (hits, Deployment backend: Preempted "
            "events), per bucket.", BUCKET, registry=r)
        self.buffer_hits = Counter(
            PREFIX + "buffer_nodes_taken",
            "CapacityBuffer backend: nodes that were free (only DaemonSet pods) at one "
            "observation and run a real pod at the next, at most the buffer's replicas, per "
            "bucket. Inferred by headstart: cluster-autoscaler reports no consumption of a "
            "buffer (no status field, its fake pods are never real pods).", BUCKET, registry=r)
        self.pending_avoided = Counter(
            PREFIX + "pending_seconds_avoided",
            "Estimated pod pending seconds avoided: (placeholder preemptions + buffer nodes "
            "taken) x node start-up horizon.", registry=r)
        self.problems = Gauge(
            PREFIX + "placeholder_problem",
            "1 for a bucket whose placeholders cannot work: too_big (fits no node of its "
            "type, or CA says Insufficient), no_node_group (no node of the type and CA says "
            "no node group matches), group_at_max (CA says its node group is at max size), "
            "buffer_not_processed (CA has not made the CapacityBuffer ready or injected its "
            "pods: its capacity-buffer flags are off?).",
            (*BUCKET, "problem"), registry=r)
        self.wakeups = Counter(
            PREFIX + "wakeups",
            "Ticks run before their time, by reason: preemption (a placeholder pod was "
            "preempted), leader (this replica just won the Lease).", ("reason",), registry=r)
        self.cost = Gauge(
            PREFIX + "placeholder_cost_dollars_per_hour",
            "Catalog price of the placeholders the plan wants, dollars per hour.", registry=r)
        self.model = Gauge(
            PREFIX + "model_info", "Forecaster in use (1 for the active one).",
            ("model", "mode"), registry=r)
        self.model_fallbacks = Counter(
            PREFIX + "model_fallbacks",
            "Times the configured model could not be used and a fallback was (corrupt model "
            "file, failed fit).", ("reason",), registry=r)
        self.last_success = Gauge(
            PREFIX + "last_successful_tick_timestamp_seconds",
            "Unix time of the last tick that planned (and, when leading, applied) without error.",
            registry=r)
        self.ticks = Counter(
            PREFIX + "ticks", "Loop ticks by result (ok, failed, partial).", ("result",),
            registry=r)
        self.api_errors = Counter(
            PREFIX + "api_errors",
            "Failed Kubernetes API attempts by class (temporary: retried, or decided again at the "
            "next tick; permanent: reported).",
            ("class",), registry=r)
        self.leader = Gauge(
            PREFIX + "is_leader", "1 while this replica holds the Lease and may write.",
            registry=r)
        self.known = Gauge(
            PREFIX + "known_nodes",
            "Nodes of known-ahead demand (announced work whose pods do not exist yet) due "
            "within the horizon that the plan adds, per bucket.", BUCKET, registry=r)
        self.known_by_source = Gauge(
            PREFIX + "known_source_nodes",
            "Nodes of known-ahead demand due within the horizon per bucket and source "
            "(kueue, jobsets, kubeflow, jobs, podgroups, cronjobs), each source's items "
            "embedded alone (so sources can add up to more than known_nodes).",
            (*BUCKET, "source"), registry=r)
        self.known_pods = Gauge(
            PREFIX + "known_counted_pods",
            "Pods of known-ahead demand due within the horizon, per source.", ("source",),
            registry=r)
        self.expired = Counter(
            PREFIX + "placeholders_expired",
            f"Placeholder objects scaled down to the floor because their {VALID_UNTIL_ANNOTATION}"
            " passed with no successful tick renewing them (the dead-man's "
            "switch), by who did it: leader (its writes failing), standby (the Lease held "
            "by nobody).", ("by",), registry=r)
        self.fault = Gauge(
            PREFIX + "fault",
            "1 while a fault that retrying cannot fix stands (the reason is in the log and "
            "/plan faults): capacitybuffer_unusable (CRD missing for a forced backend, or "
            "cluster-scoped), forbidden (a 403: the Role lacks a verb), not_found (a 404), "
            "not_owned (an object in the way headstart did not write), "
            "autoscaler_status_unreadable.", ("fault",), registry=r)
        self.dry_run = Gauge(
            PREFIX + "dry_run", "1 in forecast-only mode (never writes).", registry=r)
        for kind in ("temporary", "permanent"):
            self.api_errors.labels(kind)  # export zeros so alerts can rate() from the start
        for reason in ("preemption", "leader"):
            self.wakeups.labels(reason)
        for by in ("leader", "standby"):
            self.expired.labels(by)

    def set_buckets(self, gauge: Gauge, values: Mapping[tuple[str, str], float],
                    *extra: str) -> None:
        """Replace a per-bucket gauge's series by `values` (buckets gone disappear)."""
        gauge.clear()
        for (instance_type, group), value in values.items():
            gauge.labels(instance_type, group, *extra).set(value)

    def set_pinned(self, gauge: Gauge, values: Mapping[tuple[str, str, str, str], float]
                   ) -> None:
        """Replace a per-(type, group, zone, capacity type) gauge's series by `values`."""
        gauge.clear()
        for labels, value in values.items():
            gauge.labels(*labels).set(value)

    def set_known(self, nodes: Mapping[tuple[str, str], float],
                  by_source: Mapping[tuple[str, str, str], float],
                  pods: Mapping[str, int]) -> None:
        """Replace the known-demand gauges (empty mappings: none recorded this tick)."""
        self.set_buckets(self.known, nodes)
        self.known_by_source.clear()
        for (instance_type, group, source), value in by_source.items():
            self.known_by_source.labels(instance_type, group, source).set(value)
        self.known_pods.clear()
        for source, count in pods.items():
            self.known_pods.labels(source).set(count)

    def set_model(self, model: str, mode: str) -> None:
        self.model.clear()
        self.model.labels(model, mode).set(1)

    def set_worker_plans(self, planned: int, problems: int) -> None:
        self.worker_plans.labels("planned").set(planned)
        self.worker_plans.labels("problem").set(problems)
