"""What `headstart check` does once its options are parsed (cli.py): read the cluster,
run the checks, print them.

Exit status: 0 when no check failed, 1 when one did, 2 (raised as a HeadstartError, which
`headstart` prints as one line) when the kubeconfig cannot be used or the cluster cannot
be reached.

Must not: decide any check (core/).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from common.errors import InputError
from headstart.check import report
from headstart.check.api import Api
from headstart.check.core import suite
from headstart.check.core.result import exit_status
from headstart.check.reader import read_cluster
from headstart.check.shipped import default_manifests
from kube.client import load_api_client


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise InputError(f"--timeout: expected a positive number of seconds, got {args.timeout}")
    manifests = Path(args.manifests) if args.manifests else default_manifests()
    if args.manifests and not (manifests / "base").is_dir():
        raise InputError(f"--manifests {args.manifests}: not headstart's manifests folder "
                         "(no base/ in it)")
    api = Api(load_api_client(args.kubeconfig), args.timeout)
    after_install = not args.pre_install
    observed = read_cluster(api, args.namespace, time.time(), after_install, manifests)
    results = suite.after_install(observed) if after_install else suite.pre_install(observed)
    mode = "installed" if after_install else "pre-install"
    render = report.as_json if args.output == "json" else report.text
    sys.stdout.write(render(results, mode, observed.server))
    return exit_status(results)
