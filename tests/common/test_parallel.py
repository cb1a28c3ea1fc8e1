"""Runs spread over worker processes (common.parallel): how many, results in task order,
progress as each finishes, a worker's fault raised here and the other workers stopped."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from common.errors import InputError
from common.parallel import Workers, available_cores, resolve_jobs

# The longest a task here waits for another task's sign: long enough never to be reached
# when the code works, so a test that reaches it fails on its assertion, not on a clock.
PATIENCE_S = 600.0


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


# Tasks: module-level, so a worker process can import them.
def square_and_pid(value: int) -> tuple[int, int]:
    return value * value, os.getpid()


def after(task: tuple[str, Path | None, Path]) -> str:
    """Wait for `wait` (when given), then write `write`: tasks that finish in an order the
    test chooses."""
    name, wait, write = task
    if wait is not None:
        _wait_for(wait)
    write.write_text(name)
    return name


def fail_once_started(folder: Path) -> None:
    _wait_for(folder / "pid")  # the other task is running
    raise InputError("trace.csv: row 3: no pod")


def run_until_stopped(folder: Path) -> None:
    (folder / "pid").write_text(str(os.getpid()))
    _wait_for(folder / "never")
    (folder / "finished").write_text("not stopped")


@pytest.mark.parametrize("text, cores, expected", [
    (None, 4, 4),  # the default: every core this process may use
    ("1", 4, 1),
    ("3", 4, 3),
    (" 2 ", 4, 2),
], ids=["default", "one", "fewer", "spaces"])
def test_jobs_asked_for(text, cores, expected, capsys):
    assert resolve_jobs(text, cores=cores) == expected
    assert capsys.readouterr().err == ""


def test_more_jobs_than_cores_are_clamped_and_said_once(capsys):
    assert resolve_jobs("16", cores=4) == 4
    assert capsys.readouterr().err.splitlines() == [
        "--jobs 16: this process may use 4 cores; running 4 processes"]


@pytest.mark.parametrize("text, message", [
    ("0", "--jobs: expected 1 or more processes, got 0"),
    ("-2", "--jobs: expected 1 or more processes, got -2"),
    ("2.5", "--jobs: expected a whole number of processes, 1 or more, got '2.5'"),
    ("all", "--jobs: expected a whole number of processes, 1 or more, got 'all'"),
], ids=["zero", "negative", "fraction", "word"])
def test_bad_jobs_are_refused_naming_the_option(text, message):
    with pytest.raises(InputError) as caught:
        resolve_jobs(text, cores=4)
    assert str(caught.value) == message


def test_the_default_is_this_process_s_affinity():
    assert available_cores() == len(os.sched_getaffinity(0))


def test_one_job_runs_in_this_process_in_order():
    said = []
    with Workers(1) as workers:
        results = workers.map(square_and_pid, [3, 1, 2], ["a", "b", "c"], said.append)
    assert [value for value, _ in results] == [9, 1, 4]
    assert {pid for _, pid in results} == {os.getpid()}
    assert said == ["a", "b", "c"]


def test_tasks_start_in_the_order_asked_and_come_back_in_theirs():
    said = []
    with Workers(1) as workers:
        results = workers.map(square_and_pid, [3, 1, 2], ["a", "b", "c"], said.append,
                              start_order=[2, 0, 1])
        with pytest.raises(ValueError, match="not an order of 3 tasks"):
            workers.map(square_and_pid, [3, 1, 2], ["a", "b", "c"], start_order=[0, 0, 1])
    assert said == ["c", "a", "b"]
    assert [value for value, _ in results] == [9, 1, 4]


def test_workers_return_results_in_task_order_and_say_each_as_it_finishes(tmp_path):
    # Task "first" waits until task "second" has written its file: "second" finishes first.
    first, second = tmp_path / "first", tmp_path / "second"
    said = []
    with Workers(2) as workers:
        results = workers.map(after, [("first", second, first), ("second", None, second)],
                              ["first", "second"], said.append)
        # the same workers serve a later batch: in other processes than this one
        pids = {pid for _, pid in workers.map(square_and_pid, [1, 2, 3], ["a", "b", "c"])}
    assert results == ["first", "second"]
    assert said == ["second", "first"]
    assert os.getpid() not in pids


def test_a_fault_in_a_worker_is_raised_here_and_stops_the_other_runs(tmp_path):
    with Workers(2) as workers, pytest.raises(InputError, match="trace.csv: row 3: no pod"):
        workers.map(_dispatch, [("fail", tmp_path), ("block", tmp_path)], ["fail", "block"])
    # The blocked run was stopped, not left to finish its wait.
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (tmp_path / "finished").exists()


def _dispatch(task: tuple[str, Path]) -> None:
    kind, folder = task
    (fail_once_started if kind == "fail" else run_until_stopped)(folder)
