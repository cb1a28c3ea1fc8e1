"""The `predictive` policy: the overprovisioner service's tick, as its configuration runs it.

Decides nothing of its own. At every service tick it hands what the service would have
read to the service's own code (`overprovisioner.planner.tick_core`, the loop's core):
- the history the service's recorder would have written (`sim.recording`: columns
  `type` and `type@group`, the store's columns for the window), for the trailing
  `forecast.retention` the service reads from its store (`RecorderDemand.series`:
  ticks from now - retention to now);
- the service's forecaster (`overprovisioner.planner.forecasting.ServiceForecaster`: the
  configured model, refitted every `forecast.retrain_every`, fallback and
  stabilization), fed at the tick's time, as the service's loop records and plans at
  its tick's time;
- known demand (docs/known-demand.md), replayed from the trace's `known_at_s`
  (`overprovisioner.sim.known`): the nodes of demand known ahead and due within the
  horizon at the tick (at a re-plan, as the recorder reads it then: `KnownReplay.at`),
  in the types' own columns as the recorder counts pods not yet bound; the announced
  part of the history is what the engine recorded for the pods the replay calls
  announced; plus the known demand the cluster's own objects give (`TickView.known`: a
  gang replay's gated pods and planned growth), added bucket by bucket as the service
  adds planned growth (`known_plan.with_growth`);
- the cluster as the service observes it: free nodes and placeholders per (type,
  group); with the forecasts and known demand, the tick's `TickObservation`, the
  plan's one input in the service too;
- the plan (`tick_core.plan_tick`): the cold-start ladder until the model can
  forecast, the fallback mode per type, the service's limits.
A re-plan after a preemption is the same tick run again (the service's pod watch wakes
its loop, which records, forecasts and plans again at the same tick time).
With `forecasting` off (a replay switching the forecast off to measure what it adds),
every tick plans in the planner's fallback mode: placeholders for known demand alone.

Must not: touch the cluster (it reads a `TickView` and returns a plan).
"""

from __future__ import annotations

import logging
import math

import numpy as np

from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.planner.forecasting import BucketForecast, NoMetrics, ServiceForecaster
from overprovisioner.planner.known_plan import with_growth
from overprovisioner.planner.plan import BucketObservation, Plan
from overprovisioner.planner.tick_core import (
    TickMode,
    TickObservation,
    forecast_demand,
    observations,
    plan_tick,
)
from overprovisioner.sim.known import KnownReplay
from overprovisioner.sim.policies import PlanContext, TickView
from predictor.models.forecast import NotEnoughHistory

Bucket = tuple[str, str]
log = logging.getLogger("headstart.overprovisioner")


class Predictive:
    needs_history = True
    replans = True

    def __init__(self, context: PlanContext, service: OverprovisionerConfig,
                 name: str = "predictive", known: KnownReplay | None = None,
                 forecasting: bool = True) -> None:
        self.context = context
        self.forecasting = forecasting
        self.replay = known
        # The engine records these pods' demand apart (Recording.announced).
        self.announced = known.announced if known is not None else None
        self.service = service
        self.name = name
        self.tick_s = service.tick_s
        self.model_name = service.forecast.model
        # The store's window: ticks from now - retention to now (RecorderDemand.series).
        self.window_ticks = int(math.floor(service.forecast.retention_s / self.tick_s
                                           + 1e-9)) + 1
        self.forecaster = ServiceForecaster(service, context.catalog, NoMetrics(),
                                            warn=log.warning)
        self.cold_ticks = 0
        self.fallback_ticks = 0
        self.memo: dict[tuple, Plan] = {}

    @property
    def fits(self) -> int:
        return self.forecaster.fits

    def known_demand(self, view: TickView) -> dict[Bucket, float]:
        """Nodes of demand known ahead and due within the horizon at this tick, per
        bucket: the types' own columns (known pods are not bound), plus the view's own
        known demand in its buckets."""
        types = self.context.types
        replayed: dict[Bucket, float] = {}
        if self.replay is not None:
            nodes = self.replay.at(view.tick, view.now)
            replayed = {(kind.name, ""): float(nodes[b])
                        for b, kind in enumerate(types) if nodes[b]}
        if not view.known:
            return replayed
        return with_growth(replayed, {(types[b].name, group): nodes
                                      for (b, group), nodes in view.known.items()})

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        if not self.forecasting:
            return self._known_only(view), None
        recording = view.recording
        assert recording is not None
        first = max(0, view.tick - self.window_ticks + 1)
        columns = recording.present(first, view.tick)
        history = recording.history[first:view.tick + 1, columns]
        announced = None
        if self.replay is not None and recording.announced is not None:
            announced = recording.announced[first:view.tick + 1, columns]
        start = int(round(view.tick_time / self.tick_s)) - (len(history) - 1)
        forecasts: dict[Bucket, BucketForecast] = {}
        mode: TickMode = "forecast"
        try:
            forecasts = forecast_demand(self.forecaster, history,
                                        [recording.columns[k] for k in columns], start,
                                        view.tick_time, announced)
        except (NotEnoughHistory, InputError):  # the service plans with the ladder then
            mode = "ladder"
            self.cold_ticks += 1
        types = self.context.types
        free = {(types[b].name, g): n for (b, g), n in view.free.items()}
        held = {(types[b].name, g): n for (b, g), n in view.placeholders.items()}
        seen = TickObservation(view.tick_time, mode, forecasts, self.known_demand(view),
                               free, held)
        observed = observations(self.service, self.context.config, seen)
        plan = self._plan(mode, forecasts, observed)
        if mode == "ladder":
            return plan, None
        self.fallback_ticks += any(f.reactive for f in forecasts.values())
        # The timeline's forecast per type: its buckets' quantiles summed, as the plan sums.
        index = {kind.name: b for b, kind in enumerate(types)}
        forecast = np.zeros(len(types))
        for (name, _), f in forecasts.items():
            if name in index:
                forecast[index[name]] += max(f.quantile, 0.0)
        return plan, forecast

    def _known_only(self, view: TickView) -> Plan:
        """The plan for known demand alone (the planner's fallback mode everywhere)."""
        types = self.context.types
        seen = TickObservation(view.tick_time, "forecast", {}, self.known_demand(view),
                               {(types[b].name, g): n for (b, g), n in view.free.items()},
                               {(types[b].name, g): n for (b, g), n in view.placeholders.items()})
        return self._plan("fallback", {}, observations(self.service, self.context.config, seen))

    def _plan(self, mode: str, forecasts: dict[Bucket, BucketForecast],
              observed: list[BucketObservation]) -> Plan:
        """`plan_tick`, remembered: it is a pure function of these inputs, and quiet
        stretches of a trace ask for the same plan tick after tick."""
        key = (mode, tuple(observed),
               tuple(sorted({name for (name, _), f in forecasts.items() if f.reactive})))
        plan = self.memo.get(key)
        if plan is None:
            if len(self.memo) > 50_000:
                self.memo.clear()
            plan = plan_tick(self.service, self.context.config, self.context.catalog,
                             mode, forecasts, observed)  # type: ignore[arg-type]
            self.memo[key] = plan
        return plan
