"""What `headstart trace synth|inspect` do, once their options are parsed (cli.py).

An adapter: writes the seeded synthetic workload (`jobtraces.synthetic`) as a job table,
or loads any trace and prints a summary of its pods and per-tick demand
(`jobtraces.demand`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

import numpy as np

from common.durations import parse_duration
from common.outpath import check_output_file
from jobtraces.demand import snapshots, totals
from jobtraces.jobtable import known_at
from jobtraces.load import load_trace
from jobtraces.synthetic import SyntheticWorkload, generate
from jobtraces.write import write_job_table


def run_synth(args: argparse.Namespace) -> int:
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
