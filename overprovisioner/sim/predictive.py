"""The `predictive` policy: the overprovisioner service's tick, as its configuration runs it.

Decides nothing of its own: at every service tick (`tick`), with the demand recorded at
each tick so far, it does what `overprovisioner.loop` and `forecasting` do, built from
the same config through `overprovisioner.service_forecast`:
- the configured model, refitted every `forecast.retrain_every` on the trailing
  `forecast.retention` of history (the service reads that much from its store);
- its forecast, the quantile of the most demand over the horizon and stabilization's
  look-ahead (`peak_path`), through the service's fallback and stabilization
  (`build_adjuster`): a type in fallback is planned in the planner's fallback mode;
- the plan with the service's limits (per-type min/max, cost cap, virtual instances);
- before the first fit succeeds, the cold-start ladder (`forecast.cold_start_placeholders`).
A re-plan after a preemption is the same tick run again (the service's pod watch wakes
its loop, which records, forecasts and plans again at the same tick time); the
adjuster replaces the tick's step instead of scoring it twice, as in the service.

Extension point: `known_demand(view)` returns nodes of demand known ahead of its pods
(jobs queued or announced within the horizon), passed to the plan as its `known` (the
service's plan adds it on top of the forecast in every mode, docs/known-demand.md);
zero until the simulator replays the trace's `known_at_s`. Not modelled yet either: the
service fits its model on observed minus announced demand.

Must not: touch the cluster (it reads a `TickView` and returns a plan).
"""

from __future__ import annotations

import math

import numpy as np

from overprovisioner.config import OverprovisionerConfig
from overprovisioner.plan import Plan
from overprovisioner.service_forecast import build_adjuster, build_forecaster, peak_path
from overprovisioner.sim.policies import PlanContext, TickView
from predictor.forecast import NotEnoughHistory, lookback_ticks


class Predictive:
    needs_history = True
    replans = True

    def __init__(self, context: PlanContext, service: OverprovisionerConfig,
                 name: str = "predictive") -> None:
        self.context = context
        self.service = service
        self.name = name
        self.tick_s = service.tick_s
        self.model_name = service.forecast.model
        self.refit_ticks = max(1, math.ceil(service.forecast.retrain_every_s / self.tick_s
                                            - 1e-9))
        self.train_ticks = max(1, round(service.forecast.retention_s / self.tick_s))
        self.adjuster = build_adjuster(service)
        self.columns = [kind.name for kind in context.types]
        self.model = None
        self.fitted_at = -10**9
        self.fits = 0
        self.cold_ticks = 0
        self.fallback_ticks = 0
        self.cache_key: tuple = ()
        self.cache_ahead = np.zeros((0, 0))

    def known_demand(self, view: TickView) -> np.ndarray:
        """(B,) nodes of demand known ahead within the horizon; none replayed yet."""
        return np.zeros(len(self.context.types))

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        history = view.history
        if self.model is None or view.tick - self.fitted_at >= self.refit_ticks:
            try:
                window = history[-self.train_ticks:]
                # Ticks count from the simulation start in fit and predict alike, so
                # seasonal and time-of-day models see one phase.
                self.model = build_forecaster(self.service).fit(
                    window, first_tick=len(history) - len(window))
                self.fitted_at = view.tick
                self.fits += 1
            except NotEnoughHistory:
                pass
        ahead = None
        if self.model is not None:
            try:
                ahead = self._ahead(history)
            except NotEnoughHistory:
                ahead = None
        known = self.known_demand(view)
        if ahead is None:
            self.cold_ticks += 1
            cold = self.service.forecast.cold_start_placeholders
            return self.context.plan(view, np.zeros(len(self.context.types)), mode="ladder",
                                     ladder={k.name: cold for k in self.context.types},
                                     known=known), None
        adjusted = self.adjuster.adjust(self.columns, view.tick, history[-1], ahead)
        self.fallback_ticks += any(adjusted.reactive)
        forecast = np.maximum(adjusted.planned, 0.0)
        modes = {name: "fallback" for name, reactive in zip(self.columns, adjusted.reactive,
                                                             strict=True) if reactive}
        return self.context.plan(view, forecast, bucket_modes=modes, known=known), forecast

    def _ahead(self, history: np.ndarray) -> np.ndarray:
        """(S, B) the peak path for the horizon and stabilization's look-ahead."""
        model = self.model
        # Pass what predict reads, not only what it needs: last_adaptive's recent
        # residuals need the last day, and got fit-time quantiles when given less.
        length = max(lookback_ticks(model), 1) + 1
        window = history[-length:]
        first_tick = len(history) - len(window)
        period = getattr(model, "period_ticks", None)
        # predict reads only `window` (and the phase, for seasonal models): an unchanged
        # window gives the same forecast, which quiet stretches of a trace hit every tick.
        key = (self.fitted_at, window.tobytes(), first_tick % period if period else 0)
        if key != self.cache_key:
            _, self.cache_ahead = peak_path(model, window, self.service, self.adjuster.steps,
                                            first_tick)
            self.cache_key = key
        return self.cache_ahead
