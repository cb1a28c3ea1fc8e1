"""`headstart trace synth|inspect`: write the synthetic workload, summarise any trace.

This module only builds the parser. What the command does is `jobtraces.commands`, which
`common.later` imports when the command runs, so `headstart --help` and the other
commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later

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
    synth.set_defaults(func=later("jobtraces.commands", "run_synth"))

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
    inspect.set_defaults(func=later("jobtraces.commands", "run_inspect"))
