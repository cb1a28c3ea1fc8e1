"""The service's forecaster: which model, when to (re)fit it, and its forecast per bucket.

Decides the model's lifecycle for the tick loop: the configured model, refitted every
`forecast.retrain_every`; a model file that cannot be loaded (corrupt, other buckets)
falls back to seasonal naive (or a refit) with a warning and a metric; a fit that fails
on the data falls back to the last value; history shorter than the model needs raises
NotEnoughHistory (the loop then plans with the cold-start ladder). Each forecast (the
quantile of the most demand over the horizon, `service_forecast.peak_path`) goes
through the `ForecastAdjuster` (fallback, stabilization) and comes out per bucket. How
the model and the adjuster are built from the config is `service_forecast`'s, which
the simulator shares.

Must not: record demand, plan, call the API or log: fallbacks and failed saves are said
through the `warn` it is given (the service's logger; the simulator's), and counted
through `metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from bucketing.catalog import Catalog
from common.errors import ConfigError, HeadstartError, InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.planner.service_forecast import build_adjuster, build_forecaster, peak_path
from predictor.history.series import DemandSeries, split_column
from predictor.models.forecast import Forecast, Forecaster, NotEnoughHistory, lookback_ticks

Bucket = tuple[str, str]

# (model_path, series columns) -> a fitted forecaster, or None when no file exists yet;
# raises when the file is unusable or was trained for other columns.
ModelLoader = Callable[[str, Sequence[str]], Forecaster | None]
# (fitted forecaster, model_path, series columns) -> None; saves after each refit.
ModelSaver = Callable[[Forecaster, str, Sequence[str]], None]
# Says a fallback or a failed save to a human: the service's logger, the simulator's.
Warn = Callable[[str], None]


class FallbackCounter(Protocol):
    """What the forecaster counts: `model_fallbacks.labels(reason).inc()` (the service's
    Prometheus counter, service/metrics.py; `NoMetrics` in the simulator)."""

    model_fallbacks: Any


class _Ignored:
    def labels(self, *_: str) -> _Ignored:
        return self

    def inc(self, amount: float = 1.0) -> None:
        return None


class NoMetrics:
    """A FallbackCounter that counts nothing (the simulator exports no metrics)."""

    model_fallbacks = _Ignored()


@dataclass(frozen=True)
class BucketForecast:
    """point: point forecast at the horizon; quantile: what the plan uses (the quantile
    of the most demand over the horizon, after fallback and stabilization); in_use: the
    last recorded value (nodes running + pending pods occupy now); raw_quantile: that
    quantile before adjustment; reactive: the fallback has this series planning
    reactively; announced: nodes of the demand announced ahead that runs now, included in
    point and quantile (overprovisioner.planner.known_plan)."""

    point: float
    quantile: float
    in_use: float
    raw_quantile: float = 0.0
    reactive: bool = False
    announced: float = 0.0


@dataclass
class ModelState:
    """The forecaster in use, when it was fitted, and on which columns."""

    forecaster: Forecaster | None = None
    name: str = ""
    fitted_at: float = -math.inf
    columns: tuple[str, ...] = ()


class ServiceForecaster:
    """The model in use across ticks, and the adjuster's state; one per service."""

    def __init__(
        self,
        config: OverprovisionerConfig,
        catalog: Catalog,
        metrics: FallbackCounter,
        load_model: ModelLoader | None = None,
        save_model: ModelSaver | None = None,
        *,
        warn: Warn,
    ) -> None:
        self.config = config
        self.warn = warn
        self.catalog = catalog
        self.metrics = metrics
        self.load_model = load_model
        self.save_model = save_model
        self.adjuster = build_adjuster(config)
        self.model = ModelState()
        self._model_loaded = False  # model_path is read once, on the first tick
        self.fits = 0  # fits so far (the simulator reports them)
        self._last_key: tuple = ()
        self._last: tuple[Forecast, np.ndarray] = (None, None)  # type: ignore[assignment]

    def _initial_model(self, columns: Sequence[str]) -> ModelState:
        """The configured model, loaded from model_path when one is set (fitted), else
        unfitted. A file that cannot be used falls back to seasonal naive."""
        forecast = self.config.forecast
        if forecast.model_path and self.load_model is not None:
            try:
                return ModelState(self.load_model(forecast.model_path, columns), forecast.model)
            except ConfigError as error:  # trained for other buckets or another tick
                self.warn(f"model {forecast.model_path} does not match this config "
                          f"({error}); fitting {forecast.model} from the history")
                self.metrics.model_fallbacks.labels("model_mismatch").inc()
                return ModelState(None, forecast.model)
            except (HeadstartError, OSError, ValueError) as error:
                self.warn(f"model {forecast.model_path} unusable ({error}); falling back "
                          "to seasonal naive")
                self.metrics.model_fallbacks.labels("corrupt_model").inc()
                return ModelState(None, "seasonal")
        return ModelState(None, forecast.model)

    def _fresh(self, name: str) -> Forecaster:
        return build_forecaster(self.config, name)

    def _ensure_model(self, history: np.ndarray, columns: tuple[str, ...], first_tick: int,
                      now_s: float) -> None:
        """Load once, then (re)fit when never fitted, due, or the columns changed."""
        if not self._model_loaded:
            self._model_loaded = True
            self.model = self._initial_model(columns)
            if self.model.forecaster is not None:  # a loaded model counts as fitted now
                self.model = ModelState(self.model.forecaster, self.model.name, now_s, columns)
        due = now_s - self.model.fitted_at >= self.config.forecast.retrain_every_s
        if self.model.forecaster is not None and not due and self.model.columns == columns:
            return
        name = self.model.name
        forecaster = self._fresh(name)
        try:
            forecaster.fit(history, first_tick=first_tick)
        except NotEnoughHistory:
            raise
        except InputError as error:
            self.warn(f"fitting {name} failed ({error}); using last value")
            self.metrics.model_fallbacks.labels("fit_failed").inc()
            name, forecaster = "last", self._fresh("last")
            forecaster.fit(history, first_tick=first_tick)
        self.model = ModelState(forecaster, name, now_s, columns)
        self.fits += 1
        if self.save_model is not None and self.config.forecast.model_path and (
            name == self.config.forecast.model
        ):
            try:
                self.save_model(forecaster, self.config.forecast.model_path, columns)
            except (HeadstartError, OSError) as error:
                self.warn(f"could not save the model to {self.config.forecast.model_path}: "
                          f"{error}")

    def forecast(self, series: DemandSeries, now_s: float) -> dict[Bucket, BucketForecast]:
        """Per bucket (type, group): point and quantile forecast at the horizon.

        Raises NotEnoughHistory when the model cannot forecast yet (cold start).
        """
        return self.forecast_history(series.history(), series.columns, first_tick(series),
                                     now_s)

    def forecast_history(self, history: np.ndarray, columns: Sequence[str], first: int,
                         now_s: float) -> dict[Bucket, BucketForecast]:
        """`forecast` on a (T, K) history whose row 0 is tick `first` (time / tick) and
        whose columns are `columns` (`bucket` or `bucket@group`): what the service reads
        from its store, and what the simulator records in the same columns."""
        columns = tuple(columns)
        self._ensure_model(history, columns, first, now_s)
        assert self.model.forecaster is not None
        try:
            result, ahead = self._predict(history, first)
        except NotEnoughHistory:
            raise
        except InputError as error:
            # E.g. a loaded model that does not fit this history: refit once, then retry.
            self.warn(f"{self.model.name} cannot forecast this history ({error}); refitting")
            self.model = ModelState(None, self.model.name)
            self._ensure_model(history, columns, first, now_s)
            result, ahead = self._predict(history, first)
        horizon = self.config.horizon_ticks
        tick = int(round(now_s / self.config.tick_s))
        adjusted = self.adjuster.adjust(list(columns), tick, history[-1], ahead)
        point = result.at(None, horizon)
        last = _last_observed(history)
        known_types = frozenset(self.catalog.names)
        forecasts: dict[Bucket, BucketForecast] = {}
        for index, column in enumerate(columns):
            bucket, group = split_column(column)
            if bucket not in known_types:
                continue  # a bucket recorded under an older config
            forecasts[(bucket, group or "")] = BucketForecast(
                point=float(point[index]),
                quantile=float(adjusted.planned[index]),
                in_use=float(last[index]),
                raw_quantile=float(ahead[horizon - 1, index]),
                reactive=adjusted.reactive[index],
            )
        return forecasts

    def _predict(self, history: np.ndarray, first: int) -> tuple[Forecast, np.ndarray]:
        """The forecast and its peak path for horizon + tau steps (for stabilization), or
        just the horizon when the model was fitted for fewer steps.

        Only the rows predict reads are passed (`lookback_ticks`) when they hold no gap (a
        gap may need an older row to fill it), and an unchanged window gives the last
        answer again: quiet stretches of demand repeat the same window tick after tick.
        """
        model = self.model.forecaster
        assert model is not None
        length = max(lookback_ticks(model), 1) + 1
        window = history[-length:]
        if np.isnan(window).any():
            return peak_path(model, history, self.config, self.adjuster.steps, first)
        start = first + len(history) - len(window)
        # Only models with a period read the phase (seasonal, time-of-day).
        period = getattr(model, "period_ticks", None)
        key = (id(model), self.model.fitted_at, window.shape, window.tobytes(),
               start % period if period else 0)
        if key != self._last_key:
            self._last = peak_path(model, window, self.config, self.adjuster.steps, start)
            self._last_key = key
        return self._last


def first_tick(series: DemandSeries) -> int:
    """The tick number (time / tick) of the series' first row: the phase seasonal and
    time-of-day models read."""
    return int(round(series.times[0] / series.tick_s)) if len(series) else 0


def _last_observed(history: np.ndarray) -> np.ndarray:
    """Per column, the last non-NaN value (0 when a column was never observed)."""
    if len(history) and not np.isnan(history[-1]).any():
        return history[-1].copy()  # the usual case: the last tick was recorded
    last = np.zeros(history.shape[1])
    for column in range(history.shape[1]):
        values = history[:, column]
        observed = values[~np.isnan(values)]
        if len(observed):
            last[column] = observed[-1]
    return last
