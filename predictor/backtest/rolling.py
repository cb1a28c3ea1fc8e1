"""Rolling-origin evaluation of forecasters on a demand series, with the fair headroom baseline.

Decides: which ticks are tested, when a model is refitted, what history each forecast
sees, and which rows the report holds.

The schedule: with T ticks, the test targets are the last `test_fraction` of them,
ticks t = test_start .. T-1 (test_start = T - ceil(test_fraction * T)). The forecast for
target t is made at origin o = t - h (h = horizon_ticks) from history rows 0..o (nothing
after the origin is seen). What is scored is what placeholders are sized to: the
forecast's peak at the configured quantile (`Forecast.peak(q, h)`, the quantile of the
most demand over ticks o+1 .. o+h) against the most demand actually reached over those
ticks (`most_within`); so a shortfall rate of 10% at q 0.9 means demand outran the
placeholders somewhere within one horizon from 1 origin in 10. The point forecast (MAE)
is scored against the demand at t. A model is
fitted at the first origin on rows 0..o and refitted at the first origin at least
`refit_every_ticks` after its last fit (None = fitted once). Each *target* (a group of
columns a model forecasts jointly: all buckets, or the total GPUs) gets its own fits;
rows of the report are per column.

A model whose first fit raises NotEnoughHistory (or another InputError: a horizon it
cannot do) is reported as skipped with the reason. A single prediction that raises
NotEnoughHistory (a long gap before the origin) leaves that tick's forecast NaN, which
the metrics count as skipped ticks.

The `last+margin` row: the last observed value at the origin (carried over gaps) plus
the smallest constant margin whose shortfall rate (against the most demand over the
horizon) on the test ticks is at most 1 - quantile (tuned in-sample, in the baseline's
favour). Every model row also carries
`fair_overprovision`: the mean over-provision of last+margin tuned to that model's own
shortfall rate, so "over-provides less than the last value plus a margin at the same
shortfall rate" is one comparison per row.

Timing uses the injected `clock` (seconds, monotonic); the module never reads a clock
itself. Must not: read files, log, or pick a model (the caller does, from the rows).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from common.errors import InputError
from predictor.backtest.metrics import ErrorMetrics, error_metrics, tune_margin
from predictor.models.forecast import Forecaster, NotEnoughHistory, as_history, forward_fill

LAST_MARGIN = "last+margin"


@dataclass(frozen=True)
class BacktestConfig:
    """How to evaluate.

    horizon_ticks: ticks between the origin and the forecast read (the node start-up time).
    quantile: the forecast level provisioned and judged (e.g. 0.9).
    test_fraction: share of the series, at its end, whose ticks are forecast and scored.
    refit_every_ticks: refit a model when at least this many ticks passed since its last
        fit; None fits once at the first origin.
    first_tick: absolute tick of row 0 (phase for seasonal models; see predictor.models.forecast).
    """

    horizon_ticks: int
    quantile: float = 0.9
    test_fraction: float = 0.2
    refit_every_ticks: int | None = 288
    first_tick: int = 0

    def __post_init__(self) -> None:
        if int(self.horizon_ticks) != self.horizon_ticks or self.horizon_ticks < 1:
            raise InputError(f"horizon must be at least one tick, got {self.horizon_ticks}")
        if not 0.0 < self.quantile < 1.0:
            raise InputError(f"quantile must be inside (0, 1), got {self.quantile}")
        if not 0.0 < self.test_fraction < 1.0:
            raise InputError(f"test fraction must be inside (0, 1), got {self.test_fraction}")
        if self.refit_every_ticks is not None and self.refit_every_ticks < 1:
            raise InputError(f"refit interval must be at least one tick, got "
                             f"{self.refit_every_ticks}")


@dataclass(frozen=True)
class Target:
    """Columns forecast jointly by one model: e.g. all bucket counts, or the total GPUs."""

    name: str
    columns: tuple[str, ...]
    values: np.ndarray  # (T, K) float, NaN = gap


@dataclass(frozen=True)
class ModelRun:
    """One model's forecasts over the test ticks of one target.

    point, upper: (n_test, K) point forecast at step h and the peak at the quantile over
        steps 1..h (NaN where none was made).
    fit_seconds: mean seconds per fit; predict_seconds: mean seconds per predict call.
    skipped: the reason the model produced nothing, or None.
    """

    model: str
    point: np.ndarray
    upper: np.ndarray
    fit_count: int
    fit_seconds: float
    predict_seconds: float
    skipped: str | None = None


@dataclass(frozen=True)
class BacktestRow:
    """One (series column, model) line of the report."""

    series: str
    model: str
    horizon_ticks: int
    quantile: float
    metrics: ErrorMetrics | None
    point_mae: float = math.nan
    fit_seconds: float = math.nan
    fit_count: int = 0
    predict_seconds: float = math.nan
    fair_overprovision: float = math.nan
    margin: float = math.nan
    skipped: str | None = None

    def as_dict(self) -> dict[str, object]:
        row: dict[str, object] = {
            "series": self.series,
            "model": self.model,
            "horizon_ticks": self.horizon_ticks,
            "quantile": self.quantile,
        }
        if self.metrics is not None:
            row.update(self.metrics.as_dict())
        else:  # a skipped model keeps every key, with nulls, so readers need no special case
            row.update({name: None for name in ErrorMetrics.__dataclass_fields__})
        row.update(
            point_mae=self.point_mae,
            fit_seconds=self.fit_seconds,
            fit_count=self.fit_count,
            predict_seconds=self.predict_seconds,
            fair_overprovision=self.fair_overprovision,
            margin=self.margin,
            skipped=self.skipped,
        )
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


@dataclass(frozen=True)
class BacktestResult:
    """The report rows plus what a plot needs.

    test_index: (n_test,) row indices of the tested ticks in the series.
    actual: column -> (n_test,) actual values.
    forecasts: (column, model) -> (point, upper), each (n_test,); upper is the peak the
        placeholders cover over the horizon ending at the tick.
    """

    rows: tuple[BacktestRow, ...]
    test_index: np.ndarray
    actual: Mapping[str, np.ndarray] = field(default_factory=dict)
    forecasts: Mapping[tuple[str, str], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )


def first_test_row(tick_count: int, test_fraction: float) -> int:
    """First tested row: the last ceil(test_fraction * T) rows are the test period."""
    return tick_count - math.ceil(test_fraction * tick_count - 1e-9)


def run_model(
    model_name: str,
    factory: Callable[[], Forecaster],
    values: np.ndarray,
    config: BacktestConfig,
    clock: Callable[[], float],
) -> ModelRun:
    """Forecast every test tick of `values` (T, K) with a fresh model from `factory`."""
    tick_count, series_count = values.shape
    start = first_test_row(tick_count, config.test_fraction)
    h = config.horizon_ticks
    n_test = tick_count - start
    point = np.full((n_test, series_count), np.nan)
    upper = np.full((n_test, series_count), np.nan)
    if n_test == 0 or start - h < 0:
        return ModelRun(model_name, point, upper, 0, math.nan, math.nan,
                        f"series of {tick_count} ticks is too short to test at a "
                        f"{h}-tick horizon")
    model = factory()
    fitted_at: int | None = None
    fit_times: list[float] = []
    predict_time = 0.0
    predict_calls = 0
    last_reason: str | None = None
    for position in range(n_test):
        origin = start + position - h
        history = values[: origin + 1]
        due = fitted_at is None or (
            config.refit_every_ticks is not None
            and origin - fitted_at >= config.refit_every_ticks
        )
        if due:
            began = clock()
            try:
                model.fit(history, first_tick=config.first_tick)
            except InputError as error:
                if fitted_at is None:
                    return ModelRun(model_name, point, upper, 0, math.nan, math.nan,
                                    str(error))
                # A failed refit keeps the previous fit (its history was long enough).
            else:
                fit_times.append(clock() - began)
                fitted_at = origin
        began = clock()
        try:
            forecast = model.predict(
                history, h, quantiles=(config.quantile,), first_tick=config.first_tick
            )
        except NotEnoughHistory as error:
            last_reason = str(error)
            continue
        except InputError as error:
            return ModelRun(model_name, point, upper, len(fit_times),
                            float(np.mean(fit_times)) if fit_times else math.nan,
                            math.nan, str(error))
        predict_time += clock() - began
        predict_calls += 1
        point[position] = forecast.at(None, h)
        upper[position] = forecast.peak(config.quantile, h)
    skipped = None
    if predict_calls == 0:
        skipped = last_reason or "no forecast could be made"
    return ModelRun(
        model_name,
        point,
        upper,
        len(fit_times),
        float(np.mean(fit_times)) if fit_times else math.nan,
        predict_time / predict_calls if predict_calls else math.nan,
        skipped,
    )


def most_within(values: np.ndarray, config: BacktestConfig) -> np.ndarray:
    """(n_test, K) per test tick t, the most demand over ticks t-h+1 .. t (the horizon of
    the forecast made at t-h); missing ticks are left out, NaN when all are missing.
    Example: values 1, 4, 2, 3 with h 2 and targets 2, 3 -> 4, 3."""
    start = first_test_row(len(values), config.test_fraction)
    h = config.horizon_ticks
    most = np.full((len(values) - start, values.shape[1]), np.nan)
    for position, t in enumerate(range(start, len(values))):
        block = values[max(0, t - h + 1): t + 1]
        seen = ~np.isnan(block)
        if seen.any():
            most[position] = np.where(seen.any(axis=0),
                                      np.max(np.where(seen, block, -np.inf), axis=0), np.nan)
    return most


def last_values(values: np.ndarray, config: BacktestConfig) -> np.ndarray:
    """(n_test, K) the last observed value at each test tick's origin (carried over gaps)."""
    start = first_test_row(len(values), config.test_fraction)
    origins = np.arange(start, len(values)) - config.horizon_ticks
    filled = forward_fill(values)
    result = np.full((len(origins), values.shape[1]), np.nan)
    valid = origins >= 0
    result[valid] = filled[origins[valid]]
    return result


def backtest(
    targets: Sequence[Target],
    factories: Mapping[str, Callable[[], Forecaster]],
    config: BacktestConfig,
    clock: Callable[[], float],
) -> BacktestResult:
    """Evaluate every model on every target; rows per column, then `last+margin` per column."""
    rows: list[BacktestRow] = []
    actual_by_column: dict[str, np.ndarray] = {}
    forecasts: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    test_index = np.zeros(0, dtype=np.int64)
    for target in targets:
        values = as_history(target.values, target.name)
        if values.shape[1] != len(target.columns):
            raise InputError(f"{target.name}: {values.shape[1]} value columns for "
                             f"{len(target.columns)} names")
        start = first_test_row(len(values), config.test_fraction)
        test_index = np.arange(start, len(values))
        actual = values[start:]
        peak = most_within(values, config)
        base = last_values(values, config)
        runs = [run_model(name, factory, values, config, clock)
                for name, factory in factories.items()]
        for k, column in enumerate(target.columns):
            actual_by_column[column] = actual[:, k]
            for run in runs:
                rows.append(_model_row(column, run, k, actual[:, k], peak[:, k], base[:, k],
                                       config))
                if run.skipped is None:
                    forecasts[(column, run.model)] = (run.point[:, k], run.upper[:, k])
            if start - config.horizon_ticks < 0 or len(actual) == 0:
                # As run_model does: no tested tick has an origin, so no margin to tune.
                rows.append(BacktestRow(
                    series=column, model=LAST_MARGIN, horizon_ticks=config.horizon_ticks,
                    quantile=config.quantile, metrics=None,
                    skipped=f"series of {len(values)} ticks is too short to test at a "
                            f"{config.horizon_ticks}-tick horizon",
                ))
                continue
            margin = tune_margin(base[:, k], peak[:, k], 1.0 - config.quantile)
            baseline = base[:, k] + margin
            forecasts[(column, LAST_MARGIN)] = (base[:, k], baseline)
            rows.append(BacktestRow(
                series=column,
                model=LAST_MARGIN,
                horizon_ticks=config.horizon_ticks,
                quantile=config.quantile,
                metrics=error_metrics(baseline, peak[:, k]),
                point_mae=error_metrics(base[:, k], actual[:, k]).mae,
                fit_seconds=0.0,
                predict_seconds=0.0,
                margin=margin,
            ))
    return BacktestResult(tuple(rows), test_index, actual_by_column, forecasts)


def _model_row(
    column: str, run: ModelRun, k: int, actual: np.ndarray, peak: np.ndarray,
    base: np.ndarray, config: BacktestConfig,
) -> BacktestRow:
    """actual: the demand at each test tick (for the point's MAE); peak: the most demand
    over the horizon ending there (for everything the quantile is judged on)."""
    common = dict(series=column, model=run.model, horizon_ticks=config.horizon_ticks,
                  quantile=config.quantile)
    if run.skipped is not None:
        return BacktestRow(**common, metrics=None, skipped=run.skipped)
    metrics = error_metrics(run.upper[:, k], peak)
    # Judge the baseline on the ticks the model forecast, no others.
    base = np.where(np.isnan(run.upper[:, k]), np.nan, base)
    fair = math.nan
    if not math.isnan(metrics.shortfall_rate):
        margin = tune_margin(base, peak, metrics.shortfall_rate)
        fair = error_metrics(base + margin, peak).mean_overprovision
    return BacktestRow(
        **common,
        metrics=metrics,
        point_mae=error_metrics(run.point[:, k], actual).mae,
        fit_seconds=run.fit_seconds,
        fit_count=run.fit_count,
        predict_seconds=run.predict_seconds,
        fair_overprovision=fair,
    )


def choose_model(
    rows: Sequence[BacktestRow], series: str, shortfall_tolerance: float = 0.02
) -> BacktestRow | None:
    """The model to run for `series`: among forecasters (not the last+margin yardstick) whose
    shortfall rate is at most 1 - quantile + tolerance, the one that over-provides least;
    when none meets the rate, the one that falls short least. None when all were skipped.
    """
    candidates = [r for r in rows if r.series == series and r.model != LAST_MARGIN
                  and r.metrics is not None and not math.isnan(r.metrics.shortfall_rate)]
    if not candidates:
        return None
    meeting = [r for r in candidates
               if r.metrics.shortfall_rate <= 1.0 - r.quantile + shortfall_tolerance]
    if meeting:
        return min(meeting, key=lambda r: r.metrics.mean_overprovision)
    return min(candidates, key=lambda r: (r.metrics.shortfall_rate,
                                          r.metrics.mean_overprovision))


@dataclass(frozen=True)
class Recommendation:
    """The one model to run for every series (the service runs one `forecast.model`).

    model: its name; quantile: the level it was judged at; series: how many series it
    was judged on; short_on: on how many of them it falls short more often than
    1 - quantile + tolerance; shortfall_rate: its mean shortfall rate over them;
    over_vs_fair: its mean over-provision as a multiple of the fair baseline's (last
    value + a margin tuned to the same shortfall rate; below 1 beats it), NaN when the
    fair baseline over-provides nothing.
    """

    model: str
    quantile: float
    series: int
    short_on: int
    shortfall_rate: float
    over_vs_fair: float

    def snippet(self) -> str:
        """The overprovisioner config lines that select it."""
        return f"forecast: {{model: {self.model}, quantile: {self.quantile:g}}}"


def recommend_model(rows: Sequence[BacktestRow], series: Sequence[str] | None = None,
                    shortfall_tolerance: float = 0.02) -> Recommendation | None:
    """The model to configure for the whole service: among forecasters scored on every one
    of `series` (default: every series in the rows), the one falling short too often
    (above 1 - quantile + tolerance) on the fewest series, then over-providing least
    against the fair baseline on average. None when no model was scored on all of them.
    """
    names = list(series) if series is not None else list(dict.fromkeys(r.series for r in rows))
    scored: dict[str, list[BacktestRow]] = {}
    for row in rows:
        if (row.series in names and row.model != LAST_MARGIN and row.metrics is not None
                and not math.isnan(row.metrics.shortfall_rate)):
            scored.setdefault(row.model, []).append(row)
    candidates = []
    for model, mine in scored.items():
        if len({r.series for r in mine}) < len(names):
            continue
        short_on = sum(r.metrics.shortfall_rate > 1.0 - r.quantile + shortfall_tolerance
                       for r in mine)
        ratios = [r.metrics.mean_overprovision / r.fair_overprovision for r in mine
                  if r.fair_overprovision > 0]
        over = float(np.mean(ratios)) if ratios else math.nan
        rate = float(np.mean([r.metrics.shortfall_rate for r in mine]))
        candidates.append(Recommendation(model, mine[0].quantile, len(mine), short_on, rate,
                                         over))
    if not candidates:
        return None
    return min(candidates, key=lambda c: (c.short_on, math.inf if math.isnan(c.over_vs_fair)
                                          else c.over_vs_fair, c.shortfall_rate))
