"""Certificates and kubeconfigs for a local control plane, made with the `openssl` command.

Decides: one CA, the kube-apiserver's serving certificate (127.0.0.1, localhost and the
in-cluster service names), the service-account signing key pair, and client
certificates per identity, for the test's own admin client and the cluster's other
components (kube-controller-manager, the default kube-scheduler, kwok,
cluster-autoscaler, Karpenter): every certificate client is in `system:masters`, as the
components of a throw-away cluster are. headstart's processes never get one: they run
with their ServiceAccounts' tokens (installed.py, `ControlPlane.token_kubeconfig`).
Identities differ by common name and can carry an extra group. ECDSA P-256 keys: made
in milliseconds, where
RSA keys take about a second each on a loaded 2-core machine.

The files do not depend on ports, so one `Pki` serves every cluster of a test session.

Must not: start anything.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

SERVER_NAMES = (
    "IP:127.0.0.1", "IP:10.0.0.1", "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local",
)
ADMIN = "e2e-admin"


class Pki:
    """A directory of certificates; `client(name)` makes (and caches) one identity's."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ca_cert, self.ca_key = directory / "ca.crt", directory / "ca.key"
        self.server_cert, self.server_key = directory / "apiserver.crt", directory / "apiserver.key"
        self.sa_key, self.sa_pub = directory / "sa.key", directory / "sa.pub"
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.ca_cert.exists():
            self._make_ca()
            self._make_server()
            self._ec_key(self.sa_key)
            self._openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        self.client(ADMIN)

    def client(self, name: str, group: str | None = None) -> tuple[Path, Path]:
        """(certificate, key) of user `name` in system:masters (and `group`, if given)."""
        stem = name if group is None else f"{name}.{group}"
        cert, key = self.dir / f"{stem}.crt", self.dir / f"{stem}.key"
        if not cert.exists():
            subject = "/O=system:masters" + (f"/O={group}" if group else "") + f"/CN={name}"
            self._ec_key(key)
            self._sign(key, cert, subject, "clientAuth", alt_names=())
        return cert, key

    def kubeconfig(self, path: Path, server: str, name: str = ADMIN,
                   group: str | None = None) -> Path:
        """Write a kubeconfig for identity `name` against `server` (https://127.0.0.1:port)."""
        cert, key = self.client(name, group)
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {
                "server": server, "certificate-authority": str(self.ca_cert)}}],
            "users": [{"name": name, "user": {
                "client-certificate": str(cert), "client-key": str(key)}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": name}}],
            "current-context": "e2e",
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    def token_kubeconfig(self, path: Path, server: str, user: str, token: str) -> Path:
        """Write a kubeconfig that authenticates with bearer `token` against `server`."""
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {
                "server": server, "certificate-authority": str(self.ca_cert)}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
            "current-context": "e2e",
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        path.chmod(0o600)
        return path

    # ---- openssl -----------------------------------------------------------------

    def _openssl(self, *args: str) -> None:
        result = subprocess.run(["openssl", *args], cwd=self.dir, capture_output=True,
                                text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"openssl {' '.join(args)} failed: {result.stderr.strip()}")

    def _ec_key(self, path: Path) -> None:
        self._openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path.name)

    def _make_ca(self) -> None:
        self._ec_key(self.ca_key)
        self._openssl("req", "-x509", "-new", "-key", "ca.key", "-out", "ca.crt", "-days", "3650",
                      "-subj", "/CN=headstart-e2e-ca")

    def _make_server(self) -> None:
        self._ec_key(self.server_key)
        self._sign(self.server_key, self.server_cert, "/CN=kube-apiserver", "serverAuth",
                   SERVER_NAMES)

    def _sign(self, key: Path, cert: Path, subject: str, usage: str,
              alt_names: tuple[str, ...]) -> None:
        ext = cert.with_suffix(".ext")
        lines = ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature,keyEncipherment",
                 f"extendedKeyUsage={usage}"]
        if alt_names:
            lines.append("subjectAltName=" + ",".join(alt_names))
        ext.write_text("\n".join(lines) + "\n")
        csr = cert.with_suffix(".csr")
        self._openssl("req", "-new", "-key", key.name, "-out", csr.name, "-subj", subject)
        self._openssl("x509", "-req", "-in", csr.name, "-CA", "ca.crt", "-CAkey", "ca.key",
                      "-CAcreateserial", "-out", cert.name, "-days", "3650",
                      "-extfile", ext.name)
        csr.unlink()
        ext.unlink()
