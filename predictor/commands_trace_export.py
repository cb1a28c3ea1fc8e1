"""What `headstart trace export` does, once its options are parsed (cli_trace_export.py).

An adapter: reads the clock for `--until now`, runs `predictor.live.trace_export_fetch`,
writes the table with `jobtraces.write.write_job_table` and prints one summary line.
Faults are HeadstartErrors, which `headstart` prints as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from common.durations import parse_duration
from common.errors import InputError
from common.progress import Progress
from jobtraces.write import write_job_table
from predictor.live.prometheus import PrometheusConfig
from predictor.live.trace_export_fetch import fetch_job_table

# What --until and --since accept, in their messages: a user who typed `yesterday`
# learns the forms, and that a time without a zone is UTC.
TIME_FORMS = "an ISO-8601 time, UTC unless it names a zone (2026-11-01, 2026-11-01T06:00:00Z)"
SINCE_FORMS = f"a duration before --until (14d, 36h) or {TIME_FORMS}"


def parse_time(text: str, option: str, forms: str = TIME_FORMS) -> float:
    """Unix seconds of an ISO-8601 time; a time without a zone is UTC."""

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{option}: {text!r} is not {forms}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def window(since: str, until: str, now_s: float) -> tuple[float, float]:
    """(since_s, until_s) in Unix seconds from the option texts; `now_s` is the clock."""
    until_s = now_s if until == "now" else parse_time(until, "--until")
    if re.match(r"\d{4}-\d\d-\d\d", since):
        since_s = parse_time(since, "--since", SINCE_FORMS)
    elif re.match(r"-?\d", since.strip()):  # a duration, maybe a bad one: its own message
        since_s = until_s - parse_duration(since, "--since")
    else:
        raise InputError(f"--since: {since!r} is not {SINCE_FORMS}")
    if since_s >= until_s:
        raise InputError(f"--since: the window is empty ({since!r} is not before --until)")
    return since_s, until_s


def ksm_resource(name: str) -> str:
    """A resource name as kube-state-metrics labels it: nvidia.com/gpu -> nvidia_com_gpu."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def run_export(args: argparse.Namespace) -> int:
    since_s, until_s = window(args.since, args.until, time.time())
    if not Path(args.out).parent.is_dir():
        # Say so before minutes of queries, not after.
        raise InputError(f"--out: {Path(args.out).parent} is not a directory")
    step_s = parse_duration(args.step, "--step")
    timeout_s = parse_duration(args.timeout, "--timeout")
    config = PrometheusConfig(
        url=args.prometheus,
        gpu_resource=ksm_resource(args.gpu_resource),
        timeout_s=timeout_s,
    )
    if args.exclude_namespace is not None:  # given, maybe empty: exclude exactly those
        config = replace(config, exclude_namespaces=tuple(args.exclude_namespace))
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
