"""The placement gate as a mutating admission webhook, for clusters before Kubernetes 1.36.

Decides: nothing itself (`locality.admission.gate` decides which pods are gated). It
parses kube-apiserver's AdmissionReview (admission.k8s.io/v1), answers it with the
JSON Patch that adds the gate, serves it over HTTPS on `gate_webhook_port` (kube-apiserver
calls webhooks over TLS only) and reloads the certificate when its files change, as
cert-manager's renewals rewrite the mounted Secret.

Every review is allowed: the webhook only adds a gate, it never refuses a pod. A body
that is no AdmissionReview is answered 400 with what is wrong, and kube-apiserver then
applies the configuration's failurePolicy.

Must not: read the cluster cache or the API (it answers even before the watches have
synced), or refuse a pod.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from common.errors import ConfigError
from extender.config import ExtenderConfig
from extender.metrics import ExtenderMetrics
from extender.tls import CERT_CHECK_SECONDS, reload_certificate
from locality.admission.gate import gate_patch, gates

log = logging.getLogger("headstart.extender.gate")

GATE_PATH = "/gate"
REVIEW_VERSION = "admission.k8s.io/v1"

_CONFIG = web.AppKey("gate_config", ExtenderConfig)
_METRICS = web.AppKey("gate_metrics", ExtenderMetrics)
GATE_APP = web.AppKey("gate_app", web.Application)


class BadReview(Exception):
    """The body is not an AdmissionReview this webhook can answer."""


def review_response(review: Any, config: ExtenderConfig) -> tuple[dict[str, Any], bool]:
    """(the AdmissionReview answering `review`, whether it gates the pod)."""
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise BadReview("expected an AdmissionReview object")
    if review.get("apiVersion") != REVIEW_VERSION:
        raise BadReview(f"apiVersion: expected {REVIEW_VERSION} (admissionReviewVersions: "
                        f"[v1]), got {review.get('apiVersion')!r}")
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise BadReview("request.uid: missing")
    pod = request.get("object")
    gated = (
        request.get("operation") == "CREATE"
        and (request.get("kind") or {}).get("kind") == "Pod"
        and isinstance(pod, dict)
        and gates(pod, str(request.get("namespace") or ""), config.bind_scheduler_names,
                  config.locality.placeholder_namespaces, config.admission.gate,
                  config.locality.placeholder_priority_class)
    )
    response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
    if gated:
        patch = json.dumps(gate_patch(pod, config.admission.gate)).encode()
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(patch).decode()
    return {"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview",
            "response": response}, gated


async def gate_handler(request: web.Request) -> web.Response:
    try:
        review = await request.json()
    except ValueError as error:
        raise BadReview(f"body is not JSON ({error})") from None
    answer, gated = review_response(review, request.app[_CONFIG])
    request.app[_METRICS].count_gate_review("gated" if gated else "passed")
    return web.json_response(answer)


@web.middleware
async def _bad_review_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadReview as error:
        request.app[_METRICS].count_gate_review("rejected")
        log.warning("admission review refused", extra={"error": str(error)})
        return web.json_response({"error": f"headstart gate webhook: {error}"}, status=400)


def create_gate_app(config: ExtenderConfig, metrics: ExtenderMetrics) -> web.Application:
    """The webhook's application (its own port and certificate, never kube-scheduler's)."""
    app = web.Application(client_max_size=config.body_limit,
                          middlewares=[_bad_review_middleware])
    app[_CONFIG] = config
    app[_METRICS] = metrics
    app.router.add_post(GATE_PATH, gate_handler)
    return app


def serve_gate(
    config: ExtenderConfig, context: ssl.SSLContext, cert_check_seconds: float = CERT_CHECK_SECONDS
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context for kube-scheduler's app that serves `app[GATE_APP]` on
    `gate_webhook_port` over TLS while the app runs (like `serve_ops`)."""
    port = config.gate_webhook_port
    assert port is not None and config.gate_webhook_cert_file and config.gate_webhook_key_file

    async def serve(app: web.Application) -> AsyncIterator[None]:
        runner = web.AppRunner(app[GATE_APP], access_log=None,
                               shutdown_timeout=config.shutdown_timeout_seconds)
        await runner.setup()
        site = web.TCPSite(runner, config.host, port, ssl_context=context)
        try:
            await site.start()
        except OSError as error:
            await runner.cleanup()
            raise ConfigError(f"gate_webhook_port: cannot listen on {config.host}:{port} "
                              f"({error.strerror or error})") from None
        reload = asyncio.create_task(reload_certificate(
            [context], config.gate_webhook_cert_file or "", config.gate_webhook_key_file or "",
            "gate webhook", cert_check_seconds))
        yield
        reload.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reload
        await runner.cleanup()

    return serve
