"""kube-scheduler's port under mutual TLS (extender/tls.py): who is let in, and a renewed
Secret taken up without a restart. Certificates are made with openssl as the install
docs make them (tests/tlscerts.py)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from extender.tls import keep_reloaded, server_context
from tests.tlscerts import authority, signed

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="openssl is not installed")

SERVER = "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"
CLIENT = "extendedKeyUsage=clientAuth"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _ok(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


class Served:
    """A one-route app on 127.0.0.1 behind `server_context` with a client CA, its pair
    kept reloaded every 50 ms."""

    def __init__(self, cert: Path, key: Path, client_ca: Path) -> None:
        self.cert, self.key, self.client_ca = cert, key, client_ca
        self.port = _free_port()
        self.runner: web.AppRunner | None = None

    async def __aenter__(self) -> Served:
        context = server_context(str(self.cert), str(self.key), "tls", str(self.client_ca))
        app = web.Application()
        app.router.add_get("/", _ok)
        app.cleanup_ctx.append(keep_reloaded([context], str(self.cert), str(self.key),
                                             "serving", 0.05, str(self.client_ca)))
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port, ssl_context=context).start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    async def status(self, trust: Path, client: tuple[Path, Path] | None) -> int | str:
        """The reply's status, or the kind of failure the connection met."""
        context = ssl.create_default_context(cafile=str(trust))
        if client is not None:
            context.load_cert_chain(str(client[0]), str(client[1]))
        try:
            async with aiohttp.ClientSession() as session, session.get(
                    f"https://127.0.0.1:{self.port}/", ssl=context,
                    timeout=aiohttp.ClientTimeout(total=5)) as reply:
                return reply.status
        except aiohttp.ClientConnectorCertificateError:
            return "server certificate refused"
        except (aiohttp.ClientError, ssl.SSLError, ConnectionError):
            return "refused in the handshake"


async def test_only_a_client_certificate_for_client_auth_signed_by_the_ca_gets_in(tmp_path):
    ca = authority(tmp_path, "headstart-scheduler-ca")
    server = signed(tmp_path, ca, "headstart-extender", SERVER)
    client = signed(tmp_path, ca, "headstart-scheduler", CLIENT)
    stranger = signed(tmp_path, authority(tmp_path, "someone-else"), "tenant", CLIENT)
    # Signed by the same CA, but for serving only: the extender's own certificate, which
    # is mounted beside the CA, cannot be presented as the scheduler's.
    serving_only = signed(tmp_path, ca, "headstart-extender-copy", SERVER)
    ca_file = tmp_path / "ca.crt"
    shutil.copy(ca[0], ca_file)
    async with Served(server[0], server[1], ca_file) as served:
        assert await served.status(ca[0], client) == 200
        assert await served.status(ca[0], None) == "refused in the handshake"
        assert await served.status(ca[0], stranger) == "refused in the handshake"
        assert await served.status(ca[0], serving_only) == "refused in the handshake"


async def _until(check, want) -> None:
    for _ in range(100):
        if await check() == want:
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"never {want!r}; last {await check()!r}")


async def test_a_renewed_pair_and_an_added_ca_are_taken_up_without_a_restart(tmp_path):
    """As cert-manager renews: the serving pair is rewritten in place, and a CA rotation
    first adds the new CA beside the old one."""
    old_ca = authority(tmp_path, "old-ca")
    new_ca = authority(tmp_path, "new-ca")
    cert, key, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    first = signed(tmp_path, old_ca, "first", SERVER)
    shutil.copy(first[0], cert)
    shutil.copy(first[1], key)
    shutil.copy(old_ca[0], ca_file)
    old_client = signed(tmp_path, old_ca, "old-client", CLIENT)
    new_client = signed(tmp_path, new_ca, "new-client", CLIENT)
    async with Served(cert, key, ca_file) as served:
        assert await served.status(old_ca[0], old_client) == 200
        assert await served.status(new_ca[0], old_client) == "server certificate refused"
        assert await served.status(old_ca[0], new_client) == "refused in the handshake"

        renewed = signed(tmp_path, new_ca, "renewed", SERVER)
        ca_file.write_bytes(old_ca[0].read_bytes() + new_ca[0].read_bytes())
        shutil.copy(renewed[1], key)
        shutil.copy(renewed[0], cert)
        await _until(lambda: served.status(new_ca[0], new_client), 200)
        # The old CA's client still gets in: a CA once trusted stays so until restart.
        assert await served.status(new_ca[0], old_client) == 200


async def test_a_half_written_pair_keeps_the_previous_one_serving(tmp_path):
    ca = authority(tmp_path, "ca")
    server = signed(tmp_path, ca, "server", SERVER)
    client = signed(tmp_path, ca, "client", CLIENT)
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(server[0], cert)
    shutil.copy(server[1], key)
    async with Served(cert, key, ca[0]) as served:
        cert.write_text("-----BEGIN CERTIFICATE-----\ntruncated")
        await asyncio.sleep(0.3)  # several checks: each fails to load and keeps the old
        assert await served.status(ca[0], client) == 200
