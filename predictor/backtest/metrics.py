"""Forecast error metrics that matter for headroom: how often and by how much we fall short.

Decides: the exact definition of every number the backtest reports. With `forecast`
f and `actual` a over the evaluated ticks (ticks where either is NaN are left out and
counted in `ticks_skipped`), error e = f - a:

  mae                 mean |e|
  mse                 mean e^2
  rmse                sqrt(mse)
  pmse                mean over ALL evaluated ticks of e^2 where e > 0, else 0: the
                      research's over-prediction-only MSE (it does not count shortfalls;
                      it is the squared cost of idle headroom). Divided by the number of
                      evaluated ticks, not by the number of over-predicted ticks.
  shortfall_rate      share of evaluated ticks with f < a (pods would wait for nodes)
  mean_shortfall      mean over ALL evaluated ticks of max(a - f, 0)
  p95_shortfall       95th percentile over all evaluated ticks of max(a - f, 0)
  mean_shortfall_when_short   mean of a - f over the ticks with f < a (0 when none)
  mean_overprovision  mean over all evaluated ticks of max(f - a, 0) (idle headroom)

The fair "headroom" baseline is the last value plus a constant margin tuned so that
its shortfall rate is at most a target rate: `tune_margin` finds the smallest such
margin over the same ticks.

Must not: read the clock, log, or do I/O.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from common.errors import InputError


@dataclass(frozen=True)
class ErrorMetrics:
    """The metrics of one forecast series against its actuals (definitions in the module doc)."""

    ticks: int
    ticks_skipped: int
    mae: float
    mse: float
    rmse: float
    pmse: float
    shortfall_rate: float
    mean_shortfall: float
    p95_shortfall: float
    mean_shortfall_when_short: float
    mean_overprovision: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def _paired(forecast: np.ndarray, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    forecast = np.asarray(forecast, dtype=np.float64).ravel()
    actual = np.asarray(actual, dtype=np.float64).ravel()
    if forecast.shape != actual.shape:
        raise InputError(f"metrics: forecast has {forecast.size} values, actual {actual.size}")
    keep = ~(np.isnan(forecast) | np.isnan(actual))
    return forecast[keep], actual[keep], int(np.count_nonzero(~keep))


def error_metrics(forecast: np.ndarray, actual: np.ndarray) -> ErrorMetrics:
    """All metrics of `forecast` against `actual` (same length; NaN pairs are skipped).

    With no tick left to evaluate every metric is NaN (never 0: nothing was measured).
    """
    f, a, skipped = _paired(forecast, actual)
    if f.size == 0:
        nan = math.nan
        return ErrorMetrics(0, skipped, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    error = f - a
    shortfall = np.maximum(-error, 0.0)
    over = np.maximum(error, 0.0)
    short = error < 0
    mse = float(np.mean(error**2))
    return ErrorMetrics(
        ticks=int(f.size),
        ticks_skipped=skipped,
        mae=float(np.mean(np.abs(error))),
        mse=mse,
        rmse=math.sqrt(mse),
        pmse=float(np.mean(over**2)),
        shortfall_rate=float(np.mean(short)),
        mean_shortfall=float(np.mean(shortfall)),
        p95_shortfall=float(np.percentile(shortfall, 95)),
        mean_shortfall_when_short=float(np.mean(shortfall[short])) if short.any() else 0.0,
        mean_overprovision=float(np.mean(over)),
    )


def tune_margin(base: np.ndarray, actual: np.ndarray, target_shortfall_rate: float) -> float:
    """The smallest constant m with shortfall_rate(base + m, actual) <= target.

    The search runs over the very ticks it is judged on (in-sample), which favours the
    baseline: a forecaster that beats it beats it fairly. Ticks where either value is
    NaN are left out. m may be negative when the base over-forecasts more than needed.
    """
    if not 0.0 <= target_shortfall_rate <= 1.0:
        raise InputError(f"target shortfall rate {target_shortfall_rate} is outside [0, 1]")
    f, a, _ = _paired(base, actual)
    if f.size == 0:
        return math.nan
    need = np.sort(a - f)  # base + m falls short at a tick exactly when m < need
    allowed_short = math.floor(target_shortfall_rate * need.size + 1e-9)
    # With m = need[k], the ticks still short are those with need > need[k]; taking the
    # (n - allowed_short - 1)-th smallest leaves at most allowed_short of them.
    index = need.size - allowed_short - 1
    if index < 0:
        return float(need[0] - 1.0) if need.size else 0.0
    return float(need[index])
