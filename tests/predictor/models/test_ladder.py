"""Cold-start ladder tables."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import ConfigError, InputError
from predictor.models.ladder import LadderConfig, cold_start, default_headroom

BUCKETS = ("m5.large", "g4dn.xlarge", "p4d.24xlarge")


@pytest.mark.parametrize(
    "history, needed, headroom, expected_active, expected_planned",
    [
        # no history at all: current 0 + headroom
        (np.zeros((0, 3)), 10, {"g4dn.xlarge": 1}, True, [0, 1, 0]),
        # 2 ticks < 10: last tick [3, 1, 0] + [0, 1, 1]
        ([[1, 0, 0], [3, 1, 0]], 10, {"g4dn.xlarge": 1, "p4d.24xlarge": 1}, True, [3, 2, 1]),
        # last tick has a gap in bucket 0: the last observed value (2) is used, not 0
        ([[2, 0, 0], [np.nan, 1, 0]], 10, {}, True, [2, 1, 0]),
        # enough history: the ladder steps aside
        ([[1, 1, 1]] * 10, 10, {"g4dn.xlarge": 1}, False, [0, 0, 0]),
    ],
    ids=["empty", "short", "gap", "enough"],
)
def test_cold_start_table(history, needed, headroom, expected_active, expected_planned):
    result = cold_start(BUCKETS, np.array(history, float), needed, LadderConfig(headroom))
    assert result.active is expected_active
    np.testing.assert_array_equal(result.planned, expected_planned)


def test_default_headroom_takes_the_smallest_gpu_buckets():
    gpus = {"m5.large": 0, "p4d.24xlarge": 8, "g4dn.xlarge": 1, "g4dn.12xlarge": 4}
    assert default_headroom(gpus) == {"g4dn.xlarge": 1, "g4dn.12xlarge": 1}
    assert default_headroom(gpus, smallest=1) == {"g4dn.xlarge": 1}


@pytest.mark.parametrize(
    "headroom, message",
    [({"a100": 1}, "unknown buckets \\['a100'\\]"), ({"g4dn.xlarge": -1}, "whole number")],
    ids=["unknown-bucket", "negative"],
)
def test_bad_ladder_config(headroom, message):
    with pytest.raises(ConfigError, match=message):
        cold_start(BUCKETS, np.zeros((0, 3)), 10, LadderConfig(headroom))


def test_history_with_other_bucket_count():
    with pytest.raises(InputError, match="3 buckets"):
        cold_start(BUCKETS, np.ones((2, 2)), 10, LadderConfig())
