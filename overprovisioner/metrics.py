"""Prometheus metrics of the overprovisioner, on a registry of its own (served at /metrics).

Decides: metric names, labels and meaning. All names start with
`headstart_overprovisioner_`. Labels: `instance_type`, `placement_group` ("" = none),
`quantile`, `class` (temporary | permanent), `model`, `reason`, `result`.

Estimated pending time avoided: each hit (a real pod preempting a placeholder) is
counted as one node start-up (the configured horizon) the pod did not wait. It is an
upper-bound estimate: the pod might have fit elsewhere or the node might have come
sooner.

Must not: compute plans or call the API.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge

PREFIX = "headstart_overprovisioner_"
BUCKET = ("instance_type", "placement_group")


class Metrics:
    """Every metric the service exposes; one instance per app (tests get fresh registries)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
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
        self.running = Gauge(
            PREFIX + "placeholders_running",
            "Placeholder pods running on a node (Deployment ready replicas or CapacityBuffer "
            "status), per bucket.", BUCKET, registry=r)
        self.hits = Counter(
            PREFIX + "placeholder_preemptions",
            "Placeholders preempted by real pods (hits), per bucket.", BUCKET, registry=r)
        self.pending_avoided = Counter(
            PREFIX + "pending_seconds_avoided",
            "Estimated pod pending seconds avoided: hits x node start-up horizon.", registry=r)
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
            "Failed Kubernetes API attempts by class (temporary: retried; permanent: reported).",
            ("class",), registry=r)
        self.leader = Gauge(
            PREFIX + "is_leader", "1 while this replica holds the Lease and may write.",
            registry=r)
        self.dry_run = Gauge(
            PREFIX + "dry_run", "1 in forecast-only mode (never writes).", registry=r)
        for kind in ("temporary", "permanent"):
            self.api_errors.labels(kind)  # export zeros so alerts can rate() from the start

    def set_buckets(self, gauge: Gauge, values: Mapping[tuple[str, str], float],
                    *extra: str) -> None:
        """Replace a per-bucket gauge's series by `values` (buckets gone disappear)."""
        gauge.clear()
        for (instance_type, group), value in values.items():
            gauge.labels(instance_type, group, *extra).set(value)

    def set_model(self, model: str, mode: str) -> None:
        self.model.clear()
        self.model.labels(model, mode).set(1)
