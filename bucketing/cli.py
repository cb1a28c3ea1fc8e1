"""`headstart buckets tune`: tune the instance bucket list from a demand trace and a price list.

This module only builds the parser. What the command does is `bucketing.commands`, which
`common.later` imports when the command runs, so `headstart --help` and the other
commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later
from jobtraces.gpu_sharing import GPU_SHARING_HELP

DEFAULT_MAX_TYPES = 4  # bucketing.tune.DEFAULT_MAX_TYPES; not imported: --help stays fast


DESCRIPTION = """\
Embed a demand trace (running + pending pods at every tick) into instance-type buckets
and pack it into nodes, for the full catalog and for every bucket list base-instance
selection tries (drop the smallest type while the scale needed does not grow), then
cut the kept list to --max-types types. Reports node-hours, dollar cost and waste
(allocated but unrequested GPU/CPU/memory) for each, and recommends the cut list.
Pods go only to types they can run on: GPU pods to GPU types of the model they ask
for (openb's gpu_spec), GPU-less pods to GPU-less types; the pods the recommended
list cannot hold are the pods `headstart simulate` on it drops."""


def register(subparsers: argparse._SubParsersAction) -> None:
    buckets = subparsers.add_parser(
        "buckets",
        help="tune the instance-type bucket list from a demand trace",
        description="Instance-type buckets: the units the overprovisioner plans in.",
    )
    commands = buckets.add_subparsers(dest="buckets_command", metavar="SUBCOMMAND")
    commands.required = True
    tune = commands.add_parser(
        "tune",
        help="compare bucket lists on a trace and recommend one",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = tune.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="PATH",
                        help="demand trace (alibaba-openb, alibaba-dlrm or headstart CSV, "
                        "plain or gzip)")
    source.add_argument("--synthetic", action="store_true",
                        help="use the built-in seeded synthetic workload (14 days, seed 0)")
    tune.add_argument("--format", metavar="F",
                      help="force the trace format instead of detecting it")
    tune.add_argument("--gpu-sharing", action="store_true", help=GPU_SHARING_HELP)
    tune.add_argument("--catalog", default="aws", metavar="aws|gcp|PATH",
                      help="instance catalog: built-in aws or gcp, or a YAML file "
                      "(default aws)")
    tune.add_argument("--gpu-model", default="auto", metavar="MODEL",
                      help="bucket one GPU model's types plus the GPU-less types; 'all' uses "
                      "every type; 'auto' (default) picks the list leaving the fewest pods "
                      "unbucketable, then the cheapest")
    tune.add_argument("--max-types", type=int, default=DEFAULT_MAX_TYPES, metavar="N",
                      help=f"at most N types in the recommended list (default "
                      f"{DEFAULT_MAX_TYPES}: each type is a node group to run and a series "
                      "to forecast, and four covers GPU-less pods and the 1-, 4- and 8-GPU "
                      "classes); types are dropped one at a time, each time the one whose "
                      "loss leaves the fewest pods unbucketable, then raises the scale least")
    tune.add_argument("--tick", default="5m",
                      help="snapshot spacing, e.g. 30s, 5m, 1h (default 5m)")
    tune.add_argument("--running-only", action="store_true",
                      help="count only running pods (default: running + pending)")
    tune.add_argument("--json", action="store_true", help="print one JSON object")
    tune.add_argument("--plot", metavar="FILE.png",
                      help="draw the scale each candidate needs over time")
    tune.add_argument("--out", metavar="buckets.yaml",
                      help="write the recommended list as the overprovisioner's config snippet")
    tune.add_argument("--series", metavar="FILE.csv",
                      help="write the recommended list's per-tick bucket counts and packed "
                      "nodes as CSV")
    tune.set_defaults(func=later("bucketing.commands", "run_tune"))
