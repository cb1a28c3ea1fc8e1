"""`headstart warm-start --history FILE JOB.yaml`: DLRover-RM's warm start for one job,
from the finished jobs the overprovisioner kept in its history store.

This module only builds the parser. What the command does is
`overprovisioner.service.warm_start_commands`, which `common.later` imports when the
command runs, so `headstart --help` and the other commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "warm-start",
        help="the starting size and requests of a job, from similar finished jobs "
             "(DLRover-RM)",
        description=(
            "DLRover-RM's warm start for the Job or PyTorchJob in JOB.yaml: the top-k most "
            "similar finished jobs in the overprovisioner's history store (same image "
            "repository, namespace, labels and per-pod shape) give each role's pod count "
            "and per-pod requests (docs/predictor.md, \"A job's starting shape\")."),
    )
    parser.add_argument("job", metavar="JOB.yaml", help="the job's manifest (Job or PyTorchJob)")
    parser.add_argument("--history", required=True, metavar="FILE",
                        help="the overprovisioner's history store (forecast.history_path)")
    parser.add_argument("--k", type=int, default=5, help="similar jobs read (default 5)")
    parser.add_argument("--alpha", type=float, default=0.5,
                        help="smoothing, least to most similar (default 0.5)")
    parser.add_argument("--min-similarity", type=float, default=0.5,
                        help="jobs less alike are not read, in [0, 1] (default 0.5)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=later("overprovisioner.service.warm_start_commands", "run"))
