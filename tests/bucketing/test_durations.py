"""The one duration syntax shared by configs and command lines."""

from __future__ import annotations

import pytest

from bucketing.durations import duration_seconds


@pytest.mark.parametrize(
    "value, seconds",
    [
        (300, 300.0),
        (1.5, 1.5),
        ("300", 300.0),
        ("90s", 90.0),
        ("5m", 300.0),
        ("6m30s", 390.0),         # 6 x 60 + 30
        ("1h30m", 5400.0),        # 3600 + 30 x 60
        ("250ms", 0.25),
        ("1.5h", 5400.0),         # 1.5 x 3600
        ("35d", 3_024_000.0),     # 35 x 86,400
        ("1w", 604_800.0),        # 7 x 86,400
        (" 5M ", 300.0),
        (0, 0.0),
    ],
    ids=["int", "float", "digits", "90s", "5m", "6m30s", "1h30m", "ms", "1.5h", "35d", "1w",
         "spaces-upper", "zero"],
)
def test_duration_seconds(value, seconds) -> None:
    assert duration_seconds(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    [True, None, [], "", "m", "5x", "5 m", "-5m", "5m-", "five", float("nan"), float("inf"), -1],
    ids=["bool", "none", "list", "empty", "unit-only", "bad-unit", "inner-space", "negative",
         "trailing", "word", "nan", "inf", "negative-number"],
)
def test_not_a_duration(value) -> None:
    with pytest.raises(ValueError):
        duration_seconds(value)
