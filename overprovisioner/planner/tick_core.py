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
- `observations`: one `BucketObservation` per bucket: every configured (type, group),
  every forecast column, every bucket with known demand or nodes seen; in use is the
  last recorded count (running plus pending pods, embedded per column, rounded up);
- `plan_tick`: the plan (`plan.make_plan`) in the tick's mode, with the cold-start
  ladder and the fallback mode for every type one of whose series the fallback holds.

Must not: record demand, read the clock, log, or call the API (the loop and the
simulator are the adapters around it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from bucketing.catalog import Catalog
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.plan_config import PlanConfig
from overprovisioner.planner.forecasting import BucketForecast, ServiceForecaster
from overprovisioner.planner.known_plan import add_announced
from overprovisioner.planner.plan import BucketObservation, Mode, Plan, make_plan

Bucket = tuple[str, str]


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
                 forecasts: Mapping[Bucket, BucketForecast],
                 known: Mapping[Bucket, float], free: Mapping[Bucket, int],
                 placeholders: Mapping[Bucket, int], seen: Iterable[Bucket] = (),
                 ) -> list[BucketObservation]:
    """One observation per bucket of the configured types: the configured groups, the
    forecast columns, known demand and `seen` (the buckets nodes were seen in), sorted.

    free: whole free nodes; placeholders: the replicas headstart's objects ask for now
    (running or pending, which the planner keeps in their groups); known: nodes of
    known-ahead demand due within the horizon."""
    types = set(config.instance_types)
    known = {b: v for b, v in known.items() if b[0] in types}
    buckets: set[Bucket] = set(forecasts) | set(known) | {b for b in seen if b[0] in types}
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
