"""The certificates of mutual TLS between the headstart-scheduler and the extender, for
every e2e cluster: made by the install docs' own openssl functions (`ca`, `cert` of the
docs' certificate block), as a user without cert-manager makes them, with one change:
the extender's serving certificate names 127.0.0.1, where the harness runs it, beside
the Service name.

Decides: the files and where they lie. Must not: decide which process reads which (the
harness in headstart.py replaces the shipped paths with these).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.manifests.test_install_docs import self_signed_block

CA = "headstart-scheduler-ca"
SERVER_EXTENSIONS = ("subjectAltName=IP:127.0.0.1,DNS:headstart-extender.headstart.svc"
                     "\\nextendedKeyUsage=serverAuth")


@dataclass(frozen=True)
class SchedulerPki:
    ca: Path
    """The CA both sides trust (each Secret's ca.crt)."""
    server: tuple[Path, Path]
    """The extender's serving pair (headstart-extender-tls)."""
    client: tuple[Path, Path]
    """The scheduler's client pair (headstart-scheduler-tls)."""
    folder: Path


def docs_functions() -> str:
    """The `ca` and `cert` shell functions of docs/install-eks.md's certificate block."""
    block = self_signed_block("docs/install-eks.md")
    start, end = block.index("ca() {"), block.index("# Mutual TLS:")
    return block[start:end]


@functools.cache
def scheduler_pki() -> SchedulerPki:
    """Made once per test process, in a temporary folder."""
    if shutil.which("openssl") is None:
        raise RuntimeError("openssl is not installed: the e2e harness needs it for the "
                           "shipped mutual TLS between kube-scheduler and the extender")
    folder = Path(tempfile.mkdtemp(prefix="headstart-e2e-pki-"))
    script = (docs_functions()
              + f"ca {CA}\n"
              + f"cert headstart-extender {CA} '{SERVER_EXTENSIONS}'\n"
              + f"cert headstart-scheduler {CA} 'extendedKeyUsage=clientAuth'\n")
    subprocess.run(["bash", "-euc", script], cwd=folder, check=True, capture_output=True)
    return SchedulerPki(
        ca=folder / f"{CA}.crt",
        server=(folder / "headstart-extender.crt", folder / "headstart-extender.key"),
        client=(folder / "headstart-scheduler.crt", folder / "headstart-scheduler.key"),
        folder=folder)
