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
from jobtraces.gpu_sharing import GPU_SHARING_HELP


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
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="PATH", help="a trace file with jobs (headstart "
                        "CSV with job_id and role, Alibaba DLRM; gzip allowed)")
    source.add_argument("--synthetic", action="store_true",
                        help="the seeded synthetic workload (14 days of PS/worker jobs)")
    parser.add_argument("--format", default=None, help="trace format (default: detected)")
    parser.add_argument("--gpu-sharing", action="store_true", help=GPU_SHARING_HELP)
    parser.add_argument("--catalog", default="aws", help="instance catalog: aws, gcp or a "
                        "YAML path (default aws)")
    parser.add_argument("--days", type=float, default=None,
                        help="replay only the first N days of the window")
    parser.add_argument("--from-day", type=float, default=0.0,
                        help="start the window N days after the trace start (default 0)")
    parser.add_argument("--max-nodes", type=int, default=8, metavar="N",
                        help="each node group's maximum size, per instance type and "
                        "placement group (default 8)")
    parser.add_argument("--groups", type=int, default=2, metavar="N",
                        help="placement groups, each with a node group of every type "
                        "(default 2)")
    parser.add_argument("--elastic-share", type=float, default=1.0, metavar="F",
                        help="share of eligible jobs replayed as elastic (default 1)")
    parser.add_argument("--min-fraction", type=float, default=0.5, metavar="F",
                        help="an elastic job's minimum: ceil(F x its trace workers) "
                        "(default 0.5)")
    parser.add_argument("--max-factor", type=float, default=1.0, metavar="F",
                        help="its maximum: max(trace workers, floor(F x trace workers)) "
                        "(default 1)")
    parser.add_argument("--scaling", choices=("linear", "kale"), default="linear",
                        help="how a job's training rate follows its workers (default linear)")
    parser.add_argument("--seed", type=int, default=0, help="seed for node start-up times "
                        "(the first of the repeats)")
    parser.add_argument("--repeats", type=int, default=3, metavar="N",
                        help="seeds the compared arms run at (headstart's configuration and "
                        "the peers the verdict names): the verdict compares their medians, "
                        "and a difference within their spread across seeds is a tie "
                        "(default 3; 1: one run each, a tie within 2%%)")
    add_jobs_option(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=later("overprovisioner.sim.system.commands", "replay_command"))
