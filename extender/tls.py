"""The extender's server TLS contexts (kube-scheduler's port, the ops port and the gate
webhook's) and their renewal.

Decides: how a PEM pair becomes an `ssl.SSLContext`, the error when it cannot, and how a
pair rewritten on disk (cert-manager renewing a mounted Secret) reaches the contexts
serving it.

Must not: choose which ports speak TLS (extender/commands.py, extender/gate_webhook.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import AsyncIterator, Callable, Sequence

from aiohttp import web

from common.errors import ConfigError

log = logging.getLogger("headstart.extender.tls")

CERT_CHECK_SECONDS = 30.0
"""How often a served pair's files are checked for change. kubelet rewrites a mounted
Secret about a minute after it changes; cert-manager renews a third of a lifetime early."""


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


def _stamp(*paths: str) -> tuple[float, ...]:
    stamps = []
    for path in paths:
        try:
            stamps.append(os.stat(path).st_mtime)
        except OSError:
            stamps.append(-1.0)
    return tuple(stamps)


async def reload_certificate(contexts: Sequence[ssl.SSLContext], cert_file: str, key_file: str,
                             what: str, every: float = CERT_CHECK_SECONDS,
                             client_ca_file: str | None = None) -> None:
    """Load the pair into `contexts` again whenever one of the files changes (and
    `client_ca_file`'s CAs, which are added: a CA once trusted stays so until restart);
    new connections use it. A pair caught half-written fails to load, the previous one
    keeps serving, and it is tried again on the next check."""
    files = (cert_file, key_file) + ((client_ca_file,) if client_ca_file else ())
    loaded = _stamp(*files)
    while True:
        await asyncio.sleep(every)
        current = _stamp(*files)
        if current == loaded:
            continue
        try:
            for context in contexts:
                context.load_cert_chain(cert_file, key_file)
                if client_ca_file and context.verify_mode == ssl.CERT_REQUIRED:
                    context.load_verify_locations(cafile=client_ca_file)
        except (OSError, ssl.SSLError) as error:
            log.warning(f"{what} certificate not reloaded; serving the previous one",
                        extra={"cert_file": cert_file, "error": str(error)})
            continue
        loaded = current
        log.info(f"{what} certificate reloaded", extra={"cert_file": cert_file})


def keep_reloaded(contexts: Sequence[ssl.SSLContext], cert_file: str, key_file: str,
                  what: str, every: float = CERT_CHECK_SECONDS,
                  client_ca_file: str | None = None,
                  ) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context running `reload_certificate` while the app runs."""

    async def run(_app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(reload_certificate(
            contexts, cert_file, key_file, what, every, client_ca_file))
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return run
