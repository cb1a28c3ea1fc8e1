"""Conditional-increase forecaster: last value plus the quantile of how much demand
rose, at this time of day and after this much recent activity.

Decides: the point forecast (the last observed value, as `last`) and its quantiles,
which are the last value plus empirical quantiles of the h-step *increase*
`y[t+h] - y[t]`, taken not over all training origins at once (that gives a nearly
flat headroom, i.e. static headroom) but over the origins that share the current
origin's
- time-of-day bin: `(tick mod period_ticks)` cut into `day_bins` equal bins (the
  phase of the day need not be known: only ticks one period apart must fall in the
  same bin, so `first_tick` must count from a fixed origin in fit and predict);
- recent-activity bin, per series: the sum of the series' rises over the last
  `activity_ticks` ticks; bin 0 = no rise at all, then (with `activity_bins` 3)
  at most / above the median of the non-zero fit-time values.

Peaks (`Forecast.peaks`): the same cells hold the quantiles of the largest increase
within 1..h ticks, `max(y[t+1..t+h]) - y[t]`, added to the last value.

A cell (day bin, activity bin) with fewer than `min_samples` observed increases at
the longest step falls back to its activity bin over all hours, and that to the
unconditional quantiles. So quiet hours after a quiet hour get zero headroom and
busy hours after arrivals get more: what one fixed headroom cannot do.

With `gross` 1 the increase is the sum of the rises up to the target tick (arrivals,
not netted by departures). Measured in the simulator (docs/simulator.md): on openb it
sits within about 6% of static headroom's cost curve and on DLRM and the synthetic
workload it costs more than `last`, so it is selectable, not the default.

Gaps (NaN): the value copied is the last observed one; increases are only taken
where the target tick was observed. Must not: read files or log.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Self

import numpy as np

from predictor.models.forecast import (
    DEFAULT_QUANTILES,
    Forecast,
    NotEnoughHistory,
    as_history,
    check_predict_call,
    forward_fill,
    make_forecast,
)
from predictor.models.quantiles import QUANTILE_GRID, offsets_at


def recent_rise(filled: np.ndarray, window_ticks: int) -> np.ndarray:
    """(T, K) sum of each series' rises over the `window_ticks` ticks ending at each row.

    Row t sums max(y[i] - y[i-1], 0) for i in t-window+1 .. t (rows before 0 count 0;
    NaN steps count 0). Example: y = 0, 2, 1, 3 and window 2 -> 0, 2, 2, 2.
    """
    rises = np.zeros_like(filled)
    rises[1:] = np.nan_to_num(np.maximum(np.diff(filled, axis=0), 0.0))
    cumulative = np.cumsum(rises, axis=0)
    shifted = np.zeros_like(cumulative)
    if window_ticks < len(cumulative):
        shifted[window_ticks:] = cumulative[:-window_ticks]
    return cumulative - shifted


class ConditionalIncrease:
    """Last value + quantile of the h-step increase, per time-of-day and activity bin."""

    name = "conditional"

    def __init__(self, max_horizon: int = 12, period_ticks: int = 288, day_bins: int = 24,
                 activity_ticks: int = 12, activity_bins: int = 3,
                 min_samples: int = 30, gross: int = 0) -> None:
        self.max_horizon = max_horizon
        self.period_ticks = period_ticks
        self.day_bins = day_bins
        self.activity_ticks = activity_ticks
        self.activity_bins = activity_bins
        self.min_samples = min_samples
        self.gross = gross

    def min_history(self, for_fit: bool = False) -> int:
        """predict: the activity window plus the last value; fit: plus max_horizon."""
        needs = max(1, self.activity_ticks) + 1
        return needs + self.max_horizon if for_fit else needs

    def _check_params(self) -> None:
        from common.errors import InputError

        for field in ("max_horizon", "period_ticks", "day_bins", "activity_ticks",
                      "activity_bins", "min_samples"):
            if int(getattr(self, field)) < 1:
                raise InputError(f"{self.name}: {field} must be >= 1, got "
                                 f"{getattr(self, field)}")
        if self.activity_bins > 3:
            raise InputError(f"{self.name}: activity_bins must be 1, 2 or 3, got "
                             f"{self.activity_bins}")

    def _day_bin(self, ticks: np.ndarray) -> np.ndarray:
        bins = min(int(self.day_bins), int(self.period_ticks))
        return (np.mod(ticks, self.period_ticks) * bins) // self.period_ticks

    def _activity_bin(self, rise: np.ndarray) -> np.ndarray:
        """(T, K) activity bin of each row and series from its recent rise."""
        if self.activity_bins == 1:
            return np.zeros(rise.shape, dtype=int)
        bins = (rise > 0).astype(int)
        if self.activity_bins == 3:
            bins += rise > self.activity_edge_[None, :]
        return bins

    def fit(self, history: np.ndarray, first_tick: int = 0) -> Self:
        self._check_params()
        observed = as_history(history, f"{self.name} fit history")
        n_ticks, n_series = observed.shape
        needed = self.min_history(for_fit=True)
        if n_ticks < needed:
            raise NotEnoughHistory(self.name, needed, n_ticks, "fit")
        steps = int(self.max_horizon)
        filled = forward_fill(observed)
        origins = n_ticks - steps
        increases = np.full((steps, origins, n_series), np.nan)
        # gross: the sum of the rises up to the target (arrivals, departures not netted).
        risen = np.cumsum(recent_rise(filled, 1), axis=0)
        for step in range(1, steps + 1):
            if self.gross:
                target = np.where(np.isnan(observed[step:origins + step]), np.nan,
                                  risen[step:origins + step])
                increases[step - 1] = target - risen[:origins]
            else:
                increases[step - 1] = observed[step:origins + step] - filled[:origins]
        # The largest increase within 1..h: a missing target is skipped, not read as 0.
        peaks = np.fmax.accumulate(increases, axis=0)
        rise = recent_rise(filled, int(self.activity_ticks))[:origins]
        nonzero = [rise[rise[:, k] > 0, k] for k in range(n_series)]
        self.activity_edge_ = np.array(
            [np.median(values) if values.size else 0.0 for values in nonzero])
        day = self._day_bin(first_tick + np.arange(origins))
        activity = self._activity_bin(rise)
        n_day = int(day.max()) + 1 if origins else 1
        levels = QUANTILE_GRID.size
        # grid[day, activity] -> (L, H, K); day index n_day = that activity bin over all hours,
        # activity index activity_bins = unconditional.
        grid = np.zeros((n_day + 1, self.activity_bins + 1, levels, steps, n_series))
        peak_grid = np.zeros_like(grid)
        counts = np.zeros((n_day + 1, self.activity_bins + 1, n_series), dtype=int)
        for k in range(n_series):
            cells: list[tuple[int, int, np.ndarray]] = [(n_day, self.activity_bins,
                                                         np.ones(origins, dtype=bool))]
            for a in range(self.activity_bins):
                cells.append((n_day, a, activity[:, k] == a))
                cells.extend((d, a, (activity[:, k] == a) & (day == d)) for d in range(n_day))
            for d, a, mask in cells:
                block = increases[:, mask, k]  # (H, n)
                count = int(np.sum(~np.isnan(block[-1]))) if block.size else 0
                counts[d, a, k] = count
                if count:
                    with warnings.catch_warnings():  # a step with no observed target
                        warnings.simplefilter("ignore", RuntimeWarning)
                        cell = np.nanquantile(block, QUANTILE_GRID, axis=1)
                        peak = np.nanquantile(peaks[:, mask, k], QUANTILE_GRID, axis=1)
                    grid[d, a, :, :, k] = np.nan_to_num(cell)
                    peak_grid[d, a, :, :, k] = np.nan_to_num(peak)
        self.n_series_ = n_series
        self.min_history_ = self.min_history()
        self.max_horizon_ = steps
        self.fit_first_tick_ = int(first_tick)
        self.fit_n_ticks_ = int(n_ticks)
        self.n_day_bins_ = n_day
        self.grid_ = grid
        self.peak_grid_ = peak_grid
        self.counts_ = counts
        return self

    def _cell(self, day: int, activity: int, series: int) -> tuple[int, int]:
        """The most specific (day, activity) cell with enough samples for `series`."""
        for d, a in ((day, activity), (self.n_day_bins_, activity),
                     (self.n_day_bins_, self.activity_bins)):
            if d < self.n_day_bins_ + 1 and self.counts_[d, a, series] >= self.min_samples:
                return d, a
        return self.n_day_bins_, self.activity_bins

    def predict(
        self,
        history: np.ndarray,
        horizon_ticks: int,
        quantiles: Sequence[float] = DEFAULT_QUANTILES,
        first_tick: int = 0,
    ) -> Forecast:
        observed, horizon, levels = check_predict_call(
            self, "grid_", history, horizon_ticks, quantiles, needs_min_history=True
        )
        n_ticks = observed.shape[0]
        filled = forward_fill(observed[-self.min_history_:])
        last = filled[-1]
        if np.isnan(last).any():
            raise NotEnoughHistory(self.name, self.min_history_, n_ticks,
                                   detail="no observed value in the recent window")
        rise = recent_rise(filled, int(self.activity_ticks))[-1:]
        activity = self._activity_bin(rise)[0]
        day = int(self._day_bin(np.array([first_tick + n_ticks - 1]))[0])
        day = day if day < self.n_day_bins_ else self.n_day_bins_
        point = np.repeat(last[None, :], horizon, axis=0)
        result, peaks = {}, {}
        for q in levels:
            offsets = np.empty((horizon, self.n_series_))
            peak_offsets = np.empty((horizon, self.n_series_))
            for k in range(self.n_series_):
                d, a = self._cell(day, int(activity[k]), k)
                offsets[:, k] = offsets_at(self.grid_[d, a, :, :, k], q, horizon)
                peak_offsets[:, k] = offsets_at(self.peak_grid_[d, a, :, :, k], q, horizon)
            result[q] = point + offsets
            peaks[q] = point + peak_offsets
        return make_forecast(point, result, peaks)


def build(tick_seconds: int, **params: object) -> ConditionalIncrease:
    """The registry's factory: a one-day period and a one-hour activity window in ticks."""
    day = max(1, round(86_400 / tick_seconds))
    params.setdefault("period_ticks", day)
    params.setdefault("activity_ticks", max(1, round(3600 / tick_seconds)))
    return ConditionalIncrease(**params)  # type: ignore[arg-type]
