"""`headstart trace synth|inspect` through the real entry point: output, files, bad input."""

from __future__ import annotations

import json

import pytest

from common.durations import parse_duration
from common.errors import InputError
from headstart.cli import main
from jobtraces.load import load_trace

OPENB = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
    "p0,4000,1024,2,500,,LS,Running,0,,0\n"  # before the trace, 2 x 500 = 1 GPU
    "p1,8000,1024,1,1000,,BE,Failed,1000,1600,1000\n"
    "p2,2000,512,1,1000,,BE,Pending,1100,1200,\n"
)


def test_synth_writes_a_loadable_table(tmp_path, capsys):
    out = tmp_path / "synth.csv.gz"
    assert main(["trace", "synth", "--seed", "3", "--days", "2", "--out", str(out)]) == 0
    table = load_trace(out)
    assert table.trace_end_s == 2 * 86_400
    assert f"wrote {out}: {len(table)} pods" in capsys.readouterr().out


def test_synth_same_seed_same_bytes(tmp_path):
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    for path in (first, second):
        assert main(["trace", "synth", "--seed", "5", "--days", "1", "--out", str(path)]) == 0
    assert first.read_bytes() == second.read_bytes()


def test_inspect_json(tmp_path, capsys):
    path = tmp_path / "openb.csv"
    path.write_text(OPENB)
    assert main(["trace", "inspect", str(path), "--json", "--tick", "100s"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["pods"] == 3 and summary["jobs"] == 3
    assert (summary["trace_start_s"], summary["trace_end_s"]) == (1000, 1600)
    assert summary["censoring"] == {
        "started_before_trace": 1,
        "running_at_end": 1,
        "never_scheduled": 1,
        "dropped": {},
    }
    # p0 (1 GPU) + p1 (1 GPU) run from 1000 to 1600; p2 never runs
    assert summary["peak_running_gpus"] == 2.0
    assert summary["requested_gpus_total"] == 3.0  # 1 + 1 + 1
    assert summary["requested_cpus_total"] == 14.0  # 4 + 8 + 2
    # Alibaba traces carry no lead information
    assert (summary["pods_known_ahead"], summary["median_known_lead_s"]) == (0, None)


def test_inspect_counts_pods_known_ahead(tmp_path, capsys):
    path = tmp_path / "synth.csv"
    assert main(["trace", "synth", "--days", "2", "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["trace", "inspect", str(path)]) == 0
    out = capsys.readouterr().out
    # the synthetic CronJob runs are known an hour (3600 s) ahead; queued jobs that
    # waited less, so the median lead is at most that
    line = next(text for text in out.splitlines() if text.startswith("known"))
    count = int(line.split()[1])
    lead = float(line.rsplit("median lead ", 1)[1].split()[0])
    assert count > 0 and 0 < lead <= 3600


def test_inspect_text(tmp_path, capsys):
    path = tmp_path / "openb.csv"
    path.write_text(OPENB)
    assert main(["trace", "inspect", str(path), "--format", "alibaba-openb"]) == 0
    out = capsys.readouterr().out
    assert "pods       3 in 3 jobs" in out
    assert "1 started before the trace, 1 running at its end, 1 never scheduled" in out


BAD = [
    (["trace", "inspect", "{tmp}/nope.csv"], "nope.csv: no such file", "missing-file"),
    (["trace", "inspect", "{tmp}/openb.csv", "--format", "x"], "unknown trace format 'x'",
     "unknown-format"),
    (["trace", "inspect", "{tmp}/openb.csv", "--tick", "soon"], "--tick: 'soon'", "bad-tick"),
    (["trace", "inspect", "{tmp}/bad.csv"], "bad.csv:2: column cpu_milli: 'many'",
     "bad-cell"),
    (["trace", "inspect", "{tmp}/empty.csv"], "empty.csv: the file is empty", "empty"),
    (["trace", "synth", "--days", "-1", "--out", "{tmp}/s.csv"], "days: must be positive",
     "bad-days"),
    (["trace", "synth", "--out", "{tmp}/no/dir/s.csv"],
     "--out {tmp}/no/dir/s.csv: the folder {tmp}/no/dir does not exist", "unwritable"),
    (["trace", "inspect", "{tmp}"], "{tmp}: is a folder; name a trace file", "a-folder"),
    # These two used to end in a numpy traceback (Poisson lam too large; a
    # terabyte tick array for one corrupt end time 1e14 s).
    (["trace", "synth", "--days", "1e9", "--out", "{tmp}/s.csv"], "jobs would arrive",
     "too-many-jobs"),
    (["trace", "inspect", "{tmp}/far.csv"], "ticks (at most 10,000,000)", "window-too-long"),
    # The Helios series' header: a demand series, read by backtest --series.
    (["trace", "inspect", "{tmp}/series.csv"],
     "series.csv:1: a demand series ('time' column, then gpus_pending, gpus_running per "
     "tick), not a job table of pods; forecast it with `headstart backtest --series "
     "{tmp}/series.csv --column gpus_pending`", "aggregate-series"),
]


@pytest.mark.parametrize("argv, message", [b[:2] for b in BAD], ids=[b[2] for b in BAD])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv, message):
    (tmp_path / "openb.csv").write_text(OPENB)
    (tmp_path / "bad.csv").write_text(OPENB.replace("p0,4000", "p0,many"))
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "far.csv").write_text(OPENB.replace("1000,1600,1000", "1000,1e14,1000"))
    (tmp_path / "series.csv").write_text("time,gpus_running,gpus_pending\n"
                                         "2020-05-01 00:00:00,564,32\n")
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    message = message.replace("{tmp}", str(tmp_path))
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("headstart trace: error: ")
    assert message in lines[0]
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    "text, seconds",
    [("300s", 300), ("45s", 45), ("5m", 300), ("1.5h", 5400), ("1d", 86400)],
    ids=["300s", "s", "m", "h", "d"],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "300", "-5m", "5x", "m"], ids=repr)
def test_parse_duration_rejects(text):
    with pytest.raises(InputError):
        parse_duration(text)


@pytest.mark.parametrize(
    "argv, option, source",
    [
        (["simulate", "--synthetic", "--format", "alibaba-openb"], "--format", "--synthetic"),
        (["simulate-elastic", "--synthetic", "--gpu-sharing"], "--gpu-sharing", "--synthetic"),
        (["buckets", "tune", "--synthetic", "--format", "headstart"], "--format",
         "--synthetic"),
        (["demo", "--quick", "--format", "headstart"], "--format", "the demo without --trace"),
    ],
    ids=["simulate", "simulate-elastic", "tune", "demo"],
)
def test_a_trace_file_option_with_the_synthetic_workload_is_refused(tmp_path, monkeypatch,
                                                                    capsys, argv, option,
                                                                    source):
    # It used to be ignored: the generated workload has no file to detect or round.
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        f"error: {option} goes with --trace: {source} generates the workload, there is no "
        "file to read")
    assert list(tmp_path.iterdir()) == []  # refused before any work or report folder
