"""The placeholder plan's configuration: limits, cost cap, quantile, horizon, placement groups.

Decides: the fields the planner reads, their defaults, and whether they are valid against
the catalog (errors name the source and the field). The service builds it from its own
config (`overprovisioner.config.catalog.make_plan_config`: `limits`, `forecast.quantile`,
`horizon`); the simulator's peers use `planner.headroom.headroom_plan_config`.

Must not: read files or YAML, or know about Kubernetes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from bucketing.catalog import Catalog
from common.errors import ConfigError


@dataclass(frozen=True)
class BucketLimits:
    """Bounds on the placeholders of one instance type, summed over its placement groups.

    min: placeholders kept whatever the forecast says (a floor; 0 = none).
    max: placeholders never exceeded (None = no limit but the cost cap).
    """

    min: int = 0
    max: int | None = None


@dataclass(frozen=True)
class PlanConfig:
    """What the planner needs besides the observation.

    quantile: the forecast quantile the placeholders cover (0.9 = demand stays under
        the forecast on about 9 ticks in 10).
    horizon_s: how far ahead the forecast looks, in seconds; set it to the node
        start-up time (cluster-autoscaler scan + boot + device plugin).
    cost_cap_per_hour: dollars per hour the placeholders may cost in total, at the
        catalog's on-demand prices (None = no cap). Must cover every bucket's min.
    buckets: per instance type limits; a type absent here gets BucketLimits().
    placement_groups: per instance type, the placement groups its node groups span
        (absent or empty = the type has no groups; placeholders carry group "").
    virtual_instance_nodes: nodes in one scale-up of one virtual instance; such a
        block of placeholders is kept inside one placement group (docs/overprovisioner.md,
        "What one tick does").
    """

    quantile: float = 0.9
    horizon_s: float = 300.0
    cost_cap_per_hour: float | None = None
    buckets: Mapping[str, BucketLimits] = field(default_factory=dict)
    placement_groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    virtual_instance_nodes: int = 1

    def limits(self, instance_type: str) -> BucketLimits:
        return self.buckets.get(instance_type, BucketLimits())

    def groups(self, instance_type: str) -> tuple[str, ...]:
        return tuple(self.placement_groups.get(instance_type, ())) or ("",)

    def validate(self, catalog: Catalog, source: str = "plan") -> PlanConfig:
        """Check the config against the catalog; raise ConfigError naming the field."""
        if not 0.0 < self.quantile < 1.0:
            raise ConfigError(f"{source}: quantile: must lie strictly between 0 and 1")
        if not (math.isfinite(self.horizon_s) and self.horizon_s > 0):
            raise ConfigError(f"{source}: horizon_s: must be a positive number of seconds")
        if self.virtual_instance_nodes < 1:
            raise ConfigError(f"{source}: virtual_instance_nodes: must be at least 1")
        floor_cost = 0.0
        for name, limits in self.buckets.items():
            where = f"{source}: buckets.{name}"
            price = _price(catalog, name, where)
            if limits.min < 0:
                raise ConfigError(f"{where}.min: must not be negative ({limits.min})")
            if limits.max is not None and limits.max < 0:
                raise ConfigError(f"{where}.max: must not be negative ({limits.max})")
            if limits.max is not None and limits.max < limits.min:
                raise ConfigError(f"{where}: max ({limits.max}) is below min ({limits.min})")
            floor_cost += limits.min * price
        for name in self.placement_groups:
            _price(catalog, name, f"{source}: placement_groups.{name}")
        if self.cost_cap_per_hour is not None:
            if not self.cost_cap_per_hour >= 0:
                raise ConfigError(f"{source}: cost_cap_per_hour: must not be negative")
            if floor_cost > self.cost_cap_per_hour + 1e-9:
                raise ConfigError(
                    f"{source}: cost_cap_per_hour: {self.cost_cap_per_hour} $/h cannot pay for "
                    f"the buckets' min placeholders ({floor_cost:.2f} $/h)"
                )
        return self


def _price(catalog: Catalog, name: str, where: str) -> float:
    try:
        return catalog.get(name).price_per_hour
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
