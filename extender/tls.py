"""The extender's server TLS contexts (kube-scheduler's port and the gate webhook's).

Decides: how a PEM pair becomes an `ssl.SSLContext`, and the error when it cannot.

Must not: choose which ports speak TLS (extender/commands.py) or reload files
(extender/gate_webhook.py).
"""

from __future__ import annotations

import ssl

from common.errors import ConfigError


def server_context(cert_file: str, key_file: str, field: str,
                   client_ca_file: str | None = None) -> ssl.SSLContext:
    """A server TLS context; with `client_ca_file`, one that requires a client
    certificate signed by that CA (mutual TLS). A file that cannot be loaded is a
    ConfigError naming `field`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"{field}: cannot load {cert_file} and {key_file} ({error})") from None
    if client_ca_file is not None:
        try:
            context.load_verify_locations(cafile=client_ca_file)
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(f"tls_client_ca_file: cannot load {client_ca_file} ({error})"
                              ) from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context
