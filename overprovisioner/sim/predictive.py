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

Known demand (docs/known-demand.md), replayed from the trace's `known_at_s`
(`overprovisioner.sim.known`), as the service's loop and `known_plan` use it:
`known_demand(view)` is the nodes of demand known ahead and due within the horizon at
the tick (at a re-plan, as the recorder reads it then: `KnownReplay.at`), passed to the
plan as its `known` (added in every mode); the model is fitted and asked on the
unannounced history (recorded demand minus the announced pods' demand
`view.announced`, never below 0), and the announced demand running or pending now is
added back to its forecast. Without a replay (no pod known ahead, or every source off
in the config) all of that is zero and the policy is the service without known demand.

Must not: touch the cluster (it reads a `TickView` and returns a plan).
"""

from __future__ import annotations

import math

import numpy as np

from overprovisioner.config import OverprovisionerConfig
from overprovisioner.plan import Plan
from overprovisioner.service_forecast import build_adjuster, build_forecaster, peak_path
from overprovisioner.sim.known import KnownReplay
from overprovisioner.sim.policies import PlanContext, TickView
from predictor.forecast import NotEnoughHistory, lookback_ticks


class Predictive:
    needs_history = True
    replans = True

    def __init__(self, context: PlanContext, service: OverprovisionerConfig,
                 name: str = "predictive", known: KnownReplay | None = None) -> None:
        self.context = context
        self.replay = known
        # The engine tracks these pods' demand apart (TickView.announced).
        self.announced = known.announced if known is not None else None
        self.announced_history = (np.zeros_like(known.known) if known is not None
                                  else np.zeros((0, len(context.types))))
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
        """(B,) nodes of demand known ahead and due within the horizon at this tick."""
        if self.replay is None:
            return np.zeros(len(self.context.types))
        return self.replay.at(view.tick, view.now)

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        history = view.history
        running_announced = np.zeros(len(self.context.types))
        if self.replay is not None and view.announced is not None:
            # The forecaster sees what nobody announced (observed minus announced).
            self.announced_history[view.tick] = view.announced
            history = np.clip(history - self.announced_history[:view.tick + 1], 0.0, None)
            running_announced = view.announced
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
        # The announced demand in the cluster now stays over the horizon (known_plan).
        forecast = np.maximum(adjusted.planned, 0.0) + running_announced
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
