"""The one duration syntax shared by configs and command lines."""

from __future__ import annotations

import pytest

from common.durations import duration_seconds, parse_duration
from common.errors import InputError


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


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90.0), ("5m", 300.0), ("6m30s", 390.0), ("250ms", 0.25), (" 1d ", 86_400.0)],
    ids=["90s", "5m", "6m30s-6x60+30", "ms", "spaces"],
)
def test_a_command_line_duration_has_a_unit(text, seconds) -> None:
    assert parse_duration(text, "--horizon") == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text, message",
    [
        ("5", "--node-startup: '5' has no unit; write 5s, 5m or 5h"),
        ("1.5", "--node-startup: '1.5' has no unit; write 1.5s, 1.5m or 1.5h"),
        (" 300 ", "--node-startup: '300' has no unit"),
        ("0s", "--node-startup: must be positive"),
        ("5 m", "--node-startup: '5 m' is not a duration"),
        ("-5m", "--node-startup: '-5m' is negative; a duration is positive (like 90s"),
    ],
    ids=["bare-int", "bare-float", "bare-spaces", "zero", "inner-space", "negative"],
)
def test_a_command_line_duration_without_a_unit_is_refused(text, message) -> None:
    with pytest.raises(InputError) as caught:
        parse_duration(text, "--node-startup")
    assert str(caught.value).startswith(message)


def test_zero_is_a_duration_only_where_the_option_allows_it() -> None:
    assert parse_duration("0s", "--waited", allow_zero=True) == 0.0
    with pytest.raises(InputError, match="--waited: must be positive"):
        parse_duration("0s", "--waited")
    with pytest.raises(InputError, match="has no unit"):  # still needs its unit
        parse_duration("0", "--waited", allow_zero=True)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["simulate", "--trace", "t.csv", "--node-startup", "5"], "--node-startup"),
        (["simulate", "--trace", "t.csv", "--cpu-node-startup", "120"], "--cpu-node-startup"),
        (["backtest", "--trace", "t.csv", "--horizon", "600"], "--horizon"),
        (["trace", "inspect", "t.csv", "--tick", "60"], "--tick"),
        (["buckets", "tune", "--trace", "t.csv", "--tick", "300"], "--tick"),
        (["trace", "export", "--prometheus", "http://127.0.0.1:9", "--since", "3600",
          "--out", "x.csv"], "--since"),
        (["size", "weight", "--minimum", "1", "--cpu", "1", "--memory", "1Gi", "--waited",
          "60"], "--waited"),
        (["size", "weight", "--minimum", "1", "--cpu", "1", "--memory", "1Gi",
          "--starvation", "600"], "--starvation"),
    ],
    ids=["node-startup", "cpu-node-startup", "horizon", "trace-tick", "tune-tick", "since",
         "waited", "starvation"],
)
def test_every_duration_option_refuses_a_bare_number(argv, option, tmp_path, monkeypatch,
                                                     capsys) -> None:
    from headstart.cli import main
    from tests.jobtraces.test_traces_cli import OPENB

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text(OPENB)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{option}: '" in err and "has no unit" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["trace", "inspect", "t.csv", "--tick", "-5m"],
        ["trace", "inspect", "t.csv", "--tick=-5m"],
        ["buckets", "tune", "--trace", "t.csv", "--tick", "-1h"],
        ["simulate", "--trace", "t.csv", "--node-startup", "-5m"],
        ["backtest", "--trace", "t.csv", "--horizon", "-.5h"],
    ],
    ids=["trace-tick", "trace-tick-equals", "tune-tick", "node-startup", "horizon"],
)
def test_a_negative_duration_is_the_options_value_and_refused_by_name(
        argv, tmp_path, monkeypatch, capsys) -> None:
    # argparse alone takes `-5m` for an unknown option ("expected one argument"), which
    # names neither the value nor what is wrong with it.
    from headstart.cli import main
    from tests.jobtraces.test_traces_cli import OPENB

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text(OPENB)
    assert main(argv) == 2
    err = capsys.readouterr().err
    option, value = argv[-1].split("=") if "=" in argv[-1] else argv[-2:]
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"error: {option}: {value!r} is negative; a duration is positive" in err
