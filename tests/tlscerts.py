"""Certificates for TLS tests, made with openssl: a self-signed authority and
certificates it signs (tests skip when openssl is not installed)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def authority(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA: (certificate, key) files named `name`."""
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
            f"/CN={name}", "-keyout", str(key), "-out", str(cert))
    return cert, key


def signed(folder: Path, ca: tuple[Path, Path], name: str, extension: str
           ) -> tuple[Path, Path]:
    """A certificate for CN=`name` with one x509 `extension` line, signed by `ca`."""
    key, csr, cert = (folder / f"{name}.{suffix}" for suffix in ("key", "csr", "crt"))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
            "-keyout", str(key), "-out", str(csr))
    ext = folder / f"{name}.ext"
    ext.write_text(extension + "\n")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
            "-CAcreateserial", "-days", "1", "-extfile", str(ext), "-out", str(cert))
    return cert, key
