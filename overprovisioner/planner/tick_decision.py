"""A tick's whole decision from its observation: the plan, the placeholder sizes, the columns.

Decides, from one `TickObservation` (tick_core) and the configuration, everything the
service's loop then writes (loop.py: observe -> `decide_tick` -> apply):
- the plan: under a configured headroom, that headroom's count per type
  (`headroom.headroom_plan`, the simulator's peers' rule, without known demand); else
  the forecast's plan (`tick_core.plan_tick`) on the tick's bucket observations;
- the size of one placeholder of each type (`sizing.size_placeholders`);
- the columns to write: the placed buckets (a type with configured placement groups
  never gets an ungrouped one) split over the zones and capacity types pods were pinned
  to within the pin window (`pinned_plan.split_from_history`); all unpinned when no
  pinned demand was read, or the window has no bucket counts to split by.

Must not: read the clock, log, or call the API; it raises HeadstartError when the
configuration cannot be planned (the loop reports the tick failed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bucketing.catalog import Catalog
from bucketing.resources import Resources
from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.plan_config import PlanConfig
from overprovisioner.planner.headroom import headroom_plan
from overprovisioner.planner.pinned_plan import PlacedColumn, place_columns, split_from_history
from overprovisioner.planner.plan import Plan, PlannedBucket
from overprovisioner.planner.sizing import PlaceholderSize, size_placeholders
from overprovisioner.planner.tick_core import TickObservation, observations, plan_tick
from overprovisioner.policy_names import PolicySpec


@dataclass(frozen=True)
class TickDecision:
    """What the tick writes: the plan, one placeholder's size per type, the columns."""

    plan: Plan
    sizes: Mapping[str, PlaceholderSize]
    columns: tuple[PlacedColumn, ...]

    @property
    def requests(self) -> dict[str, Resources]:
        """One placeholder pod's request per instance type."""
        return {name: size.request for name, size in self.sizes.items()}


def decide_tick(config: OverprovisionerConfig, plan_config: PlanConfig, catalog: Catalog,
                seen: TickObservation, headroom: PolicySpec | None,
                capacity_label: str) -> TickDecision:
    """The tick's decision (module docstring); `capacity_label` is the node label pins
    of a capacity type select on."""
    sizes = size_placeholders(config, catalog, seen.rooms, seen.now_s, seen.applied)
    if headroom is not None:
        plan = headroom_plan(headroom, config.instance_types, plan_config, catalog,
                             seen.now_s, nodes_per_type(seen.nodes),
                             observations(config, plan_config, seen, with_known=False))
    else:
        plan = plan_tick(config, plan_config, catalog, seen.mode, seen.forecasts,
                         observations(config, plan_config, seen))
    planned = [(b.instance_type, b.placement_group, b.wanted)
               for b in placed_buckets(config, plan)]
    columns = place_columns(planned, {}, {})
    if seen.pinned is not None:
        try:
            columns = split_from_history(planned, seen.pinned.counts, seen.pinned.history,
                                         capacity_label)
        except InputError:  # no bucket counts in the window: nothing to split by
            pass
    return TickDecision(plan, sizes, columns)


def placed_buckets(config: OverprovisionerConfig, plan: Plan) -> Sequence[PlannedBucket]:
    """The plan's buckets that get placeholder objects: a type with configured
    groups never gets an ungrouped one."""
    grouped = config.limits.placement_groups
    return [b for b in plan.buckets if b.placement_group or not grouped.get(b.instance_type)]


def nodes_per_type(nodes: Mapping[tuple[str, str], int]) -> dict[str, int]:
    """The registered nodes of each type, over its groups (what a proportional headroom
    counts, as cluster-proportional-autoscaler counts the nodes its labels select)."""
    per_type: dict[str, int] = {}
    for (instance_type, _), count in nodes.items():
        per_type[instance_type] = per_type.get(instance_type, 0) + count
    return per_type
