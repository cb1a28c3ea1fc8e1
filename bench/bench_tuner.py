"""What `headstart buckets tune` recommends on the developers' traces, recorded so README's
paragraph is rendered from bench/results.json (entry tuner), never typed.

    python bench/bench_tuner.py --record      # openb and DLRM, about half a minute
    python bench/render_tables.py             # then the paragraph

Each trace runs as `headstart buckets tune --trace T --catalog aws` runs it (its
defaults: the GPU model chosen automatically, at most 4 types, whole GPUs per pod).
Recorded per trace: the recommended list and what it costs to pack the trace, the
cheapest list the tuner would pick without the type limit and its cost, the pods no
type holds, the seconds the tune took, and the text the command prints and the
`--out` snippet it writes (docs/buckets.md's sample output). The public traces are
read from the folder `--traces` names (docs/traces.md); a missing one is skipped with
a line saying so.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results_file import load_average, record  # noqa: E402

TICK_S = 300.0  # `headstart buckets tune`'s default --tick 5m
TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
WORKLOADS = (("openb", "alibaba-gpu-2023-openb_pod_list_default.csv.gz"),
             ("DLRM", "alibaba-gpu-2025-disaggregated_DLRM_trace.csv.gz"))


def tune_trace(name: str, path: Path) -> dict:
    from bucketing.catalog import load_catalog
    from bucketing.commands import snippet, table_text
    from bucketing.tune import tune
    from jobtraces.demand import snapshots
    from jobtraces.load import load_trace

    started = time.perf_counter()
    table = load_trace(path)
    report = tune(table, snapshots(table, TICK_S), load_catalog("aws"))
    found = report.to_json()
    chosen = next(c for c in found["candidates"]
                  if c["instance_types"] == found["recommended"])
    # The list the type limit cut down: the recommended types plus the ones it dropped.
    whole = set(found["recommended"]) | set(found["trimmed"] or ())
    untrimmed = next((c for c in found["candidates"] if set(c["instance_types"]) == whole
                      and c is not chosen), None)
    return {
        "name": name, "pods": found["pods"], "recommended": found["recommended"],
        "cost_usd": chosen["cost_usd"], "max_types": found["max_types"],
        "untrimmed_types": None if untrimmed is None else len(untrimmed["instance_types"]),
        "untrimmed_cost_usd": None if untrimmed is None else untrimmed["cost_usd"],
        "unbucketable_pods": found["unbucketable_pods"]["count"],
        "gpus_rounded": table.gpus_rounded,
        "ticks": found["ticks"],
        "seconds": round(time.perf_counter() - started, 1),
        # What the command prints and what --out writes, for docs/buckets.md's sample.
        "output": table_text(report).splitlines(),
        "snippet": snippet(report, "aws").splitlines(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--record", action="store_true",
                        help="write bench/results.json's tuner entry")
    args = parser.parse_args()
    load_before = load_average()
    found = []
    for name, file in WORKLOADS:
        path = args.traces / file
        if not path.is_file():
            print(f"skipped {name}: {path} is missing", file=sys.stderr)
            continue
        found.append(tune_trace(name, path))
        row = found[-1]
        print(f"{name}: {', '.join(row['recommended'])} for ${row['cost_usd']:,.0f}; "
              f"{row['unbucketable_pods']:,} of {row['pods']:,} pods fit none "
              f"({row['seconds']:.1f} s)")
    if args.record:
        record("tuner", {"traces": found}, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
