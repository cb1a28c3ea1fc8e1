"""What the extender and its planning process hold in memory: the figure behind the
Deployment's memory request (manifests/base/extender/deployment.yaml).

    python bench/bench_planner_memory.py            # 1,000 gated 8-pod jobs, 5,000 nodes
    python bench/bench_planner_memory.py --record   # and write bench/results.json
    python bench/bench_planner_memory.py --nodes 20000 --jobs 200 --pods 64

In a fresh interpreter per mode (`spawn`, so nothing of this one is counted):
bench_extender's cluster (`--nodes` nodes with their background pods) and `--jobs`
gated jobs of `--pods` pods each (bench_admission_rounds' jobs) in the extender's
cache, with its admitter planning as the extender plans (`process`: the planning
process started before the cache's first change; `thread`: none), after three rounds.
Reported: each process's resident set (VmRSS) and its peak (VmHWM) from /proc, so
Linux only; medians of `--runs` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results_file import load_average, record  # noqa: E402

MODES = ("thread", "process")


def resident_mb(pid: int | str) -> tuple[float, float]:
    """(VmRSS, VmHWM) of process `pid` in MB (10**6 bytes)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024 / 1e6
    return fields["VmRSS"], fields["VmHWM"]


def measure(mode: str, nodes: int, jobs: int, pods: int, answers: multiprocessing.Queue
            ) -> None:
    import bench_admission_rounds

    from extender.app import CACHE

    app, admitter = bench_admission_rounds.admission_app(mode, nodes, jobs, pods)
    cache = app[CACHE]

    async def rounds() -> None:
        for _ in range(3):
            await admitter.round(time.time())

    asyncio.run(rounds())
    extender = resident_mb("self")
    planning = resident_mb(admitter.planner.pid) if admitter.planner else (0.0, 0.0)
    answers.put({"pods": cache.pod_count(), "extender_rss_mb": extender[0],
                 "extender_peak_mb": extender[1], "planner_rss_mb": planning[0],
                 "planner_peak_mb": planning[1]})
    admitter.close()


def one_run(mode: str, nodes: int, jobs: int, pods: int) -> dict:
    context = multiprocessing.get_context("spawn")
    answers = context.Queue()
    process = context.Process(target=measure, args=(mode, nodes, jobs, pods, answers))
    process.start()
    try:
        return answers.get(timeout=900)
    finally:
        process.join(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=8, help="pods per job")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--record-as", default="planner-memory")
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        parser.error("reads /proc/<pid>/status: Linux only")
    load_before = load_average()
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for run in range(args.runs):
        for mode in MODES:
            result = one_run(mode, args.nodes, args.jobs, args.pods)
            runs[mode].append(result)
            print(f"run {run + 1}/{args.runs} {mode:7s}: extender {result['extender_rss_mb']:.0f} "
                  f"MB (peak {result['extender_peak_mb']:.0f}), planning process "
                  f"{result['planner_rss_mb']:.0f} MB (peak {result['planner_peak_mb']:.0f}); "
                  f"{result['pods']} pods", flush=True)
    summary = {mode: {key: statistics.median(r[key] for r in runs[mode])
                      for key in runs[mode][0]} for mode in MODES}
    print(f"\n{args.nodes} nodes, {summary['process']['pods']:.0f} pods ({args.jobs} gated "
          f"{args.pods}-pod jobs), medians of {args.runs}:")
    for mode in MODES:
        entry = summary[mode]
        total = entry["extender_rss_mb"] + entry["planner_rss_mb"]
        print(f"  {mode:7s} extender {entry['extender_rss_mb']:.0f} MB, planning process "
              f"{entry['planner_rss_mb']:.0f} MB, together {total:.0f} MB (peaks "
              f"{entry['extender_peak_mb']:.0f} and {entry['planner_peak_mb']:.0f} MB)")
    if args.record:
        record(args.record_as, {"nodes": args.nodes, "jobs": args.jobs, "pods_per_job": args.pods,
                                "runs": args.runs, "modes": summary}, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
