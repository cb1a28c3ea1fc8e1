"""`headstart simulate`'s known-ahead what-if and lead curve, through the real entry point."""

from __future__ import annotations

import json

import pytest

from headstart.cli import main
from tests.overprovisioner.simbuild import pod, table


@pytest.fixture
def trace_file(tmp_path):
    from jobtraces.write import write_job_table

    # 6 jobs of 4 one-GPU pods, one every 7800 s, 10 minutes long (tests/overprovisioner/
    # test_sim_known.py: known 10 minutes ahead, none of them waits)
    rows = [pod(f"j{j}-{i}", 7800 * j + 1000, 600, job=f"j{j}") for j in range(6)
            for i in range(4)]
    return write_job_table(table(rows, end=48000.0), tmp_path / "trace.csv")


def run_json(trace_file, capsys, *extra):
    code = main(["simulate", "--trace", str(trace_file), "--json",
                 "--policy", "reactive", "predictive", "--node-startup-spread", "0", *extra])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_json_without_what_if_says_what_the_trace_knows(trace_file, capsys):
    rows = run_json(trace_file, capsys)
    assert [(r["known_share"], r["lead_seconds"]) for r in rows] == [(0.0, None)] * 2


@pytest.mark.parametrize(
    "share, known_share, reactive_pending",
    [
        # every job known 10 minutes ahead: all 24 pods; predictive's pods wait 0 s, as
        # in test_sim_known; reactive's 24 pods x 330 s x 1 GPU = 132 GPU-minutes
        ("1", 1.0, 132.0),
        # no job marked: nothing known
        ("0", 0.0, 132.0),
    ],
    ids=["all-known", "none-known"],
)
def test_json_with_what_if(trace_file, capsys, share, known_share, reactive_pending):
    rows = run_json(trace_file, capsys, "--lead-share", share, "--lead", "10m")
    assert [r["lead_seconds"] for r in rows] == [600.0, 600.0]
    assert [r["known_share"] for r in rows] == [known_share] * 2
    assert rows[0]["pending_gpu_minutes"] == pytest.approx(reactive_pending)
    if known_share == 1.0:
        assert rows[1]["pending_gpu_minutes"] == 0.0


def test_lead_curve_runs_predictive_per_lead(trace_file, tmp_path, capsys):
    out = tmp_path / "plots"
    rows = run_json(trace_file, capsys, "--lead-share", "1", "--lead-curve", "0,10m",
                    "--plot", str(out))
    assert [(r["policy"], r["lead_seconds"]) for r in rows] == [
        ("reactive", None), ("predictive", 0.0), ("predictive", 600.0)]
    # lead 0 = known at creation: nothing ahead; 10 minutes: every pod, none waits
    assert [r["known_share"] for r in rows] == [0.0, 0.0, 1.0]
    assert rows[2]["pending_gpu_minutes"] == 0.0 < rows[1]["pending_gpu_minutes"]
    assert (out / "lead-curve.png").stat().st_size > 0


def test_lead_curve_table(trace_file, capsys):
    code = main(["simulate", "--trace", str(trace_file),
                 "--policy", "reactive", "static:1", "predictive", "oracle",
                 "--lead-share", "1", "--lead-curve", "0,10m"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("policy      lead s"))
    # the 10-minute lead: 100% of pods known, pending cut 100% (0 of 120 GPU-minutes)
    assert lines[header + 2].split()[:4] == ["predictive", "600", "100.0%", "100.0%"]
    assert "oracle:" in lines[header + 3]
    assert "100% of jobs (seed 0) known 0, 600 s before creation" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--lead-share", "2", "--lead", "10m"], "--lead-share: must be within 0-1"),
        (["--lead-share", "0.5", "--lead", "10"], "--lead: '10' has no unit"),
        (["--lead", "10m"], "--lead: needs --lead-share"),
        (["--lead-share", "0.5"], "--lead-share: needs --lead"),
        (["--lead-share", "0.5", "--lead-curve", "0,5m,5m"], "a lead appears twice"),
        (["--lead-share", "0.5", "--lead-curve", "0,5m", "--policy", "reactive"],
         "--lead-curve: needs a predictive policy"),
    ],
    ids=["share", "lead-unit", "lead-alone", "share-alone", "curve-repeat", "no-predictive"],
)
def test_bad_what_if_is_one_line_exit_2(trace_file, extra, message, capsys):
    code = main(["simulate", "--trace", str(trace_file), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and message in err[0]
