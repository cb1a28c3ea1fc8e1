"""Empirical residual quantiles and the pinball loss (plain numpy).

Decides: how a point forecaster turns its in-sample h-step residuals into
quantile forecasts. `fit` computes residual quantiles once on a fixed grid of
levels; `predict` reads any level off the grid by linear interpolation, so a
forecaster fitted once answers any quantile the operator picks.

Also the peak statistic placeholders are sized to (`Forecast.peaks`): from origin o,
the most demand over steps 1..h less the most the point forecast reaches over them,
`peak_excess`; its quantiles added to the point's running maximum give the quantile of
the most demand over the horizon (exactly so when the point path is flat, as for the
last value: then it is the quantile of the largest rise within the horizon).

Must not: know any model. Residuals at missing targets (NaN) are skipped, never
counted as zero.
"""

from __future__ import annotations

import numpy as np

from common.errors import InputError

# 0.005, 0.010, ..., 0.995: levels beyond the ends are read at the nearest end
# (a few thousand residuals cannot say more about the tails anyway).
QUANTILE_GRID: np.ndarray = np.round(np.arange(1, 200) / 200.0, 3)


def residual_quantile_grid(residuals: np.ndarray) -> np.ndarray:
    """Per horizon step and series, the residuals' quantiles on QUANTILE_GRID.

    residuals: (H, N, K) actual - forecast for steps 1..H, N origins, K series;
        NaN where the target was missing.
    Returns (L, H, K). A (step, series) cell without any residual takes the
    quantiles pooled over all series at that step, and 0 if there are none at all.
    """
    if residuals.ndim != 3:
        raise InputError(f"residuals must be (steps, origins, series), got {residuals.shape}")
    steps, _, n_series = residuals.shape
    grid = np.zeros((QUANTILE_GRID.size, steps, n_series))
    for step in range(steps):
        block = residuals[step]
        observed = ~np.isnan(block)
        pooled = block[observed]
        pooled_q = np.quantile(pooled, QUANTILE_GRID) if pooled.size else 0.0
        for series in range(n_series):
            column = block[observed[:, series], series]
            grid[:, step, series] = (
                np.quantile(column, QUANTILE_GRID) if column.size else pooled_q
            )
    return grid


def peak_excess(actual: np.ndarray, point: np.ndarray) -> np.ndarray:
    """(H, N, K) most actual demand over steps 1..h less the most the point reaches.

    actual, point: (H, N, K) the target value and the point forecast for steps 1..H from
    N origins (aligned by origin, not by target). Missing targets (NaN) are left out of
    the running maximum; a step with no target observed up to it is NaN. Example: one
    origin, actual 3, 5, 4 and a flat point 2: excess 1, 3, 3.
    """
    if actual.shape != point.shape or actual.ndim != 3:
        raise InputError(f"peak_excess: actual {actual.shape} and point {point.shape} must be "
                         "the same (steps, origins, series)")
    most_actual = np.fmax.accumulate(actual, axis=0)
    return most_actual - np.maximum.accumulate(point, axis=0)


def offsets_at(grid: np.ndarray, q: float, horizon_ticks: int) -> np.ndarray:
    """(H, K) residual quantile at level q for steps 1..H, interpolated on the grid."""
    position = np.interp(q, QUANTILE_GRID, np.arange(QUANTILE_GRID.size))
    low = int(np.floor(position))
    high = min(low + 1, QUANTILE_GRID.size - 1)
    weight = position - low
    return (1.0 - weight) * grid[low, :horizon_ticks] + weight * grid[high, :horizon_ticks]


def spread_factors(delta: np.ndarray, target: np.ndarray, levels: tuple[float, ...],
                   median_index: int, low: float = 0.0, high: float = 10.0) -> np.ndarray:
    """Per step and level, the factor f that makes median + f * (level - median) cover
    `level` of held-out targets (split-conformal scaling of a quantile head's spread).

    delta: (N, H, K, L) a model's outputs at N held-out origins; target: (N, H, K) the
    truth in the same units (NaN = missing). Returns (H, L); 1 where fewer than 20
    usable targets. Upper level q: f = q-quantile of (target - median) / spread;
    lower level q (spread < 0): f = (1 - q)-quantile of that ratio. Clipped to
    [low, high]. Example: spread 1 everywhere, errors 0.00, 0.01, ..., 0.99 ->
    f(0.9) = 0.891.
    """
    n_steps, n_levels = delta.shape[1], len(levels)
    factors = np.ones((n_steps, n_levels))
    median = delta[..., median_index]
    error = target - median
    for j, q in enumerate(levels):
        if j == median_index:
            continue
        spread = delta[..., j] - median
        for step in range(n_steps):
            usable = ~np.isnan(error[:, step]) & (np.abs(spread[:, step]) > 1e-9)
            if usable.sum() < 20:
                continue
            ratio = error[:, step][usable] / spread[:, step][usable]
            factors[step, j] = np.clip(np.quantile(ratio, q if q > 0.5 else 1.0 - q), low, high)
    return factors
