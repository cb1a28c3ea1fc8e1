"""Building one run's pieces from the config: node groups per type, the service config the
predictive policy runs, and the policy object.

Decides:
- which placement groups each instance type's node groups span: the service config's
  `limits.placement_groups` for a type it names, else `groups_per_gpu_type` groups
  (pg-a, pg-b, ...) for GPU types and none for GPU-less ones;
- the service config the run uses: the given one with the simulated instance types and
  those groups (as a user with such node groups configures it), checked as the service
  checks it against the catalog (`config_catalog.make_plan_config(...).validate`);
- how a policy spec becomes a policy wired to its plan: the service-driven ones
  (predictive, oracle, rate-oracle) plan with the service's limits at its tick and
  horizon; the peers (static, proportional, scheduled) with none of headstart's limits;
  predictive replays the workload's known demand (`sim.known`); the oracles know the
  future already and the peers read none.

Must not: run the simulation or touch files.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from bucketing.catalog import Catalog
from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.catalog import make_plan_config
from overprovisioner.planner.headroom import headroom_plan_config
from overprovisioner.policy_names import PolicySpec, parse_policy_name
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.known import replay_known
from overprovisioner.sim.oracles import Oracle, RateOracle
from overprovisioner.sim.policies import Headroom, PlanContext, Policy, Reactive
from overprovisioner.sim.predictive import Predictive
from overprovisioner.sim.workload import Workload


def placement_groups(workload: Workload, config: SimConfig) -> dict[int, tuple[str, ...]]:
    """The placement groups of each type's node groups ("" = none)."""
    named = config.service.limits.placement_groups
    default = tuple(f"pg-{chr(ord('a') + i)}" for i in range(config.groups_per_gpu_type))
    groups = {}
    for b, kind in enumerate(workload.types):
        if named.get(kind.name):
            groups[b] = tuple(named[kind.name])
        elif kind.gpus > 0 and config.groups_per_gpu_type > 1:
            groups[b] = default
        else:
            groups[b] = ("",)
    return groups


def service_config(workload: Workload, catalog: Catalog, config: SimConfig,
                   groups: dict[int, tuple[str, ...]]) -> OverprovisionerConfig:
    """The service config for this workload's types and node groups, validated against
    the catalog as the service validates it (errors name the config file and field)."""
    service = config.service
    names = tuple(kind.name for kind in workload.types)
    # A per-type limit for a type outside the list was ruled on when the file was read
    # (`config.checked`: refused, or set aside with a warning when a `buckets_file` is
    # the list): like the service, the run plans only the listed types.
    service = replace(
        service, instance_types=names,
        limits=replace(service.limits, placement_groups={
            workload.types[b].name: g for b, g in groups.items() if g != ("",)}),
    )
    make_plan_config(service).validate(catalog.subset(names), f"{service.source}: limits")
    return service


# More placeholders per type than any simulated cluster holds nodes: no max.
LIFTED_MAX = 100_000


def lift_limits(service: OverprovisionerConfig) -> OverprovisionerConfig:
    """The config without headstart's limits on what placeholders cost: no cost cap and
    no per-type max (per-type mins and everything else kept)."""
    limits = service.limits
    return replace(service, limits=replace(
        limits, cost_cap_per_hour=None, default=replace(limits.default, max=LIFTED_MAX),
        per_bucket={name: replace(bucket, max=LIFTED_MAX)
                    for name, bucket in limits.per_bucket.items()}))


def check_schedule_matches(spec: PolicySpec, workload: Workload) -> None:
    """InputError when a schedule that keeps placeholders at some hours keeps none at
    the hours the simulated window covers (trace clock): it would run as reactive."""
    if not any(count for _, _, count in spec.hours) or spec.count:
        return
    start, end = workload.start_s, workload.end_s
    hours = {int((t % 86_400) // 3600) for t in np.arange(start, end, 3600.0)}
    hours.add(int((end % 86_400) // 3600))
    if not any(spec.count_at_hour(hour) for hour in hours):
        covered = ", ".join(f"{h:02d}" for h in sorted(hours))
        raise InputError(f"policy {spec.name!r}: keeps no placeholder at any hour of the "
                         f"simulated window (trace-clock hours {covered}); it would run as "
                         "reactive. Widen --days or change the hours")


def make_policy(name: str, workload: Workload, catalog: Catalog, config: SimConfig,
                groups: dict[int, tuple[str, ...]], forecasting: bool = True) -> Policy:
    """The policy `name` wired to its plan; `forecasting` off: predictive plans for its
    known demand alone (`Predictive`)."""
    spec = parse_policy_name(name)
    if spec.kind == "reactive":
        return Reactive(config.peer_tick_s)
    service = service_config(workload, catalog, config, groups)
    if spec.quantile is not None:
        service = replace(service, forecast=replace(service.forecast, quantile=spec.quantile))
    if spec.model is not None:
        service = replace(service, forecast=replace(service.forecast, model=spec.model))
    if spec.unlimited:
        service = lift_limits(service)
    horizons = np.full(len(workload.types), service.horizon_ticks)
    if spec.is_peer:
        # Not headstart: no limits, no cost cap; one placeholder per scale-up.
        peer_config = headroom_plan_config(make_plan_config(service))
        context = PlanContext(workload.types, groups, catalog, peer_config, horizons)
        if spec.kind == "per-type":
            for kind, member in spec.members:
                if member.kind == "scheduled":
                    try:
                        check_schedule_matches(member, workload)
                    except InputError as error:
                        raise InputError(f"policy {spec.name!r}: {kind}: {error}") from None
        elif spec.kind == "scheduled":
            check_schedule_matches(spec, workload)
        # A headroom run by cluster-proportional-autoscaler polls as CPA does.
        polls = spec.kind == "proportional" or any(
            member.kind == "proportional" for _, member in spec.members)
        return Headroom(context, spec, config.cpa_poll_s if polls else config.peer_tick_s)
    context = PlanContext(workload.types, groups, catalog, make_plan_config(service), horizons)
    tick = service.tick_s
    if spec.kind == "oracle":
        return Oracle(context, workload, tick, name=name)
    if spec.kind == "rate-oracle":
        window = max(1, round(config.rate_window_s / tick))
        return RateOracle(context, workload, service.forecast.quantile, window, tick,
                          name=name)
    ticks = int(math.ceil((workload.end_s - workload.start_s) / tick)) + 1  # as the engine
    return Predictive(context, service, name=name, known=replay_known(workload, service, ticks),
                      forecasting=forecasting)
