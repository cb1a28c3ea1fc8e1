"""The gate webhook over real HTTP(S): AdmissionReview in, JSON Patch out, certificate
reloaded from its files, bad bodies answered 400 with what is wrong."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import ssl

import aiohttp
import pytest
import trustme
from aiohttp import web

from extender.config import ExtenderConfig, config_from_mapping
from extender.gate_webhook import GATE_APP, create_gate_app, serve_gate
from extender.metrics import ExtenderMetrics
from extender.tls import server_context


def review(pod, namespace="team", operation="CREATE", kind="Pod", uid="u-1"):
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": kind},
                        "namespace": namespace, "operation": operation, "object": pod}}


def training_pod(scheduler="headstart-scheduler"):
    return {"metadata": {"name": "w-0"},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x"}]}}


@pytest.fixture
async def client(aiohttp_client):
    metrics = ExtenderMetrics()
    app = create_gate_app(ExtenderConfig(), metrics)
    return await aiohttp_client(app), metrics


def samples(metrics: ExtenderMetrics) -> dict[str, float]:
    return {sample.labels["outcome"]: sample.value
            for metric in metrics.gate_reviews.collect() for sample in metric.samples
            if sample.name.endswith("_total")}


async def test_a_training_pod_is_answered_with_the_patch_that_gates_it(client):
    http, metrics = client
    reply = await http.post("/gate", json=review(training_pod()))
    assert reply.status == 200
    body = await reply.json()
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    response = body["response"]
    assert (response["uid"], response["allowed"], response["patchType"]) == (
        "u-1", True, "JSONPatch")
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/schedulingGates",
         "value": [{"name": "headstart.io/placement"}]}]
    assert samples(metrics) == {"gated": 1}


@pytest.mark.parametrize("request_body", [
    review(training_pod("default-scheduler")),
    review(training_pod(), operation="UPDATE"),
    review({"metadata": {"name": "cm"}}, kind="ConfigMap"),
], ids=["other-scheduler", "update", "not-a-pod"])
async def test_anything_else_is_allowed_unchanged(client, request_body):
    http, metrics = client
    reply = await http.post("/gate", json=request_body)
    response = (await reply.json())["response"]
    assert response == {"uid": "u-1", "allowed": True}
    assert samples(metrics) == {"passed": 1}


@pytest.mark.parametrize(("data", "message"), [
    (b"{not json", "body is not JSON"),
    (json.dumps({"kind": "Pod"}).encode(), "expected an AdmissionReview object"),
    (json.dumps({**review(training_pod()), "apiVersion": "admission.k8s.io/v1beta1"}).encode(),
     "apiVersion: expected admission.k8s.io/v1"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                 "request": {}}).encode(), "request.uid: missing"),
], ids=["not-json", "not-a-review", "v1beta1", "no-uid"])
async def test_a_body_that_is_no_admission_review_is_a_400_saying_why(client, data, message):
    http, metrics = client
    reply = await http.post("/gate", data=data, headers={"Content-Type": "application/json"})
    assert reply.status == 400
    assert message in (await reply.json())["error"]
    assert samples(metrics) == {"rejected": 1}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_pair(authority: trustme.CA, cert_path, key_path) -> None:
    issued = authority.issue_cert("127.0.0.1", "headstart-extender-gate.headstart.svc")
    cert_path.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    key_path.write_bytes(issued.private_key_pem.bytes())


async def _post(port: int, authority: trustme.CA) -> int:
    context = ssl.create_default_context()
    authority.configure_trust(context)
    async with aiohttp.ClientSession() as session, session.post(
            f"https://127.0.0.1:{port}/gate", json=review(training_pod()),
            ssl=context) as reply:
        return reply.status


async def test_served_over_tls_and_a_renewed_certificate_is_taken_up(tmp_path):
    first, renewed = trustme.CA(), trustme.CA()
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    _write_pair(first, cert, key)
    port = _free_port()
    config = config_from_mapping({"gate_webhook_port": port, "gate_webhook_cert_file": str(cert),
                                  "gate_webhook_key_file": str(key), "host": "127.0.0.1"})
    app = web.Application()
    app[GATE_APP] = create_gate_app(config, ExtenderMetrics())
    app.cleanup_ctx.append(serve_gate(config, server_context(str(cert), str(key), "gate"),
                                      cert_check_seconds=0.05))
    runner = web.AppRunner(app)
    await runner.setup()  # runs the cleanup context: the webhook listens
    try:
        assert await _post(port, first) == 200
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await _post(port, renewed)  # not yet: the first certificate is served
        _write_pair(renewed, cert, key)
        for _ in range(100):
            await asyncio.sleep(0.05)
            try:
                if await _post(port, renewed) == 200:
                    break
            except aiohttp.ClientConnectorCertificateError:
                continue
        else:
            pytest.fail("the renewed certificate was never served")
    finally:
        await runner.cleanup()


def test_an_unreadable_certificate_is_a_config_error_naming_the_field(tmp_path):
    from common.errors import ConfigError

    with pytest.raises(ConfigError, match="gate_webhook_cert_file/gate_webhook_key_file: "
                                          "cannot load"):
        server_context(str(tmp_path / "missing.crt"), str(tmp_path / "missing.key"),
                       "gate_webhook_cert_file/gate_webhook_key_file")
