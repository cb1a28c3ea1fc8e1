"""Benchmark: simulator wall time per policy run on the larger Alibaba trace (DLRM 2025).

Target: 30 simulated days in under 60 s per policy run on this machine. The
shared DLRM file holds 18.6 days (the first 60% of the trace), so the 30-day workload is
the trace followed by a copy of its first 11.4 days shifted by 18.6 days (pods of the
copy are renamed; the copy's pods running at its start are ordinary arrivals there).
Prints the median of `--repeats` runs per policy and the ratio to reactive, measured in
the same run (reactive: no planner, no forecaster: the event loop's own cost). Every
run uses the service's default configuration (predictive: its tick, model and limits);
proportional polls every 10 s as cluster-proportional-autoscaler does.

    python bench/bench_simulator.py [--repeats 3] [--days 30] [--policy reactive predictive]
                                    [--before DIR [--before-commit SHA]] [--record]

--before DIR: a checkout of an older build (`git worktree add DIR COMMIT`). Each run of
a policy here is followed by one run of the same policy by DIR's own copy of this script
(its code, the same trace and days), so both builds see the same machine load; the
ratio of the medians says whether this build is slower.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
TRACE = REPO.parent / "shared" / "traces" / "alibaba-gpu-2025-disaggregated_DLRM_trace.csv.gz"


def extended_table(days: float):
    from jobtraces.jobtable import JobTable
    from jobtraces.load import load_trace

    table = load_trace(TRACE)
    span = table.trace_end_s - table.trace_start_s
    frames = [table.frame]
    copy_index = 1
    while span * copy_index < days * 86_400:
        copy = table.frame.copy()
        for column in ("submit_s", "start_s", "end_s"):
            copy[column] = copy[column] + span * copy_index
        copy["pod"] = copy["pod"] + f"-copy{copy_index}"
        copy["job_id"] = copy["job_id"] + f"-copy{copy_index}"
        frames.append(copy)
        copy_index += 1
    frame = pd.concat(frames, ignore_index=True)
    end = table.trace_start_s + span * copy_index
    frame["end_s"] = frame["end_s"].where(~np.isnan(frame["end_s"]), end)
    return JobTable(frame, table.source + " (tiled)", table.trace_start_s, end)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--policy", nargs="+", default=["reactive", "static:2", "proportional:4",
                                                         "predictive", "oracle"])
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="a checkout of an older build, run in alternation")
    parser.add_argument("--before-commit", default="", help="that build's commit, recorded")
    parser.add_argument("--record", action="store_true",
                        help="write the medians into bench/results.json")
    args = parser.parse_args()
    if args.before is not None and not (args.before / "bench" / "bench_simulator.py").is_file():
        parser.error(f"--before {args.before}: no bench/bench_simulator.py there")
    load_before = os.getloadavg()[0]
    if not TRACE.exists():
        print(f"skipped: {TRACE} is absent")
        return 0
    from bucketing.catalog import load_catalog
    from overprovisioner.sim.config import SimConfig
    from overprovisioner.sim.pod_engine import run
    from overprovisioner.sim.workload import build_workload, default_types

    catalog = load_catalog("aws")
    table = extended_table(args.days)
    types = default_types(table, catalog)
    workload = build_workload(table, types, days=args.days)
    print(f"{len(workload)} pods, {(workload.end_s - workload.start_s) / 86_400:.1f} days, "
          f"types {', '.join(t.name for t in types)}")
    medians: dict[str, float] = {}
    before: dict[str, float] = {}
    for policy in args.policy:
        times, before_times = [], []
        for _ in range(args.repeats):
            started = time.perf_counter()
            run(workload, catalog, policy, SimConfig())
            times.append(time.perf_counter() - started)
            if args.before is not None:
                before_times.append(run_before(args.before, policy, args.days))
        medians[policy] = statistics.median(times)
        base = medians.get("reactive")
        ratio = f"  {medians[policy] / base:.2f}x reactive" if base else ""
        verdict = "ok" if medians[policy] < 60 else "OVER the 60 s target"
        print(f"{policy:<14} median {medians[policy]:6.1f} s of {args.repeats} "
              f"({', '.join(f'{t:.1f}' for t in times)}){ratio}  [{verdict}]", flush=True)
        if before_times:
            before[policy] = statistics.median(before_times)
            print(f"{'  before':<14} median {before[policy]:6.1f} s of {args.repeats} "
                  f"({', '.join(f'{t:.1f}' for t in before_times)})  this build "
                  f"{medians[policy] / before[policy]:.2f}x the before build", flush=True)
    if args.record:
        from results_file import record

        figures = {"days": args.days, "pods": len(workload), "repeats": args.repeats,
                   "median_s": {p: round(s, 1) for p, s in medians.items()}}
        if before:
            figures["before_s"] = {p: round(s, 1) for p, s in before.items()}
            figures["before_commit"] = args.before_commit
        record("simulator", figures, load_before)
    return 0


def run_before(checkout: Path, policy: str, days: float) -> float:
    """One run of `policy` by the older build's own copy of this script: its time."""
    done = subprocess.run(
        [sys.executable, "bench/bench_simulator.py", "--repeats", "1", "--days", str(days),
         "--policy", policy],
        cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True, text=True, check=False)
    found = re.search(rf"^{re.escape(policy)}\s+median\s+([0-9.]+) s", done.stdout, re.M)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"--before {checkout}: its run of {policy} failed:\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return float(found.group(1))


if __name__ == "__main__":
    raise SystemExit(main())
