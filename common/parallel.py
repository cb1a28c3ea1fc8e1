"""Independent runs spread over worker processes, their results in the order asked for.

Decides: how many processes a command uses (`--jobs N`, `resolve_jobs`: by default the
cores this process may run on; more than that is clamped, said once on stderr; 0, a
negative or a non-integer is an InputError naming the option), how the workers start
('spawn': a fresh interpreter, safe whatever the parent imported, torch and its thread
pools included, where 'fork' copies them mid-state) and how they are kept from
oversubscribing the cores (one BLAS/OpenMP/torch thread each). `Workers.map` runs one
task per call of `function`, in this process one after another with one job (or one
task), else in the workers; either way the results come back in the tasks' order and
`done(label)` is called as each task finishes, in the order they finish.

Must not: change what a task computes. A task is a module-level function and picklable
arguments, so a worker runs the same code on equal inputs and returns an equal result;
a fault raised in a worker is raised here as it was raised there.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

from common.errors import InputError

Task = TypeVar("Task")
Result = TypeVar("Result")

JOBS_HELP = ("worker processes, one run each at a time (default: the cores this process "
             "may use, {cores} here; more is clamped to that; 1 = one after another in this "
             "process). The results are the same whatever N")

# The thread pools a worker's numeric libraries would each size to every core.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or
    `taskset` narrows), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity call on this platform (macOS)
        return os.cpu_count() or 1


def add_jobs_option(parser: argparse.ArgumentParser) -> None:
    """`--jobs N`, read as text so that `resolve_jobs` refuses a bad value in one line."""
    parser.add_argument("--jobs", metavar="N", default=None,
                        help=JOBS_HELP.format(cores=available_cores()))


def resolve_jobs(text: str | None, option: str = "--jobs", cores: int | None = None) -> int:
    """The worker count `text` asks for: None = `cores` (default: `available_cores()`);
    above `cores`, `cores`, said once on stderr; InputError for 0, a negative or a
    non-integer."""
    cores = available_cores() if cores is None else cores
    if text is None:
        return cores
    try:
        jobs = int(str(text).strip())
    except ValueError:
        raise InputError(f"{option}: expected a whole number of processes, 1 or more, "
                         f"got {text!r}") from None
    if jobs < 1:
        raise InputError(f"{option}: expected 1 or more processes, got {jobs}")
    if jobs > cores:
        print(f"{option} {jobs}: this process may use {cores} cores; running {cores} "
              "processes", file=sys.stderr)
        return cores
    return jobs


class Workers:
    """Up to `jobs` worker processes, started at the first `map` that needs them and
    kept for the later ones (each start imports the simulator anew); `close` ends them.
    Use as a context manager."""

    def __init__(self, jobs: int = 1) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be 1 or more, got {jobs}")
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        self.close(abandon=kind is not None)

    def map(self, function: Callable[[Task], Result], tasks: Sequence[Task],
            labels: Sequence[str], done: Callable[[str], None] | None = None,
            start_order: Sequence[int] | None = None) -> list[Result]:
        """`[function(task) for task in tasks]`, with `done(label)` as each finishes;
        `start_order`: the tasks' indices in the order to start them (default: theirs;
        the slowest first keeps a worker from starting it last, alone)."""
        if len(labels) != len(tasks):
            raise ValueError(f"{len(tasks)} tasks but {len(labels)} labels")
        order = list(range(len(tasks)) if start_order is None else start_order)
        if sorted(order) != list(range(len(tasks))):
            raise ValueError(f"start_order {order} is not an order of {len(tasks)} tasks")
        results_by_index: dict[int, Result] = {}
        if self.jobs == 1 or len(tasks) <= 1:
            for index in order:
                results_by_index[index] = function(tasks[index])
                if done:
                    done(labels[index])
            return [results_by_index[index] for index in range(len(tasks))]
        pool = self._started()
        futures: dict[Future[Result], int] = {pool.submit(function, tasks[index]): index
                                              for index in order}
        try:
            for future in as_completed(futures):
                index = futures[future]
                results_by_index[index] = future.result()
                if done:
                    done(labels[index])
        except BaseException:
            # A fault in one run (or Ctrl-C here) ends the command: the runs still
            # queued or running would be thrown away anyway.
            self.close(abandon=True)
            raise
        return [results_by_index[index] for index in range(len(tasks))]

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing

            self._pool = ProcessPoolExecutor(max_workers=self.jobs,
                                             mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_start_worker)
        return self._pool

    def close(self, abandon: bool = False) -> None:
        """End the workers: after their queued tasks, or with `abandon` at once (queued
        tasks cancelled, running ones stopped)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if abandon:
            if hasattr(pool, "terminate_workers"):  # Python 3.14
                pool.terminate_workers()
            else:  # what terminate_workers does, on the executor's own process table
                for process in list((getattr(pool, "_processes", None) or {}).values()):
                    process.terminate()
        pool.shutdown(wait=True, cancel_futures=abandon)


def _start_worker() -> None:
    """In each worker, before any task: one thread per numeric library (the workers are
    the parallelism; N workers each sizing a pool to every core would oversubscribe
    them), and Ctrl-C left to the parent, which ends the workers itself."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"  # read when torch or a BLAS is first imported, here later
    torch = sys.modules.get("torch")
    if torch is not None:  # imported already by the parent's main module
        torch.set_num_threads(1)
