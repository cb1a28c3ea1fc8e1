"""`headstart trace export`: write a live cluster's pods (from Prometheus) as a job table.

This module only builds the parser. What the command does is
`predictor.commands_trace_export`, which `common.later` imports when the command runs,
so `headstart --help` and the other commands load none of its imports.

Why `trace export` is added here and not in `jobtraces.cli`: the export needs
predictor's Prometheus adapter, and jobtraces must not import predictor (import-linter
layers). So `headstart.cli` builds the `trace` command and lets both modules add their
sub-commands (`add_trace_commands`); jobtraces never learns about this one.
"""

from __future__ import annotations

from typing import Any

from common.later import later


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
    export.add_argument("--exclude-namespace", nargs="*", default=None,
                        metavar="NS", help="namespaces whose pods are not demand; replaces "
                        "the default, so list those too (default: headstart and "
                        "headstart-placeholders, where headstart runs and keeps its "
                        "placeholders; give the option alone to exclude none)")
    export.add_argument("--gpu-resource", default="nvidia.com/gpu",
                        help="the GPU extended resource (default nvidia.com/gpu)")
    export.add_argument("--timeout", default="60s",
                        help="per-request timeout (default 60s)")
    export.add_argument("--out", required=True, metavar="FILE.csv[.gz]",
                        help="where to write the job table (gzip when the name ends in .gz)")
    export.set_defaults(func=later("predictor.commands_trace_export", "run_export"))
