"""`headstart trace export`: write a live cluster's pods (from Prometheus) as a job table.

A thin adapter: parses the options, reads the clock for `--until now`, runs
`predictor.live.trace_export_fetch`, writes the table with `jobtraces.write.write_job_table`
and prints one summary line. Faults are HeadstartErrors, which `headstart` prints as one
line with exit code 2.

Why `trace export` is added here and not in `jobtraces.cli`: the export needs
predictor's Prometheus adapter, and jobtraces must not import predictor (import-linter
layers). So `headstart.cli` builds the `trace` command and lets both modules add their
sub-commands (`add_trace_commands`); jobtraces never learns about this one.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from common.durations import parse_duration
from common.errors import InputError

DEFAULT_EXCLUDED = ("headstart",)


def add_trace_commands(commands: Any) -> None:
    """`trace export` (the `trace` family is built by headstart.cli)."""
    export = commands.add_parser(
        "export",
        help="write your cluster's pods, read from Prometheus (kube-state-metrics v2), "
        "as a job-table CSV",
        description="Reconstruct one row per pod from kube-state-metrics v2 in Prometheus "
        "(created, scheduled and completion times, requests, owner) over a window, and "
        "write headstart's job-table CSV, ready for `headstart simulate --trace` and "
        "`headstart buckets tune`. Roles are not read (\"\"); see docs/traces.md.",
    )
    export.add_argument("--prometheus", required=True, metavar="URL",
                        help="base URL of the Prometheus HTTP API, e.g. "
                        "http://prometheus-server.monitoring.svc:80")
    export.add_argument("--since", required=True, metavar="DURATION|TIME",
                        help="window start: a duration before --until (14d, 36h) or a UTC "
                        "time (2026-11-01T00:00:00Z)")
    export.add_argument("--until", default="now", metavar="now|TIME",
                        help="window end: now (default) or a UTC time")
    export.add_argument("--step", default="1m",
                        help="query_range step; times taken from samples are good to about "
                        "one step (default 1m)")
    export.add_argument("--exclude-namespace", nargs="*", default=list(DEFAULT_EXCLUDED),
                        metavar="NS", help="namespaces whose pods are not demand; replaces "
                        "the default, so list headstart too (default: headstart, where the "
                        "placeholders live; give the option alone to exclude none)")
    export.add_argument("--gpu-resource", default="nvidia.com/gpu",
                        help="the GPU extended resource (default nvidia.com/gpu)")
    export.add_argument("--timeout", default="60s",
                        help="per-request timeout (default 60s)")
    export.add_argument("--out", required=True, metavar="FILE.csv[.gz]",
                        help="where to write the job table (gzip when the name ends in .gz)")
    export.set_defaults(func=run_export)


def parse_time(text: str, option: str) -> float:
    """Unix seconds of an ISO-8601 time; a time without a zone is UTC."""
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{option}: {text!r} is not a duration or an ISO-8601 time "
                         "(like 14d or 2026-11-01T00:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def window(since: str, until: str, now_s: float) -> tuple[float, float]:
    """(since_s, until_s) in Unix seconds from the option texts; `now_s` is the clock."""
    until_s = now_s if until == "now" else parse_time(until, "--until")
    if re.match(r"\d{4}-\d\d-\d\d", since):
        since_s = parse_time(since, "--since")
    else:
        since_s = until_s - parse_duration(since, "--since")
    if since_s >= until_s:
        raise InputError(f"--since: the window is empty ({since!r} is not before --until)")
    return since_s, until_s


def ksm_resource(name: str) -> str:
    """A resource name as kube-state-metrics labels it: nvidia.com/gpu -> nvidia_com_gpu."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def run_export(args: argparse.Namespace) -> int:
    import asyncio
    import time
    from pathlib import Path

    from common.progress import Progress
    from jobtraces.write import write_job_table
    from predictor.live.prometheus import PrometheusConfig
    from predictor.live.trace_export_fetch import fetch_job_table

    since_s, until_s = window(args.since, args.until, time.time())
    if not Path(args.out).parent.is_dir():
        # Say so before minutes of queries, not after.
        raise InputError(f"--out: {Path(args.out).parent} is not a directory")
    step_s = parse_duration(args.step, "--step")
    timeout_s = parse_duration(args.timeout, "--timeout")
    config = PrometheusConfig(
        url=args.prometheus,
        gpu_resource=ksm_resource(args.gpu_resource),
        exclude_namespaces=tuple(args.exclude_namespace),
        timeout_s=timeout_s,
    )
    progress = Progress()
    with progress.meanwhile(f"querying {args.prometheus} and building one row per pod"):
        table, stats = asyncio.run(fetch_job_table(config, since_s, until_s, step_s))
    with progress.meanwhile(f"writing {args.out}"):
        path = write_job_table(table, args.out)
    frame = table.frame
    print(
        f"wrote {path}: {len(table)} pods in {frame['job_id'].nunique()} jobs over "
        f"{table.duration_s / 86_400:.2f} days; {table.censoring.describe()}; "
        f"{stats.excluded_pods} in excluded namespaces left out; "
        f"{stats.pods_without_requests} without request samples (written as zero)"
    )
    return 0
