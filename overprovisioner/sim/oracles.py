"""Yardsticks that need the future: `oracle` and `rate-oracle`.

Decides the forecast each feeds the service's plan, at the service's tick and horizon
(the rest is `predictive`'s: limits, re-plan after a preemption), so each measures what
a better forecast alone would buy:
- `oracle`: the most nodes the true demand occupies at any moment within the horizon
  (from the job table, on a 10-s grid, so pods shorter than a service tick count too):
  the limit to measure against;
- `rate-oracle`: demand now plus the quantile of the true increases around now (the
  surrounding hour, future included): the limit of any forecaster of demand, which can
  learn how demand rises but not when.
Neither is something a cluster can run.

Must not: touch the cluster (it reads a `TickView` and returns a plan).
"""

from __future__ import annotations

import numpy as np

from overprovisioner.planner.plan import Plan
from overprovisioner.sim.policies import PlanContext, TickView
from overprovisioner.sim.workload import Workload, true_demand

FINE_S = 10.0  # the grid the oracles read the true demand on


def demand_and_most_ahead(workload: Workload, tick_s: float,
                          horizon_ticks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T, B) twice, at the ticks: the true demand at the tick, and the most it reaches
    at any point of a grid of at most FINE_S seconds within the next horizon_b ticks."""
    per_tick = max(1, int(np.ceil(tick_s / FINE_S - 1e-9)))
    fine = true_demand(workload, tick_s / per_tick)
    most = future_most(fine, np.asarray(horizon_ticks) * per_tick)
    return fine[::per_tick], most[::per_tick]


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
    needs_history = False
    replans = True

    def __init__(self, context: PlanContext, workload: Workload, tick_s: float,
                 name: str = "oracle") -> None:
        self.context = context
        self.name = name
        self.tick_s = tick_s
        _, self.forecast = demand_and_most_ahead(workload, tick_s, context.horizon_ticks)

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

    Headroom at tick t = the q-quantile of the true largest rises within the horizon
    (`most demand over the next horizon - demand now`, the statistic `predictive` plans
    for) over the origins within `window_ticks` around t (half before, half after) but
    more than the horizon away from t (`rate_headroom`), added to the demand observed
    now; the plan then takes the delta, as for `predictive`. It needs the future, so no
    cluster can run it: it separates what a better forecast of the demand's level and
    rhythm could buy (up to this policy) from what only knowing the arrival times could
    (up to `oracle`).
    """

    needs_history = False
    replans = True

    def __init__(self, context: PlanContext, workload: Workload, quantile: float,
                 window_ticks: int, tick_s: float, name: str = "rate-oracle") -> None:
        self.context = context
        self.name = name
        self.tick_s = tick_s
        now, most = demand_and_most_ahead(workload, tick_s, context.horizon_ticks)
        increase = np.maximum(most - now, 0.0)
        self.headroom = rate_headroom(increase, context.horizon_ticks, quantile, window_ticks)

    def decide(self, view: TickView) -> tuple[Plan | None, np.ndarray | None]:
        headroom = self.headroom[min(view.tick, len(self.headroom) - 1)]
        forecast = view.in_use + view.pending + headroom
        return self.context.plan(view, forecast), forecast
