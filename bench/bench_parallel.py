"""What `--jobs` saves: `headstart demo` and `headstart simulate --synthetic` (its default
policy list) timed in one process (`--jobs 1`) against one worker per core (`--jobs N`,
N the cores this process may use), recorded so docs/simulator.md's table is rendered
from bench/results.json (entry parallel), never typed.

    python bench/bench_parallel.py --record    # 3 runs of each, about 10 minutes on 2 cores
    python bench/render_tables.py              # then the table

Runs each command as a user does (a subprocess of this checkout's `python -m headstart`,
in a scratch folder the demo's report is written into), `--repeats` times, serial and
parallel in alternation so that a load spike hits both alike, and records the wall
times, their medians and the ratio of the medians. The two outputs are checked equal
(simulate's JSON; the demo's summary without its wall-time and report lines) before
anything is recorded, so the figures are for the same work. Beside each pair, a fixed
CPU loop run N times in this process and once in each of N spawned processes says how
much parallelism the machine gave at that moment (2 idle cores: 0.5x; cores busy with
other work: nearer 1x), so a ratio measured on a loaded machine can be read as such.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from results_file import load_average, record  # noqa: E402

from common.parallel import available_cores  # noqa: E402

COMMANDS = {
    "demo": ["demo", "--out", "report"],
    "simulate": ["simulate", "--synthetic", "--json"],
}


def run(argv: list[str], jobs: int) -> tuple[float, str]:
    """Seconds `headstart ARGV --jobs JOBS` took and its stdout."""
    env = dict(os.environ, PYTHONPATH=str(REPO))  # this checkout, not an installed copy
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "headstart", *argv, "--jobs", str(jobs)],
                              cwd=folder, env=env, capture_output=True, text=True, check=False)
        took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"headstart {' '.join(argv)} --jobs {jobs} failed "
                         f"({done.returncode}):\n{done.stderr[-2000:]}")
    return took, done.stdout


def spin(count: int) -> int:
    """A fixed CPU loop (pure Python: one core, no library threads)."""
    total = 0
    for value in range(count):
        total += value
    return total


def loop_ratio(cores: int, count: int = 20_000_000) -> float:
    """Wall time of `cores` loops in as many spawned processes over the same loops one
    after another here (workers started before the clock)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    started = time.perf_counter()
    for _ in range(cores):
        spin(count)
    serial = time.perf_counter() - started
    with ProcessPoolExecutor(cores, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(spin, [1] * cores))
        started = time.perf_counter()
        list(pool.map(spin, [count] * cores))
        parallel = time.perf_counter() - started
    return parallel / serial


def comparable(stdout: str) -> list[str]:
    """What the command printed that does not depend on the wall clock: all but the
    demo's "(N runs in S s)" and the report's folder."""
    return [line for line in stdout.splitlines()
            if not line.startswith("report: ") and " runs in " not in line]


def runs_in(stdout: str) -> int:
    """How many runs the command made: simulate's JSON rows, or the demo's count."""
    if stdout.lstrip().startswith("["):
        return len(json.loads(stdout))
    said = next(line for line in stdout.splitlines() if " runs in " in line)
    return int(said.lstrip("(").split()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true",
                        help="write the figures into bench/results.json")
    args = parser.parse_args()
    cores = available_cores()
    load_before = load_average()
    figures: dict = {"cores": cores, "repeats": args.repeats, "commands": {}}
    for name, argv in COMMANDS.items():
        times: dict[int, list[float]] = {1: [], cores: []}
        printed: dict[int, str] = {}
        loops: list[float] = []
        for _ in range(args.repeats):
            loops.append(loop_ratio(cores))
            for jobs in (1, cores):
                took, printed[jobs] = run(argv, jobs)
                times[jobs].append(took)
                print(f"{name} --jobs {jobs}: {took:.1f} s", flush=True)
        if comparable(printed[1]) != comparable(printed[cores]):
            raise SystemExit(f"{name}: --jobs 1 and --jobs {cores} printed different results")
        serial, parallel = (statistics.median(times[jobs]) for jobs in (1, cores))
        figures["commands"][name] = {
            "argv": argv, "runs": runs_in(printed[1]),
            "serial_s": [round(t, 1) for t in times[1]],
            "parallel_s": [round(t, 1) for t in times[cores]],
            "serial_median_s": round(serial, 1), "parallel_median_s": round(parallel, 1),
            "ratio": round(parallel / serial, 2),
            "loop_ratios": [round(r, 2) for r in loops],
            "loop_ratio": round(statistics.median(loops), 2)}
        print(f"{name}: {serial:.1f} s with --jobs 1, {parallel:.1f} s with --jobs {cores} "
              f"({parallel / serial:.2f}x; a CPU loop: {statistics.median(loops):.2f}x)",
              flush=True)
    if args.record:
        record("parallel", figures, load_before,
               note="medians of alternating runs; the outputs of both checked equal")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
