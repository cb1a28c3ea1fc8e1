"""`headstart overprovisioner --config FILE [--kubeconfig FILE] [--dry-run]`: run the service.

This module only builds the parser. What the command does is
`overprovisioner.service.commands`, which `common.later` imports when the command runs,
so `headstart --help` and the other commands load none of its imports.
"""

from __future__ import annotations

import argparse

from common.later import later
from common.logs import LOG_FORMATS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "overprovisioner",
        help="run the predictive overprovisioner service (placeholder pods sized to the forecast)",
        description=(
            "Every tick: record the cluster's demand, forecast each bucket one node start-up "
            "ahead, plan placeholders (forecast minus capacity already free, within limits and "
            "the cost cap) and apply them as balloon Deployments or CapacityBuffers. Serves "
            "/healthz /readyz /metrics /plan on the configured port (8080). "
            "See docs/overprovisioner.md and overprovisioner/example-config.yaml."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="YAML config (see overprovisioner/example-config.yaml)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use instead of the in-cluster service account")
    parser.add_argument("--dry-run", action="store_true",
                        help="forecast-only: compute and serve the plan, never write to the "
                             "cluster (overrides dry_run in the config)")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="log verbosity")
    parser.add_argument("--log-format", default="json", choices=LOG_FORMATS,
                        help="json: one object per line on stderr (default, for log "
                             "pipelines); text: for a human at a terminal")
    parser.set_defaults(func=later("overprovisioner.service.commands", "run"))
