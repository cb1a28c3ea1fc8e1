"""The placeholder plan: how many placeholder nodes each instance type and placement group gets.

Decides, from one observation of the cluster and the forecast, the placeholders wanted
per (instance type, placement group) and why. One placeholder fills one node of its
type, so placeholders are counted in nodes.

The rules, in the order they apply (per instance type, summed over its groups):
1. Delta, never negative: the placeholders wanted are
   the forecast less the capacity real demand already holds or is already getting:
   wanted = ceil(forecast - in_use - pending), at least 0, where in_use is the nodes
   its running pods use and pending the nodes cluster-autoscaler is launching for its
   pending pods. The forecast is the quantile (config.quantile) of the nodes real
   demand occupies at the horizon. Whole free nodes are capacity already free, and
   they are used by *placing* placeholders on them (kube-scheduler puts a pending
   placeholder on an empty node, so no node is launched for it), not by subtracting
   them: an empty node is removed by cluster-autoscaler after its unneeded time (10
   min), so a plan that subtracted it would shrink now and relaunch ten minutes later
   (the simulator measured that churn: +60% launches). `launches` (and "N to launch"
   in the reason) are counted by the balance (rule 4), after the caps: the nodes the
   plan really makes CA launch.
   Mode "ladder" (cold start, no history) replaces the delta by the ladder's count;
   mode "fallback" (the forecast missed badly, act reactively) replaces it by 0.
   Known demand (`known`: nodes that announced work due within the horizon will need,
   docs/known-demand.md) is added in every mode: wanted = ceil(forecast + known -
   in_use - pending) when forecasting, ladder + ceil(known) at cold start, ceil(known)
   in fallback. The forecast then covers only what nobody announced.
2. Per-bucket min and max (config.buckets).
3. The cost cap in $/h at catalog prices: while the total is over the cap, cut one
   placeholder of the most expensive type still above its min. Expensive first
   because one expensive placeholder frees the most budget per node given up and
   its idle node is the costliest mistake; config validation guarantees the mins fit.
4. Placement-group balance: existing placeholders
   stay in their groups; placeholders added first take the free nodes of their type's
   groups (one at a time, to the group with free nodes holding the fewest
   placeholders; nothing is launched for them), and the rest are cut into blocks of
   `virtual_instance_nodes` (one scale-up of one virtual instance, kept inside one
   group) and go round-robin, each block to the group with the fewest nodes so far
   (nodes now + blocks launched), ties by group name; placeholders removed come one at
   a time from the group with the most nodes. Free nodes in the ungrouped bucket of a
   type with groups take none (grouped placeholders select their group).

Must not: read the clock, log, call the API, or mutate its inputs. Existing
placeholders are reported, not used in the arithmetic: the plan is the desired state
and the apply step diffs against what runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bucketing.catalog import Catalog
from common.errors import InputError
from overprovisioner.config.plan_config import PlanConfig

Mode = Literal["forecast", "ladder", "fallback"]
CappedBy = Literal["max", "min", "cost_cap", "ladder", "fallback"]
MODES: tuple[str, ...] = ("forecast", "ladder", "fallback")

# A forecast of 3.0000000001 nodes (float noise from a quantile) is 3 nodes, not 4.
FORECAST_EPSILON = 1e-6


@dataclass(frozen=True)
class BucketObservation:
    """What the cluster looks like for one (instance type, placement group), in nodes.

    forecast: the quantile forecast of nodes real demand occupies at the horizon.
    in_use: nodes real pods occupy now (the embedding of running pods).
    free: whole nodes holding neither real pods nor placeholders.
    placeholders: placeholders that exist now (running or pending).
    pending: nodes pending real pods need (cluster-autoscaler launches these anyway).
    known: nodes known-ahead demand due within the horizon will need (pods that do not
        exist yet, so in neither in_use nor pending).
    """

    instance_type: str
    placement_group: str = ""
    forecast: float = 0.0
    in_use: int = 0
    free: int = 0
    placeholders: int = 0
    pending: int = 0
    known: float = 0.0


@dataclass(frozen=True)
class PlannedBucket:
    """The plan for one (instance type, placement group) and why.

    forecast, free, pending, in_use, existing, known: the observation, summed as planned
    (per group). wanted: placeholders to keep (one per node). capped_by: the rule that
    set `wanted` when not the plain delta. reason: the arithmetic, for humans.
    launches: of `wanted`, the placeholders that need a new node (neither an existing
    placeholder nor a free node of the group takes them).
    """

    instance_type: str
    placement_group: str
    forecast: float
    free: int
    pending: int
    in_use: int
    existing: int
    wanted: int
    capped_by: CappedBy | None
    reason: str
    known: float = 0.0
    launches: int = 0


@dataclass(frozen=True)
class Plan:
    """Placeholders wanted per bucket, their cost at catalog prices, and the mode."""

    buckets: tuple[PlannedBucket, ...]
    cost_per_hour: float
    mode: str

    def wanted(self, instance_type: str, placement_group: str = "") -> int:
        for bucket in self.buckets:
            if (bucket.instance_type, bucket.placement_group) == (instance_type, placement_group):
                return bucket.wanted
        return 0

    def wanted_by_type(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for bucket in self.buckets:
            totals[bucket.instance_type] = totals.get(bucket.instance_type, 0) + bucket.wanted
        return totals

    @property
    def total(self) -> int:
        return sum(bucket.wanted for bucket in self.buckets)


@dataclass(frozen=True)
class _TypeDecision:
    wanted: int
    capped_by: CappedBy | None
    reason: str


def make_plan(
    observed: Sequence[BucketObservation],
    config: PlanConfig,
    catalog: Catalog,
    mode: Mode = "forecast",
    ladder: Mapping[str, int] | None = None,
    bucket_modes: Mapping[str, Mode] | None = None,
) -> Plan:
    """The placeholders wanted for `observed` (see the module docstring for the rules).

    ladder: per instance type, the cold-start ladder's placeholder count (mode "ladder").
    bucket_modes: per instance type, a mode overriding `mode` (the predictor's fallback
        state machine runs per bucket).
    """
    ladder = ladder or {}
    bucket_modes = bucket_modes or {}
    by_type: dict[str, list[BucketObservation]] = {}
    for item in observed:
        for name in ("forecast", "known"):
            value = getattr(item, name)
            if value != value or value < 0:
                raise InputError(
                    f"plan: {item.instance_type}/{item.placement_group or '-'}: {name} "
                    f"{value} is not a non-negative number"
                )
        for name in ("in_use", "free", "placeholders", "pending"):
            if getattr(item, name) < 0:
                raise InputError(f"plan: {item.instance_type}: {name} is negative")
        by_type.setdefault(item.instance_type, []).append(item)
    prices = {name: catalog.get(name).price_per_hour for name in by_type}
    modes_used: set[str] = set()

    decisions: dict[str, _TypeDecision] = {}
    for name, items in by_type.items():
        type_mode = bucket_modes.get(name, mode)
        if type_mode not in MODES:
            raise InputError(f"plan: {name}: unknown mode {type_mode!r} ({', '.join(MODES)})")
        modes_used.add(type_mode)
        decisions[name] = _decide_type(name, items, config, type_mode, ladder)
    decisions = _apply_cost_cap(decisions, prices, config)

    buckets: list[PlannedBucket] = []
    for name, items in by_type.items():
        buckets.extend(_balance(name, items, decisions[name], config))
    buckets.sort(key=lambda b: (b.instance_type, b.placement_group))
    cost = sum(b.wanted * prices[b.instance_type] for b in buckets)
    plan_mode = modes_used.pop() if len(modes_used) == 1 else ("mixed" if modes_used else mode)
    return Plan(buckets=tuple(buckets), cost_per_hour=cost, mode=plan_mode)


def _decide_type(
    name: str,
    items: list[BucketObservation],
    config: PlanConfig,
    mode: str,
    ladder: Mapping[str, int],
) -> _TypeDecision:
    forecast = sum(i.forecast for i in items)
    covered = sum(i.in_use + i.pending for i in items)
    known = sum(i.known for i in items)
    known_nodes = max(0, math.ceil(known - FORECAST_EPSILON))
    plus_known = f" + known {known:.2f}" if known else ""
    capped_by: CappedBy | None = None
    if mode == "ladder":
        wanted = int(ladder.get(name, 0)) + known_nodes
        capped_by = "ladder"
        reason = f"cold start: ladder keeps {int(ladder.get(name, 0))}"
        reason += f"{plus_known} -> {wanted}" if known else ""
    elif mode == "fallback":
        wanted = known_nodes
        capped_by = "fallback"
        reason = "forecast missed: reactive fallback keeps none"
        reason += f"{plus_known} -> {wanted}" if known else ""
    else:
        wanted = max(0, math.ceil(forecast + known - covered - FORECAST_EPSILON))
        reason = (
            f"forecast {forecast:.2f}{plus_known} - in use and pending {covered} -> {wanted}"
        )
    limits = config.limits(name)
    if limits.max is not None and wanted > limits.max:
        wanted, capped_by = limits.max, "max"
        reason += f"; capped at max {limits.max}"
    if wanted < limits.min:
        wanted, capped_by = limits.min, "min"
        reason += f"; raised to min {limits.min}"
    return _TypeDecision(wanted, capped_by, reason)


def _apply_cost_cap(
    decisions: dict[str, _TypeDecision], prices: Mapping[str, float], config: PlanConfig
) -> dict[str, _TypeDecision]:
    cap = config.cost_cap_per_hour
    if cap is None:
        return decisions
    excess = sum(d.wanted * prices[n] for n, d in decisions.items()) - cap
    if excess <= 1e-9:
        return decisions
    result = dict(decisions)
    # Most expensive type first; names break ties so the plan is deterministic.
    for name in sorted(decisions, key=lambda n: (-prices[n], n)):
        if excess <= 1e-9:
            break
        decision = result[name]
        spare = decision.wanted - config.limits(name).min
        if spare <= 0:
            continue
        cut = min(spare, math.ceil(excess / prices[name] - 1e-9))
        excess -= cut * prices[name]
        result[name] = _TypeDecision(
            decision.wanted - cut,
            "cost_cap",
            decision.reason + f"; cut {cut} at {prices[name]:.2f} $/h to stay under {cap:.2f} $/h",
        )
    return result


def _balance(
    name: str, items: list[BucketObservation], decision: _TypeDecision, config: PlanConfig
) -> list[PlannedBucket]:
    by_group: dict[str, list[BucketObservation]] = {}
    for group in config.groups(name):
        by_group[group] = []
    for item in items:
        by_group.setdefault(item.placement_group, []).append(item)
    # A type configured with groups never places into the ungrouped "" bucket.
    groups = sorted(g for g in by_group if g or len(by_group) == 1)
    nodes_now = {
        g: sum(i.in_use + i.free + i.pending + i.placeholders for i in by_group[g]) for g in groups
    }
    # Existing placeholders stay where they are (moving one costs a node launch and an
    # idle node draining for cluster-autoscaler's unneeded time); only the change moves.
    existing = {g: sum(i.placeholders for i in by_group[g]) for g in groups}
    given = dict(existing)
    free_left = {g: sum(i.free for i in by_group[g]) for g in groups}
    launched = dict.fromkeys(groups, 0)
    remaining = decision.wanted - sum(given.values())
    # Free nodes first: kube-scheduler puts a pending placeholder on an empty node of its
    # group, so it launches nothing. One at a time, to the group with free nodes holding
    # the fewest placeholders so far (ties by name).
    while remaining > 0 and any(free_left.values()):
        target = min((g for g in groups if free_left[g] > 0), key=lambda g: (given[g], g))
        free_left[target] -= 1
        given[target] += 1
        remaining -= 1
    while remaining > 0:
        # Launches: whole virtual instances, each to the group with the fewest nodes.
        target = min(groups, key=lambda g: (nodes_now[g] + launched[g], g))
        block = min(config.virtual_instance_nodes, remaining)
        given[target] += block
        launched[target] += block
        remaining -= block
    while remaining < 0:
        # Shrink the group holding the most, so the groups stay balanced.
        target = max((g for g in groups if given[g] > 0),
                     key=lambda g: (nodes_now[g] - existing[g] + given[g], g))
        given[target] -= 1
        remaining += 1
    free_total = sum(sum(i.free for i in by_group[g]) for g in groups)
    launches = sum(launched.values())
    summary = (f"; {_count(free_total, 'free node')}, "
               f"{_count(sum(existing.values()), 'placeholder')} exist, {launches} to launch")
    planned = []
    for group in sorted(by_group):
        observations = by_group[group]
        wanted = given.get(group, 0)
        share = "" if len(groups) == 1 else (
            f"; {wanted} of {decision.wanted} in group {group} "
            f"({launched.get(group, 0)} to launch)")
        planned.append(
            PlannedBucket(
                instance_type=name,
                placement_group=group,
                forecast=sum(i.forecast for i in observations),
                free=sum(i.free for i in observations),
                pending=sum(i.pending for i in observations),
                in_use=sum(i.in_use for i in observations),
                existing=sum(i.placeholders for i in observations),
                wanted=wanted,
                capped_by=decision.capped_by,
                reason=decision.reason + summary + share,
                known=sum(i.known for i in observations),
                launches=launched.get(group, 0),
            )
        )
    return planned


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
