"""`headstart expire-placeholders --config FILE [--kubeconfig FILE]`: the dead-man's switch
run by something other than the overprovisioner.

This module only builds the parser. What the command does is
`overprovisioner.service.expire_commands`, which `common.later` imports when the command
runs, so `headstart --help` and the other commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later
from common.logs import LOG_FORMATS
from kube.labels import VALID_UNTIL_ANNOTATION


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "expire-placeholders",
        help="scale expired placeholders to their floor, once (the CronJob beside the "
             "overprovisioner)",
        description=(
            "One pass of the overprovisioner's dead-man's switch: placeholder objects whose "
            f"{VALID_UNTIL_ANNOTATION} has passed are scaled down to the configured minimum. "
            "Shipped as a CronJob with its own ServiceAccount (docs/overprovisioner.md, "
            "\"Placeholders cannot outlive the overprovisioner\")."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="the overprovisioner's YAML config (its namespace and floors)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use instead of the in-cluster service account")
    parser.add_argument("--log-format", default="json", choices=LOG_FORMATS,
                        help="json (default) or text")
    parser.set_defaults(func=later("overprovisioner.service.expire_commands", "run"))
