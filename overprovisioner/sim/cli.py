"""`headstart simulate` and `headstart demo`: replay a trace under placeholder policies.

This module only builds the parser. What the command does is
`overprovisioner.sim.commands`, which `common.later` imports when the command runs, so
`headstart --help` and the other commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later
from common.parallel import add_jobs_option
from jobtraces.gpu_sharing import GPU_SHARING_HELP
from overprovisioner.sim.summary import QUICK_DAYS

POLICY_HELP = (
    "policies to compare: reactive; the peers users run today: static:N (N placeholder "
    "nodes per instance type), proportional:R[,min=M][,max=X] (one per R nodes of the type, "
    "as cluster-proportional-autoscaler's linear mode), scheduled:HH-HH=N[,...][,else=N] "
    "(N per type during those UTC hours); predictive (the overprovisioner service as "
    "configured), predictive:Q (at forecast quantile Q); oracle, rate-oracle[:Q] (limits "
    "that know the future) (default: reactive, static:1/2/4/8, proportional:R at three "
    "ratios sized to the trace (R = the busiest type's mean node count / 1, 2 and 4), two "
    "schedules following the trace's busy hours, predictive, oracle)"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    simulate = subparsers.add_parser(
        "simulate",
        help="replay a trace on a simulated autoscaled cluster under placeholder policies",
        description="Replay a job table on a simulated cluster with cluster-autoscaler "
        "(node start-up, 10 s scans, 10 min scale-down) and kube-scheduler-like placement "
        "(locality scoring), under each placeholder policy; report pending time caused "
        "by missing capacity, GPU-hours, dollars and node launches, and what predictive "
        "costs against the cheapest peer headroom for the same reduction. The predictive "
        "policy runs the overprovisioner service's configuration: --config FILE, or the "
        "service's defaults.",
    )
    source = simulate.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="PATH", help="a trace file (Alibaba openb/DLRM, "
                        "headstart CSV; gzip allowed)")
    source.add_argument("--synthetic", action="store_true",
                        help="the seeded synthetic workload (14 days of PS/worker jobs)")
    _common(simulate)
    simulate.add_argument("--json", action="store_true",
                          help="print one JSON object per policy run (a JSON list)")
    simulate.add_argument("--plot", metavar="DIR",
                          help="write demand/forecast/capacity plots per policy and the "
                          "pending-time vs cost trade-off into DIR (with --lead-curve: "
                          "the lead curve, lead-curve.png)")
    what_if = simulate.add_argument_group(
        "what-if: jobs known ahead (docs/known-demand.md)",
        "predictive plans for announced work (Kueue Workloads, CronJobs, ...) before its "
        "pods exist; the trace's known_at_s column says when each pod was known. These "
        "options mark a seeded random share of whole jobs as known a lead before creation "
        "(a pod known earlier by the trace keeps that).")
    what_if.add_argument("--lead-share", metavar="F",
                         help="share of jobs known ahead, 0-1 (with --lead or --lead-curve)")
    what_if.add_argument("--lead", metavar="DURATION",
                         help="how long before creation those jobs are known, e.g. 10m")
    what_if.add_argument("--lead-curve", metavar="D1,D2,...",
                         help="run predictive once per lead (e.g. 0,2m,5m,10m,20m; the "
                         "other policies once) and report the cut and cost per lead")
    simulate.set_defaults(func=later("overprovisioner.sim.commands", "simulate_command"))

    demo = subparsers.add_parser(
        "demo",
        help="run every policy on the synthetic workload and write an HTML report",
        description="Run reactive, the peer headrooms (static, proportional, scheduled), "
        "predictive (the service's defaults, and quantiles 0.97 and 0.99) and the oracle on "
        "the synthetic workload (or --trace); print the verdict (which quantile to "
        "configure, what it cuts and costs in GPU-hours and dollars against each headroom, "
        "the config lines) and the table, and write the same as an HTML report with plots "
        "into a new folder (named on stdout). Progress goes to stderr.",
    )
    demo.add_argument("--trace", metavar="PATH", help="use this trace instead of the "
                      "synthetic workload")
    demo.add_argument("--out", metavar="DIR", default=None,
                      help="folder for the report (default: ./headstart-demo-<time>)")
    demo.add_argument("--format", default=None, help="trace format (default: detected)")
    demo.add_argument("--gpu-sharing", action="store_true", help=GPU_SHARING_HELP)
    demo.add_argument("--days", type=float, default=None, help="simulate only N days")
    demo.add_argument("--models", metavar="LIST", default=None,
                      help="also run predictive with each of these forecasters (comma-"
                      "separated), as `headstart simulate --models` does: the verdict then "
                      "chooses the model and the quantile together")
    demo.add_argument("--compare-scoring", action="store_true",
                      help="one more run: predictive with kube-scheduler's default scoring "
                      "(only with multi-pod jobs)")
    demo.add_argument("--quick", action="store_true",
                      help=f"a quick look: the first {QUICK_DAYS:g} days (unless --days) and 8 "
                      "policies: reactive, static:1, static:2, the middle proportional ratio "
                      "and schedule, predictive, predictive:0.97, oracle (drops static:4 and "
                      ":8, the other ratios and schedules, predictive:0.99)")
    add_jobs_option(demo)
    demo.set_defaults(func=later("overprovisioner.sim.demo", "demo_command"))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default=None,
                        help="trace format (default: detected from the header)")
    parser.add_argument("--gpu-sharing", action="store_true", help=GPU_SHARING_HELP)
    parser.add_argument("--config", metavar="FILE.yaml",
                        help="the overprovisioner config the predictive policy runs (the "
                        "file `headstart overprovisioner --config` reads, loaded and checked "
                        "the same way; its instance types and catalog are the simulated "
                        "ones); default: the service's built-in defaults")
    parser.add_argument("--catalog", default=None,
                        help="instance catalog without --config: aws, gcp or a YAML path "
                        "(default aws)")
    parser.add_argument("--buckets", metavar="FILE.yaml",
                        help="instance types to simulate without --config (the `headstart "
                        "buckets tune --out` file, or `instance_types: [...]`); default: one "
                        "type per GPU count")
    parser.add_argument("--policy", nargs="+", metavar="NAME", default=None, help=POLICY_HELP)
    parser.add_argument("--models", metavar="LIST", default=None,
                        help="also run predictive with each of these forecasters (comma-"
                        "separated, e.g. last_adaptive,conditional; `headstart backtest "
                        "--models` ranks them by forecast error): the verdict then chooses "
                        "the model and the quantile together, by cost against headroom")
    parser.add_argument("--node-startup", default="5m",
                        help="GPU node start-up after CA asks, the mean (default 5m)")
    parser.add_argument("--node-startup-spread", type=float, default=0.2, metavar="F",
                        help="each node's start-up is drawn uniformly within +-F of the mean "
                        "(default 0.2: 4-6 min for 5m; 0 = exactly the mean)")
    parser.add_argument("--cpu-node-startup", default="2m",
                        help="GPU-less node start-up (default 2m)")
    parser.add_argument("--scale-down-delay-after-add", default="10m", metavar="DURATION",
                        help="cluster-autoscaler's flag of that name: no node is removed "
                        "this long after a scale-up (default 10m, CA's default; 0 = none)")
    parser.add_argument("--scale-down-utilization-threshold", type=float, default=0.5,
                        metavar="F", help="cluster-autoscaler's flag of that name: a node "
                        "without GPUs under this share of CPU and memory requested is "
                        "unneeded (default 0.5)")
    parser.add_argument("--scale-down-gpu-utilization-threshold", type=float, default=0.5,
                        metavar="F", help="the same for GPU nodes, by their GPU share alone "
                        "(default 0.5)")
    parser.add_argument("--drainable-pods", action="store_true",
                        help="the trace's pods are plain Jobs' pods that cluster-autoscaler "
                        "may evict to remove an underused node (default: pods of a "
                        "training operator, a custom controller CA never evicts)")
    parser.add_argument("--days", type=float, default=None,
                        help="simulate only the first N days of the window")
    parser.add_argument("--from-day", type=float, default=0.0,
                        help="start the window N days after the trace start (default 0)")
    parser.add_argument("--groups", type=int, default=2,
                        help="placement groups per GPU type the config does not name "
                        "(default 2; 1 = none)")
    parser.add_argument("--scoring", choices=("headstart", "default"), default="headstart",
                        help="scheduler scoring of the main runs (default headstart)")
    parser.add_argument("--compare-scoring", action="store_true",
                        help="also run the predictive policy (or the first) with the other "
                        "scoring, to see what headstart's locality scoring changes (one more "
                        "run; only with multi-pod jobs)")
    # The comparison used to run by default; the old opt-out is still accepted.
    parser.add_argument("--no-scoring-comparison", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help="seed for CA's tie-breaks")
    add_jobs_option(parser)
