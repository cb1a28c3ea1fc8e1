"""`--jobs`: `headstart simulate`, `simulate-elastic` and `demo` print the same, byte for
byte, whether their runs go to worker processes or run one after another in this one; a
bad `--jobs` is refused in one line naming it.

One day of the seeded synthetic workload keeps each replay to seconds while every kind
of run is there: the listed policies, the per-type counts and the run without limits
chosen from their results, the scoring comparison, a lead curve, the elastic arms.
"""

from __future__ import annotations

import json

import pytest

from headstart.cli import main

DAY = ["--synthetic", "--days", "1"]


@pytest.fixture
def submitted(monkeypatch):
    """(function name, task) of each task handed to worker processes, with two cores
    available (`--jobs 2` not clamped on a one-core machine): a parallel replay that
    never used the workers would compare the serial one with itself."""
    from common import parallel

    tasks: list[tuple[str, object]] = []

    class Counting(parallel.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            tasks.append((fn.__name__, args[0]))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Counting)
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    return tasks


def replay(argv, jobs, capsys):
    assert main([*argv, "--jobs", str(jobs)]) == 0
    return capsys.readouterr()


@pytest.mark.parametrize("argv, task", [
    (["simulate", *DAY, "--json", "--compare-scoring"], "run_measured"),
    (["simulate", *DAY, "--json", "--policy", "reactive", "static:1", "static:2",
      "predictive", "oracle", "--lead-share", "0.5", "--lead-curve", "0,10m"], "run_measured"),
    (["simulate-elastic", *DAY, "--max-nodes", "6", "--json"], "run_arm"),
], ids=["simulate", "lead-curve", "simulate-elastic"])
def test_parallel_json_is_the_serial_json(argv, task, submitted, capsys):
    serial = replay(argv, 1, capsys)
    assert submitted == []  # --jobs 1: all in this process
    parallel = replay(argv, 2, capsys)
    assert parallel.out == serial.out
    assert submitted and {name for name, _ in submitted} == {task}
    assert json.loads(parallel.out)  # a replay that printed nothing proves nothing


def test_simulate_runs_the_listed_policies_in_the_workers_and_says_each_once(submitted,
                                                                             capsys):
    listed = ["reactive", "static:1", "static:2", "predictive", "oracle"]
    printed = replay(["simulate", *DAY, "--json", "--policy", *listed], 2, capsys)
    policies = [row["policy"] for row in json.loads(printed.out)]
    assert policies[:len(listed)] == listed
    said = [line.split(" done", 1)[1].split(": ", 1)[1] for line in printed.err.splitlines()
            if " done" in line]
    assert sorted(said) == sorted(policies)  # each run once, however many finished
    # All of them to the workers, predictive (the slowest) first; the JSON keeps the list.
    handed = [task.policy for _, task in submitted][:len(listed)]
    assert handed == ["predictive", "reactive", "static:1", "static:2", "oracle"]


def test_the_demo_prints_the_same_either_way(submitted, tmp_path, capsys):
    def demo(jobs):
        out = replay(["demo", "--quick", "--days", "1", "--out", str(tmp_path / str(jobs))],
                     jobs, capsys).out
        # The last two lines are the wall time and where the report went.
        *summary, took, report = out.splitlines()
        assert took.endswith(" s)") and report.startswith("report: ")
        return summary

    serial = demo(1)
    assert serial == demo(2) and submitted
    page = (tmp_path / "1" / "index.html").read_text()
    assert page == (tmp_path / "2" / "index.html").read_text()


@pytest.mark.parametrize("command", [["simulate", *DAY], ["simulate-elastic", *DAY],
                                     ["demo", "--quick"]],
                         ids=["simulate", "simulate-elastic", "demo"])
@pytest.mark.parametrize("jobs, message", [
    ("0", "--jobs: expected 1 or more processes, got 0"),
    ("-1", "--jobs: expected 1 or more processes, got -1"),
    ("two", "--jobs: expected a whole number of processes, 1 or more, got 'two'"),
], ids=["zero", "negative", "word"])
def test_a_bad_jobs_is_refused_in_one_line_before_any_work(command, jobs, message, tmp_path,
                                                           capsys):
    extra = ["--out", str(tmp_path / "report")] if command[0] == "demo" else []
    assert main([*command, *extra, f"--jobs={jobs}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"headstart {command[0]}: error: {message}"]
    assert not (tmp_path / "report").exists()


def test_more_jobs_than_cores_run_on_every_core_and_say_so_once(submitted, capsys):
    printed = replay(["simulate-elastic", *DAY, "--max-nodes", "6", "--json"], 64, capsys)
    clamped = [line for line in printed.err.splitlines() if "--jobs" in line]
    assert clamped == ["--jobs 64: this process may use 2 cores; running 2 processes"]
    assert len(submitted) == 3
