"""What a PEM certificate says, read with the `cryptography` package where it is installed.

headstart does not depend on `cryptography` (its processes load certificates with the
standard library's `ssl`, which cannot inspect them); `AVAILABLE` says whether it is
installed (version 42 or later: `verify_directly_issued_by`,
`not_valid_after_utc`), and without it the
certificate checks say they are skipped.

Decides: a certificate's names (DNS and IP subject alternative names), validity, extended
key usages, whether a CA certificate signed it, and whether a private key is its key.

Must not: read files, call the API, read the clock, log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

try:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID

    AVAILABLE = all(hasattr(x509.Certificate, name) for name in (
        "verify_directly_issued_by", "not_valid_after_utc"))
except ImportError:  # pragma: no cover - depends on the environment
    AVAILABLE = False

USAGES = {"serverAuth": "SERVER_AUTH", "clientAuth": "CLIENT_AUTH"}


@dataclass(frozen=True)
class Certificate:
    subject: str
    not_before_s: float
    not_after_s: float
    names: tuple[str, ...]
    """DNS names and IP addresses of its subject alternative names."""
    usages: frozenset[str]
    """"serverAuth" and/or "clientAuth"; empty: no extended key usage (any use)."""
    native: Any
    """The `cryptography` certificate, for signature checks."""


def load_certificates(pem: bytes) -> list[Certificate]:
    """Every certificate of a PEM bundle; ValueError when there is none or one is broken."""
    loaded = x509.load_pem_x509_certificates(pem)
    return [_certificate(cert) for cert in loaded]


def _certificate(cert: Any) -> Certificate:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = tuple(san.get_values_for_type(x509.DNSName)) + tuple(
            str(ip) for ip in san.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        names = ()
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        usages = frozenset(name for name, oid in USAGES.items()
                           if getattr(ExtendedKeyUsageOID, oid) in eku)
    except x509.ExtensionNotFound:
        usages = frozenset()
    return Certificate(cert.subject.rfc4514_string(), cert.not_valid_before_utc.timestamp(),
                       cert.not_valid_after_utc.timestamp(), names, usages, cert)


def signed_by(cert: Certificate, authorities: Sequence[Certificate]) -> bool:
    """Whether one of `authorities` issued `cert` (its name and signature)."""
    for authority in authorities:
        try:
            cert.native.verify_directly_issued_by(authority.native)
            return True
        except (ValueError, TypeError, InvalidSignature):
            continue
    return False


def key_matches(cert: Certificate, key_pem: bytes) -> bool:
    """Whether `key_pem` is the private key of `cert`; False when it is no key."""
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        return False
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    return key.public_key().public_bytes(der, spki) == \
        cert.native.public_key().public_bytes(der, spki)


def names_host(cert: Certificate, host: str) -> bool:
    """Whether the certificate is valid for `host` (a `*.` name covers one label)."""
    for name in cert.names:
        if name == host or (name.startswith("*.") and "." in host
                            and host.split(".", 1)[1] == name[2:]):
            return True
    return False
