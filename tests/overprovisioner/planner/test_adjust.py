"""Fallback and stabilization across ticks (pure): table cases with the arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from overprovisioner.planner.adjust import ForecastAdjuster
from predictor.models.fallback import FallbackConfig

H, TAU = 2, 2


def make(window=2, enter=1.0, leave=0.25) -> ForecastAdjuster:
    return ForecastAdjuster(H, TAU, 1.0, FallbackConfig(window, enter, leave))


def ahead(*values: float) -> np.ndarray:
    """Forecast rows for steps 1..H+TAU of one series; step 1 is not used by the plan."""
    return np.array([[0.0], *([v] for v in values)])


def run(adjuster, ticks):
    """ticks: (tick, actual now, forecast for steps 2..4) -> planned at each tick."""
    return [float(adjuster.adjust(["g5.xlarge"], t, np.array([a]), ahead(*f)).planned[0])
            for t, a, f in ticks]


@pytest.mark.parametrize(
    "ticks, expected",
    [
        # Planned 5, 5, then the forecast dips to 2 for one step and comes back:
        # series [5, 5, 2, 5, 5] -> the 1-tick level 2 < tau=2 is filled to max(5, 5).
        ([(0, 5, (5, 5, 5)), (1, 5, (5, 5, 5)), (2, 5, (2, 5, 5))], [5, 5, 5]),
        # A lasting rise to 8 (through the end of the series) is kept at once.
        ([(0, 2, (2, 2, 2)), (1, 2, (2, 2, 2)), (2, 2, (8, 8, 8))], [2, 2, 8]),
        # A one-step spike to 8 is flattened to the larger neighbour, 2.
        ([(0, 2, (2, 2, 2)), (1, 2, (2, 2, 2)), (2, 2, (8, 2, 2))], [2, 2, 2]),
        # Half a node of wiggle is below rho = 1: no new level, planned as forecast.
        ([(0, 2, (2, 2, 2)), (1, 2, (2.5, 2, 2))], [2, 2.5]),
    ],
    ids=["dip-filled", "lasting-rise", "spike-flattened", "wiggle-kept"],
)
def test_stabilization(ticks, expected) -> None:
    assert run(make(), ticks) == expected


def test_fallback_plans_reactively_until_the_forecast_recovers() -> None:
    adjuster = make(window=2, enter=1.0, leave=0.25)
    # Tick 0 and 1 forecast 2 nodes for ticks 2 and 3 (H = 2); demand turns out 6.
    # Tick 2: shortfall 6 - 2 = 4, mean 4 > 1 -> reactive: plan the 6 seen now.
    # Tick 3: shortfall 4 again -> still reactive.
    # Ticks 2 and 3 forecast 6 for ticks 4 and 5; actual 6: shortfalls 0, mean over the
    # 2-tick window (4, 0) = 2 at tick 4 -> still reactive; (0, 0) = 0 at tick 5 -> back.
    flat = (2, 2, 2)
    six = (6, 6, 6)
    results = [adjuster.adjust(["g5.xlarge"], t, np.array([a]), ahead(*f))
               for t, a, f in [(0, 2, flat), (1, 2, flat), (2, 6, six), (3, 6, six),
                               (4, 6, six), (5, 6, six)]]
    assert [r.reactive[0] for r in results] == [False, False, True, True, True, False]
    assert float(results[2].planned[0]) == 6 and float(results[2].mean_shortfall[0]) == 4


def test_a_new_column_list_resets_the_state() -> None:
    adjuster = make()
    run(adjuster, [(0, 5, (5, 5, 5)), (1, 5, (5, 5, 5))])
    result = adjuster.adjust(["g5.xlarge", "p4d.24xlarge"], 2, np.array([5.0, 1.0]),
                             np.array([[0, 0], [2, 1], [5, 1], [5, 1]], dtype=float))
    # No past plans any more: series [2, 5, 5] keeps its first value.
    assert result.planned.tolist() == [2.0, 1.0]


def test_the_same_tick_twice_counts_once() -> None:
    # The loop re-runs a tick when this replica becomes the leader mid-tick. Window 2:
    # forecast 2 for tick 2 (made at tick 0), actual 5 -> shortfall 3 >= enter 1:
    # reactive, plan the actual 5. Run again, tick 2 must be scored the same way, not
    # as a second tick whose forecast is missing (a NaN pushing real shortfalls out).
    once, twice = make(), make()
    ticks = [(0, 2, (2, 2, 2)), (1, 2, (2, 2, 2)), (2, 5, (5, 5, 5))]
    expected = run(once, ticks)
    assert run(twice, ticks[:2]) + run(twice, ticks[2:]) == expected
    assert run(twice, ticks[2:]) == expected[2:]  # again, as on a wake
    assert twice.state.reactive == once.state.reactive == (True,)
    np.testing.assert_array_equal(np.array(twice.state.shortfalls),
                                  np.array(once.state.shortfalls))  # [[nan], [3]]
    assert expected[2] == 5.0


def test_without_a_fallback_every_series_follows_the_forecast():
    # The forecast for tick 2 (made at tick 0: 1) falls 9 short of the actual 10 at tick
    # 2: with a fallback (window 2, enter 1) the plan turns reactive and plans 10; without
    # one it keeps the forecast 1 (no stabilization here: tau 0).
    ticks = [(0, 0, (1, 1, 1)), (1, 0, (1, 1, 1)), (2, 10, (1, 1, 1))]
    with_fallback = ForecastAdjuster(H, 0, 1.0, FallbackConfig(2, 1.0, 0.25))
    without = ForecastAdjuster(H, 0, 1.0, None)
    assert run(with_fallback, ticks) == [1, 1, 10]
    assert run(without, ticks) == [1, 1, 1]
    assert without.adjust(["g5.xlarge"], 3, np.array([10.0]), ahead(1, 1, 1)).reactive == (False,)
