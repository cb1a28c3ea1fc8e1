"""The overprovisioner service's configuration: what it may spend, where it writes, how it runs.

Decides: every setting of `headstart overprovisioner`, its default, and whether a
YAML file is a valid configuration. Loaded once at start-up; every error names the
file and the field path (`limits.per_bucket.g5.xlarge.max`), unknown fields included.

Rules checked here because a wrong value silently breaks the product:
- the placeholder PriorityClass value must be at or above cluster-autoscaler's
  `--expendable-pods-priority-cutoff` (below it CA ignores the placeholders, so
  nothing ever scales up) and below 0 (at or above 0 a default-priority pod could not
  preempt a placeholder; it would wait for a new node, which is what headstart exists
  to avoid);
- every bucket instance type must be in the catalog;
- the pause image must be pinned by tag or digest (never `latest`).

Must not: talk to the cluster, read the clock, or log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bucketing.bucket_file import read_bucket_file
from bucketing.catalog import Catalog, load_catalog
from bucketing.errors import ConfigError
from bucketing.resources import Resources
from bucketing.yamlfile import load_yaml_file
from overprovisioner import plan_config as plan_config_module
from overprovisioner.config_fields import FieldReader, parse_duration
from predictor.registry import FORECASTER_NAMES

BACKENDS = ("auto", "deployment", "capacitybuffer")


@dataclass(frozen=True)
class Toleration:
    """A pod toleration put on GPU placeholders so they can land on tainted GPU nodes."""

    key: str
    """Taint key, e.g. `nvidia.com/gpu`."""
    operator: str = "Exists"
    """`Exists` (any value) or `Equal` (then `value` must match)."""
    value: str = ""
    """Taint value for `operator: Equal`."""
    effect: str = ""
    """`NoSchedule`, `PreferNoSchedule`, `NoExecute`, or "" for every effect."""

    def as_json(self) -> dict[str, str]:
        body = {"key": self.key, "operator": self.operator}
        if self.value:
            body["value"] = self.value
        if self.effect:
            body["effect"] = self.effect
        return body


@dataclass(frozen=True)
class BucketLimits:
    """Bounds on the placeholder count of one bucket (instance type), over all its groups."""

    min: int = 0
    """Placeholders kept even when the forecast says none (warm nodes you always pay for)."""
    max: int = 8
    """Placeholders never exceeded whatever the forecast says."""


@dataclass(frozen=True)
class ForecastConfig:
    """How demand is recorded and forecast."""

    quantile: float = 0.9
    """Forecast quantile placeholders are sized to: 0.9 covers 9 ticks in 10."""
    model: str = "last_adaptive"
    """Forecaster name from `predictor.registry` (`last_adaptive`, `last`, `conditional`,
    `seasonal`, `hw`, `transformer`). The default, last value with quantiles from the
    last day's errors, keeps the asked quantile's shortfall rate closest to target in
    `headstart backtest` on the public traces (docs/predictor.md); pick yours by backtest."""
    model_path: str = ""
    """A persisted model to load at start-up and save after each retrain; "" = none."""
    retrain_every_s: float = 86400.0
    """Seconds between refits on the recorded history (YAML: `retrain_every: 24h`)."""
    history_path: str = "/var/lib/headstart/history.sqlite"
    """SQLite file the recorder writes one demand snapshot per tick into."""
    retention_s: float = 35 * 86400.0
    """Recorded history older than this is deleted (YAML: `retention: 35d`)."""
    cold_start_placeholders: int = 1
    """Placeholders per instance type while the history is shorter than the model needs
    (the cold-start ladder; still within the per-bucket min/max and the cost cap)."""
    stabilize_rho: float = 1.0
    """Stabilization: a change of at least this many nodes starts a new level."""
    stabilize_tau_s: float = 600.0
    """A forecast level lasting shorter than this is replaced by the larger neighbour, so
    CA is not asked to scale up and down for a blip (YAML `stabilize_tau: 10m`; 0 = off)."""
    fallback_window_ticks: int = 6
    """Reactive fallback: ticks of forecast shortfall averaged per bucket."""
    fallback_enter_mean_shortfall: float = 1.0
    """A bucket turns reactive (no placeholders) when its mean shortfall exceeds this."""
    fallback_exit_mean_shortfall: float = 0.25
    """...and follows the forecast again once it is at or below this."""
    prometheus_url: str = ""
    """Prometheus with kube-state-metrics (e.g. `http://prometheus-server.monitoring.svc`):
    when set and the history file is empty at start-up, the last `backfill` of demand is
    read from it (`predictor.prometheus`), so a new install forecasts from day one.
    "" = no backfill (the cold-start ladder runs until enough ticks are recorded)."""
    backfill_s: float = 7 * 86400.0
    """How much history to read from Prometheus at start-up (YAML: `backfill: 7d`)."""


@dataclass(frozen=True)
class LimitsConfig:
    """What placeholders may cost."""

    default: BucketLimits = field(default_factory=BucketLimits)
    """Limits for a bucket not listed in `per_bucket`."""
    per_bucket: Mapping[str, BucketLimits] = field(default_factory=dict)
    """Limits by instance type name, overriding `default`."""
    cost_cap_per_hour: float | None = 25.0
    """Dollars per hour all placeholders together may cost (catalog prices); null = no cap."""
    placement_groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per instance type, the placement groups its node groups span (node label values of
    `placeholders.placement_group_label`); a type absent here has no groups."""
    virtual_instance_nodes: int = 1
    """Nodes in one scale-up of one virtual instance, kept inside one placement group."""

    def for_bucket(self, instance_type: str) -> BucketLimits:
        return self.per_bucket.get(instance_type, self.default)


@dataclass(frozen=True)
class PlaceholderConfig:
    """What the placeholder objects look like in the cluster."""

    namespace: str = "headstart"
    """Namespace of the placeholder Deployments / CapacityBuffers / PodTemplates."""
    backend: str = "auto"
    """`deployment` (balloon Deployments), `capacitybuffer` (autoscaling.x-k8s.io/v1alpha1),
    or `auto`: CapacityBuffers when the cluster serves that API, Deployments otherwise."""
    priority_class_name: str = "headstart-placeholder"
    """PriorityClass of placeholder pods (created if absent, verified if present)."""
    priority_class_value: int = -5
    """Its value: at or above `expendable_pods_priority_cutoff`, below 0."""
    expendable_pods_priority_cutoff: int = -10
    """cluster-autoscaler's `--expendable-pods-priority-cutoff` in your cluster."""
    daemonset_overhead: Resources | None = None
    """Requests of the daemonsets on every node, subtracted from a type's allocatable to
    size a placeholder; null = the catalog's `daemonset_overhead`."""
    placement_group_label: str = "headstart.io/placement-group"
    """Node label key a placeholder selects its placement group with (GKE compact
    placement: `cloud.google.com/gke-placement-group`)."""
    gpu_tolerations: tuple[Toleration, ...] = (Toleration("nvidia.com/gpu", "Exists"),)
    """Tolerations put on placeholders of GPU instance types."""
    pause_image: str = "registry.k8s.io/pause:3.10"
    """Container image of a placeholder pod, pinned by tag or digest."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Leader election on a Lease, so two replicas never both write."""

    enabled: bool = True
    """false only for a single replica you never scale (tests, laptops)."""
    lease_name: str = "headstart-overprovisioner"
    """Lease object (coordination.k8s.io/v1) in `placeholders.namespace`."""
    lease_duration_s: int = 15
    """Seconds a follower waits after the last renewal seen before taking over."""
    renew_deadline_s: int = 10
    """Seconds the leader keeps trying to renew before it stops writing."""
    retry_period_s: int = 2
    """Seconds between acquire/renew attempts."""


@dataclass(frozen=True)
class ApiConfig:
    """How Kubernetes API calls are timed out and retried."""

    timeout_s: float = 10.0
    """Per-request timeout; a timeout counts as a temporary error."""
    max_attempts: int = 4
    """Attempts per call for temporary errors (429, 5xx, timeouts, resourceVersion conflicts)."""
    backoff_base_s: float = 0.5
    """First retry waits about this long; each further retry doubles it (with jitter)."""
    backoff_max_s: float = 8.0
    """Upper bound of one retry wait."""


@dataclass(frozen=True)
class OverprovisionerConfig:
    """Everything `headstart overprovisioner` reads from its `--config` file."""

    catalog: str = "aws"
    """Instance catalog: `aws`, `gcp` or a path to a catalog YAML."""
    instance_types: tuple[str, ...] = ()
    """Bucket instance types, small to large (or give `buckets_file`)."""
    buckets_file: str = ""
    """A `headstart buckets tune --out` snippet (`buckets: {catalog, instance_types}`)."""
    tick_s: float = 300.0
    """Seconds between loop ticks and between recorded snapshots (YAML: `tick: 5m`)."""
    horizon_s: float = 390.0
    """Node start-up time to forecast ahead: 5 min launch + 90 s device plugin. Rounded
    up to whole ticks (YAML: `horizon: 6m30s`)."""
    forecast: ForecastConfig = field(default_factory=ForecastConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    placeholders: PlaceholderConfig = field(default_factory=PlaceholderConfig)
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    dry_run: bool = False
    """Forecast-only: compute and expose the plan, never write to the cluster."""
    host: str = "0.0.0.0"
    """Address the HTTP server (/healthz /readyz /metrics /plan) listens on."""
    port: int = 8080
    """Port of that server."""
    source: str = "<defaults>"
    """Where this config was loaded from (for messages); not a YAML field."""

    @property
    def horizon_ticks(self) -> int:
        """The forecast horizon in ticks: 6m30s at 5-minute ticks is 2 (390 / 300 = 1.3 -> 2)."""
        return max(1, math.ceil(self.horizon_s / self.tick_s - 1e-9))


def load_config(path: str | Path) -> OverprovisionerConfig:
    """Read and validate a YAML config file; raises ConfigError naming file and field."""
    path = Path(path)
    document = load_yaml_file(path)
    config = parse_config(document if document is not None else {}, str(path))
    if config.buckets_file:
        bucket_path = Path(config.buckets_file)
        if not bucket_path.is_absolute():
            bucket_path = path.parent / bucket_path
        config = _with_buckets_file(config, bucket_path)
    return config


def parse_config(document: Any, source: str) -> OverprovisionerConfig:
    """Validate a parsed YAML document (without reading `buckets_file` or the catalog)."""
    reader = FieldReader(source)
    top = reader.mapping(document, "")
    reader.known(top, "", {
        "catalog", "instance_types", "buckets_file", "tick", "horizon", "forecast", "limits",
        "placeholders", "leader_election", "api", "dry_run", "host", "port",
    })
    defaults = OverprovisionerConfig()
    tick_s = reader.duration(top, "tick", "", defaults.tick_s, positive=True)
    horizon_s = reader.duration(top, "horizon", "", defaults.horizon_s, positive=True)
    config = OverprovisionerConfig(
        catalog=reader.string(top, "catalog", "", defaults.catalog),
        instance_types=reader.string_list(top, "instance_types", ""),
        buckets_file=reader.string(top, "buckets_file", "", "", allow_empty=True),
        tick_s=tick_s,
        horizon_s=horizon_s,
        forecast=_forecast(reader, reader.mapping(top.get("forecast", {}), "forecast")),
        limits=_limits(reader, reader.mapping(top.get("limits", {}), "limits")),
        placeholders=_placeholders(
            reader, reader.mapping(top.get("placeholders", {}), "placeholders")
        ),
        leader_election=_leader(
            reader, reader.mapping(top.get("leader_election", {}), "leader_election")
        ),
        api=_api(reader, reader.mapping(top.get("api", {}), "api")),
        dry_run=reader.boolean(top, "dry_run", "", defaults.dry_run),
        host=reader.string(top, "host", "", defaults.host),
        port=reader.integer(top, "port", "", defaults.port, low=1, high=65535),
        source=source,
    )
    if config.instance_types and config.buckets_file:
        raise reader.fail("instance_types", "give either instance_types or buckets_file, not both")
    if not config.instance_types and not config.buckets_file:
        raise reader.fail("instance_types", "list the bucket instance types (or set buckets_file)")
    if len(set(config.instance_types)) != len(config.instance_types):
        raise reader.fail("instance_types", "an instance type appears twice")
    return config


def resolve_catalog(config: OverprovisionerConfig) -> Catalog:
    """The catalog limited to the bucket instance types, in config order.

    An unknown type is a ConfigError naming the config file, the type and the catalog.
    """
    catalog = load_catalog(config.catalog)
    for index, name in enumerate(config.instance_types):
        if name not in catalog.names:
            raise ConfigError(
                f"{config.source}: instance_types[{index}]: unknown instance type {name!r} "
                f"in catalog {catalog.name!r} (known: {', '.join(catalog.names)})"
            )
    for section in ("per_bucket", "placement_groups"):
        for name in getattr(config.limits, section):
            if name not in config.instance_types:
                raise ConfigError(
                    f"{config.source}: limits.{section}.{name}: not one of the bucket "
                    f"instance types ({', '.join(config.instance_types)})"
                )
    subset = catalog.subset(config.instance_types)
    make_plan_config(config).validate(subset, f"{config.source}: limits")
    for name in config.instance_types:  # an overhead too large: refuse now, not every tick
        placeholder_request(config, subset, name)
    return subset


def make_plan_config(config: OverprovisionerConfig) -> plan_config_module.PlanConfig:
    """The planner's view of this config (one source of truth for limits and the cap)."""
    limits = config.limits
    return plan_config_module.PlanConfig(
        quantile=config.forecast.quantile,
        horizon_s=config.horizon_ticks * config.tick_s,
        cost_cap_per_hour=limits.cost_cap_per_hour,
        buckets={
            name: plan_config_module.BucketLimits(
                limits.for_bucket(name).min, limits.for_bucket(name).max
            )
            for name in config.instance_types
        },
        placement_groups=dict(limits.placement_groups),
        virtual_instance_nodes=limits.virtual_instance_nodes,
    )


def placeholder_request(config: OverprovisionerConfig, catalog: Catalog, name: str) -> Resources:
    """What one placeholder of `name` requests: allocatable less the daemonset overhead."""
    instance_type = catalog.get(name)
    overhead = config.placeholders.daemonset_overhead
    if overhead is None:
        return instance_type.placeholder_request
    request = instance_type.allocatable - overhead
    if min(request.cpu_milli, request.memory_bytes, request.gpu_milli) < 0 or (
        request.cpu_milli == 0 or request.memory_bytes == 0
    ):
        raise ConfigError(
            f"{config.source}: placeholders.daemonset_overhead: leaves nothing of {name}'s "
            f"allocatable for a placeholder"
        )
    return request


def _with_buckets_file(config: OverprovisionerConfig, path: Path) -> OverprovisionerConfig:
    buckets = read_bucket_file(path, f"{config.source}: buckets_file: ")
    return replace(config, catalog=buckets.catalog or config.catalog,
                   instance_types=buckets.names)


def _forecast(reader: FieldReader, raw: Mapping) -> ForecastConfig:
    path = "forecast"
    reader.known(raw, path, {
        "quantile", "model", "model_path", "retrain_every", "history_path", "retention",
        "cold_start_placeholders", "stabilize_rho", "stabilize_tau", "fallback_window_ticks",
        "fallback_enter_mean_shortfall", "fallback_exit_mean_shortfall", "prometheus_url",
        "backfill",
    })
    d = ForecastConfig()
    quantile = reader.number(raw, "quantile", path, d.quantile)
    if not 0.0 < quantile < 1.0:
        raise reader.fail(f"{path}.quantile", f"must lie strictly between 0 and 1, got {quantile}")
    rho = reader.number(raw, "stabilize_rho", path, d.stabilize_rho)
    if rho <= 0:
        raise reader.fail(f"{path}.stabilize_rho", "must be above 0")
    enter = reader.number(raw, "fallback_enter_mean_shortfall", path,
                          d.fallback_enter_mean_shortfall)
    leave = reader.number(raw, "fallback_exit_mean_shortfall", path,
                          d.fallback_exit_mean_shortfall)
    if leave > enter:
        raise reader.fail(f"{path}.fallback_exit_mean_shortfall",
                          f"{leave} exceeds fallback_enter_mean_shortfall ({enter}); the mode "
                          "would flap")
    prometheus_url = reader.string(raw, "prometheus_url", path, d.prometheus_url,
                                   allow_empty=True)
    if prometheus_url and not prometheus_url.startswith(("http://", "https://")):
        raise reader.fail(f"{path}.prometheus_url",
                          f"expected an http:// or https:// URL, got {prometheus_url!r}")
    model = reader.string(raw, "model", path, d.model)
    if model not in FORECASTER_NAMES:
        raise reader.fail(f"{path}.model", f"{model!r} is not one of {', '.join(FORECASTER_NAMES)}")
    return ForecastConfig(
        quantile=quantile,
        model=model,
        model_path=reader.string(raw, "model_path", path, d.model_path, allow_empty=True),
        retrain_every_s=reader.duration(raw, "retrain_every", path, d.retrain_every_s,
                                        positive=True),
        history_path=reader.string(raw, "history_path", path, d.history_path),
        retention_s=reader.duration(raw, "retention", path, d.retention_s, positive=True),
        cold_start_placeholders=reader.integer(
            raw, "cold_start_placeholders", path, d.cold_start_placeholders, low=0
        ),
        stabilize_rho=rho,
        stabilize_tau_s=reader.duration(raw, "stabilize_tau", path, d.stabilize_tau_s),
        fallback_window_ticks=reader.integer(
            raw, "fallback_window_ticks", path, d.fallback_window_ticks, low=1
        ),
        fallback_enter_mean_shortfall=enter,
        fallback_exit_mean_shortfall=leave,
        prometheus_url=prometheus_url,
        backfill_s=reader.duration(raw, "backfill", path, d.backfill_s, positive=True),
    )


def _bucket_limits(reader: FieldReader, raw: Any, path: str, default: BucketLimits) -> BucketLimits:
    body = reader.mapping(raw, path)
    reader.known(body, path, {"min", "max"})
    low = reader.integer(body, "min", path, default.min, low=0)
    high = reader.integer(body, "max", path, default.max, low=0)
    if low > high:
        raise reader.fail(f"{path}.min", f"min ({low}) exceeds max ({high})")
    return BucketLimits(low, high)


def _limits(reader: FieldReader, raw: Mapping) -> LimitsConfig:
    path = "limits"
    reader.known(raw, path, {
        "default", "per_bucket", "cost_cap_per_hour", "placement_groups", "virtual_instance_nodes",
    })
    default = _bucket_limits(reader, raw.get("default", {}), f"{path}.default", BucketLimits())
    per_bucket_raw = reader.mapping(raw.get("per_bucket", {}), f"{path}.per_bucket")
    per_bucket = {
        str(name): _bucket_limits(reader, value, f"{path}.per_bucket.{name}", default)
        for name, value in per_bucket_raw.items()
    }
    cap: float | None = LimitsConfig().cost_cap_per_hour
    if "cost_cap_per_hour" in raw:
        cap = (
            None
            if raw["cost_cap_per_hour"] is None
            else reader.number(raw, "cost_cap_per_hour", path, 0.0)
        )
    groups_raw = reader.mapping(raw.get("placement_groups", {}), f"{path}.placement_groups")
    groups = {
        str(name): reader.string_list(groups_raw, name, f"{path}.placement_groups")
        for name in groups_raw
    }
    nodes = reader.integer(raw, "virtual_instance_nodes", path, 1, low=1)
    return LimitsConfig(default, per_bucket, cap, groups, nodes)


def _placeholders(reader: FieldReader, raw: Mapping) -> PlaceholderConfig:
    path = "placeholders"
    reader.known(raw, path, {
        "namespace", "backend", "priority_class_name", "priority_class_value",
        "expendable_pods_priority_cutoff", "daemonset_overhead", "placement_group_label",
        "gpu_tolerations", "pause_image",
    })
    d = PlaceholderConfig()
    backend = reader.string(raw, "backend", path, d.backend)
    if backend not in BACKENDS:
        raise reader.fail(f"{path}.backend", f"{backend!r} is not one of {', '.join(BACKENDS)}")
    cutoff = reader.integer(raw, "expendable_pods_priority_cutoff", path,
                            d.expendable_pods_priority_cutoff)
    value = reader.integer(raw, "priority_class_value", path, d.priority_class_value)
    if value < cutoff:
        raise reader.fail(
            f"{path}.priority_class_value",
            f"{value} is below cluster-autoscaler's expendable-pods-priority-cutoff ({cutoff}): "
            "CA ignores pods below the cutoff when deciding to scale up, so placeholders "
            "would never make it launch a node. Use a value at or above the cutoff (and below "
            "0), or set expendable_pods_priority_cutoff to your CA's "
            "--expendable-pods-priority-cutoff",
        )
    if value >= 0:
        raise reader.fail(
            f"{path}.priority_class_value",
            f"{value} is not below 0: real pods have priority 0 by default and a pod cannot "
            "preempt one of equal or higher priority, so jobs would wait for a new node "
            "behind the placeholders instead of taking their place. Use a negative value at "
            f"or above the cutoff ({cutoff})",
        )
    names = (
        ("namespace", d.namespace),
        ("priority_class_name", d.priority_class_name),
    )
    for key, default in names:
        text = reader.string(raw, key, path, default)
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", text) or len(text) > 63:
            raise reader.fail(f"{path}.{key}", f"{text!r} is not a DNS-1123 label")
    overhead = None
    if raw.get("daemonset_overhead") is not None:
        overhead = reader.resources(raw["daemonset_overhead"], f"{path}.daemonset_overhead")
    image = reader.string(raw, "pause_image", path, d.pause_image)
    if "@sha256:" not in image:
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        if not tag or tag == "latest":
            raise reader.fail(
                f"{path}.pause_image",
                f"{image!r} must be pinned by a tag other than latest (or a digest), so every "
                "node pulls the same image",
            )
    tolerations = d.gpu_tolerations
    if "gpu_tolerations" in raw:
        tolerations = _tolerations(reader, raw["gpu_tolerations"], f"{path}.gpu_tolerations")
    return PlaceholderConfig(
        namespace=reader.string(raw, "namespace", path, d.namespace),
        backend=backend,
        priority_class_name=reader.string(raw, "priority_class_name", path, d.priority_class_name),
        priority_class_value=value,
        expendable_pods_priority_cutoff=cutoff,
        daemonset_overhead=overhead,
        placement_group_label=reader.string(
            raw, "placement_group_label", path, d.placement_group_label
        ),
        gpu_tolerations=tolerations,
        pause_image=image,
    )


def _tolerations(reader: FieldReader, raw: Any, path: str) -> tuple[Toleration, ...]:
    if not isinstance(raw, list):
        raise reader.fail(path, "expected a list of tolerations")
    result = []
    for index, item in enumerate(raw):
        item_path = f"{path}[{index}]"
        body = reader.mapping(item, item_path)
        reader.known(body, item_path, {"key", "operator", "value", "effect"})
        operator = reader.string(body, "operator", item_path, "Exists")
        if operator not in ("Exists", "Equal"):
            raise reader.fail(f"{item_path}.operator", f"{operator!r} is not Exists or Equal")
        effect = reader.string(body, "effect", item_path, "", allow_empty=True)
        if effect not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise reader.fail(f"{item_path}.effect", f"{effect!r} is not a taint effect")
        result.append(
            Toleration(
                key=reader.string(body, "key", item_path, None),
                operator=operator,
                value=reader.string(body, "value", item_path, "", allow_empty=True),
                effect=effect,
            )
        )
    return tuple(result)


def _leader(reader: FieldReader, raw: Mapping) -> LeaderElectionConfig:
    path = "leader_election"
    reader.known(raw, path, {
        "enabled", "lease_name", "lease_duration", "renew_deadline", "retry_period",
    })
    d = LeaderElectionConfig()
    # kubernetes.leaderelection stores the lease duration as whole seconds.
    lease = reader.duration(raw, "lease_duration", path, d.lease_duration_s, positive=True)
    renew = reader.duration(raw, "renew_deadline", path, d.renew_deadline_s, positive=True)
    retry = reader.duration(raw, "retry_period", path, d.retry_period_s, positive=True)
    for key, value in (("lease_duration", lease), ("renew_deadline", renew),
                       ("retry_period", retry)):
        if value != int(value) or value < 1:
            raise reader.fail(f"{path}.{key}", "must be a whole number of seconds >= 1s")
    if not lease > renew > 1.2 * retry:
        raise reader.fail(
            path,
            f"need lease_duration ({lease:g}s) > renew_deadline ({renew:g}s) > 1.2 x "
            f"retry_period ({retry:g}s), or two replicas could both believe they lead",
        )
    return LeaderElectionConfig(
        enabled=reader.boolean(raw, "enabled", path, d.enabled),
        lease_name=reader.string(raw, "lease_name", path, d.lease_name),
        lease_duration_s=int(lease),
        renew_deadline_s=int(renew),
        retry_period_s=int(retry),
    )


def _api(reader: FieldReader, raw: Mapping) -> ApiConfig:
    path = "api"
    reader.known(raw, path, {"timeout", "max_attempts", "backoff_base", "backoff_max"})
    d = ApiConfig()
    return ApiConfig(
        timeout_s=reader.duration(raw, "timeout", path, d.timeout_s, positive=True),
        max_attempts=reader.integer(raw, "max_attempts", path, d.max_attempts, low=1, high=20),
        backoff_base_s=reader.duration(raw, "backoff_base", path, d.backoff_base_s),
        backoff_max_s=reader.duration(raw, "backoff_max", path, d.backoff_max_s),
    )


__all__ = [
    "BACKENDS", "ApiConfig", "BucketLimits", "ForecastConfig",
    "LeaderElectionConfig", "LimitsConfig", "OverprovisionerConfig", "PlaceholderConfig",
    "Toleration", "load_config", "make_plan_config", "parse_config", "parse_duration",
    "placeholder_request",
    "resolve_catalog",
]
