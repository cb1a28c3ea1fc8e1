"""Building one run's pieces from the config: node groups per type and the policy object.

Decides which placement groups each instance type's node groups span, and how a policy
name (`reactive`, `static:N`, `predictive[:Q]`, `oracle`, `rate-oracle[:Q]`) becomes a
policy wired to the plan, the forecaster and (optionally) the service's forecast
adjuster.

Must not: run the simulation or touch files.
"""

from __future__ import annotations

import math

import numpy as np

from bucketing.catalog import Catalog
from overprovisioner.plan_config import PlanConfig
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.policies import (
    Oracle,
    PlanContext,
    Policy,
    Predictive,
    RateOracle,
    Reactive,
    Static,
    horizon_in_ticks,
    parse_policy_name,
)
from overprovisioner.sim.workload import Workload, true_demand


def placement_groups(workload: Workload, config: SimConfig) -> dict[int, tuple[str, ...]]:
    """The placement groups of each type's node groups ("" = none)."""
    names = tuple(f"pg-{chr(ord('a') + i)}" for i in range(config.groups_per_gpu_type))
    return {
        b: (names if kind.gpus > 0 and config.groups_per_gpu_type > 1 else ("",))
        for b, kind in enumerate(workload.types)
    }


def make_policy(name: str, workload: Workload, catalog: Catalog, config: SimConfig,
                groups: dict[int, tuple[str, ...]]) -> Policy:
    kind, parameter = parse_policy_name(name)
    if kind == "reactive":
        return Reactive()
    if kind in ("predictive", "rate-oracle") and parameter:
        from dataclasses import replace

        config = replace(config, quantile=float(parameter))
    startups = [config.gpu_startup_s if t.gpus > 0 else config.cpu_startup_s
                for t in workload.types]
    horizons = np.array(
        [horizon_in_ticks(s, config.scan_s, config.policy_tick_s) for s in startups]
    )
    plan_config = PlanConfig(
        quantile=config.quantile,
        horizon_s=max(startups),
        cost_cap_per_hour=config.cost_cap_per_hour,
        placement_groups={workload.types[b].name: g for b, g in groups.items() if g != ("",)},
        virtual_instance_nodes=config.virtual_instance_nodes,
    ).validate(catalog, "simulate")
    context = PlanContext(workload.types, groups, catalog, plan_config, horizons)
    if kind == "static":
        return Static(context, int(parameter))
    if kind == "oracle":
        return Oracle(context, true_demand(workload, config.policy_tick_s))
    if kind == "rate-oracle":
        window = max(1, round(config.rate_window_s / config.policy_tick_s))
        return RateOracle(context, true_demand(workload, config.policy_tick_s),
                          config.quantile, window, name=name)
    from predictor.registry import make_forecaster

    tick = int(config.policy_tick_s)
    max_horizon = int(horizons.max())
    params = dict(config.model_params)
    make_forecaster(config.model, tick, max_horizon=max_horizon, **params)  # validates
    adjuster = None
    if config.adjust:
        from overprovisioner.adjust import ForecastAdjuster
        from predictor.fallback import FallbackConfig

        # The service's defaults (overprovisioner.config: tau 600 s, rho 1, a 30-minute
        # fallback window of 6 five-minute ticks), converted to this tick.
        adjuster = ForecastAdjuster(
            horizon_ticks=max_horizon,
            tau_ticks=max(0, math.ceil(600.0 / config.policy_tick_s - 1e-9)),
            rho=1.0,
            fallback=FallbackConfig(max(1, round(1800.0 / config.policy_tick_s)), 1.0, 0.25),
        )
    max_horizon = max_horizon + (adjuster.tau_ticks if adjuster else 0)
    return Predictive(
        context,
        lambda: make_forecaster(config.model, tick, max_horizon=max_horizon, **params),
        config.model,
        refit_ticks=round(config.refit_s / config.policy_tick_s),
        train_ticks=round(config.train_s / config.policy_tick_s),
        cold_start_placeholders=config.cold_start_placeholders,
        hold_ticks=round(config.hold_s / config.policy_tick_s),
        name=name,
        adjuster=adjuster,
    )
