"""How long README's first command takes, and what its verdict says, recorded so README's
demo paragraph is rendered from bench/results.json (entry demo), never typed.

    python bench/bench_demo.py --record       # 3 runs of each, about 5 minutes
    python bench/render_tables.py             # then the paragraph

Runs `headstart demo` and `headstart demo --quick` as a user does (a subprocess, in a
scratch folder the report is written into), `--repeats` times each, alternating, and
records the median wall time of each, the machine's load, the whole system's verdict
(the first line that starts "Verdict:"), the placeholders' verdict (the first such line
after "Placeholders alone") and the run it names (the line that starts "The headroom to
run instead", if any), and both verdict blocks (every line before the second blank one:
the whole system's verdict, the placeholders' and its config lines), which
docs/simulator.md shows as the sample output.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import load_average, record  # noqa: E402

VARIANTS = (("demo", ()), ("quick", ("--quick",)))


def run_demo(extra: tuple[str, ...]) -> tuple[float, list[str]]:
    """Seconds `headstart demo` took and its stdout lines."""
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        done = subprocess.run(["headstart", "demo", *extra], cwd=folder, capture_output=True,
                              text=True, check=False)
        took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"headstart demo {' '.join(extra)} failed ({done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    return took, done.stdout.splitlines()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true",
                        help="write the figures into bench/results.json")
    args = parser.parse_args()
    load_before = load_average()
    times: dict[str, list[float]] = {name: [] for name, _ in VARIANTS}
    said: dict[str, list[str]] = {}
    for _ in range(args.repeats):
        for name, extra in VARIANTS:  # alternating: a load spike hits both alike
            took, lines = run_demo(extra)
            times[name].append(took)
            said[name] = lines
            print(f"{name}: {took:.1f} s", flush=True)
    figures = {}
    for name, _ in VARIANTS:
        lines = said[name]
        instead = next((line for line in lines if line.startswith("The headroom to run")), "")
        verdicts = [line for line in lines if line.startswith("Verdict:")]
        blanks = [i for i, line in enumerate(lines) if not line]
        figures[name] = {"median_s": round(statistics.median(times[name]), 1),
                         "runs_s": [round(t, 1) for t in times[name]],
                         "system_verdict": verdicts[0] if verdicts else "",
                         "verdict": verdicts[1] if len(verdicts) > 1 else "",
                         "instead": instead,
                         "head": lines[:blanks[1]] if len(blanks) > 1 else lines}
        print(f"{name}: median {figures[name]['median_s']} s; {figures[name]['verdict'][:100]}")
    if args.record:
        record("demo", figures, load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
