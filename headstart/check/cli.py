"""`headstart check [--pre-install] [--kubeconfig FILE] [--output text|json]`: whether an
install of headstart fits together, or whether a cluster is ready for one.

This module only builds the parser; `headstart.check.commands` runs it.
"""

from __future__ import annotations

import argparse

from common.later import later


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check that headstart's parts fit together in a cluster (or, with "
             "--pre-install, that the cluster is ready for them)",
        description=(
            "Reads the cluster with your kubeconfig and prints one line per check, with a "
            "fix for each failure: the APIs served (placement gate, PodGroup, Gang and "
            "CapacityBuffer CRDs), the scheduler's image against the control plane, the "
            "autoscaler's flags and node groups against headstart's configs, certificates, "
            "the device plugin, the ServiceAccounts' rights against the shipped RBAC, and "
            "headstart's Deployments. Exit status: 0 when nothing failed (warnings "
            "included), 1 when a check failed, 2 on bad input or a cluster that cannot be "
            "reached."
        ),
    )
    parser.add_argument("--pre-install", action="store_true",
                        help="only the prerequisites, before headstart is installed")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--namespace", default="headstart",
                        help="headstart's namespace (default: headstart)")
    parser.add_argument("--manifests", metavar="DIR",
                        help="the repository's manifests/ folder, whose RBAC the "
                             "ServiceAccounts' rights are checked against (default: the "
                             "one beside this headstart)")
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="text (default) or json")
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="per request to the API server (default: 10)")
    parser.set_defaults(func=later("headstart.check.commands", "run"))
