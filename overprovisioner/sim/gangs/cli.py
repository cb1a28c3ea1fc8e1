"""`headstart simulate-elastic`: the elastic table on a trace or the synthetic workload.

This module only builds the parser. What the command does is
`overprovisioner.sim.gangs.commands`, which `common.later` imports when the command
runs, so `headstart --help` and the other commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later
from common.parallel import add_jobs_option
from jobtraces.gpu_sharing import GPU_SHARING_HELP


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate-elastic",
        help="replay a trace's jobs as gangs at fixed sizes, elastic, and elastic with "
        "their growth announced; report completion time, queueing and GPU-hours",
        description="Replay the jobs of a trace (or the synthetic workload) as gangs that "
        "the extender's own admission round admits whole on a simulated autoscaled cluster "
        "(cluster-autoscaler start-up, scans and scale-down; node groups of --max-nodes "
        "per instance type and placement group), three times: fixed sizes; elastic "
        "(KOD2's rules: admitted smaller when no domain holds the job, scale-in for a "
        "heavier waiting job, scale-out into idle room); elastic with each shrunk gang's "
        "growth announced to the overprovisioner (placeholders in its placement group). "
        "Which jobs are elastic, and their bounds, follow a stated rule "
        "(docs/simulator.md, \"Elastic jobs\").",
    )
    add_gang_options(parser, seed_help="seed for node start-up times")
    parser.add_argument("--json", action="store_true", help="print the arms as JSON")
    add_jobs_option(parser)
    parser.set_defaults(func=later("overprovisioner.sim.gangs.commands",
                                   "simulate_elastic_command"))


def add_gang_options(parser: argparse.ArgumentParser, seed_help: str) -> None:
    """The workload, cluster and elastic-rule options every gang replay takes
    (`simulate-elastic`, `replay`)."""
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
                        "placement group (default 8: a cluster whose GPUs run out at its "
                        "peaks; elastic sizing changes nothing where the autoscaler can "
                        "always add nodes)")
    parser.add_argument("--groups", type=int, default=2, metavar="N",
                        help="placement groups, each with a node group of every type "
                        "(default 2)")
    parser.add_argument("--elastic-share", type=float, default=1.0, metavar="F",
                        help="share of eligible jobs (two or more workers of one type and GPU "
                        "count) replayed as elastic (default 1)")
    parser.add_argument("--min-fraction", type=float, default=0.5, metavar="F",
                        help="an elastic job's minimum: ceil(F x its trace workers) "
                        "(default 0.5)")
    parser.add_argument("--max-factor", type=float, default=1.0, metavar="F",
                        help="its maximum: max(trace workers, floor(F x trace workers)) "
                        "(default 1: never above what the trace ran)")
    parser.add_argument("--scaling", choices=("linear", "kale"), default="linear",
                        help="how a job's training rate follows its workers (default linear)")
    parser.add_argument("--seed", type=int, default=0, help=seed_help)
