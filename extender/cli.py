"""`headstart extender`: run the scheduler extender service.

This module only builds the parser. What the command does is `extender.commands`, which
`common.later` imports when the command runs, so `headstart --help` and the other
commands load none of its imports.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from common.later import later
from common.logs import LOG_FORMATS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "extender",
        help="run the kube-scheduler extender (filter, prioritize, bind) on port 8888",
        description="Serve kube-scheduler's extender calls: keep distributed-training jobs' "
        "PS and worker pods close (few nodes, one placement group, one NUMA node). "
        "Without --config the documented defaults apply (docs/extender.md): pack, "
        "placement group preferred, nodeCacheCapable true, bind on.",
    )
    parser.add_argument("--config", type=Path, help="YAML config file (docs/extender.md)")
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        help="kubeconfig to use; default: in-cluster config when running in a pod, "
        "else $KUBECONFIG or ~/.kube/config",
    )
    parser.add_argument(
        "--port", type=int,
        help="TCP port for kube-scheduler's calls (overrides the config; default 8888)",
    )
    parser.add_argument(
        "--ops-port", type=int,
        help="TCP port for /healthz, /readyz, /metrics, /explain (overrides the config; "
        "default 8889)",
    )
    parser.add_argument(
        "--gate-webhook-port", type=int,
        help="serve the placement gate's admission webhook (HTTPS, POST /gate) on this "
        "port, for clusters before Kubernetes 1.36 (overrides the config's "
        "gate_webhook_port; manifests/components/gate-webhook sets 9443)",
    )
    parser.add_argument(
        "--gate-webhook-tls-dir",
        help="folder holding the webhook's tls.crt and tls.key (a mounted kubernetes.io/tls "
        "Secret; overrides gate_webhook_cert_file and gate_webhook_key_file)",
    )
    parser.add_argument("--log-format", choices=LOG_FORMATS,
                        help="json: one object per line (default, from the config's "
                             "log_format); text: for a human at a terminal")
    parser.set_defaults(func=later("extender.commands", "run"))
