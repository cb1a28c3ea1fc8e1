"""The overprovisioner config checked against its instance catalog, and what it means there.

Decides: that every bucket instance type (and every type named under `limits`) is in
the catalog, that the limits fit it, the planner's view of the config
(`make_plan_config`) and what one placeholder requests (`placeholder_request`). Every
error names the config file and the field path.

Must not: parse YAML fields (config_parse.py), talk to the cluster, read the clock, or
log. Its only I/O is `load_catalog` in `resolve_catalog`.
"""

from __future__ import annotations

from bucketing.catalog import Catalog, load_catalog
from bucketing.errors import ConfigError
from bucketing.resources import Resources
from overprovisioner import plan_config as plan_config_module
from overprovisioner.config import OverprovisionerConfig


def resolve_catalog(config: OverprovisionerConfig) -> Catalog:
    """The catalog limited to the bucket instance types, in config order.

    An unknown type is a ConfigError naming the config file, the type and the catalog.
    """
    catalog = load_catalog(config.catalog, f"{config.source}: catalog")
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
    """What one placeholder of `name` requests: allocatable less the daemonset overhead.

    With `placeholders.request_gpus` false the GPUs are 0 and CPU and memory unchanged:
    the CPU and memory still fill the node, so a real pod must preempt the placeholder,
    while kubelet's Topology Manager gets no device request to align (docs/overprovisioner.md,
    "Topology Manager").
    """
    instance_type = catalog.get(name)
    overhead = config.placeholders.daemonset_overhead
    if overhead is None:
        request = instance_type.placeholder_request
    else:
        request = instance_type.allocatable - overhead
        if min(request.cpu_milli, request.memory_bytes, request.gpu_milli) < 0 or (
            request.cpu_milli == 0 or request.memory_bytes == 0
        ):
            raise ConfigError(
                f"{config.source}: placeholders.daemonset_overhead: leaves nothing of {name}'s "
                f"allocatable for a placeholder"
            )
    if not config.placeholders.request_gpus:
        return Resources(0, request.cpu_milli, request.memory_bytes)
    return request
