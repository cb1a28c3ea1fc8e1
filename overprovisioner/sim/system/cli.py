"""`headstart replay`: the whole system replayed against the strongest configuration a user
runs today, the verdict first.

This module only builds the parser. What the command does is
`overprovisioner.sim.system.commands`, which `common.later` imports when the command runs,
so `headstart --help` and the other commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later
from common.parallel import add_jobs_option
from overprovisioner.sim.gangs.cli import add_gang_options


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay a trace's jobs under headstart's whole system and under Kueue-style "
        "FIFO with the best headroom chosen in hindsight; print which to run",
        description="Replay the jobs of a trace (or the synthetic workload) as gangs on a "
        "simulated autoscaled cluster (the `headstart simulate-elastic` cluster: "
        "cluster-autoscaler start-up, scans and scale-down, node groups of --max-nodes "
        "per instance type and placement group) under headstart's whole system: the "
        "admitter's round with elastic sizing, the overprovisioner's predictive "
        "placeholders for its forecast, known-ahead work and the elastic gangs' announced "
        "growth; then with each of those parts switched off; then under Kueue-style FIFO "
        "gang admission (whole jobs, priority then age) with no headroom, static:1/2/4/8, "
        "three proportional ratios and the per-type counts chosen in hindsight. Prints the "
        "verdict (which to run, the gain in queueing and completion time, the cost), the "
        "table and what each part contributes. The predictive policy runs the service's "
        "default config. Progress goes to stderr; 14 to 16 replays at the first seed and 2 "
        "to 8 more for the repeats (about 10 minutes on the synthetic workload on 2 busy "
        "cores).",
    )
    add_gang_options(parser, seed_help="seed for node start-up times (the first of the "
                     "repeats)")
    parser.add_argument("--repeats", type=int, default=3, metavar="N",
                        help="seeds the compared arms run at (headstart's configuration and "
                        "the peers the verdict names): the verdict compares their medians, "
                        "and a difference within their spread across seeds is a tie "
                        "(default 3; 1: one run each, a tie within 2%%)")
    add_jobs_option(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=later("overprovisioner.sim.system.commands", "replay_command"))
