"""Rolling-origin backtest (predictor.backtest.rolling): schedule, no look-ahead, refits, skips."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from common.errors import InputError
from predictor.backtest.rolling import (
    LAST_MARGIN,
    BacktestConfig,
    Target,
    backtest,
    first_test_row,
    last_values,
    most_within,
)
from predictor.models.forecast import NotEnoughHistory, make_forecast
from predictor.models.registry import make_forecaster


def fake_clock():
    """Each call is one second later, so every fit or predict 'takes' exactly 1 s."""
    counter = itertools.count()
    return lambda: float(next(counter))


class Recorder:
    """Forecasts the history length (so the test sees what was visible) and records calls."""

    name = "recorder"

    def __init__(self, min_ticks: int = 1, log: list | None = None) -> None:
        self.min_ticks = min_ticks
        self.log = [] if log is None else log

    def min_history(self, for_fit: bool = False) -> int:
        return self.min_ticks

    def fit(self, history, first_tick=0):
        if len(history) < self.min_ticks:
            raise NotEnoughHistory(self.name, self.min_ticks, len(history), "fit")
        self.log.append(("fit", len(history)))
        self.fitted_ = True
        return self

    def predict(self, history, horizon_ticks, quantiles=(0.9,), first_tick=0):
        self.log.append(("predict", len(history)))
        point = np.full((horizon_ticks, history.shape[1]), float(len(history)))
        upper = {q: point + 1 for q in quantiles}
        return make_forecast(point, upper, upper)


def single(values) -> list[Target]:
    return [Target("s", ("s",), np.asarray(values, dtype=float)[:, None])]


@pytest.mark.parametrize(
    "ticks, fraction, first",
    [(10, 0.2, 8), (11, 0.2, 8), (100, 0.2, 80), (5, 0.5, 2)],
    # ceil(0.2 * 11) = 3 -> 11 - 3 = 8; ceil(0.5 * 5) = 3 -> 2
    ids=["10", "11-rounds-up", "100", "half"],
)
def test_first_test_row(ticks, fraction, first):
    assert first_test_row(ticks, fraction) == first


def test_each_forecast_sees_history_up_to_its_origin_only():
    log: list = []
    config = BacktestConfig(horizon_ticks=2, refit_every_ticks=None)
    result = backtest(single(range(10)), {"rec": lambda: Recorder(log=log)}, config,
                      fake_clock())
    # targets 8, 9 at horizon 2 -> origins 6, 7 -> histories of 7 and 8 rows
    assert [n for kind, n in log if kind == "predict"] == [7, 8]
    assert [n for kind, n in log if kind == "fit"] == [7]
    row = next(r for r in result.rows if r.model == "rec")
    # quantile forecast = len + 1 = [8, 9] vs actual [8, 9]: exact, never short
    assert row.metrics.mae == 0.0 and row.metrics.shortfall_rate == 0.0
    assert row.fit_seconds == 1.0 and row.predict_seconds == 1.0


@pytest.mark.parametrize(
    "refit_every, fits",
    [(None, 1), (1, 10), (3, 4), (20, 1)],
    # 10 test ticks (origins o0..o0+9): every 3 -> refits at o0, o0+3, o0+6, o0+9
    ids=["once", "every-tick", "every-3", "longer-than-test"],
)
def test_refit_schedule(refit_every, fits):
    log: list = []
    config = BacktestConfig(horizon_ticks=1, refit_every_ticks=refit_every)
    result = backtest(single(range(50)), {"rec": lambda: Recorder(log=log)}, config,
                      fake_clock())
    assert sum(1 for kind, _ in log if kind == "fit") == fits
    assert next(r for r in result.rows if r.model == "rec").fit_count == fits


def test_model_short_of_history_is_skipped_with_the_reason():
    config = BacktestConfig(horizon_ticks=1)
    result = backtest(single(range(10)), {"rec": lambda: Recorder(min_ticks=100)}, config,
                      fake_clock())
    row = next(r for r in result.rows if r.model == "rec")
    assert row.metrics is None
    assert "needs at least 100 ticks" in row.skipped
    assert row.as_dict()["skipped"] == row.skipped


def test_series_too_short_for_the_horizon_is_skipped():
    # 5 ticks: test row 4, horizon 6 -> origin -2 does not exist
    config = BacktestConfig(horizon_ticks=6)
    result = backtest(single(range(5)), {"rec": Recorder}, config, fake_clock())
    assert "too short" in next(r for r in result.rows if r.model == "rec").skipped
    # ... and so is the last+margin baseline, rather than a row of NaN.
    margin_row = next(r for r in result.rows if r.model == LAST_MARGIN)
    assert margin_row.metrics is None and "too short" in margin_row.skipped


class Flat:
    """Forecasts `level` at every step and for every statistic."""

    name = "flat"

    def __init__(self, level: float = 0.0) -> None:
        self.level = level

    def min_history(self, for_fit=False):
        return 1

    def fit(self, history, first_tick=0):
        return self

    def predict(self, history, horizon_ticks, quantiles=(0.9,), first_tick=0):
        point = np.full((horizon_ticks, history.shape[1]), self.level)
        return make_forecast(point, {q: point for q in quantiles},
                             {q: point for q in quantiles})


def test_the_most_demand_within_the_horizon_is_what_is_scored():
    # 0, 5, 0, 5, ...: at horizon 2 every forecast's horizon holds a 5, though half the
    # targets themselves are 0. A flat 0 falls short on all 4 test ticks (scored on the
    # value at t it would fall short on 2), a flat 5 on none.
    values = np.tile([0.0, 5.0], 10)
    config = BacktestConfig(horizon_ticks=2, refit_every_ticks=None)
    result = backtest(single(values), {"zero": lambda: Flat(0.0), "five": lambda: Flat(5.0)},
                      config, fake_clock())
    rates = {r.model: r.metrics.shortfall_rate for r in result.rows}
    assert rates["zero"] == 1.0 and rates["five"] == 0.0
    # the baseline's margin is tuned against the same statistic: last value (0 or 5) +
    # 5 covers every horizon
    assert next(r for r in result.rows if r.model == LAST_MARGIN).margin == 5.0


@pytest.mark.parametrize(
    "values, horizon, expected",
    [
        # targets 8, 9 (last 20% of 10): h 2 -> max(y7, y8), max(y8, y9)
        ([0, 0, 0, 0, 0, 0, 0, 1, 4, 2], 2, [4.0, 4.0]),
        # h 1: the values themselves
        ([0, 0, 0, 0, 0, 0, 0, 1, 4, 2], 1, [4.0, 2.0]),
        # a missing tick is left out; all missing -> NaN
        ([0, 0, 0, 0, 0, 0, 0, np.nan, np.nan, 2], 2, [np.nan, 2.0]),
    ],
    ids=["h2", "h1", "gaps"],
)
def test_most_within(values, horizon, expected):
    got = most_within(np.array(values, dtype=float)[:, None], BacktestConfig(horizon))
    np.testing.assert_array_equal(got[:, 0], expected)


def test_last_value_carries_over_gaps():
    values = np.array([1.0, 2.0, np.nan, np.nan, 5.0])[:, None]
    # fraction 0.4 -> targets 3, 4; horizon 1 -> origins 2 (NaN -> carried 2.0), 3 (-> 2.0)
    base = last_values(values, BacktestConfig(horizon_ticks=1, test_fraction=0.4))
    assert base[:, 0].tolist() == [2.0, 2.0]


def test_last_margin_row_meets_the_target_shortfall_and_is_per_column():
    rng = np.random.default_rng(7)
    walk = np.cumsum(rng.integers(-3, 4, size=(400, 2)), axis=0) + 100.0
    targets = [Target("buckets", ("a", "b"), walk)]
    config = BacktestConfig(horizon_ticks=2, quantile=0.9)
    factories = {"last": lambda: make_forecaster("last", max_horizon=2)}
    result = backtest(targets, factories, config, fake_clock())
    assert [(r.series, r.model) for r in result.rows] == [
        ("a", "last"), ("a", LAST_MARGIN), ("b", "last"), ("b", LAST_MARGIN)]
    for row in result.rows:
        if row.model == LAST_MARGIN:
            assert row.metrics.shortfall_rate <= 0.1 + 1e-12
            assert row.metrics.ticks == 80  # the last 20% of 400 ticks
        else:
            # the fair comparison uses a margin tuned to this row's own shortfall rate
            assert row.fair_overprovision >= 0
    assert set(result.actual) == {"a", "b"}
    assert result.test_index.tolist() == list(range(320, 400))


def test_nan_actuals_are_skipped_not_scored_as_zero():
    values = np.arange(20.0)
    values[-1] = np.nan
    config = BacktestConfig(horizon_ticks=1)
    result = backtest(single(values), {"rec": Recorder}, config, fake_clock())
    row = next(r for r in result.rows if r.model == "rec")
    assert row.metrics.ticks == 3 and row.metrics.ticks_skipped == 1


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(horizon_ticks=0), "horizon"),
        (dict(horizon_ticks=1, quantile=1.0), "quantile"),
        (dict(horizon_ticks=1, test_fraction=0.0), "test fraction"),
        (dict(horizon_ticks=1, refit_every_ticks=0), "refit"),
    ],
    ids=["horizon", "quantile", "fraction", "refit"],
)
def test_bad_config_is_an_input_error(kwargs, message):
    with pytest.raises(InputError, match=message):
        BacktestConfig(**kwargs)


def test_negative_history_is_refused():
    with pytest.raises(InputError, match="row 1"):
        backtest(single([1.0, -1.0, 2.0]), {"rec": Recorder}, BacktestConfig(1), fake_clock())


def test_as_dict_turns_nan_into_null():
    config = BacktestConfig(horizon_ticks=1)
    result = backtest(single(range(10)), {"rec": Recorder}, config, fake_clock())
    margin_row = next(r for r in result.rows if r.model == LAST_MARGIN).as_dict()
    assert margin_row["fair_overprovision"] is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in margin_row.values())


def row(model, shortfall, over, series="s", quantile=0.9):
    from predictor.backtest.metrics import ErrorMetrics
    from predictor.backtest.rolling import BacktestRow

    metrics = ErrorMetrics(10, 0, 1.0, 1.0, 1.0, 0.0, shortfall, 0.0, 0.0, 0.0, over)
    return BacktestRow(series, model, 2, quantile, metrics)


@pytest.mark.parametrize(
    "rows, chosen",
    [
        # both within 10% + 2%: the one over-providing less wins
        ([row("last", 0.09, 15.0), row("hw", 0.11, 14.0)], "hw"),
        # hw falls short too often (0.13 > 0.12): last wins despite more headroom
        ([row("last", 0.09, 15.0), row("hw", 0.13, 9.0)], "last"),
        # none meets the rate: the least short wins
        ([row("last", 0.20, 1.0), row("hw", 0.15, 9.0)], "hw"),
        # the last+margin yardstick is never chosen
        ([row(LAST_MARGIN, 0.05, 0.1), row("last", 0.09, 15.0)], "last"),
        ([row(LAST_MARGIN, 0.05, 0.1)], None),
    ],
    ids=["both-meet", "one-meets", "none-meets", "not-the-yardstick", "only-yardstick"],
)
def test_choose_model(rows, chosen):
    from predictor.backtest.rolling import choose_model

    picked = choose_model(rows, "s")
    assert (picked.model if picked else None) == chosen


def scored(model, series, shortfall, over, fair, quantile=0.9):
    from dataclasses import replace

    return replace(row(model, shortfall, over, series=series, quantile=quantile),
                   fair_overprovision=fair)


@pytest.mark.parametrize(
    "rows, expected",
    [
        # both meet 10% + 2% on both series: the lower mean over/fair wins:
        # last (10/10 + 4/5) / 2 = 0.9, hw (8/10 + 6/5) / 2 = 1.0
        ([scored("last", "a", 0.09, 10, 10), scored("last", "b", 0.10, 4, 5),
          scored("hw", "a", 0.08, 8, 10), scored("hw", "b", 0.11, 6, 5)], ("last", 0, 0.9)),
        # hw falls short too often on b (0.15 > 0.12): last wins though it over-provides more
        ([scored("last", "a", 0.09, 12, 10), scored("last", "b", 0.10, 6, 5),
          scored("hw", "a", 0.08, 8, 10), scored("hw", "b", 0.15, 1, 5)], ("last", 0, 1.2)),
        # a model not scored on every series is not a candidate
        ([scored("last", "a", 0.09, 12, 10), scored("last", "b", 0.10, 6, 5),
          scored("hw", "a", 0.08, 1, 10)], ("last", 0, 1.2)),
        # the last+margin yardstick is never recommended
        ([scored(LAST_MARGIN, "a", 0.1, 1, 10)], None),
    ],
    ids=["both-meet", "one-too-short", "partly-scored", "only-yardstick"],
)
def test_recommend_one_model_for_every_series(rows, expected):
    from predictor.backtest.rolling import recommend_model

    pick = recommend_model(rows)
    if expected is None:
        assert pick is None
        return
    model, short_on, over = expected
    assert (pick.model, pick.short_on) == (model, short_on)
    assert pick.over_vs_fair == pytest.approx(over)
    assert pick.snippet() == f"forecast: {{model: {model}, quantile: 0.9}}"
