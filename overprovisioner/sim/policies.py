"""What every placeholder policy sees and shares, and the policies users run today: reactive,
static, proportional, scheduled.

Decides, once per policy tick, how many placeholders each (instance type, placement
group) keeps. Every policy but `reactive` goes through the pure planner
(`overprovisioner.planner.plan.make_plan`) the service runs; the peers in its ladder mode with
their own count per type, and without headstart's limits (they are not headstart):

- `reactive`: no placeholders (cluster-autoscaler alone);
- `static:N`: N placeholder nodes per instance type, always (the overprovisioning Helm
  charts' fixed Deployment);
- `proportional:R`: per type, max(min, ceil(nodes of the type / R)), at most max, every
  `cpa_poll_s`: cluster-proportional-autoscaler's linear mode, which drives the
  overprovisioning charts' Deployment, counting the type's schedulable nodes (its
  `--nodelabels`): registered nodes, modelled as the ready ones, placeholders' nodes
  included, as CPA counts them;
- `scheduled:...`: static headroom that follows a daily schedule (a CronJob or KEDA
  cron scaler setting the Deployment's replicas);
- `static:TYPE=N,...` / `per-type:TYPE=POLICY+...`: a count or a headroom per type.

Each peer's count per type is `overprovisioner.planner.headroom.headroom_counts`, the
rule the service applies for its `headroom:` setting (class `Headroom`).

A preempted peer placeholder is recreated by its ReplicaSet at once (the engine does
that for every policy); the peers do not re-plan on preemption. The service-driven
policies (predictive.py, oracles.py) do.

Must not: touch the cluster (it reads a `TickView` and returns a plan).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from bucketing.catalog import Catalog, InstanceType
from common.errors import InputError
from overprovisioner.config.plan_config import PlanConfig
from overprovisioner.planner.headroom import counts_of, type_specs
from overprovisioner.planner.plan import BucketObservation, Plan, make_plan
from overprovisioner.policy_names import PolicySpec, named_types
from overprovisioner.sim.recording import Recording


@dataclass(frozen=True)
class TickView:
    """What a policy sees at one policy tick.

    now: trace seconds; tick: index of this tick (0 = the simulation start).
    in_use / pending: (B,) embedded counts of running / pending real pods now.
    free / placeholders: per (type index, group), whole empty ready nodes / placeholders.
    nodes: (B,) ready nodes per type (what cluster-proportional-autoscaler counts).
    recording: the history the service's recorder would have written up to this tick, in
    its columns (sim.recording), with its announced part when the policy has an
    `announced` mask; None for policies that record none.
    tick_time: the time of the tick (a re-plan after a preemption runs later within it,
    and the service records it at the tick's time).
    known: nodes of known demand the cluster's own objects give, per (type index,
    group): a gang replay's pods held by the admitter's gate (due now) and its elastic
    gangs' planned growth (`sim.gangs.headroom`); the predictive policy adds them to the
    trace's known demand. Empty in a pod replay.
    """

    now: float
    tick: int
    in_use: np.ndarray
    pending: np.ndarray
    free: dict[tuple[int, str], int]
    placeholders: dict[tuple[int, str], int]
    nodes: tuple[int, ...] = ()
    recording: Recording | None = None
    tick_time: float = 0.0
    known: Mapping[tuple[int, str], float] = field(default_factory=dict)


class Policy(Protocol):
    """name: as typed; tick_s: how often `decide` runs; needs_history: the engine records
    demand at every tick for it; replans: it re-plans after a placeholder's preemption
    (the service does, via its pod watch; the peers' controllers do not)."""

    name: str
    tick_s: float
    needs_history: bool
    replans: bool

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        """The plan to apply (None = no placeholders) and the forecast it used (B,)."""
        ...


@dataclass
class PlanContext:
    """What every planning policy shares: the types, their groups, the catalog, the config."""

    types: tuple[InstanceType, ...]
    groups: dict[int, tuple[str, ...]]
    catalog: Catalog
    config: PlanConfig
    horizon_ticks: np.ndarray  # (B,) the forecast horizon of each type, in policy ticks
    memo: dict = field(default_factory=dict)

    def observations(self, view: TickView, forecast: np.ndarray,
                     known: np.ndarray | None = None) -> list[BucketObservation]:
        observed = []
        for b, kind in enumerate(self.types):
            observed.append(BucketObservation(
                kind.name, "", float(forecast[b]), int(view.in_use[b]),
                view.free.get((b, ""), 0), view.placeholders.get((b, ""), 0),
                int(view.pending[b]), float(known[b]) if known is not None else 0.0,
            ))
            for group in self.groups[b]:
                if group:
                    observed.append(BucketObservation(
                        kind.name, group, 0.0, 0, view.free.get((b, group), 0),
                        view.placeholders.get((b, group), 0), 0,
                    ))
        return observed

    def plan(self, view: TickView, forecast: np.ndarray, mode: str = "forecast",
             ladder: dict[str, int] | None = None,
             bucket_modes: dict[str, str] | None = None,
             known: np.ndarray | None = None) -> Plan:
        """known: (B,) nodes of demand announced ahead, the plan's `known` (added to the
        forecast in every mode, as the service's plan does)."""
        observed = tuple(self.observations(view, forecast, known))
        key = (observed, mode, tuple(sorted((ladder or {}).items())),
               tuple(sorted((bucket_modes or {}).items())))
        # The plan is a pure function of its inputs, and clusters revisit the same states.
        cached = self.memo.get(key)
        if cached is None:
            if len(self.memo) > 50_000:
                self.memo.clear()
            cached = make_plan(observed, self.config, self.catalog, mode=mode,  # type: ignore
                               ladder=ladder, bucket_modes=bucket_modes)  # type: ignore
            self.memo[key] = cached
        return cached

    def ladder(self, view: TickView, counts: list[int]) -> Plan:
        """The plan keeping counts[b] placeholders of each type b (the planner's ladder
        mode: spread over the type's groups, existing ones kept where they are)."""
        zeros = np.zeros(len(self.types))
        return self.plan(view, zeros, mode="ladder",
                         ladder={kind.name: counts[b] for b, kind in enumerate(self.types)})


class Reactive:
    name = "reactive"
    needs_history = False
    replans = False

    def __init__(self, tick_s: float = 3600.0) -> None:
        self.tick_s = tick_s  # nothing to decide: a rare tick only samples the timeline

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        return None, None


class Peer:
    """A headroom controller users run today; `counts(view)` is its count per type."""

    needs_history = False
    replans = False

    def __init__(self, context: PlanContext, spec: PolicySpec, tick_s: float) -> None:
        self.context = context
        self.spec = spec
        self.name = spec.name
        self.tick_s = tick_s

    def counts(self, now: float, nodes: tuple[int, ...]) -> list[int]:
        """Placeholders per type at trace time `now` with `nodes` ready per type."""
        raise NotImplementedError

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        return self.context.ladder(view, self.counts(view.now, view.nodes)), None


class Headroom(Peer):
    """static, per-type, proportional or scheduled: the count per type is the service's
    `headroom:` rule (`overprovisioner.planner.headroom.headroom_counts`), so a peer that
    wins the comparison is a plan the overprovisioner runs as measured."""

    def __init__(self, context: PlanContext, spec: PolicySpec, tick_s: float) -> None:
        super().__init__(context, spec, tick_s)
        names = [kind.name for kind in context.types]
        unknown = [kind for kind in named_types(spec) if kind not in names]
        if unknown:
            raise InputError(f"policy {spec.name!r}: {', '.join(unknown)} is not a simulated "
                             f"instance type (simulated: {', '.join(names)})")
        self.specs = type_specs(spec, names)
        self.no_nodes = (0,) * len(names)

    def counts(self, now: float, nodes: tuple[int, ...]) -> list[int]:
        return counts_of(self.specs, now, nodes or self.no_nodes)
