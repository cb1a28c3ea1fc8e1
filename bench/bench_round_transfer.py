"""Would planning in another process take admission rounds off the extender's
interpreter? Only if what the round plans from could get there cheaply. This times,
in one process, what shipping a round's inputs to a planning process would add to each
round (pickle on this side, unpickle on that one, the plan pickled back), against the
round's own planning, with the round memo warm as the admitter keeps it.

    python bench/bench_round_transfer.py            # medians of 5
    python bench/bench_round_transfer.py --record   # and write bench/results.json

Cluster and jobs as bench_admission_rounds: bench_extender's 5,000 nodes and 1,000
gated 8-pod jobs, size declared, policy required. Timed per repeat:

- snapshot: `Admitter.snapshot`, what the round copies out of the cache on the event
  loop today (references to immutable pods and nodes);
- inputs out / in: `pickle.dumps` / `pickle.loads` of that snapshot (protocol 5), what a
  `ProcessPoolExecutor` does with a round's arguments;
- plan: `Admitter.plan` on the snapshot, the memo kept from the repeat before (the
  admitter's steady state);
- plan back: `pickle.dumps` of the plan, what the planning process would send back.

What this decides is in docs/extender.md ("Off the scheduler's path"): a process fed
whole snapshots pays more to move them than the thread pays to plan; a planning process
needs a cluster view of its own, fed by changes.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_extender  # noqa: E402
from bench_admission_rounds import NODES, gated_jobs  # noqa: E402
from results_file import load_average, record  # noqa: E402

STEPS = ("snapshot", "inputs_out", "inputs_in", "plan", "plan_back")


def measure(jobs: int, repeats: int) -> dict:
    from extender.admission.admitter import Admitter
    from extender.app import CACHE
    from locality.admission.config import AdmissionConfig
    from locality.parse import parse_pod

    cache = bench_extender.headstart_app(NODES, 0.0)[CACHE]
    for raw in gated_jobs(jobs):
        cache.apply_pod(parse_pod(raw, cache.config))
    admitter = Admitter(cache, cache.config, AdmissionConfig(), None, lambda: False)
    admitter.plan_now(time.time())  # the memo warm, as after the admitter's first round
    runs: dict[str, list[float]] = {step: [] for step in STEPS}
    sizes = []
    for _ in range(repeats):
        started = time.perf_counter()
        inputs = admitter.snapshot()
        runs["snapshot"].append(time.perf_counter() - started)
        started = time.perf_counter()
        shipped = pickle.dumps(inputs, protocol=5)
        runs["inputs_out"].append(time.perf_counter() - started)
        started = time.perf_counter()
        received = pickle.loads(shipped)
        runs["inputs_in"].append(time.perf_counter() - started)
        started = time.perf_counter()
        planned = admitter.plan(received, time.time())
        runs["plan"].append(time.perf_counter() - started)
        started = time.perf_counter()
        back = pickle.dumps(planned, protocol=5)
        runs["plan_back"].append(time.perf_counter() - started)
        sizes.append((len(shipped), len(back)))
        if not planned[0].admissions:
            raise RuntimeError("the round admitted nothing: the bench measures no planning")
    medians = {f"{step}_ms": 1000 * statistics.median(runs[step]) for step in STEPS}
    moving = medians["inputs_out_ms"] + medians["inputs_in_ms"] + medians["plan_back_ms"]
    return {**medians, "runs_ms": {step: [round(1000 * s, 1) for s in runs[step]]
                                   for step in STEPS},
            "inputs_mb": statistics.median(s[0] for s in sizes) / 1e6,
            "plan_mb": statistics.median(s[1] for s in sizes) / 1e6,
            "moving_ms": moving, "moving_vs_plan": moving / medians["plan_ms"],
            "jobs": jobs, "nodes": NODES, "repeats": repeats}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    load_before = load_average()
    f = measure(args.jobs, args.repeats)
    print(f"{f['jobs']:,} gated 8-pod jobs at {f['nodes']:,} nodes, medians of {f['repeats']}: "
          f"snapshot {f['snapshot_ms']:.0f} ms; inputs {f['inputs_mb']:.1f} MB, pickled in "
          f"{f['inputs_out_ms']:.0f} ms, unpickled in {f['inputs_in_ms']:.0f} ms; plan "
          f"{f['plan_ms']:.0f} ms; plan back {f['plan_mb']:.1f} MB in {f['plan_back_ms']:.0f} "
          f"ms; moving {f['moving_ms']:.0f} ms = {f['moving_vs_plan']:.1f}x the planning "
          f"(load average {load_before:.1f}-{load_average():.1f})")
    if args.record:
        record("round-transfer", f, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
