"""Metric definitions (predictor.backtest.metrics): each expected number with its arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from common.errors import InputError
from predictor.backtest.metrics import error_metrics, tune_margin

NAN = math.nan


@pytest.mark.parametrize(
    "forecast, actual, expected",
    [
        # e = f - a = [-1, 0, 2]
        ([3, 5, 2], [4, 5, 0], dict(
            ticks=3, mae=1.0,                      # (1 + 0 + 2) / 3
            mse=5 / 3, rmse=math.sqrt(5 / 3),      # (1 + 0 + 4) / 3
            pmse=4 / 3,                            # only e > 0 counts: 2^2 / 3 ticks
            shortfall_rate=1 / 3,                  # one tick with f < a
            mean_shortfall=1 / 3,                  # (1 + 0 + 0) / 3
            mean_shortfall_when_short=1.0,         # 1 / 1 short tick
            mean_overprovision=2 / 3)),            # (0 + 0 + 2) / 3
        # never short: pmse equals mse; shortfall metrics are 0
        ([2, 2], [1, 0], dict(ticks=2, mae=1.5, mse=2.5, pmse=2.5, shortfall_rate=0.0,
                              mean_shortfall=0.0, p95_shortfall=0.0,
                              mean_shortfall_when_short=0.0, mean_overprovision=1.5)),
        # always short by 4: pmse 0; p95 of [4, 4] = 4
        ([0, 0], [4, 4], dict(pmse=0.0, shortfall_rate=1.0, mean_shortfall=4.0,
                              p95_shortfall=4.0, mean_overprovision=0.0)),
        # a NaN on either side drops the pair: only (1 vs 3) is left, e = -2
        ([1, NAN, 5], [3, 2, NAN], dict(ticks=1, ticks_skipped=2, mae=2.0, shortfall_rate=1.0)),
    ],
    ids=["mixed", "always-over", "always-short", "nan-pairs-skipped"],
)
def test_error_metrics(forecast, actual, expected):
    metrics = error_metrics(np.array(forecast, float), np.array(actual, float)).as_dict()
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value), name


def test_p95_shortfall_interpolates_over_all_ticks():
    # shortfalls 0 x 19 and 20 x 1 -> numpy's linear p95 of 20 values: position 18.05 -> 0 +
    # 0.05 * (20 - 0) = 1.0
    actual = np.array([0.0] * 19 + [20.0])
    assert error_metrics(np.zeros(20), actual).p95_shortfall == pytest.approx(1.0)


def test_nothing_to_measure_is_nan_not_zero():
    metrics = error_metrics(np.array([NAN, 1.0]), np.array([1.0, NAN]))
    assert metrics.ticks == 0 and metrics.ticks_skipped == 2
    assert math.isnan(metrics.mae) and math.isnan(metrics.shortfall_rate)


def test_length_mismatch_is_an_input_error():
    with pytest.raises(InputError, match="3 values, actual 2"):
        error_metrics(np.zeros(3), np.zeros(2))


@pytest.mark.parametrize(
    "base, actual, rate, margin",
    [
        # needs (a - base) = 1..10; 10% of 10 ticks may be short -> m = 9 leaves only 10 short
        ([0] * 10, list(range(1, 11)), 0.1, 9.0),
        # 0% short -> m covers the largest need, 10
        ([0] * 10, list(range(1, 11)), 0.0, 10.0),
        # needs -2, -1, 0, 5 with 25%: one may stay short (the 5) -> m = 0
        ([5, 5, 5, 5], [3, 4, 5, 10], 0.25, 0.0),
        # base far above actual: needs all -3; 0% short -> m = -3 (a negative margin)
        ([5, 5], [2, 2], 0.0, -3.0),
        # ties: needs [1, 1, 1, 1]; 30% of 4 = 1.2 -> 1 may be short, but m = 1 makes 0 short
        ([0] * 4, [1] * 4, 0.3, 1.0),
    ],
    ids=["ten-percent", "zero-percent", "mixed-signs", "negative-margin", "ties"],
)
def test_tune_margin(base, actual, rate, margin):
    got = tune_margin(np.array(base, float), np.array(actual, float), rate)
    assert got == pytest.approx(margin)
    short = np.mean(np.array(base) + got < np.array(actual))
    assert short <= rate + 1e-12
    # and it is the smallest such margin: a hair less is short more often than allowed
    assert np.mean(np.array(base) + got - 1e-6 < np.array(actual)) > rate


def test_tune_margin_refuses_bad_rate():
    with pytest.raises(InputError, match="outside"):
        tune_margin(np.zeros(2), np.zeros(2), 1.5)
