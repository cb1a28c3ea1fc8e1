"""The overprovisioner config checked against its instance catalog, and what it means there.

Decides: that every bucket instance type (and every type named under `limits`) is in
the catalog, that the limits fit it, the planner's view of the config
(`make_plan_config`), what one placeholder requests when no live node of its type can
be measured (`placeholder_request`, the fraction rule), and what is valid but cannot
work as written (`config_warnings`: a type the cost cap can never pay for). Every
error and warning names the config file and the field path.

Must not: parse YAML fields (`config.parse`), talk to the cluster, read the clock, or
log. Its only I/O is `load_catalog` in `resolve_catalog`.
"""

from __future__ import annotations

import math

from bucketing.catalog import Catalog, load_catalog
from bucketing.resources import Resources
from common.errors import ConfigError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config import plan_config as plan_config_module
from overprovisioner.policy_names import named_types, parse_headroom

MIB = 1024**2


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
    for section, name in _limits_outside_the_list(config):
        if not config.buckets_file:
            raise ConfigError(
                f"{config.source}: limits.{section}.{name}: not one of the bucket "
                f"instance types ({', '.join(config.instance_types)})"
            )
        if name not in catalog.names:  # a typo, not a type the tuning left out
            raise ConfigError(
                f"{config.source}: limits.{section}.{name}: unknown instance type in "
                f"catalog {catalog.name!r}"
            )
    if config.headroom:
        unknown = [name for name in named_types(parse_headroom(config.headroom))
                   if name not in config.instance_types]
        if unknown:
            raise ConfigError(
                f"{config.source}: headroom: {', '.join(unknown)} is not one of the bucket "
                f"instance types ({', '.join(config.instance_types)})")
    subset = catalog.subset(config.instance_types)
    make_plan_config(config).validate(subset, f"{config.source}: limits")
    for name in config.instance_types:  # an overhead too large: refuse now, not every tick
        placeholder_request(config, subset, name)
    return subset


def _limits_outside_the_list(config: OverprovisionerConfig) -> list[tuple[str, str]]:
    """(section, type) of every per-type limit naming a type outside the bucket list. With
    a `buckets_file` these are set aside, not refused: the list is re-tuned from demand,
    and a limit kept for a type the last tuning left out must not stop the service (it
    applies again when a tuning brings the type back); `config_warnings` names each."""
    return [(section, name) for section in ("per_bucket", "placement_groups")
            for name in getattr(config.limits, section) if name not in config.instance_types]


def capacity_type_label(config: OverprovisionerConfig) -> str:
    """The node label key placeholders select a capacity type with ("" = none):
    `placeholders.capacity_type_label`, where `auto` means the catalog's own (aws: EKS
    managed node groups', gcp: GKE's Spot label, a catalog file: none)."""
    label = config.placeholders.capacity_type_label
    if label != "auto":
        return label
    return {"aws": "eks.amazonaws.com/capacityType",
            "gcp": "cloud.google.com/gke-spot"}.get(config.catalog, "")


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
        placement_groups={name: groups for name, groups in limits.placement_groups.items()
                          if name in config.instance_types},
        virtual_instance_nodes=limits.virtual_instance_nodes,
    )


def placeholder_base(config: OverprovisionerConfig, catalog: Catalog, name: str) -> Resources:
    """A type's catalog allocatable less the daemonset overhead (the config's, else the
    catalog's): what the catalog says one node leaves for a placeholder."""
    instance_type = catalog.get(name)
    overhead = config.placeholders.daemonset_overhead
    if overhead is None:
        return instance_type.placeholder_request
    base = instance_type.allocatable - overhead
    if min(base.cpu_milli, base.memory_bytes, base.gpu_milli) < 0 or (
        base.cpu_milli == 0 or base.memory_bytes == 0
    ):
        raise ConfigError(
            f"{config.source}: placeholders.daemonset_overhead: leaves nothing of {name}'s "
            f"allocatable for a placeholder"
        )
    return base


def placeholder_request(config: OverprovisionerConfig, catalog: Catalog, name: str) -> Resources:
    """What one placeholder of `name` requests when no live node of the type can be
    measured (the fraction rule; sizing.py sizes from live nodes when they exist).

    GPU types: all the node's GPUs plus `gpu_type_fraction` of the base CPU and memory
    (`placeholder_base`); GPU-less types: `cpu_type_fraction` of them. Memory is rounded
    down to whole MiB. With `placeholders.request_gpus` false the GPUs are 0 and CPU and
    memory unchanged: they still claim the node, so a real pod must preempt the
    placeholder, while kubelet's Topology Manager gets no device request to align
    (docs/overprovisioner.md, "Topology Manager").
    """
    base = placeholder_base(config, catalog, name)
    gpus = catalog.get(name).gpus
    placeholders = config.placeholders
    fraction = placeholders.gpu_type_fraction if gpus > 0 else placeholders.cpu_type_fraction
    request = Resources(
        base.gpu_milli if placeholders.request_gpus else 0,
        math.floor(base.cpu_milli * fraction),
        math.floor(base.memory_bytes * fraction / MIB) * MIB,
    )
    if request.cpu_milli <= 0 or request.memory_bytes <= 0:
        raise ConfigError(
            f"{config.source}: placeholders: {fraction} of {name}'s allocatable less the "
            f"daemonset overhead ({base.cpu_milli}m CPU, {base.memory_bytes} bytes) leaves "
            "no CPU or memory for a placeholder"
        )
    return request


def config_warnings(config: OverprovisionerConfig, catalog: Catalog) -> tuple[str, ...]:
    """What the config allows but can never do, one line each (the service logs them at
    start-up and serves them in /plan): a type whose one placeholder above its min costs
    more than the cost cap leaves after every type's min placeholders is never planned,
    whatever the forecast says (the planner's cost cap cuts it every tick, silently); a
    per-type limit set aside because its type is not in the `buckets_file`."""
    warnings = [
        f"{config.source}: limits.{section}.{name}: {name} is not in buckets_file "
        f"{config.buckets_file} ({', '.join(config.instance_types)}); this limit applies to "
        "nothing until the list has it again"
        for section, name in _limits_outside_the_list(config)
    ]
    cap = config.limits.cost_cap_per_hour
    if cap is None:
        return tuple(warnings)
    plan_config = make_plan_config(config)
    floor = sum(plan_config.limits(name).min * catalog.get(name).price_per_hour
                for name in config.instance_types)
    for name in config.instance_types:
        limits = plan_config.limits(name)
        price = catalog.get(name).price_per_hour
        if limits.max is not None and limits.max <= limits.min:
            continue  # nothing above the min to plan
        if price > cap - floor + 1e-9:
            left = f"; the mins take {floor:.2f} of it" if floor else ""
            warnings.append(
                f"{config.source}: limits.cost_cap_per_hour: {cap:.2f} $/h{left}, below one "
                f"{name} at {price:.2f} $/h: no {name} placeholder above its min "
                f"({limits.min}) can ever be planned. Raise the cap to at least "
                f"{floor + price:.2f}, or drop {name} from instance_types"
            )
    return tuple(warnings)
