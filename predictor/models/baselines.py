"""Baseline forecasters that copy a past value: last value and seasonal naive.

Decides: the point forecast of each baseline and its quantiles, which are the
point plus empirical quantiles of in-sample h-step residuals (per series, per
step), computed in `fit` from the training history; and its peaks (the quantile of
the most demand over steps 1..h: `Forecast.peaks`), the point's running maximum
plus the quantiles of the in-sample `quantiles.peak_excess`. For the last value
that is the last value plus the quantile of the largest rise within h ticks.

With `recent_residual_ticks` > 0 the quantiles (and peaks) come instead from the
residuals (peak excesses) of the most recent ticks of the history given to
`predict` (the last day by default for `last_adaptive`), so the margin widens in
volatile hours and narrows in calm ones; a (step, series) with fewer than MIN_RECENT_RESIDUALS
recent residuals uses the fit-time quantiles. On the real traces this beat a
constant margin tuned in hindsight (docs/forecasters.md).

Gaps (NaN): the value copied is the last observed one at or before the tick the
baseline looks at (so "last value" = last non-NaN tick); residuals are only
taken where the target tick was observed. Must not: read files or log.
"""

from __future__ import annotations

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
from predictor.models.quantiles import offsets_at, peak_excess, residual_quantile_grid

MIN_RECENT_RESIDUALS = 30


class _CopyPastValue:
    """Shared machinery: forecast for step h = the (forward-filled) value lag(h) ticks
    before the target; quantiles from residuals of that same rule."""

    name = "copy"

    def __init__(self, max_horizon: int = 12, recent_residual_ticks: int = 0) -> None:
        self.max_horizon = max_horizon
        self.recent_residual_ticks = recent_residual_ticks

    def _lag(self, step: int) -> int:
        raise NotImplementedError

    def _predict_needs(self) -> int:
        raise NotImplementedError

    def min_history(self, for_fit: bool = False) -> int:
        """predict: ticks the rule looks back; fit: that plus max_horizon for residuals."""
        needs = self._predict_needs()
        return needs + self.max_horizon if for_fit else needs

    def fit(self, history: np.ndarray, first_tick: int = 0) -> Self:
        observed = as_history(history, f"{self.name} fit history")
        n_ticks, n_series = observed.shape
        if self.max_horizon < 1:
            raise NotEnoughHistory(self.name, 1, 0, "fit", "max_horizon must be >= 1")
        needed = self.min_history(for_fit=True)
        if n_ticks < needed:
            raise NotEnoughHistory(self.name, needed, n_ticks, "fit")
        filled = forward_fill(observed)
        residuals = np.full((self.max_horizon, n_ticks, n_series), np.nan)
        for step in range(1, self.max_horizon + 1):
            lag = self._lag(step)
            residuals[step - 1, lag:] = observed[lag:] - filled[:-lag]
        self.n_series_ = n_series
        self.min_history_ = self.min_history()
        # with recent residuals, predict reads recent_residual_ticks targets, each
        # compared with the value up to the longest lag before it
        longest_lag = max(self._lag(step) for step in range(1, self.max_horizon + 1))
        self.lookback_ticks_ = self.min_history_ + (
            self.recent_residual_ticks + longest_lag if self.recent_residual_ticks else 0
        )
        self.max_horizon_ = self.max_horizon
        self.fit_first_tick_ = int(first_tick)
        self.fit_n_ticks_ = int(n_ticks)
        self.n_residuals_ = np.sum(~np.isnan(residuals), axis=1)
        self.residual_grid_ = residual_quantile_grid(residuals)
        actual, point = self._paths(observed, filled, np.arange(n_ticks), self.max_horizon)
        self.peak_grid_ = residual_quantile_grid(peak_excess(actual, point))
        return self

    def _paths(self, observed: np.ndarray, filled: np.ndarray, origins: np.ndarray,
               steps: int) -> tuple[np.ndarray, np.ndarray]:
        """(H, N, K) targets and point forecasts for steps 1..H from each origin row
        (NaN where the target lies past the history or the copied row before it)."""
        n_ticks = observed.shape[0]
        step = np.arange(1, steps + 1)[:, None]
        target = origins[None, :] + step  # (H, N)
        copied = target - np.array([self._lag(int(s)) for s in step[:, 0]])[:, None]
        inside = (target < n_ticks)[..., None]
        valid = ((copied >= 0) & (copied < n_ticks))[..., None]
        actual = np.where(inside, observed[np.clip(target, 0, n_ticks - 1)], np.nan)
        point = np.where(valid, filled[np.clip(copied, 0, n_ticks - 1)], np.nan)
        return actual, point

    def predict(
        self,
        history: np.ndarray,
        horizon_ticks: int,
        quantiles: Sequence[float] = DEFAULT_QUANTILES,
        first_tick: int = 0,
    ) -> Forecast:
        observed, horizon, levels = check_predict_call(
            self, "residual_grid_", history, horizon_ticks, quantiles, needs_min_history=True
        )
        n_ticks = observed.shape[0]
        filled = forward_fill(observed)
        rows = [n_ticks - 1 + step - self._lag(step) for step in range(1, horizon + 1)]
        point = filled[rows]
        if np.isnan(point).any():
            series = int(np.argwhere(np.isnan(point))[0][1])
            raise NotEnoughHistory(self.name, self.min_history_, n_ticks, "predict",
                                   f"series {series} has no observed tick to copy")
        offsets = {q: offsets_at(self.residual_grid_, q, horizon) for q in levels}
        peak_offsets = {q: offsets_at(self.peak_grid_, q, horizon) for q in levels}
        if self.recent_residual_ticks > 0:
            offsets = self._recent_offsets(observed, filled, horizon, levels, offsets)
            peak_offsets = self._recent_peak_offsets(observed, filled, horizon, levels,
                                                     peak_offsets)
        most = np.maximum.accumulate(point, axis=0)
        return make_forecast(point, {q: point + offsets[q] for q in levels},
                             {q: most + peak_offsets[q] for q in levels})

    def _recent_peak_offsets(self, observed: np.ndarray, filled: np.ndarray, horizon: int,
                             levels: tuple[float, ...], fitted: dict[float, np.ndarray],
                             ) -> dict[float, np.ndarray]:
        """Peak-excess quantiles over the last recent_residual_ticks origins whose step-h
        target lies in this history, step by step; the fit-time ones where fewer than
        MIN_RECENT_RESIDUALS excesses are observed."""
        window = self.recent_residual_ticks
        n_ticks = observed.shape[0]
        first = max(0, n_ticks - window - horizon)
        origins = np.arange(first, n_ticks - 1)
        if origins.size == 0:
            return fitted
        offsets = {q: fitted[q].copy() for q in levels}
        excess = peak_excess(*self._paths(observed, filled, origins, horizon))
        if n_ticks >= window + horizon + 1 and window >= MIN_RECENT_RESIDUALS:
            # The common case (the simulator, every tick): every step's window of origins
            # in one (steps, window, series) array, one quantile call; the loop below
            # gives the same values and handles gaps and short histories.
            rows = (n_ticks - window - first - np.arange(1, horizon + 1))[:, None] \
                + np.arange(window)[None, :]
            block = excess[np.arange(horizon)[:, None], rows]
            if not np.isnan(block).any():
                recent = np.quantile(block, levels, axis=1)  # (levels, steps, series)
                return {q: recent[i] for i, q in enumerate(levels)}
        for step in range(1, horizon + 1):
            # origins o with n_ticks - window <= o + step <= n_ticks - 1
            low = max(0, n_ticks - window - step - first)
            _write_recent(offsets, step, excess[step - 1, low:n_ticks - step - first], levels)
        return offsets

    def _recent_offsets(self, observed: np.ndarray, filled: np.ndarray, horizon: int,
                        levels: tuple[float, ...], fitted: dict[float, np.ndarray],
                        ) -> dict[float, np.ndarray]:
        """Residual quantiles over the last recent_residual_ticks targets of this history."""
        window = self.recent_residual_ticks
        offsets = {q: fitted[q].copy() for q in levels}
        lags = [self._lag(step) for step in range(1, horizon + 1)]
        if observed.shape[0] >= window + max(lags) and not np.isnan(observed[-window:]).any():
            # The common case (a full window without gaps, every tick of the simulator):
            # every step's residuals in one (steps, window, series) array, one quantile
            # call. The loop below gives the same values; it handles gaps and short
            # histories.
            residuals = np.stack([observed[-window:] - filled[-window - lag:-lag]
                                  for lag in lags])
            if window >= MIN_RECENT_RESIDUALS and not np.isnan(residuals).any():
                recent = np.quantile(residuals, levels, axis=1)  # (levels, steps, series)
                return {q: recent[i] for i, q in enumerate(levels)}
        for step in range(1, horizon + 1):
            lag = self._lag(step)
            if observed.shape[0] <= lag:
                continue
            _write_recent(offsets, step, (observed[lag:] - filled[:-lag])[-window:], levels)
        return offsets


def _write_recent(offsets: dict[float, np.ndarray], step: int, block: np.ndarray,
                  levels: tuple[float, ...]) -> None:
    """offsets[q][step - 1] = the q-quantile of `block` (n, K) per series, for the series
    with at least MIN_RECENT_RESIDUALS observed values (the others keep theirs)."""
    enough = np.sum(~np.isnan(block), axis=0) >= MIN_RECENT_RESIDUALS
    if not enough.any():
        return
    block = block[:, enough]
    # np.nanquantile loops in Python per column; without gaps np.quantile gives the same
    # values vectorised (the simulator calls this every policy tick).
    quantile = np.nanquantile if np.isnan(block).any() else np.quantile
    recent = quantile(block, levels, axis=0)
    for i, q in enumerate(levels):
        offsets[q][step - 1, enough] = recent[i]


class LastValue(_CopyPastValue):
    """Forecast every step as the last observed value (the hard baseline on real traces).

    max_horizon: longest horizon in ticks that residual quantiles are kept for.
    recent_residual_ticks: 0 = quantiles from the fit-time residuals; N > 0 = from the
        residuals of the last N ticks of the history given to predict.
    """

    name = "last"

    def _lag(self, step: int) -> int:
        return step

    def _predict_needs(self) -> int:
        return 1


class SeasonalNaive(_CopyPastValue):
    """Forecast a tick as the value one season earlier (several seasons for h > period).

    period_ticks: season length in ticks (288 = one day at 5-minute ticks).
    max_horizon: longest horizon in ticks that residual quantiles are kept for.
    """

    name = "seasonal"

    def __init__(self, period_ticks: int = 288, max_horizon: int = 12,
                 recent_residual_ticks: int = 0) -> None:
        super().__init__(max_horizon=max_horizon, recent_residual_ticks=recent_residual_ticks)
        self.period_ticks = period_ticks

    def _lag(self, step: int) -> int:
        seasons_back = -(-step // self.period_ticks)  # ceil(step / period)
        return self.period_ticks * seasons_back

    def _predict_needs(self) -> int:
        return self.period_ticks


class SeasonalWeekNaive(SeasonalNaive):
    """Seasonal naive with a weekly season (2016 ticks at 5 minutes)."""

    name = "seasonal_week"

    def __init__(self, period_ticks: int = 2016, max_horizon: int = 12,
                 recent_residual_ticks: int = 0) -> None:
        super().__init__(period_ticks=period_ticks, max_horizon=max_horizon,
                         recent_residual_ticks=recent_residual_ticks)


class AdaptiveLastValue(LastValue):
    """Last value with quantiles from the most recent residuals (default: the last day).

    recent_residual_ticks: ticks of recent residuals (288 = one day at 5 minutes).
    """

    name = "last_adaptive"

    def __init__(self, max_horizon: int = 12, recent_residual_ticks: int = 288) -> None:
        super().__init__(max_horizon=max_horizon, recent_residual_ticks=recent_residual_ticks)
