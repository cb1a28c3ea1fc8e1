"""Placeholder policies the simulator compares: reactive, static:N, predictive, oracle,
rate-oracle.

Decides, once per policy tick, how many placeholders each (instance type, placement
group) keeps. Every policy but `reactive` goes through the same pure planner
(`overprovisioner.plan.make_plan`) the service runs, so the simulator measures the plan
that ships:

- `reactive`: no placeholders (cluster-autoscaler alone);
- `static:N`: N placeholder nodes per instance type (the common Helm-chart headroom),
  the plan's ladder mode with every rung at N;
- `predictive`: the predictor's forecaster (default `last`: last value plus empirical
  quantiles of its h-step residuals) refitted every `refit_s` on the trailing
  `train_s` of recorded demand, as the service would, the quantile at the node
  start-up horizon (optionally through the service's own fallback and stabilization,
  `overprovisioner.adjust.ForecastAdjuster`, when `adjust` is on) fed to the plan;
  before the first fit succeeds (cold start) the plan's ladder mode keeps
  `cold_start_placeholders` per type;
- `oracle`: the plan fed with the true future demand (the most nodes demand occupies
  at any tick within the start-up horizon, from the job table): the limit to measure
  against, not something a cluster can run.
- `rate-oracle`: demand now plus the quantile of the true increases around now (the
  surrounding hour, future included): the limit of any forecaster of demand, which
  can learn how demand rises but not when. Not runnable either.

Must not: touch the cluster (it reads a `TickView` and returns counts).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from bucketing.catalog import Catalog, InstanceType
from bucketing.errors import InputError
from overprovisioner.plan import BucketObservation, Plan, make_plan
from overprovisioner.plan_config import PlanConfig
from predictor.forecast import lookback_ticks

POLICY_HELP = ("reactive, static:N (N >= 0 placeholder nodes per type), predictive, "
               "predictive:Q (at quantile Q), oracle, rate-oracle, rate-oracle:Q")


@dataclass(frozen=True)
class TickView:
    """What a policy sees at one policy tick.

    tick: index of this tick (0 = the simulation start); history: (tick + 1, B) the demand
    recorded so far (embedded node counts of running plus pending real pods).
    in_use / pending: (B,) embedded counts of running / pending real pods now.
    free / placeholders: per (type index, group), whole empty ready nodes / placeholders.
    """

    now: float
    tick: int
    history: np.ndarray
    in_use: np.ndarray
    pending: np.ndarray
    free: dict[tuple[int, str], int]
    placeholders: dict[tuple[int, str], int]


class Policy(Protocol):
    name: str

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
    horizon_ticks: np.ndarray  # (B,) start-up horizon of each type, in policy ticks
    memo: dict = field(default_factory=dict)

    def observations(self, view: TickView, forecast: np.ndarray) -> list[BucketObservation]:
        observed = []
        for b, kind in enumerate(self.types):
            observed.append(BucketObservation(
                kind.name, "", float(forecast[b]), int(view.in_use[b]),
                view.free.get((b, ""), 0), view.placeholders.get((b, ""), 0),
                int(view.pending[b]),
            ))
            for group in self.groups[b]:
                if group:
                    observed.append(BucketObservation(
                        kind.name, group, 0.0, 0, view.free.get((b, group), 0),
                        view.placeholders.get((b, group), 0), 0,
                    ))
        return observed

    def plan(self, view: TickView, forecast: np.ndarray, mode: str = "forecast",
             ladder: dict[str, int] | None = None) -> Plan:
        observed = tuple(self.observations(view, forecast))
        key = (observed, mode, tuple(sorted((ladder or {}).items())))
        # The plan is a pure function of its inputs, and clusters revisit the same states.
        cached = self.memo.get(key)
        if cached is None:
            if len(self.memo) > 50_000:
                self.memo.clear()
            cached = make_plan(observed, self.config, self.catalog, mode=mode,  # type: ignore
                               ladder=ladder)
            self.memo[key] = cached
        return cached


class Reactive:
    name = "reactive"

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        return None, None


class Static:
    def __init__(self, context: PlanContext, count: int) -> None:
        self.context = context
        self.count = count
        self.name = f"static:{count}"

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        ladder = {kind.name: self.count for kind in self.context.types}
        zeros = np.zeros(len(self.context.types))
        return self.context.plan(view, zeros, mode="ladder", ladder=ladder), None


class Predictive:
    def __init__(self, context: PlanContext, make_model: Callable[[], object], model_name: str,
                 refit_ticks: int, train_ticks: int, cold_start_placeholders: int = 1,
                 hold_ticks: int = 0, name: str = "predictive", adjuster=None) -> None:
        self.context = context
        self.make_model = make_model
        self.name = name
        self.model_name = model_name
        self.refit_ticks = max(1, refit_ticks)
        self.train_ticks = max(1, train_ticks)
        self.cold_start = cold_start_placeholders
        self.model = None
        self.fitted_at = -10**9
        self.fits = 0
        self.cold_ticks = 0
        self.cache_key: tuple = ()
        self.cache_value = np.zeros(0)
        self.cache_ahead = np.zeros((0, 0))
        self.ahead = np.zeros((0, 0))
        self.hold_ticks = hold_ticks
        self.ring: np.ndarray | None = None
        # The service's fallback + stabilization (overprovisioner.adjust), None = off.
        self.adjuster = adjuster
        self.fallback_ticks = 0
        self.adjusted_tick = -1
        self.adjusted_value = np.zeros(0)

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        from predictor.forecast import NotEnoughHistory

        history = view.history
        if self.model is None or view.tick - self.fitted_at >= self.refit_ticks:
            try:
                window = history[-self.train_ticks:]
                # Ticks count from the simulation start in fit and predict alike, so
                # seasonal and time-of-day models see one phase.
                self.model = self.make_model().fit(  # type: ignore
                    window, first_tick=len(history) - len(window))
                self.fitted_at = view.tick
                self.fits += 1
            except NotEnoughHistory:
                pass
        forecast = None
        if self.model is not None:
            try:
                forecast = self._forecast(history)
            except NotEnoughHistory:
                forecast = None
        if forecast is None:
            self.cold_ticks += 1
            ladder = {kind.name: self.cold_start for kind in self.context.types}
            zeros = np.zeros(len(self.context.types))
            return self.context.plan(view, zeros, mode="ladder", ladder=ladder), None
        if self.adjuster is not None:
            # A re-plan within the tick reuses the tick's adjustment (the adjuster's
            # state advances once per tick, as in the service).
            if view.tick != self.adjusted_tick:
                adjusted = self.adjuster.adjust(
                    [kind.name for kind in self.context.types], view.tick, history[-1],
                    self.ahead,
                )
                self.fallback_ticks += any(adjusted.reactive)
                self.adjusted_tick = view.tick
                self.adjusted_value = np.maximum(adjusted.planned, 0.0)
            forecast = self.adjusted_value
        forecast = self._held(view.tick, forecast)
        return self.context.plan(view, forecast), forecast

    def _held(self, tick: int, forecast: np.ndarray) -> np.ndarray:
        """The largest forecast of the last hold_ticks ticks (this one included)."""
        if self.hold_ticks <= 1:
            return forecast
        if self.ring is None:
            self.ring = np.zeros((self.hold_ticks, len(forecast)))
        self.ring[tick % self.hold_ticks] = forecast
        return self.ring.max(axis=0)

    def _forecast(self, history: np.ndarray) -> np.ndarray:
        horizons = self.context.horizon_ticks
        q = self.context.config.quantile
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
        if key == self.cache_key:
            self.ahead = self.cache_ahead
            return self.cache_value
        steps = int(horizons.max()) + (self.adjuster.tau_ticks if self.adjuster else 0)
        steps = min(steps, int(getattr(model, "max_horizon_", steps)))
        result = model.predict(window, steps, quantiles=(q,),  # type: ignore
                               first_tick=first_tick)
        levels = result.quantiles[min(result.quantiles, key=lambda level: abs(level - q))]
        self.ahead = levels
        forecast = np.empty(len(horizons))
        for b, steps in enumerate(horizons):
            # The most any tick up to the type's start-up horizon needs.
            forecast[b] = levels[: int(steps), b].max()
        self.cache_key, self.cache_value, self.cache_ahead = key, forecast, self.ahead
        return forecast


def future_most(true_demand: np.ndarray, horizon_ticks: np.ndarray) -> np.ndarray:
    """(T, B): [t, b] = the most nodes demand occupies at ticks t+1 .. t+horizon_b
    (the last row repeated past the end)."""
    ticks, types = true_demand.shape
    padded = np.vstack([true_demand, np.repeat(true_demand[-1:], int(horizon_ticks.max()) + 1,
                                               axis=0)])
    most = np.zeros((ticks, types))
    for b, steps in enumerate(horizon_ticks):
        windows = np.lib.stride_tricks.sliding_window_view(padded[1:, b], int(steps))
        most[:, b] = windows[:ticks].max(axis=1)
    return most


class Oracle:
    name = "oracle"

    def __init__(self, context: PlanContext, true_demand: np.ndarray) -> None:
        self.context = context
        self.forecast = future_most(true_demand, context.horizon_ticks)

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        forecast = self.forecast[min(view.tick, len(self.forecast) - 1)]
        return self.context.plan(view, forecast), forecast


def rate_headroom(increase: np.ndarray, horizon_ticks: np.ndarray, quantile: float,
                  window_ticks: int) -> np.ndarray:
    """(T, B): [t, b] = the `quantile` of increase[s, b] over the origins s within
    window_ticks // 2 of t (at least horizon_b + 1) but more than horizon_b away from t,
    linearly interpolated as `np.quantile`; origins outside 0 .. T-1 are left out, and
    a tick with no origin at all (a run shorter than a horizon) gets 0.

    Type by type, so memory is one T x window copy (10 MB for 27,000 ticks and a 1 h
    window), not T x B x window; np.quantile inside the run and np.nanquantile (a
    Python loop per row, 20x slower) only on the rows within half a window of its ends.
    """
    ticks, types = increase.shape
    headroom = np.zeros((ticks, types))
    for b in range(types):
        # The origins whose horizon overlaps t's own are left out: their increases are
        # largely t's own arrivals, which would make this the oracle again.
        guard = int(horizon_ticks[b])
        half = max(guard + 1, window_ticks // 2)
        padded = np.full(ticks + 2 * half, np.nan)
        padded[half:half + ticks] = increase[:, b]
        keep = np.ones(2 * half + 1, dtype=bool)
        keep[half - guard:half + guard + 1] = False
        windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1)
        # Rows half .. T-half-1 see only real origins; selecting their kept columns
        # copies once, the only T x window array (np.quantile may sort it in place).
        if ticks > 2 * half:
            headroom[half:ticks - half, b] = np.quantile(
                windows[half:ticks - half, keep], quantile, axis=1, overwrite_input=True)
        ends = np.setdiff1d(np.arange(ticks), np.arange(half, ticks - half))
        origins = windows[ends][:, keep]
        some = ~np.isnan(origins).all(axis=1)
        if some.any():
            headroom[ends[some], b] = np.nanquantile(origins[some], quantile, axis=1)
    return headroom


class RateOracle:
    """The best a forecaster of demand could do: it knows how demand rises around now,
    not when.

    Headroom at tick t = the q-quantile of the true increases `most demand over the next
    horizon - demand now` over the origins within `window_ticks` around t (half before,
    half after) but more than the type's horizon away from t (`rate_headroom`), added to
    the demand observed now; the plan then takes the delta, as for `predictive`. It
    needs the future, so no cluster can run it: it separates what a better forecast of
    the demand's level and rhythm could buy (up to this policy) from what only knowing
    the arrival times could (up to `oracle`).

    Not the same statistic as `predictive` at the same q: that plans the largest of its
    per-step quantiles, this the quantile of the largest rise within the horizon, which
    is never lower (openb on g4dn.8xlarge from day 108, q 0.9: 1.14 nodes of headroom
    on average against 0.98 from the true per-step quantiles). Compare the two as
    points on the pending / GPU-hours curve, not at equal q.
    """

    def __init__(self, context: PlanContext, true_demand: np.ndarray, quantile: float,
                 window_ticks: int, name: str = "rate-oracle") -> None:
        self.context = context
        self.name = name
        increase = np.maximum(future_most(true_demand, context.horizon_ticks) - true_demand,
                              0.0)
        self.headroom = rate_headroom(increase, context.horizon_ticks, quantile, window_ticks)

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        headroom = self.headroom[min(view.tick, len(self.headroom) - 1)]
        forecast = view.in_use + view.pending + headroom
        return self.context.plan(view, forecast), forecast


def parse_policy_name(name: str) -> tuple[str, float]:
    """("static", N) for "static:N", ("predictive", q) for "predictive:q" and
    ("rate-oracle", q) for "rate-oracle:q" (a quantile overriding the configured one),
    (name, 0) otherwise; InputError when unknown."""
    if name in ("reactive", "predictive", "oracle", "rate-oracle"):
        return name, 0
    kind, sep, value = name.partition(":")
    if kind == "static" and sep:
        try:
            count = int(value)
        except ValueError:
            count = -1
        if count >= 0:
            return "static", count
        raise InputError(f"policy {name!r}: static:N needs a whole number N >= 0")
    if kind in ("predictive", "rate-oracle") and sep:
        try:
            quantile = float(value)
        except ValueError:
            quantile = -1.0
        if 0.0 < quantile < 1.0:
            return kind, quantile
        raise InputError(f"policy {name!r}: {kind}:Q needs a quantile 0 < Q < 1")
    raise InputError(f"unknown policy {name!r} (known: {POLICY_HELP})")


def horizon_in_ticks(startup_s: float, scan_s: float, tick_s: float) -> int:
    """Policy ticks from a placeholder's creation until its node is ready (at least 1)."""
    return max(1, math.ceil((startup_s + scan_s) / tick_s))
