"""Forecasters by name, for the CLI, the backtest and the service config.

Decides: the valid model names and how a tick size turns into seasonal periods
(one day = 86,400 s / tick seconds ticks, one week = 7 days). Nothing is
registered at import time: the table below is the whole list, and the
Transformer (torch) is imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from common.errors import InputError
from predictor.models.forecast import Forecaster

DAY_SECONDS = 86_400
WEEK_SECONDS = 7 * DAY_SECONDS


def period_ticks(period_seconds: int, tick_seconds: int) -> int:
    """A period in whole ticks (e.g. a day at 300-s ticks = 288)."""
    if tick_seconds <= 0:
        raise InputError(f"tick_seconds must be > 0, got {tick_seconds}")
    return max(1, round(period_seconds / tick_seconds))


def _last(tick_seconds: int, **params: Any) -> Forecaster:
    from predictor.models.baselines import LastValue

    return LastValue(**params)


def _last_adaptive(tick_seconds: int, **params: Any) -> Forecaster:
    from predictor.models.baselines import AdaptiveLastValue

    params.setdefault("recent_residual_ticks", period_ticks(DAY_SECONDS, tick_seconds))
    return AdaptiveLastValue(**params)


def _seasonal(tick_seconds: int, **params: Any) -> Forecaster:
    from predictor.models.baselines import SeasonalNaive

    params.setdefault("period_ticks", period_ticks(DAY_SECONDS, tick_seconds))
    return SeasonalNaive(**params)


def _seasonal_week(tick_seconds: int, **params: Any) -> Forecaster:
    from predictor.models.baselines import SeasonalWeekNaive

    params.setdefault("period_ticks", period_ticks(WEEK_SECONDS, tick_seconds))
    return SeasonalWeekNaive(**params)


def _hw(tick_seconds: int, **params: Any) -> Forecaster:
    from predictor.models.holt_winters import HoltWinters

    params.setdefault("period_ticks", period_ticks(DAY_SECONDS, tick_seconds))
    params.setdefault("window_ticks", 2 * params["period_ticks"])
    return HoltWinters(**params)


def _transformer(tick_seconds: int, **params: Any) -> Forecaster:
    from predictor.models.transformer import TransformerForecaster

    params.setdefault("periods_ticks", (period_ticks(DAY_SECONDS, tick_seconds),
                                        period_ticks(WEEK_SECONDS, tick_seconds)))
    params.setdefault("context_ticks", period_ticks(DAY_SECONDS, tick_seconds))
    return TransformerForecaster(**params)


def _conditional(tick_seconds: int, **params: Any) -> Forecaster:
    from predictor.models.conditional import build

    return build(tick_seconds, **params)


FACTORIES: dict[str, Callable[..., Forecaster]] = {
    "last": _last,
    "last_adaptive": _last_adaptive,
    "seasonal": _seasonal,
    "seasonal_week": _seasonal_week,
    "hw": _hw,
    "transformer": _transformer,
    "conditional": _conditional,
}
FORECASTER_NAMES: tuple[str, ...] = tuple(FACTORIES)
# The overprovisioner's `forecast.model` default and `headstart backtest`'s default model:
# one name, so the backtest scores by default what the service runs by default.
DEFAULT_MODEL = "last_adaptive"


def make_forecaster(name: str, tick_seconds: int = 300, **params: Any) -> Forecaster:
    """A new, unfitted forecaster; periods default from `tick_seconds` (300 = 5 min).

    Other keyword arguments are the model's hyper-parameters (e.g. max_horizon=12);
    an unknown name or parameter is an InputError that lists what is valid.
    """
    factory = FACTORIES.get(name)
    if factory is None:
        raise InputError(
            f"unknown forecaster {name!r}; valid names: {', '.join(FORECASTER_NAMES)}")
    try:
        return factory(tick_seconds, **params)
    except TypeError as error:
        raise InputError(f"forecaster {name!r}: bad parameter ({error})") from None
