"""`headstart` command-line entry point: builds the subcommand tree and turns faults into messages.

Each package owns its subcommands in its own `cli.py`, which exposes
`register(subparsers)`; this module only collects them. The one family two packages
contribute to, `headstart trace` (files: jobtraces; the Prometheus export: predictor),
is built here, each module adding its subcommands with `add_trace_commands`. Every subcommand sets
`func` (taking the parsed args, returning an exit code). A `HeadstartError`
becomes one line on stderr and exit code 2, never a traceback; it names the command as
`command_name` when a nested subcommand sets one (`size workers`), else the top-level one.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import re
import sys

from common.errors import HeadstartError
from jobtraces.cli import FORMATS_HELP

# The order here is the order `headstart --help` lists them in.
COMMAND_MODULES = (
    "bucketing.cli",
    "predictor.cli",
    "extender.cli",
    "overprovisioner.service.cli",
    "overprovisioner.service.expire_cli",
    "overprovisioner.jobsize.cli",
    "overprovisioner.sim.cli",
    "overprovisioner.sim.gangs.cli",
    "overprovisioner.sim.system.cli",
    "headstart.check.cli",
)


class HeadstartParser(argparse.ArgumentParser):
    """argparse, but a value that starts with a minus and a digit (`--tick -5m`) is the
    option's value, not an unknown option: the option's own check then names it
    ("--tick: '-5m' is negative"), where argparse 3.11/3.12 said only "expected one
    argument". No headstart option looks like a negative number, and argparse 3.13 reads
    such values this way itself (its `_negative_number_matcher`); subcommands' parsers
    are of this class too (`add_subparsers` takes the parent's)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")


def build_parser() -> argparse.ArgumentParser:
    parser = HeadstartParser(
        prog="headstart",
        description="Locality-aware scheduling and predictive GPU overprovisioning "
        "for distributed training on autoscaled Kubernetes.",
    )
    parser.add_argument("--version", action="version", version=f"headstart {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    _register_trace(subparsers)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


# `headstart trace` SUBCOMMAND, in the order its --help lists them.
TRACE_MODULES = ("jobtraces.cli", "predictor.cli_trace_export")


def _register_trace(subparsers: argparse._SubParsersAction) -> None:
    trace = subparsers.add_parser(
        "trace",
        help="write the synthetic workload, inspect a demand trace, or export your "
        "cluster's",
        description="Demand traces: headstart's seeded synthetic workload, the public "
        f"trace formats it reads ({FORMATS_HELP}, plain or gzip), and your cluster's pods "
        "exported from Prometheus.",
    )
    commands = trace.add_subparsers(dest="trace_command", metavar="SUBCOMMAND")
    commands.required = True
    for module_name in TRACE_MODULES:
        importlib.import_module(module_name).add_trace_commands(commands)


def version() -> str:
    """The installed package's version (pyproject.toml), "unknown" when not installed."""
    try:
        return importlib.metadata.version("headstart")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except HeadstartError as error:
        name = getattr(args, "command_name", args.command)
        print(f"headstart {name}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
