"""The conditional-increase forecaster: headroom by time of day and recent activity."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from predictor.models.conditional import ConditionalIncrease, recent_rise
from predictor.models.forecast import NotEnoughHistory, NotFittedError
from predictor.models.registry import make_forecaster


def busy_hours_history(days: int = 6, period: int = 24, busy: tuple[int, ...] = (10, 11)) -> (
        np.ndarray):
    """One series: level 5, +1 node at every busy tick of the day, back to 5 at midnight."""
    values = []
    for _ in range(days):
        level = 5.0
        for tick in range(period):
            if tick in busy:
                level += 1
            values.append(level)
    return np.array(values)[:, None]


@pytest.mark.parametrize(
    "values, window, expected",
    [
        # rises 0, 2, 0, 2 -> sums over 2 ticks: 0, 2, 2, 2
        ([0, 2, 1, 3], 2, [0, 2, 2, 2]),
        # a NaN step counts 0: rises 0, 1, 0(nan), 0(nan->4 is nan) , 1
        ([0, 1, np.nan, 4, 5], 1, [0, 1, 0, 0, 1]),
        ([3, 3, 3], 5, [0, 0, 0]),
    ],
    ids=["rises-summed", "nan-steps-count-zero", "flat"],
)
def test_recent_rise(values, window, expected):
    filled = np.array(values, dtype=float)[:, None]
    assert recent_rise(filled, window)[:, 0].tolist() == expected


@pytest.mark.parametrize(
    "origin_tick, expected_offset",
    [
        # origin at tick 9 of the day: tick 10 adds 1 node every day -> +1 at q 0.9
        (9, 1.0),
        # origin at tick 3: nothing rises before tick 10 -> +0
        (3, 0.0),
    ],
    ids=["before-busy-hour", "quiet-hour"],
)
def test_headroom_follows_the_time_of_day(origin_tick, expected_offset):
    history = busy_hours_history()
    model = ConditionalIncrease(max_horizon=1, period_ticks=24, day_bins=24, activity_ticks=2,
                                activity_bins=1, min_samples=3).fit(history)
    window = history[: 5 * 24 + origin_tick + 1]
    forecast = model.predict(window, 1, quantiles=(0.9,))
    last = window[-1, 0]
    assert forecast.at(0.9)[0] == pytest.approx(last + expected_offset)
    assert forecast.at()[0] == last


def test_unconditional_quantile_is_flat_where_conditioning_is_off():
    # 2 rises in 24 ticks: the unconditional 0.9 quantile of 1-step increases is 0 -> flat 0
    history = busy_hours_history()
    model = ConditionalIncrease(max_horizon=1, period_ticks=24, day_bins=1, activity_ticks=2,
                                activity_bins=1, min_samples=3).fit(history)
    for tick in (3, 9):
        window = history[: 5 * 24 + tick + 1]
        assert model.predict(window, 1, (0.9,)).at(0.9)[0] == window[-1, 0]


def test_thin_cells_fall_back_to_the_pooled_quantiles():
    history = busy_hours_history()
    # min_samples above any cell's count (6 days -> 6 origins per hour bin) -> pooled
    pooled = ConditionalIncrease(max_horizon=1, period_ticks=24, activity_bins=1,
                                 min_samples=10_000, activity_ticks=2).fit(history)
    window = history[: 5 * 24 + 10]
    assert pooled.predict(window, 1, (0.9,)).at(0.9)[0] == window[-1, 0]


def test_activity_bins_raise_headroom_after_arrivals():
    # bursts: a tick that rises is followed by another rise half the time, quiet otherwise
    rng = np.random.default_rng(0)
    rises = np.zeros(3000)
    for t in range(1, 3000):
        rises[t] = rng.random() < (0.5 if rises[t - 1] > 0 else 0.02)
    history = np.cumsum(rises)[:, None]
    model = ConditionalIncrease(max_horizon=1, period_ticks=24, day_bins=1, activity_ticks=1,
                                activity_bins=2, min_samples=20).fit(history)
    after_rise = model.predict(np.array([[0.0], [1.0]]), 1, (0.9,)).at(0.9)[0]
    after_calm = model.predict(np.array([[1.0], [1.0]]), 1, (0.9,)).at(0.9)[0]
    # after a rise P(rise) = 0.5 -> q0.9 increase 1; after calm 0.02 -> 0
    assert after_rise == pytest.approx(2.0)
    assert after_calm == pytest.approx(1.0)


def test_registry_builds_it_with_day_and_hour_in_ticks():
    model = make_forecaster("conditional", 60, max_horizon=6)
    assert isinstance(model, ConditionalIncrease)
    assert (model.period_ticks, model.activity_ticks) == (1440, 60)  # 86400/60, 3600/60


@pytest.mark.parametrize(
    "params",
    [dict(day_bins=0), dict(activity_bins=4), dict(max_horizon=0)],
    ids=["no-day-bins", "too-many-activity-bins", "zero-horizon"],
)
def test_bad_parameters_are_input_errors(params):
    with pytest.raises(InputError):
        ConditionalIncrease(**params).fit(busy_hours_history())


def test_short_history_and_unfitted_model_are_clear_errors():
    with pytest.raises(NotEnoughHistory):
        ConditionalIncrease(max_horizon=3, activity_ticks=12).fit(np.ones((10, 1)))
    with pytest.raises(NotFittedError):
        ConditionalIncrease().predict(np.ones((20, 1)), 1)


@pytest.mark.parametrize(
    "gross, expected",
    [
        # every day: +1 at tick 10, -1 at tick 11; origin tick 9, 2 steps ahead:
        # net increase 10 -> 11 is +1 - 1 = 0; gross (arrivals only) is +1
        (0, 0.0),
        (1, 1.0),
    ],
    ids=["net", "gross"],
)
def test_gross_counts_arrivals_not_netted_by_departures(gross, expected):
    day = [5.0] * 10 + [6.0] + [5.0] * 13
    history = np.array(day * 6)[:, None]
    model = ConditionalIncrease(max_horizon=2, period_ticks=24, activity_ticks=2,
                                activity_bins=1, min_samples=3, gross=gross).fit(history)
    window = history[: 5 * 24 + 10]  # last row is tick 9 of day 6
    assert model.predict(window, 2, (0.9,)).at(0.9, step=2)[0] == pytest.approx(5 + expected)
