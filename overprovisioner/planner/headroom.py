"""Headroom as users run it today, as a plan the overprovisioner applies instead of a forecast.

Decides, for a headroom policy (`static:N`, `static:TYPE=N,...`, `proportional:R[,min=M]
[,max=X]`, `scheduled:HH-HH=N,...,else=N`, `per-type:TYPE=POLICY+...`; the grammar is
`policy_names`), how many placeholder nodes each instance type keeps at a time with
the given nodes of each type: static's N; proportional's max(min, ceil(nodes / R)) at
most max (cluster-proportional-autoscaler's linear mode, counting the type's nodes);
scheduled's N for the hour of the day (UTC for the service's wall clock, the trace
clock in the simulator); per-type: each named type its own, the others 0.

The simulator's peers (`sim.policies`) and the service's `headroom:` setting both
count here, and both plan with `headroom_plan_config`: the planner's ladder mode with
the count per type, the placement groups and nothing else (no per-type min/max, no cost
cap: that is how the peers run, so what `headstart simulate` measured for a peer is
what the service then applies).

Must not: read the clock (callers pass the time) or the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bucketing.catalog import Catalog
from overprovisioner.config.plan_config import PlanConfig
from overprovisioner.planner.plan import BucketObservation, Plan, make_plan
from overprovisioner.policy_names import PolicySpec


def peer_count(spec: PolicySpec, now: float, ready: int) -> int:
    """Placeholders one type keeps under a single-count headroom at time `now` with
    `ready` nodes of the type: static's N, proportional's max(min, ceil(ready / R)) at
    most max (CPA's linear mode), scheduled's count at the hour."""
    if spec.kind == "proportional":
        count = -(-int(ready) // spec.nodes_per_placeholder)
        if spec.max_count:
            count = min(count, spec.max_count)
        return max(spec.min_count, count)
    if spec.kind == "scheduled":
        return spec.count_at_hour(int((now % 86_400) // 3600))
    return spec.count


def type_specs(spec: PolicySpec, types: Sequence[str]) -> list[PolicySpec | None]:
    """Per type of `types`, the single-count headroom it keeps (None: none): the spec
    itself for every type, or a per-type headroom's member (static:TYPE=N's count)."""
    if spec.kind != "per-type":
        return [spec] * len(types)
    members = dict(spec.members) or {
        kind: PolicySpec(f"static:{count}", "static", count=count)
        for kind, count in spec.per_type}
    return [members.get(name) for name in types]


def counts_of(specs: Sequence[PolicySpec | None], now: float,
              nodes: Sequence[int]) -> list[int]:
    """Placeholders per type at time `now` with `nodes[i]` nodes of type i (`type_specs`)."""
    return [0 if spec is None else peer_count(spec, now, ready)
            for spec, ready in zip(specs, nodes, strict=True)]


def headroom_counts(spec: PolicySpec, types: Sequence[str], now: float,
                    nodes: Mapping[str, int]) -> list[int]:
    """Placeholders per type of `types` (in that order) at time `now`, with `nodes` of
    each type (absent: 0)."""
    return counts_of(type_specs(spec, types), now, [nodes.get(name, 0) for name in types])


def headroom_plan_config(config: PlanConfig) -> PlanConfig:
    """The planner's config for a headroom: `config`'s placement groups, no limits."""
    return PlanConfig(placement_groups=config.placement_groups)


def headroom_plan(spec: PolicySpec, types: Sequence[str], config: PlanConfig,
                  catalog: Catalog, now: float, nodes: Mapping[str, int],
                  observed: Sequence[BucketObservation]) -> Plan:
    """The service's plan under a headroom: the planner's ladder mode with the headroom's
    count per type (`headroom_counts`), spread over the groups, without limits
    (`headroom_plan_config`) and without known demand (a peer plans none)."""
    counts = headroom_counts(spec, types, now, nodes)
    return make_plan(observed, headroom_plan_config(config), catalog, mode="ladder",
                     ladder=dict(zip(types, counts, strict=True)))
