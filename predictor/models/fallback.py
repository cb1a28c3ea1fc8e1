"""Fallback to reactive behaviour when the forecast misses badly (docs/forecasters.md,
"Reactive fallback").

Decides, per series (bucket) and tick, whether the plan follows the forecast or
the reactive value (the demand observed now, what a reactive autoscaler would
provision). A small state machine with explicit state in and out:

    forecast --(mean shortfall over the last window_ticks > enter_mean_shortfall)--> reactive
    reactive --(mean shortfall over the last window_ticks <= exit_mean_shortfall)--> forecast

The shortfall of a tick is max(actual - what the forecaster had predicted for it,
0), in nodes. It is tracked in both modes (the forecaster keeps forecasting while
the plan is reactive), so recovery is judged on the forecaster's own errors. A
tick whose actual is missing (NaN) adds nothing to the window and changes no mode.
Pure: `step` returns a new state and never mutates the old one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.errors import ConfigError, InputError


@dataclass(frozen=True)
class FallbackConfig:
    """When to stop trusting the forecast.

    window_ticks: how many recent ticks of shortfall are averaged. Default 6
        (30 minutes at 5-minute ticks).
    enter_mean_shortfall: switch a series to reactive when its mean shortfall over
        the window exceeds this many nodes. Default 1.0.
    exit_mean_shortfall: switch back to the forecast once the mean shortfall is at
        or below this (lower than enter, so the mode does not flap). Default 0.25.
    """

    window_ticks: int = 6
    enter_mean_shortfall: float = 1.0
    exit_mean_shortfall: float = 0.25

    def validate(self) -> None:
        if self.window_ticks < 1:
            raise ConfigError(f"fallback.window_ticks must be >= 1, got {self.window_ticks}")
        if not 0 <= self.exit_mean_shortfall <= self.enter_mean_shortfall:
            raise ConfigError(
                "fallback: need 0 <= exit_mean_shortfall <= enter_mean_shortfall, got "
                f"{self.exit_mean_shortfall} and {self.enter_mean_shortfall}")


@dataclass(frozen=True)
class FallbackState:
    """reactive: per series, whether the plan is reactive now.
    shortfalls: the last (up to window_ticks) ticks' shortfalls, oldest first, each a
        per-series tuple (NaN = actual was missing)."""

    reactive: tuple[bool, ...]
    shortfalls: tuple[tuple[float, ...], ...] = ()


@dataclass(frozen=True)
class FallbackDecision:
    """planned: (K,) what to plan for; reactive: per-series mode after this tick;
    mean_shortfall: (K,) the window's mean shortfall (0 when the window is empty)."""

    planned: np.ndarray
    reactive: tuple[bool, ...]
    mean_shortfall: np.ndarray


def initial_state(n_series: int) -> FallbackState:
    """Every series follows the forecast; no shortfall seen yet."""
    return FallbackState(reactive=(False,) * n_series)


def step(state: FallbackState, predicted_now: np.ndarray, actual_now: np.ndarray,
         forecast_ahead: np.ndarray, config: FallbackConfig | None = None,
         ) -> tuple[FallbackState, FallbackDecision]:
    """One tick: score the forecast made for now, update modes, choose the plan.

    predicted_now: (K,) what the forecaster had predicted (at the operator's
        quantile) for this tick. actual_now: (K,) demand now (NaN = missing).
    forecast_ahead: (K,) the new forecast for the horizon, planned in forecast mode.
    In reactive mode the plan is actual_now (or, when that is missing, the forecast).
    """
    config = config or FallbackConfig()
    config.validate()
    predicted = np.asarray(predicted_now, dtype=np.float64)
    actual = np.asarray(actual_now, dtype=np.float64)
    ahead = np.asarray(forecast_ahead, dtype=np.float64)
    n_series = len(state.reactive)
    if not predicted.shape == actual.shape == ahead.shape == (n_series,):
        raise InputError(
            f"fallback: expected {n_series} series, got predicted {predicted.shape}, "
            f"actual {actual.shape}, forecast {ahead.shape}")
    shortfall = np.where(np.isnan(actual), np.nan, np.maximum(actual - predicted, 0.0))
    window = (state.shortfalls + (tuple(float(v) for v in shortfall),))[-config.window_ticks:]
    stacked = np.array(window, dtype=np.float64)
    seen = ~np.isnan(stacked)
    counts = seen.sum(axis=0)
    mean = np.where(counts > 0, np.where(seen, stacked, 0.0).sum(axis=0) / np.maximum(counts, 1),
                    0.0)
    reactive = []
    for k, was_reactive in enumerate(state.reactive):
        if np.isnan(actual[k]):
            reactive.append(was_reactive)
        elif was_reactive:
            reactive.append(bool(mean[k] > config.exit_mean_shortfall))
        else:
            reactive.append(bool(mean[k] > config.enter_mean_shortfall))
    modes = tuple(reactive)
    use_actual = np.array(modes) & ~np.isnan(actual)
    planned = np.where(use_actual, actual, ahead)
    return (FallbackState(reactive=modes, shortfalls=window),
            FallbackDecision(planned=planned, reactive=modes, mean_shortfall=mean))
