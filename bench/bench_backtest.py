"""What `headstart backtest` says on the shared traces, recorded so README's forecasting
table and docs/predictor.md's results are rendered from bench/results.json (entry
backtest), never typed.

    python bench/bench_backtest.py --record   # Helios, Philly, DLRM: about 2-3 minutes
    python bench/render_tables.py             # then the tables

Each series runs as the documented command runs it (docs/predictor.md, "Results on the
shared traces"): `headstart backtest ... --horizon 10m --quantile 0.9 --models
last_adaptive,last,seasonal,hw,conditional`, parsed by headstart's own argument parser
and computed by the command's own code (`predictor.cli.compute_backtest`). Recorded per
series: each model's row of the table (the trace's total-GPU row for DLRM, whose bucket
series are summarised by the ranking), the command's ranking lines, and the seconds it
took. The public traces are read from the folder `--traces` names (docs/traces.md
says where to get them); a missing one is skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results_file import load_average, record  # noqa: E402

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
MODELS = "last_adaptive,last,seasonal,hw,conditional"
# (name, what the table's row measures, the file, the options naming the series, the row)
SERIES = (
    ("Helios", "GPUs running", "helios-earth-gpu-5min.csv.gz",
     ("--series", "{path}", "--column", "gpus_running"), "gpus_running"),
    ("Philly", "nodes active", "philly-active-nodes-5min.csv.gz",
     ("--series", "{path}", "--column", "nodes_active"), "nodes_active"),
    ("DLRM", "total GPUs", "alibaba-gpu-2025-disaggregated_DLRM_trace.csv.gz",
     ("--trace", "{path}"), "total_gpus"),
)
KEPT = ("mae", "pmse", "shortfall_rate", "mean_shortfall", "mean_overprovision")


def run_series(source: tuple, path: Path) -> dict:
    from headstart.cli import build_parser
    from predictor.commands import compute_backtest, format_table, simulate_command

    name, measure, file, options, row_series = source
    argv = ["backtest", *(o.format(path=path) for o in options), "--horizon", "10m",
            "--quantile", "0.9", "--models", MODELS]
    args = build_parser().parse_args(argv)
    started = time.perf_counter()
    series, result = compute_backtest(args)
    seconds = time.perf_counter() - started
    rows = []
    for row in result.rows:
        if row.series != row_series:
            continue
        found = row.as_dict()
        rows.append({"model": row.model, **{k: found[k] for k in KEPT},
                     "fair_overprovision": found["fair_overprovision"],
                     "fit_s": found["fit_seconds"],
                     "predict_ms": (None if found["predict_seconds"] is None
                                    else 1000 * found["predict_seconds"])})
    table = format_table(result.rows, series.source, series.tick_s,
                         simulate_command(args, result.rows)).splitlines()
    ranking = [line.replace(str(path), f"$TRACES/{file}") for line in table
               if line.startswith(("best for", "ranks first", "  "))]
    command = " ".join(["headstart", *argv]).replace(str(path), f"$TRACES/{file}")
    return {"name": name, "measure": measure, "series": row_series, "command": command,
            "bucket_series": len({r.series for r in result.rows} - {"total_gpus"})
            if options[0] == "--trace" else 0,
            "rows": rows, "ranking": ranking, "seconds": round(seconds, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--record", action="store_true",
                        help="write bench/results.json's backtest entry")
    args = parser.parse_args()
    load_before = load_average()
    found = []
    for source in SERIES:
        path = args.traces / source[2]
        if not path.is_file():
            print(f"skipped {source[0]}: {path} is missing", file=sys.stderr)
            continue
        found.append(run_series(source, path))
        done = found[-1]
        print(f"{done['name']} {done['measure']} ({done['seconds']:.1f} s):")
        for row in done["rows"]:
            print(f"  {row['model']:<14} short {100 * row['shortfall_rate']:5.1f}%  "
                  f"over-provision {row['mean_overprovision']:8.2f}")
        for line in done["ranking"]:
            print(f"  {line}")
    if args.record:
        record("backtest", {"series": found}, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
