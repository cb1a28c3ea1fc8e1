"""The service's tick from recorded demand to the plan: one core for the service and the simulator.

Decides, for `headstart overprovisioner`'s loop (loop.py) and the simulator's
`predictive` policy (sim/predictive.py) alike, so that what the simulator measures is
what the service applies:
- `forecast_demand`: the forecast per bucket from the history the service reads (its
  store's columns: `type` for pending pods and pods on ungrouped nodes, `type@group`
  for pods bound in a placement group, `predictor.history.snapshot`), with known demand's rule
  (docs/known-demand.md, rule 4): the model is fitted and asked on the unannounced
  history, and the announced demand of the last observed tick is added back
  (`known_plan.add_announced`);
- `TickObservation`: what a tick read, frozen, the one input of the plan: the loop's
  `observe` and the simulator's `predictive` policy each build one;
- `observations`: one `BucketObservation` per bucket of a `TickObservation`: every
  configured (type, group), every forecast column, every bucket with known demand or
  nodes seen; in use is the last recorded count (running plus pending pods, embedded
  per column, rounded up);
- `plan_tick`: the plan (`plan.make_plan`) in the tick's mode, with the cold-start
  ladder and the fallback mode for every type one of whose series the fallback holds.

Must not: record demand, read the clock, log, or call the API (the loop and the
simulator are the adapters around it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from bucketing.catalog import Catalog
from bucketing.resources import Resources
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.plan_config import PlanConfig
from overprovisioner.planner.forecasting import BucketForecast, ServiceForecaster
from overprovisioner.planner.known_plan import add_announced
from overprovisioner.planner.plan import BucketObservation, Mode, Plan, make_plan
from overprovisioner.planner.sizing import NodeRoom

Bucket = tuple[str, str]
# How a tick plans: from the forecast; the cold-start ladder (no forecast: too little
# history, or a model that failed); or a configured headroom instead of a forecast.
TickMode = Literal["forecast", "ladder", "headroom"]


@dataclass(frozen=True)
class PinnedWindow:
    """The pinned demand recorded within the pin window, as the demand source reads it:
    the window's bucket counts and its pinned series (`pinned:` columns)."""

    counts: pd.DataFrame
    history: pd.DataFrame


@dataclass(frozen=True)
class TickObservation:
    """What one tick read and what its model made of it: the plan's only input.

    mode: "forecast", "ladder" (no forecast: a cold start or a failed model) or
    "headroom" (a configured headroom instead of a forecast). forecasts: per bucket.
    known: nodes of known-ahead demand due within the horizon, the elastic jobs' planned
    growth included, per bucket. free: whole free nodes. placeholders: the replicas
    headstart's objects ask for now, else the placeholder pods running. nodes: the
    registered nodes per bucket. rooms and applied: what sizing reads (each node's
    room after its DaemonSets; what each type's placeholder template requests now).
    pinned: the pinned demand within the pin window, None when none is recorded."""

    now_s: float
    mode: TickMode
    forecasts: Mapping[Bucket, BucketForecast] = field(default_factory=dict)
    known: Mapping[Bucket, float] = field(default_factory=dict)
    free: Mapping[Bucket, int] = field(default_factory=dict)
    placeholders: Mapping[Bucket, int] = field(default_factory=dict)
    nodes: Mapping[Bucket, int] = field(default_factory=dict)
    rooms: tuple[NodeRoom, ...] = ()
    applied: Mapping[str, Resources] = field(default_factory=dict)
    pinned: PinnedWindow | None = None


def forecast_demand(forecaster: ServiceForecaster, history: np.ndarray, columns: Sequence[str],
                    first: int, now_s: float, announced: np.ndarray | None = None
                    ) -> dict[Bucket, BucketForecast]:
    """Per bucket, the forecast of the (T, K) `history` (row 0 at tick `first`), or of
    its unannounced part with the `announced` (T, K) demand added back.

    Raises NotEnoughHistory at a cold start and InputError when the model cannot
    forecast (the caller plans with the ladder then)."""
    if announced is None:
        return forecaster.forecast_history(history, columns, first, now_s)
    rest = np.clip(history - announced, 0.0, None)  # a gap (NaN) stays a gap
    return add_announced(forecaster.forecast_history(rest, columns, first, now_s), columns,
                         history, announced)


def observations(config: OverprovisionerConfig, plan_config: PlanConfig,
                 seen: TickObservation, with_known: bool = True) -> list[BucketObservation]:
    """One observation per bucket of the configured types: the configured groups, the
    forecast columns, known demand (unless `with_known` is off: a headroom plans none)
    and the buckets nodes were seen in, sorted."""
    types = set(config.instance_types)
    forecasts, free, placeholders = seen.forecasts, seen.free, seen.placeholders
    known = {b: v for b, v in seen.known.items() if b[0] in types} if with_known else {}
    buckets: set[Bucket] = (set(forecasts) | set(known)
                            | {b for b in seen.nodes if b[0] in types})
    for name in config.instance_types:
        for group in plan_config.groups(name):
            buckets.add((name, group))
    result = []
    for bucket in sorted(buckets):
        forecast = forecasts.get(bucket)
        result.append(BucketObservation(
            instance_type=bucket[0],
            placement_group=bucket[1],
            forecast=forecast.quantile if forecast else 0.0,
            in_use=math.ceil(forecast.in_use - 1e-9) if forecast else 0,
            free=free.get(bucket, 0),
            placeholders=placeholders.get(bucket, 0),
            known=known.get(bucket, 0.0),
        ))
    return result


def plan_tick(config: OverprovisionerConfig, plan_config: PlanConfig, catalog: Catalog,
              mode: Mode, forecasts: Mapping[Bucket, BucketForecast],
              observed: Sequence[BucketObservation]) -> Plan:
    """The tick's plan: `mode` ("forecast", or "ladder" at a cold start), the ladder of
    `forecast.cold_start_placeholders` per type, and a type whose forecast misses badly
    in any of its series (the fallback) planned reactively."""
    return make_plan(
        observed, plan_config, catalog, mode=mode,
        ladder={name: config.forecast.cold_start_placeholders
                for name in config.instance_types},
        bucket_modes={instance_type: "fallback"
                      for (instance_type, _), f in forecasts.items() if f.reactive},
    )
