"""`headstart trace synth|inspect`: write the synthetic workload, summarise any trace.

A thin adapter: parses arguments, calls `jobtraces.synthetic`, the trace
loaders and `jobtraces.demand`, prints. Heavy imports (numpy, pandas) happen inside the
handlers so `headstart --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from common.durations import parse_duration

FORMATS_HELP = "alibaba-openb, alibaba-dlrm or headstart"


def add_trace_commands(commands: argparse._SubParsersAction) -> None:
    """`trace synth` and `trace inspect` (the `trace` family is built by headstart.cli)."""
    synth = commands.add_parser(
        "synth",
        help="write the seeded synthetic workload as a job-table CSV",
        description="Generate distributed training jobs (PS and worker pods, 0-8 GPUs per "
        "pod, daily seasonality, bursts, weekly trend) and write them as headstart's job-"
        "table CSV. The same seed always writes the same file.",
    )
    synth.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    synth.add_argument("--days", type=float, default=14.0, help="trace length in days (default 14)")
    synth.add_argument(
        "--jobs-per-day", type=float, default=None,
        help="mean job arrivals per day before seasonality and bursts (default 45)",
    )
    synth.add_argument(
        "--out", required=True, metavar="FILE.csv[.gz]",
        help="where to write the job table (gzip when the name ends in .gz)",
    )
    synth.set_defaults(func=run_synth)

    inspect = commands.add_parser(
        "inspect",
        help="summarise a trace: pods, jobs, time span, censoring, GPU/CPU totals, peak",
        description="Load a trace (format detected from its header unless --format is "
        "given) and print pods, jobs, time span, censoring counts, requested GPU/CPU "
        "totals and the peak of running GPUs at --tick.",
    )
    inspect.add_argument("path", metavar="PATH", help="trace file, plain CSV or gzip")
    inspect.add_argument("--format", default=None, help=f"force the format: {FORMATS_HELP}")
    inspect.add_argument("--tick", default="5m", help="tick for the peak (default 5m)")
    inspect.add_argument("--json", action="store_true", help="print one JSON object")
    inspect.set_defaults(func=run_inspect)


def run_synth(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from common.outpath import check_output_file
    from jobtraces.synthetic import SyntheticWorkload, generate
    from jobtraces.write import write_job_table

    check_output_file(args.out, "--out")
    config = SyntheticWorkload(seed=args.seed, days=args.days)
    if args.jobs_per_day is not None:
        config = replace(config, jobs_per_day=args.jobs_per_day)
    table = generate(config)
    path = write_job_table(table, args.out)
    print(
        f"wrote {path}: {len(table)} pods in {table.frame['job_id'].nunique()} jobs "
        f"over {config.days:g} days (seed {config.seed})"
    )
    return 0


def summarise(path: str, format_name: str | None, tick_s: float) -> dict[str, Any]:
    """The numbers `inspect` prints, as a JSON-ready dict."""
    import numpy as np

    from jobtraces.demand import snapshots, totals
    from jobtraces.jobtable import known_at
    from jobtraces.load import load_trace

    table = load_trace(path, format=format_name)
    frame = table.frame
    demand = totals(table, snapshots(table, tick_s))
    lead = frame["submit_s"].to_numpy() - known_at(table)
    ahead = lead > 0
    peak_at = float(demand["gpus_running"].idxmax())
    censoring = table.censoring
    return {
        "source": table.source,
        "pods": len(table),
        "jobs": int(frame["job_id"].nunique()),
        "trace_start_s": table.trace_start_s,
        "trace_end_s": table.trace_end_s,
        "duration_h": round(table.duration_s / 3600.0, 3),
        "censoring": {
            "started_before_trace": censoring.started_before_trace,
            "running_at_end": censoring.running_at_end,
            "never_scheduled": censoring.never_scheduled,
            "dropped": dict(censoring.dropped),
        },
        "roles": {str(k): int(v) for k, v in frame["role"].value_counts().items()},
        "requested_gpus_total": float(frame["gpu_milli"].sum() / 1000.0),
        "requested_cpus_total": float(frame["cpu_milli"].sum() / 1000.0),
        "gpu_pods": int((frame["gpu_milli"] > 0).sum()),
        "tick_s": tick_s,
        "peak_running_gpus": float(demand["gpus_running"].max()),
        "peak_running_gpus_at_s": peak_at,
        "mean_running_gpus": round(float(demand["gpus_running"].mean()), 3),
        "peak_running_cpus": float(demand["cpus_running"].max()),
        "peak_pending_pods": int(demand["pods_pending"].max()),
        "pods_known_ahead": int(ahead.sum()),
        "median_known_lead_s": float(np.median(lead[ahead])) if ahead.any() else None,
    }


def run_inspect(args: argparse.Namespace) -> int:
    summary = summarise(args.path, args.format, parse_duration(args.tick, "--tick"))
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
        return 0
    censoring = summary["censoring"]
    dropped = ", ".join(f"{n} {why}" for why, n in censoring["dropped"].items()) or "none"
    roles = ", ".join(f"{n} {role or '(none)'}" for role, n in summary["roles"].items())
    lines = [
        f"trace      {summary['source']}",
        f"pods       {summary['pods']} in {summary['jobs']} jobs ({roles})",
        f"span       {summary['trace_start_s']:.0f} s .. {summary['trace_end_s']:.0f} s "
        f"({summary['duration_h']:.1f} h)",
        f"censoring  {censoring['started_before_trace']} started before the trace, "
        f"{censoring['running_at_end']} running at its end, "
        f"{censoring['never_scheduled']} never scheduled; dropped: {dropped}",
        f"requested  {summary['requested_gpus_total']:g} GPUs "
        f"({summary['gpu_pods']} GPU pods), {summary['requested_cpus_total']:g} CPUs in total",
        f"running    peak {summary['peak_running_gpus']:g} GPUs at "
        f"{summary['peak_running_gpus_at_s']:.0f} s, mean {summary['mean_running_gpus']:g}, "
        f"peak {summary['peak_running_cpus']:g} CPUs (tick {summary['tick_s']:g} s)",
        f"pending    peak {summary['peak_pending_pods']} pods",
        f"known      {summary['pods_known_ahead']} pods known before creation (known_at_s)"
        + (f", median lead {summary['median_known_lead_s']:.0f} s"
           if summary["median_known_lead_s"] is not None else ""),
    ]
    print("\n".join(lines))
    return 0
