"""Stabilization (rho, tau) on hand-computed planned series."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import ConfigError
from predictor.models.stabilize import StabilizeConfig, stabilize


@pytest.mark.parametrize(
    "series, rho, tau_ticks, expected",
    [
        # a 1-tick dip to 5 between 8s: neighbours 8 and 8 -> 8
        ([8, 8, 5, 8, 8], 1, 2, [8, 8, 8, 8, 8]),
        # a 1-tick spike to 8 between 5s: larger neighbour is 5 -> 5
        ([5, 5, 8, 5, 5], 1, 2, [5, 5, 5, 5, 5]),
        # 5.5 - 5 = 0.5 < rho: not a new level
        ([5, 5, 5.5, 5, 5], 1, 2, [5, 5, 5.5, 5, 5]),
        # the 8s last 2 ticks, not shorter than tau = 2: kept
        ([5, 5, 8, 8, 5, 5], 1, 2, [5, 5, 8, 8, 5, 5]),
        # ... but shorter than tau = 3: max(5, 5) = 5
        ([5, 5, 8, 8, 5, 5], 1, 3, [5, 5, 5, 5, 5, 5]),
        # staircase: 7 lasts 1 tick, neighbours 5 and 9 -> 9 (scale up one tick earlier)
        ([5, 7, 9, 9], 1, 2, [5, 9, 9, 9]),
        # the last level may still last: kept
        ([5, 5, 8], 1, 2, [5, 5, 8]),
        # a level is a run of values within rho of each other: 8, 8.5 is one 2-tick level
        ([5, 8, 8.5, 5], 1, 3, [5, 5, 5, 5]),
        # rho = 4: the 3-node dip is no level change at all
        ([8, 8, 5, 8, 8], 4, 2, [8, 8, 5, 8, 8]),
        # tau 0 turns stabilization off
        ([8, 8, 5, 8, 8], 1, 0, [8, 8, 5, 8, 8]),
        # two short dips in a row: 6 -> max(9, 4) = 9, then 4 -> max(9, 9) = 9
        ([9, 6, 4, 9, 9], 1, 2, [9, 9, 9, 9, 9]),
    ],
    ids=["dip", "spike", "below-rho", "long-enough", "tau-3", "staircase", "last-level",
         "level-within-rho", "rho-4", "tau-0", "two-dips"],
)
def test_stabilize_table(series, rho, tau_ticks, expected):
    np.testing.assert_array_equal(stabilize(np.array(series, float), rho, tau_ticks), expected)


def test_columns_are_stabilized_independently_and_input_is_untouched():
    planned = np.array([[8, 5], [5, 5], [8, 8], [8, 5]], dtype=float)
    before = planned.copy()
    # column 0: dip 5 -> 8; column 1: spike 8 at row 2 -> max(5, 5) = 5
    np.testing.assert_array_equal(stabilize(planned), [[8, 5], [8, 5], [8, 5], [8, 5]])
    np.testing.assert_array_equal(planned, before)


@pytest.mark.parametrize(
    "config, tick_seconds, expected",
    [
        (StabilizeConfig(), 300, 2),  # 600 / 300
        (StabilizeConfig(tau_seconds=600), 240, 3),  # 600 / 240 = 2.5 -> 3
        (StabilizeConfig(tau_seconds=0), 300, 0),
    ],
    ids=["default-5m", "round-up", "off"],
)
def test_tau_in_ticks(config, tick_seconds, expected):
    assert config.tau_ticks(tick_seconds) == expected


def test_bad_config_is_a_config_error():
    with pytest.raises(ConfigError, match="rho"):
        StabilizeConfig(rho=0).tau_ticks(300)
