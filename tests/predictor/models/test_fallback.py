"""The reactive fallback state machine, tick by tick."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import ConfigError, InputError
from predictor.models.fallback import FallbackConfig, FallbackState, initial_state, step

CONFIG = FallbackConfig(window_ticks=3, enter_mean_shortfall=1.0, exit_mean_shortfall=0.25)


def run(ticks, config=CONFIG):
    """Feed (predicted, actual, forecast_ahead) scalars for one series; collect decisions."""
    state = initial_state(1)
    decisions = []
    for predicted, actual, ahead in ticks:
        state, decision = step(state, np.array([predicted]), np.array([actual]),
                               np.array([ahead]), config)
        decisions.append((decision.reactive[0], float(decision.planned[0]),
                          float(decision.mean_shortfall[0])))
    return decisions


@pytest.mark.parametrize(
    "ticks, expected",
    [
        # never short: stays on the forecast, plans the forecast ahead
        ([(5, 4, 6), (5, 5, 6)], [(False, 6.0, 0.0), (False, 6.0, 0.0)]),
        # shortfalls 2, 2: means 2/1 = 2 > 1 -> reactive at once, plans actual 7
        ([(5, 7, 6), (5, 7, 6)], [(True, 7.0, 2.0), (True, 7.0, 2.0)]),
        # shortfall 3 then 0, 0 over a 3-tick window: means 3, 1.5, 1.0 -> stays reactive
        # while mean > exit 0.25; then 0,0,0 -> mean 0 -> back to the forecast
        ([(5, 8, 6), (8, 8, 9), (8, 8, 9), (8, 8, 9)],
         [(True, 8.0, 3.0), (True, 8.0, 1.5), (True, 8.0, 1.0), (False, 9.0, 0.0)]),
        # shortfall exactly 1: mean 1 is not > enter 1 -> stays on the forecast
        ([(5, 6, 7)], [(False, 7.0, 1.0)]),
        # a missing actual adds nothing and keeps the mode: mean stays 2
        ([(5, 7, 6), (5, np.nan, 6)], [(True, 7.0, 2.0), (True, 6.0, 2.0)]),
    ],
    ids=["no-shortfall", "enter", "recover", "at-threshold", "gap"],
)
def test_fallback_table(ticks, expected):
    assert run(ticks) == expected


def test_hysteresis_holds_between_exit_and_enter():
    # mean 0.5 is above exit 0.25 and below enter 1: reactive stays reactive,
    # forecast mode stays forecast mode.
    config = FallbackConfig(window_ticks=2, enter_mean_shortfall=1.0, exit_mean_shortfall=0.25)
    reactive = FallbackState(reactive=(True,), shortfalls=((1.0,),))
    following = FallbackState(reactive=(False,), shortfalls=((1.0,),))
    # new shortfall 0 -> window (1, 0) -> mean 0.5
    args = (np.array([5.0]), np.array([5.0]), np.array([6.0]), config)
    assert step(reactive, *args)[1].reactive == (True,)
    assert step(following, *args)[1].reactive == (False,)


def test_series_are_independent_and_state_is_not_mutated():
    state = initial_state(2)
    new_state, decision = step(state, np.array([5.0, 5.0]), np.array([9.0, 5.0]),
                               np.array([6.0, 6.0]), CONFIG)
    assert decision.reactive == (True, False)
    np.testing.assert_array_equal(decision.planned, [9.0, 6.0])
    assert state == initial_state(2)
    assert new_state.shortfalls == ((4.0, 0.0),)


def test_bad_inputs():
    with pytest.raises(InputError, match="expected 2 series"):
        step(initial_state(2), np.array([1.0]), np.array([1.0]), np.array([1.0]))
    with pytest.raises(ConfigError, match="exit_mean_shortfall"):
        step(initial_state(1), np.array([1.0]), np.array([1.0]), np.array([1.0]),
             FallbackConfig(enter_mean_shortfall=0.1, exit_mean_shortfall=0.5))
