"""`headstart backtest` end to end: real files in, JSON or a table out, bad input -> exit 2."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import headstart.cli as headstart_cli
from common.durations import parse_duration
from jobtraces.synthetic import SyntheticWorkload, generate
from jobtraces.write import write_job_table

REQUIRED_KEYS = {"series", "model", "horizon_ticks", "quantile", "mae", "rmse", "pmse",
                 "shortfall_rate", "mean_shortfall", "mean_overprovision", "fit_seconds"}


@pytest.fixture
def run(monkeypatch, capsys):
    """Run `headstart ARGS` with only this package's commands (others may be mid-build)."""
    monkeypatch.setattr(headstart_cli, "COMMAND_MODULES", ("predictor.cli",))

    def invoke(*argv: str) -> tuple[int, str, str]:
        code = headstart_cli.main([str(a) for a in argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def write_series(tmp_path, values, name="s.csv", times=None):
    times = np.arange(len(values)) * 300 if times is None else times
    path = tmp_path / name
    pd.DataFrame({"time": times, "gpus": values}).to_csv(path, index=False)
    return path


def wave(ticks=600):
    # a daily-ish wave plus a slow trend; integer counts like GPUs
    t = np.arange(ticks)
    return np.round(50 + 20 * np.sin(2 * np.pi * t / 288) + t / 50).astype(int)


def test_json_rows_have_the_contract_keys(run, tmp_path):
    code, out, err = run("backtest", "--series", write_series(tmp_path, wave()), "--column",
                         "gpus", "--horizon", "10m", "--models", "last,seasonal", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["model"] for r in rows] == ["last", "seasonal", "last+margin"]
    for row in rows:
        assert REQUIRED_KEYS <= set(row)
        assert row["series"] == "gpus" and row["horizon_ticks"] == 2  # 10 min / 5 min
        assert row["quantile"] == 0.9
    margin_row = rows[-1]
    assert margin_row["shortfall_rate"] <= 0.1


def test_model_short_of_history_is_reported_skipped(run, tmp_path):
    # 100 ticks: a 1-day seasonal model needs more -> skipped with the reason, last still runs
    code, out, err = run("backtest", "--series", write_series(tmp_path, wave(100)),
                         "--horizon", "5m", "--models", "last,seasonal", "--json")
    assert code == 0, err
    rows = {r["model"]: r for r in json.loads(out)}
    # seasonal fit needs period 288 + max_horizon 1 = 289 ticks; the origin history has 80
    assert "289" in rows["seasonal"]["skipped"] and rows["seasonal"]["mae"] is None
    assert rows["last"]["skipped"] is None


def test_human_table_and_plot(run, tmp_path):
    plot = tmp_path / "bt.png"
    code, out, err = run("backtest", "--series", write_series(tmp_path, wave()), "--horizon",
                         "10m", "--models", "last", "--plot", plot)
    assert code == 0, err
    assert "last+margin" in out and "short%" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trace_gives_buckets_and_total_gpus(run, tmp_path):
    trace = write_job_table(generate(SyntheticWorkload(days=3.0, seed=1)), tmp_path / "t.csv")
    code, out, err = run("backtest", "--trace", trace, "--horizon", "10m", "--tick", "10m",
                         "--models", "last", "--json", "--refit-every", "never")
    assert code == 0, err
    rows = json.loads(out)
    series = {r["series"] for r in rows}
    assert "total_gpus" in series and len(series) >= 2  # at least one bucket with demand
    assert all(r["horizon_ticks"] == 1 for r in rows)


@pytest.mark.parametrize(
    "extra, values, message",
    [
        (["--models", "last,prophet"], None, "unknown forecaster 'prophet'"),
        (["--horizon", "7m"], None, "not a whole number of 300-s ticks"),
        (["--horizon", "soon"], None, "not a duration"),
        (["--quantile", "1.5"], None, "quantile"),
        ([], [1, 2, -3, 4], "line 4: gpus is -3"),
        (["--column", "nope"], None, "no column 'nope'"),
        (["--format", "alibaba-dlrm"], None, "--format goes with --trace"),
        (["--gpu-sharing"], None, "--gpu-sharing goes with --trace"),
        (["--test-fraction", "1.5"], None, "test fraction"),
        (["--refit-every", "weekly"], None, "not a duration"),
        (["--plot", "bt.txt"], None, "cannot draw a txt file"),
    ],
    ids=["unknown-model", "horizon-off-tick", "horizon-garbage", "quantile", "negative",
         "unknown-column", "format-with-series", "gpu-sharing-with-series", "test-fraction",
         "refit", "plot-format"],
)
def test_bad_input_is_one_line_and_exit_2(run, tmp_path, extra, values, message):
    path = write_series(tmp_path, wave(50) if values is None else values)
    argv = ["backtest", "--series", path, "--horizon", "10m", *extra]
    code, out, err = run(*argv)
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_duplicated_conflicting_ticks_exit_2(run, tmp_path):
    path = write_series(tmp_path, [1, 2, 3], times=[0, 300, 300])
    code, _, err = run("backtest", "--series", path, "--horizon", "5m")
    assert code == 2 and "lines 3 and 4" in err


def test_a_trace_without_gpu_pods_exit_2(run, tmp_path):
    table = generate(SyntheticWorkload(days=1.0, seed=2))
    cpu_only = replace(table, frame=table.frame.assign(gpus=0, gpu_milli=0))
    trace = write_job_table(cpu_only, tmp_path / "cpu.csv")
    code, _, err = run("backtest", "--trace", trace, "--horizon", "10m")
    assert code == 2 and "no pod asks for a GPU" in err, err
    assert err.count("\n") == 1


def test_a_horizon_no_model_can_test_exit_2(run, tmp_path):
    code, _, err = run("backtest", "--series", write_series(tmp_path, wave(50)), "--column",
                       "gpus", "--horizon", "1000d")
    assert code == 2 and "every model was skipped on every series: series of 50 ticks" in err
    assert err.count("\n") == 1


def test_missing_trace_exit_2(run, tmp_path):
    code, _, err = run("backtest", "--trace", tmp_path / "absent.csv", "--horizon", "10m")
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("text, seconds", [("10m", 600), ("1d", 86400), ("300s", 300),
                                           ("1.5h", 5400), ("6m30s", 390)],
                         ids=["min", "day", "s", "frac", "compound-6x60+30"])
def test_parse_duration(text, seconds):
    assert parse_duration(text, "--x") == seconds


@pytest.mark.traces
def test_real_helios_backtest_last_beats_seasonal(run, traces_dir):
    # README: on the real series seasonal naive is far worse than the last value.
    code, out, err = run("backtest", "--series", traces_dir / "helios-earth-gpu-5min.csv.gz",
                         "--column", "gpus_running", "--horizon", "10m",
                         "--models", "last,seasonal", "--json")
    assert code == 0, err
    rows = {r["model"]: r for r in json.loads(out)}
    assert rows["last"]["mae"] * 3 < rows["seasonal"]["mae"]
    assert rows["last+margin"]["shortfall_rate"] <= 0.1


@pytest.mark.parametrize(
    "text",
    [
        # what `headstart buckets tune --out` writes
        "buckets:\n  catalog: aws\n  instance_types:\n  - m5.large\n  - g4dn.xlarge\n",
        "- m5.large\n- g4dn.xlarge\n",
        "buckets:\n- name: m5.large\n- name: g4dn.xlarge\n",
    ],
    ids=["tune-out", "list", "list-of-names"],
)
def test_buckets_file_limits_the_series(run, tmp_path, text):
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text(text)
    trace = write_job_table(generate(SyntheticWorkload(days=2.0, seed=2)), tmp_path / "t.csv")
    code, out, err = run("backtest", "--trace", trace, "--buckets", buckets, "--horizon",
                         "10m", "--tick", "10m", "--models", "last", "--json")
    assert code == 0, err
    assert {r["series"] for r in json.loads(out)} <= {"m5.large", "g4dn.xlarge", "total_gpus"}


def test_buckets_file_with_an_unknown_type_exit_2(run, tmp_path):
    buckets = tmp_path / "buckets.yaml"
    buckets.write_text("- m5.large\n- q9.huge\n")
    trace = write_job_table(generate(SyntheticWorkload(days=1.0, seed=2)), tmp_path / "t.csv")
    code, _, err = run("backtest", "--trace", trace, "--buckets", buckets, "--horizon", "10m")
    assert code == 2 and "unknown instance type 'q9.huge'" in err


def write_history(path, ticks=400):
    from predictor.live.store import HistoryStore

    t0 = 1_700_000_100.0
    counts = wave(ticks)
    with HistoryStore(path, 300) as store:
        for i, count in enumerate(counts):
            if i == 100:
                store.write_gaps(t0 + i * 300, t0 + (i + 1) * 300)  # recorder was down
                continue
            store.write_tick(t0 + i * 300, {"g5.xlarge": float(count),
                                            "p4d.24xlarge@pg-a": float(count // 10),
                                            "total:gpus_running": float(count),
                                            "total:gpus_pending": 1.0})
    return path


def test_history_file_from_the_recorder(run, tmp_path):
    history = write_history(tmp_path / "history.sqlite")
    code, out, err = run("backtest", "--history", history, "--horizon", "10m", "--models",
                         "last", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert {r["series"] for r in rows} == {"g5.xlarge", "p4d.24xlarge@pg-a", "total_gpus"}
    assert all(r["ticks"] == 80 for r in rows)  # last 20% of 400 ticks, gap well before


@pytest.mark.parametrize(
    "content, extra, message",
    [
        (None, [], "no such history file"),
        (b"not sqlite at all" * 64, [], "not a headstart history"),
        ("history", ["--tick", "5m"], "keeps the tick it was recorded at"),
        ("history", ["--catalog", "aws"], "--catalog goes with --trace"),
    ],
    ids=["missing", "not-sqlite", "tick", "catalog"],
)
def test_bad_history_exit_2(run, tmp_path, content, extra, message):
    path = tmp_path / "history.sqlite"
    if content == "history":
        write_history(path, ticks=20)
    elif content is not None:
        path.write_bytes(content)
    code, _, err = run("backtest", "--history", path, "--horizon", "10m", *extra)
    assert code == 2 and message in err


def test_default_model_is_the_services_and_one_model_is_recommended(run, tmp_path):
    from overprovisioner.config import ForecastConfig

    code, out, err = run("backtest", "--series", write_series(tmp_path, wave()), "--column",
                         "gpus", "--horizon", "10m", "--quantile", "0.95")
    assert code == 0, err
    models = [line.split()[1] for line in out.splitlines() if line.startswith("gpus ")]
    assert models == [ForecastConfig().model, "last+margin"]
    ranked = next(line for line in out.splitlines() if line.startswith("ranks first"))
    assert ranked.startswith("ranks first by forecast error, one model for all 1 bucket "
                             "series (the lowest over-provision, as the mean of each series'")
    assert f"): {ForecastConfig().model} (falls short on" in ranked
    # The config to run is the simulator's to recommend (cost against headroom), not this;
    # a series holds no jobs to replay, so no command is made up for it.
    assert out.splitlines()[-1] == (
        "  forecast error is not cost: which model and quantile to configure is the verdict "
        "of `headstart simulate` on the job trace this series came from, which runs "
        "predictive with each and names one")
    assert "config: forecast:" not in out


def test_the_simulate_command_it_prints_runs_the_same_trace_and_buckets(run, tmp_path):
    """The command is the one to paste: the trace, the bucket list and the horizon as the
    node start-up, and the simulator's own parser accepts it."""
    import shlex

    from overprovisioner.sim.cli import register as register_simulate

    buckets = tmp_path / "my buckets.yaml"
    buckets.write_text("- m5.large\n- g4dn.xlarge\n")
    trace = write_job_table(generate(SyntheticWorkload(days=2.0, seed=2)), tmp_path / "t.csv")
    code, out, err = run("backtest", "--trace", trace, "--buckets", buckets, "--horizon",
                         "10m", "--tick", "10m", "--models", "last,last_adaptive")
    assert code == 0, err
    command = out.splitlines()[-1].split("`")[1]
    argv = shlex.split(command)
    assert argv[:2] == ["headstart", "simulate"]
    import argparse

    parser = argparse.ArgumentParser()
    register_simulate(parser.add_subparsers())
    parsed = parser.parse_args(argv[1:])
    assert (parsed.trace, parsed.buckets, parsed.node_startup, parsed.models) == (
        str(trace), str(buckets), "10m", "last,last_adaptive")
