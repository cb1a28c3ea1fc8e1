"""What the service forecasts with, from its config: the model, the forecast it reads, the adjuster.

Decides, for `headstart overprovisioner` and the simulator alike (one source of truth,
so the simulator measures what the service runs):
- `build_forecaster`: the configured model, built as the service builds it (residual
  quantiles kept far enough ahead for the horizon);
- `build_adjuster`: fallback and stabilization from `forecast.*` (no fallback when
  `forecast.fallback` is false; no stabilization when `stabilize_tau` is 0);
- `peak_path`: the forecast the plan reads, the quantile of the most demand over
  ticks 1..s for s = 1..S (`Forecast.peaks`), for the horizon plus tau steps when the
  model was built that far ahead, else for the horizon.

Must not: read files, log, keep state across ticks (the adjuster does, the caller owns
it), or read the clock.
"""

from __future__ import annotations

import math

import numpy as np

from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.planner.adjust import ForecastAdjuster
from predictor.models.fallback import FallbackConfig
from predictor.models.forecast import Forecast, Forecaster, NotEnoughHistory
from predictor.models.registry import make_forecaster

# Residual-quantile models keep this many steps at least (an hour at 5-minute ticks),
# so a horizon plus stabilization's look-ahead fits without a refit.
MIN_MODEL_HORIZON = 12


def tau_ticks(config: OverprovisionerConfig) -> int:
    """Stabilization's tau in whole ticks, rounded up (10 min at 5-min ticks = 2)."""
    return max(0, math.ceil(config.forecast.stabilize_tau_s / config.tick_s - 1e-9))


def build_forecaster(config: OverprovisionerConfig, name: str | None = None) -> Forecaster:
    """A new, unfitted forecaster `name` (default `forecast.model`) at the config's tick."""
    name = name or config.forecast.model
    if name in ("last", "last_adaptive", "seasonal", "seasonal_week", "conditional"):
        # Their residual quantiles are kept up to max_horizon steps: cover the horizon
        # and stabilization's look-ahead.
        steps = max(MIN_MODEL_HORIZON, config.horizon_ticks + tau_ticks(config))
        return make_forecaster(name, int(config.tick_s), max_horizon=steps)
    return make_forecaster(name, int(config.tick_s))


def build_adjuster(config: OverprovisionerConfig) -> ForecastAdjuster:
    """The service's fallback and stabilization, as configured."""
    forecast = config.forecast
    fallback = None
    if forecast.fallback:
        fallback = FallbackConfig(forecast.fallback_window_ticks,
                                  forecast.fallback_enter_mean_shortfall,
                                  forecast.fallback_exit_mean_shortfall)
    return ForecastAdjuster(horizon_ticks=config.horizon_ticks, tau_ticks=tau_ticks(config),
                            rho=forecast.stabilize_rho, fallback=fallback)


def peak_path(model: Forecaster, history: np.ndarray, config: OverprovisionerConfig,
              steps: int, first_tick: int = 0) -> tuple[Forecast, np.ndarray]:
    """The forecast and its (S, K) peak path at `forecast.quantile` for S = `steps`, or
    for the horizon when the model cannot forecast that far (built for fewer steps).

    Raises NotEnoughHistory when the history is too short (the cold start).
    """
    quantile = config.forecast.quantile
    try:
        result = model.predict(history, steps, (quantile,), first_tick=first_tick)
    except NotEnoughHistory:
        raise
    except InputError:
        result = model.predict(history, config.horizon_ticks, (quantile,),
                               first_tick=first_tick)
    return result, result.peak_path(quantile)
