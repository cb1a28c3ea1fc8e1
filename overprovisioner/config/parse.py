"""A parsed YAML document becomes a validated OverprovisionerConfig, or a ConfigError.

Decides: which fields each section accepts and which values are valid; every error
names the source and the field path (`limits.per_bucket.g5.xlarge.max`), unknown
fields included.

Rules checked here because a wrong value silently breaks the product:
- the placeholder PriorityClass value must be at or above cluster-autoscaler's
  `--expendable-pods-priority-cutoff` (below it CA ignores the placeholders, so
  nothing ever scales up) and below 0 (at or above 0 a default-priority pod could not
  preempt a placeholder; it would wait for a new node, which is what headstart exists
  to avoid);
- the pause image must be pinned by tag or digest (never `latest`).

Must not: read files (`buckets_file` and the catalog are `config.load`'s and
`config.catalog`'s), talk to the cluster, read the clock, or log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from common.errors import ConfigError, InputError
from overprovisioner.config import (
    BACKENDS,
    CAPACITY_TYPE_LABELS,
    ApiConfig,
    BucketLimits,
    ForecastConfig,
    KnownDemandConfig,
    LeaderElectionConfig,
    LimitsConfig,
    OverprovisionerConfig,
    PlaceholderConfig,
    Toleration,
    WorkerPlansConfig,
)
from overprovisioner.config.fields import FieldReader
from overprovisioner.policy_names import parse_headroom
from predictor.known.model import SOURCES
from predictor.models.registry import FORECASTER_NAMES


def parse_config(document: Any, source: str) -> OverprovisionerConfig:
    """Validate a parsed YAML document (without reading `buckets_file` or the catalog)."""
    reader = FieldReader(source)
    top = reader.mapping(document, "")
    reader.known(top, "", {
        "catalog", "instance_types", "buckets_file", "tick", "horizon", "forecast", "limits",
        "placeholders", "leader_election", "api", "known_demand", "worker_plans", "dry_run",
        "host", "port", "headroom",
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
        headroom=reader.string(top, "headroom", "", "", allow_empty=True).strip(),
        forecast=_forecast(reader, reader.mapping(top.get("forecast", {}), "forecast")),
        limits=_limits(reader, reader.mapping(top.get("limits", {}), "limits")),
        placeholders=_placeholders(
            reader, reader.mapping(top.get("placeholders", {}), "placeholders")
        ),
        leader_election=_leader(
            reader, reader.mapping(top.get("leader_election", {}), "leader_election")
        ),
        api=_api(reader, reader.mapping(top.get("api", {}), "api")),
        known_demand=_known_demand(
            reader, reader.mapping(top.get("known_demand", {}), "known_demand")
        ),
        worker_plans=_worker_plans(
            reader, reader.mapping(top.get("worker_plans", {}), "worker_plans")
        ),
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
    if config.headroom:
        try:
            parse_headroom(config.headroom, f"{source}: headroom")
        except InputError as error:
            raise ConfigError(str(error)) from None
    if config.placeholders.expire_after_s <= config.tick_s:
        raise reader.fail(
            "placeholders.expire_after",
            f"{config.placeholders.expire_after_s:g}s is not longer than tick "
            f"({config.tick_s:g}s): placeholders would expire between two healthy ticks")
    return config


def _forecast(reader: FieldReader, raw: Mapping) -> ForecastConfig:
    path = "forecast"
    reader.known(raw, path, {
        "quantile", "model", "model_path", "retrain_every", "history_path", "retention",
        "cold_start_placeholders", "stabilize_rho", "stabilize_tau", "fallback",
        "fallback_window_ticks",
        "fallback_enter_mean_shortfall", "fallback_exit_mean_shortfall", "prometheus_url",
        "backfill",
    })
    d = ForecastConfig()
    quantile, rho = _quantile_and_rho(reader, raw, path, d.quantile, d.stabilize_rho)
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
        fallback=reader.boolean(raw, "fallback", path, d.fallback),
        fallback_window_ticks=reader.integer(
            raw, "fallback_window_ticks", path, d.fallback_window_ticks, low=1
        ),
        fallback_enter_mean_shortfall=enter,
        fallback_exit_mean_shortfall=leave,
        prometheus_url=prometheus_url,
        backfill_s=reader.duration(raw, "backfill", path, d.backfill_s, positive=True),
    )


def _quantile_and_rho(reader: FieldReader, raw: Mapping, path: str, quantile: float,
                      rho: float) -> tuple[float, float]:
    """A section's `quantile`, strictly in (0, 1), and `stabilize_rho`, above 0."""
    quantile = reader.number(raw, "quantile", path, quantile)
    if not 0.0 < quantile < 1.0:
        raise reader.fail(f"{path}.quantile", f"must lie strictly between 0 and 1, got {quantile}")
    rho = reader.number(raw, "stabilize_rho", path, rho)
    if rho <= 0:
        raise reader.fail(f"{path}.stabilize_rho", "must be above 0")
    return quantile, rho


def _worker_plans(reader: FieldReader, raw: Mapping) -> WorkerPlansConfig:
    path = "worker_plans"
    reader.known(raw, path, {"enabled", "quantile", "history", "stabilize_rho",
                             "stabilize_tau", "valid_for", "configmap", "warm_start"})
    d = WorkerPlansConfig()
    quantile, rho = _quantile_and_rho(reader, raw, path, d.quantile, d.stabilize_rho)
    return WorkerPlansConfig(
        enabled=reader.boolean(raw, "enabled", path, d.enabled),
        quantile=quantile,
        history_s=reader.duration(raw, "history", path, d.history_s, positive=True),
        stabilize_rho=rho,
        stabilize_tau_s=reader.duration(raw, "stabilize_tau", path, d.stabilize_tau_s),
        valid_for_s=reader.duration(raw, "valid_for", path, d.valid_for_s, positive=True),
        configmap=reader.string(raw, "configmap", path, d.configmap),
        **_warm_start(reader, reader.mapping(raw.get("warm_start", {}), f"{path}.warm_start"),
                      d),
    )


def _warm_start(reader: FieldReader, raw: Mapping, d: WorkerPlansConfig) -> dict[str, Any]:
    path = "worker_plans.warm_start"
    reader.known(raw, path, {"k", "alpha", "min_similarity"})
    alpha = reader.number(raw, "alpha", path, d.warm_start_alpha)
    if not 0 < alpha <= 1:
        raise reader.fail(f"{path}.alpha", f"must lie in (0, 1], got {alpha}")
    similar = reader.number(raw, "min_similarity", path, d.warm_start_min_similarity)
    if not 0 <= similar <= 1:
        raise reader.fail(f"{path}.min_similarity", f"must lie in [0, 1], got {similar}")
    return {"warm_start_k": reader.integer(raw, "k", path, d.warm_start_k, low=1),
            "warm_start_alpha": alpha, "warm_start_min_similarity": similar}


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
        "gpu_tolerations", "pause_image", "request_gpus", "scheduler_name", "size_from_nodes",
        "gpu_type_fraction", "cpu_type_fraction", "wake_debounce", "autoscaler_status",
        "expire_after", "capacity_type_label", "pin_window",
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
    scheduler = reader.string(raw, "scheduler_name", path, d.scheduler_name, allow_empty=True)
    if scheduler and (len(scheduler) > 253 or not re.fullmatch(
            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", scheduler)):
        raise reader.fail(f"{path}.scheduler_name",
                          f"{scheduler!r} is not a DNS-1123 subdomain (a schedulerName)")
    fractions = {}
    for key in ("gpu_type_fraction", "cpu_type_fraction"):
        fraction = reader.number(raw, key, path, getattr(d, key))
        if not 0.5 < fraction <= 1.0:
            raise reader.fail(
                f"{path}.{key}",
                f"{fraction} must lie in (0.5, 1]: at half a node or less two placeholders can "
                "share one node, so one node launched holds two placeholders' capacity",
            )
        fractions[key] = fraction
    status = reader.string(raw, "autoscaler_status", path, d.autoscaler_status,
                           allow_empty=True)
    if status and not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-.a-z0-9]*[a-z0-9])?",
                                   status):
        raise reader.fail(f"{path}.autoscaler_status",
                          f"{status!r} is not NAMESPACE/NAME of a ConfigMap (or \"\" for none)")
    capacity_label = reader.string(raw, "capacity_type_label", path, d.capacity_type_label,
                                   allow_empty=True)
    if capacity_label not in ("auto", "", *CAPACITY_TYPE_LABELS):
        raise reader.fail(
            f"{path}.capacity_type_label",
            f"{capacity_label!r} is not one of auto, \"\" (no capacity-type pinning), "
            f"{', '.join(CAPACITY_TYPE_LABELS)}: headstart writes the values each of these "
            "expects and knows no other")
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
        request_gpus=reader.boolean(raw, "request_gpus", path, d.request_gpus),
        scheduler_name=scheduler,
        size_from_nodes=reader.boolean(raw, "size_from_nodes", path, d.size_from_nodes),
        gpu_type_fraction=fractions["gpu_type_fraction"],
        cpu_type_fraction=fractions["cpu_type_fraction"],
        wake_debounce_s=reader.duration(raw, "wake_debounce", path, d.wake_debounce_s),
        autoscaler_status=status,
        expire_after_s=reader.duration(raw, "expire_after", path, d.expire_after_s,
                                       positive=True),
        capacity_type_label=capacity_label,
        pin_window_s=reader.duration(raw, "pin_window", path, d.pin_window_s, positive=True),
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


def _known_demand(reader: FieldReader, raw: Mapping) -> KnownDemandConfig:
    path = "known_demand"
    sources = SOURCES
    reader.known(raw, path, {*sources, "cronjob_lead", "suspended_window"})
    d = KnownDemandConfig()
    lead = None
    if raw.get("cronjob_lead") is not None:
        lead = reader.duration(raw, "cronjob_lead", path, 0.0, positive=True)
    return KnownDemandConfig(
        **{source: reader.boolean(raw, source, path, getattr(d, source)) for source in sources},
        cronjob_lead_s=lead,
        suspended_window_s=reader.duration(raw, "suspended_window", path,
                                           d.suspended_window_s),
    )
