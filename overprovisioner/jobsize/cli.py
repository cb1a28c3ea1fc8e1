"""`headstart size workers|weight|warm-start`, and `headstart warm-start` (the warm
start's first name, kept: the same arguments and the same handler).

This module only builds the parsers; what each command does is a module beside it
(`workers`, `weight`, `warm_start`), imported by `common.later` when the command runs.
Numbers are taken as text and checked by the command (`flags`), so a bad one is one
line naming the flag, not argparse's usage.
"""

from __future__ import annotations

import argparse

from common.later import later
from kube.labels import MIN_SIZE_ANNOTATION

PACKAGE = "overprovisioner.jobsize"


def register(subparsers: argparse._SubParsersAction) -> None:
    size = subparsers.add_parser(
        "size",
        help="one job's size without a cluster: KALE's workers for a rate, KOD2's weight, "
             "DLRover-RM's warm start",
        description="The sizing rules the overprovisioner and the extender apply to "
                    "elastic jobs, for one job on the command line (docs/predictor.md, "
                    "\"Sizing one job from the command line\").")
    commands = size.add_subparsers(dest="size_command", metavar="SUBCOMMAND")
    commands.required = True
    _workers(commands)
    _weight(commands)
    _warm_start(commands.add_parser(
        "warm-start", help="the starting size and requests of a job, from similar "
                           "finished jobs (DLRover-RM)",
        description=WARM_START_DESCRIPTION), "size warm-start")
    _warm_start(subparsers.add_parser(
        "warm-start", help="the same as `headstart size warm-start`",
        description=WARM_START_DESCRIPTION), "warm-start")


def _workers(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "workers", help="the least workers whose throughput exceeds a sample rate (KALE)",
        description="KALE's estimator: the least worker count in --min-workers.."
                    "--max-workers whose throughput f(w) exceeds --rate, from the model's "
                    "thetas or fitted to measured (workers, samples/s) pairs "
                    "(docs/predictor.md, \"A job's worker count\").")
    parser.add_argument("--rate", required=True, metavar="SAMPLES_PER_S",
                        help="the samples per second the job must keep up with")
    parser.add_argument("--model", required=True, metavar="MODE",
                        help="synchronous or asynchronous")
    parser.add_argument("--global-batch", metavar="M",
                        help="the global batch size (synchronous only)")
    parser.add_argument("--thetas", metavar="T0,T1,...",
                        help="the model's thetas, comma-separated (4 synchronous, "
                             "3 asynchronous)")
    parser.add_argument("--sample", action="append", default=[], metavar="WORKERS:RATE",
                        help="a measurement to fit the thetas to (repeat it; as many "
                             "different worker counts as the model has thetas)")
    parser.add_argument("--samples", metavar="FILE.csv",
                        help="measurements to fit to: CSV with the columns workers and "
                             "samples_per_s")
    parser.add_argument("--min-workers", default="1", metavar="N", help="default 1")
    parser.add_argument("--max-workers", default="1024", metavar="N", help="default 1024")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=later(f"{PACKAGE}.workers", "run"),
                        command_name="size workers")


def _weight(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "weight", help="an elastic job's KOD2 weight (who gives room to whom)",
        description="KOD2's weight, as the extender's admitter computes it: the sigmoid of "
                    "the job's minimum worker count over its whole request at that size, "
                    "in units of cores and GiB, plus a bonus once it has starved "
                    "(docs/extender.md, \"KOD2's weight\"). The job is an elastic owner's "
                    "manifest, or --minimum with one worker's --cpu and --memory.")
    parser.add_argument("job", nargs="?", metavar="JOB.yaml",
                        help=f"an elastic Job or PyTorchJob ({MIN_SIZE_ANNOTATION}, max-size)")
    parser.add_argument("--minimum", metavar="N", help="the job's minimum workers")
    parser.add_argument("--cpu", metavar="QTY", help="one worker's CPU request (4, 500m)")
    parser.add_argument("--memory", metavar="QTY", help="one worker's memory (16Gi)")
    parser.add_argument("--gpus", metavar="QTY", help="one worker's GPUs (default 0)")
    parser.add_argument("--gpu-resource", default="nvidia.com/gpu", metavar="NAME",
                        help="the GPU resource in JOB.yaml (default nvidia.com/gpu)")
    parser.add_argument("--waited", default="0s", metavar="DURATION",
                        help="how long the job has waited (default 0s: a running job)")
    parser.add_argument("--cpu-cores-per-unit", default="1", metavar="X", help="default 1")
    parser.add_argument("--memory-gib-per-unit", default="4", metavar="X", help="default 4")
    parser.add_argument("--gpus-per-unit", metavar="X",
                        help="count GPUs too, X to a unit (default: not counted)")
    parser.add_argument("--starvation", default="10m", metavar="DURATION",
                        help="a job waiting this long is starved (default 10m)")
    parser.add_argument("--starvation-bonus", default="1", metavar="X",
                        help="added to a starved job's weight (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=later(f"{PACKAGE}.weight", "run"),
                        command_name="size weight")


WARM_START_DESCRIPTION = (
    "DLRover-RM's warm start for the Job or PyTorchJob in JOB.yaml: the top-k most similar "
    "finished jobs in the history (same image repository, namespace, labels and per-pod "
    "shape) give each role's pod count and per-pod requests (docs/predictor.md, \"A job's "
    "starting shape\"). Exit 1 when none is alike enough.")


def _warm_start(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("job", metavar="JOB.yaml", help="the job's manifest (Job or PyTorchJob)")
    parser.add_argument("--history", required=True, metavar="FILE",
                        help="the overprovisioner's history store (forecast.history_path), "
                             "or a JSON Lines file of finished jobs "
                             "(docs/examples/warm-start-history.jsonl)")
    parser.add_argument("--k", default="5", help="similar jobs read (default 5)")
    parser.add_argument("--alpha", default="0.5",
                        help="smoothing, least to most similar, in (0, 1] (default 0.5)")
    parser.add_argument("--min-similarity", default="0.5",
                        help="jobs less alike are not read, in [0, 1] (default 0.5)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=later(f"{PACKAGE}.warm_start", "run"), command_name=name)
