"""The extender's aiohttp application: routes, handlers, fault middleware, background tasks.

Two applications sharing one state, set up in one place (`create_app`):
- kube-scheduler's, on `port`: POST /filter, POST /prioritize, POST /preempt, POST /bind
  (only when `bind_enabled`). /bind creates Bindings with the extender's permission, so
  only the scheduler may reach this port (the shipped NetworkPolicy admits only its
  pods), and it binds only pods of `bind_scheduler_names` as the pod watch shows them.
- the ops app (`app[OPS_APP]`), on `ops_port`: GET /healthz, /readyz, /metrics,
  /explain?pod=NS/NAME, /admission (the job admitter's gated jobs and their reasons),
  for kubelet's probes, Prometheus and people.
Both ports are one process and one event loop; a separate port, not a separate Service
port of one app, because kube-scheduler sends all verbs of an extender to one
`urlPrefix`, and a Service's ClientIP affinity is kept per port by kube-proxy: a bind
on another port could reach another replica than the pod's filter and prioritize did.

Binds in flight: /bind records the node kube-scheduler chose the moment the call
arrives (and wakes the requests waiting for it), then creates the Binding; if that
fails the record is dropped. /filter and /prioritize for a pod of a job first wait,
up to `bind_wait_seconds`, for the binds of the job's pods answered just before
(`extender.inflight` says which and until when).

Faults never become a traceback in an answer, and the service keeps serving:
- transport faults, found before the body is an ExtenderArgs (a body over
  `max_body_bytes` -> 413; a Content-Type that is not JSON, invalid UTF-8 or JSON, a
  top level that is not an object -> 400): kube-scheduler never sends these, so they
  come from a misconfigured client and get a plain HTTP error with a JSON message;
- content faults in a well-formed ExtenderArgs (no `Pod`, wrong types, a quantity
  that does not parse): /filter answers 200 with the protocol's `Error` field, because
  kube-scheduler discards the body of a non-200 answer, so the field is the only way
  the message reaches its log and the pod's events (the cycle fails either way);
  /bind does the same with its `Error` field; /prioritize has no error field (its
  answer is a list, and kube-scheduler ignores prioritize errors), so it answers 400
  with a JSON message;
- names in `NodeNames` the cache does not know pass (unresolvable under a `required`
  placement-group policy; `extender.decide`);
- a bug (any other exception) is logged with its traceback; /filter answers with the
  `Error` field, other routes with a JSON 500 that carries no traceback.

Must not: make placement decisions (`extender.decide` and `locality` do).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from common.errors import ConfigError, InputError
from extender.admission.admitter import Admitter
from extender.binder import Binder
from extender.cache import ClusterCache
from extender.config import ExtenderConfig
from extender.decide import Decider
from extender.inflight import PendingBinds
from extender.metrics import ExtenderMetrics
from extender.sync import ClusterSync
from extender.wire import (
    BindingArgs,
    ExtenderArgs,
    decode_json,
    encode_binding_result,
    encode_filter_error,
    encode_filter_result,
    encode_host_priorities,
    encode_preemption_result,
    parse_binding_args,
    parse_extender_args,
    parse_preemption_args,
)

log = logging.getLogger("headstart.extender")

CONFIG = web.AppKey("config", ExtenderConfig)
CACHE = web.AppKey("cache", ClusterCache)
DECIDER = web.AppKey("decider", Decider)
METRICS = web.AppKey("metrics", ExtenderMetrics)
SYNC: web.AppKey[ClusterSync | None] = web.AppKey("sync")
BINDER: web.AppKey[Binder | None] = web.AppKey("binder")
ADMITTER: web.AppKey[Admitter | None] = web.AppKey("admitter")


class BindSignal:
    """Wakes every request waiting for a bind: an event set and replaced per bind."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, seconds: float) -> None:
        """Return when the next bind arrives, or after `seconds`."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), seconds)


BIND_SIGNAL = web.AppKey("bind_signal", BindSignal)
OPS_APP = web.AppKey("ops_app", web.Application)

_VERBS = {"/filter": "filter", "/prioritize": "prioritize", "/bind": "bind",
          "/preempt": "preempt"}
ASSUMPTION_SWEEP_SECONDS = 5.0


class RequestRejected(Exception):
    """A transport-level fault: answered with `status` and the message, for every route."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def create_app(
    config: ExtenderConfig,
    cache: ClusterCache,
    sync: ClusterSync | None = None,
    binder: Binder | None = None,
    admitter: Admitter | None = None,
) -> web.Application:
    """kube-scheduler's application, with the ops application as `app[OPS_APP]`; `sync`
    keeps `cache` current (None in tests that fill it directly); `admitter` runs as a
    background task when given. The caller serves the ops app (`serve_ops`); its state
    is the same objects."""
    pending = (
        PendingBinds(config.bind_wait_seconds, config.locality.assumed_ttl_seconds)
        if config.bind_enabled else None
    )
    metrics = ExtenderMetrics()
    metrics.watch_cache(cache, sync.statuses if sync is not None else list)
    if admitter is not None:
        metrics.watch_admitter(admitter)
    state = {CONFIG: config, CACHE: cache, DECIDER: Decider(cache, config.locality, pending),
             BIND_SIGNAL: BindSignal(), METRICS: metrics, SYNC: sync, BINDER: binder,
             ADMITTER: admitter}
    app = web.Application(client_max_size=config.body_limit, middlewares=[fault_middleware])
    ops = web.Application(middlewares=[fault_middleware])
    for key, value in state.items():
        app[key] = value  # type: ignore[index]
        ops[key] = value  # type: ignore[index]

    app.router.add_post("/filter", filter_handler)
    app.router.add_post("/prioritize", prioritize_handler)
    app.router.add_post("/preempt", preempt_handler)
    if config.bind_enabled:
        app.router.add_post("/bind", bind_handler)
    ops.router.add_get("/healthz", healthz_handler)
    ops.router.add_get("/readyz", readyz_handler)
    ops.router.add_get("/metrics", metrics_handler)
    ops.router.add_get("/explain", explain_handler)
    ops.router.add_get("/admission", admission_handler)
    app[OPS_APP] = ops
    app.cleanup_ctx.append(_background)
    return app


def serve_ops(
    host: str, port: int, ssl_context: ssl.SSLContext | None, shutdown_timeout: float
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context for kube-scheduler's app that serves its ops app on `port`
    while the app runs (put it first: its port is taken before the watches start, and
    the probes answer until they have stopped)."""

    async def serve(app: web.Application) -> AsyncIterator[None]:
        runner = web.AppRunner(app[OPS_APP], access_log=None,
                               shutdown_timeout=shutdown_timeout)
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=ssl_context)
        try:
            await site.start()
        except OSError as error:
            await runner.cleanup()
            raise ConfigError(
                f"ops_port: cannot listen on {host}:{port} ({error.strerror or error})"
            ) from None
        yield
        await runner.cleanup()

    return serve


# ---- handlers ------------------------------------------------------------------------


async def filter_handler(request: web.Request) -> web.Response:
    app = request.app
    args = await _read_args(request)
    await _await_binds_in_flight(app, args)
    result = app[DECIDER].filter(args, time.monotonic())
    if result.failed or result.unresolvable:
        app[METRICS].count_filtered(result)
    body = encode_filter_result(
        result.passed, result.failed, result.unresolvable, args.node_names is not None, args.nodes
    )
    return _json_bytes(body)


async def prioritize_handler(request: web.Request) -> web.Response:
    app = request.app
    args = await _read_args(request)
    await _await_binds_in_flight(app, args)
    hosts, scores = app[DECIDER].prioritize(args, time.monotonic())
    return _json_bytes(encode_host_priorities(hosts, scores))


async def preempt_handler(request: web.Request) -> web.Response:
    app = request.app
    args = parse_preemption_args(await _read_json(request))
    kept, dropped = app[DECIDER].preempt(args, time.monotonic())
    app[METRICS].count_preemption(len(kept), dropped.values())
    if dropped:
        log.info("preemption candidates dropped", extra={
            "pod": _pod_name(args.pod), "kept": len(kept),
            "dropped": {node: code.value for node, code in dropped.items()}})
    return _json_bytes(encode_preemption_result(kept))


async def bind_handler(request: web.Request) -> web.Response:
    app = request.app
    args = parse_binding_args(await _read_json(request))
    refusal = _bind_refusal(app, args)
    if refusal is not None:
        reason, message = refusal
        app[METRICS].count_bind_refused(reason)
        log.warning("bind refused", extra={"pod": f"{args.pod_namespace}/{args.pod_name}",
                                           "node": args.node, "reason": message})
        return _json_bytes(encode_binding_result(message))
    decider = app[DECIDER]
    # kube-scheduler has decided: the next pods of the job may be judged knowing it now,
    # while the Binding is being created.
    decider.bind_arrived(args, time.monotonic())
    app[BIND_SIGNAL].notify()
    binder = app[BINDER]
    error = "bind verb enabled without an API client" if binder is None else await binder.bind(args)
    if error:
        decider.bind_failed(args)
        log.warning("bind failed", extra={"pod": f"{args.pod_namespace}/{args.pod_name}",
                                          "node": args.node, "error": error})
    return _json_bytes(encode_binding_result(error))


def _bind_refusal(app: web.Application, args: BindingArgs) -> tuple[str, str] | None:
    """(metric reason, Error text) when the pod must not be bound, None to bind:
    - `empty_uid`: kube-scheduler always sends the pod's UID; without it a pod replaced
      under the same name could be bound;
    - `unknown_pod`, `scheduler_name`: it is not a pod of the schedulers the extender
      serves (`bind_scheduler_names`), as the API shows it (the pod watch), not as the
      caller says (both off when the list is empty);
    - `unknown_node`: a node the extender's cache does not hold;
    - `node_refused`: a node the pod's own nodeSelector, required node affinity (the
      admitted domain among it) or tolerations rule out (`PodConstraints.refusal`, the
      rule the filter and kube-scheduler apply), e.g. a tainted control-plane node."""
    where = f"refusing to bind {args.pod_namespace}/{args.pod_name}"
    if not args.pod_uid:
        return "empty_uid", f"{where}: no PodUID (kube-scheduler always sends one)"
    cache = app[CACHE]
    names = app[CONFIG].bind_scheduler_names
    pod = cache.pod(args.pod_namespace, args.pod_name)
    if names:
        if pod is None or pod.uid != args.pod_uid:
            return "unknown_pod", (
                f"{where}: the pod is not in the extender's cache (yet); kube-scheduler "
                "retries it")
        if pod.scheduler_name not in names:
            return "scheduler_name", (
                f"{where}: its schedulerName {pod.scheduler_name!r} is not one the extender "
                f"binds for (bind_scheduler_names: {', '.join(names)})")
    state = cache.nodes.get(args.node)
    if state is None:
        return "unknown_node", (f"{where} to {args.node}: no such node in the extender's "
                                "cache (yet); kube-scheduler retries it")
    if pod is not None and pod.uid == args.pod_uid:
        node = state.node
        refusal = pod.constraints.refusal(node.name, node.labels, node.taints)
        if refusal is not None:
            return "node_refused", f"{where} to {args.node}: {refusal}"
    return None


def _pod_name(raw: object) -> str:
    metadata = raw.get("metadata", {}) if isinstance(raw, dict) else {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


async def _await_binds_in_flight(app: web.Application, args: ExtenderArgs) -> None:
    """Wait (bounded) for the binds of pods of this pod's job answered just before."""
    decider = app[DECIDER]
    if decider.pending is None or not len(decider.pending):
        return
    pod = decider.parse_pod(args.pod)
    started = time.monotonic()
    deadline = decider.bind_wait_deadline(pod, started)
    if deadline is None:
        return
    now = started
    while True:
        # Any bind wakes every waiter (cheap: binds come one per scheduled pod); each
        # then asks again what is still pending for its own job.
        await app[BIND_SIGNAL].wait(deadline - now)
        now = time.monotonic()
        timed_out = now >= deadline
        deadline = decider.bind_wait_deadline(pod, now)
        if deadline is None:
            break
    app[METRICS].observe_bind_wait(now - started, timed_out)


async def healthz_handler(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz_handler(request: web.Request) -> web.Response:
    app = request.app
    sync = app[SYNC]
    if sync is not None:
        ready, detail = sync.readiness(time.monotonic())
    else:
        cache = app[CACHE]
        ready = cache.ready()
        detail = {"reason": "cache synced" if ready else "waiting for the first full list",
                  "synced": dict(cache.synced)}
    detail["ready"] = ready
    detail["nodes"] = len(app[CACHE].nodes)
    return web.json_response(detail, status=200 if ready else 503)


async def metrics_handler(request: web.Request) -> web.Response:
    response = web.Response(body=request.app[METRICS].render())
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response


async def explain_handler(request: web.Request) -> web.Response:
    app = request.app
    target = request.query.get("pod", "")
    namespace, _, name = target.partition("/")
    if not namespace or not name or "/" in name:
        raise RequestRejected(400, "query parameter pod must be NAMESPACE/NAME")
    pod = app[CACHE].pod(namespace, name)
    if pod is None:
        raise RequestRejected(404, f"pod {target} is not in the extender's cache")
    explanation = app[DECIDER].explain(pod, time.monotonic()).as_json()
    admitter = app[ADMITTER]
    if admitter is not None:
        admission = admitter.explain(pod)
        if admission is not None:
            explanation["admission"] = admission
    return web.json_response(explanation)


async def admission_handler(request: web.Request) -> web.Response:
    admitter = request.app[ADMITTER]
    if admitter is None:
        return web.json_response({"enabled": False})
    return web.json_response({"enabled": True, **admitter.summary()})


# ---- request reading -----------------------------------------------------------------


def _json_bytes(body: bytes) -> web.Response:
    return web.Response(body=body, content_type="application/json")


async def _read_json(request: web.Request) -> object:
    content_type = request.content_type
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise RequestRejected(
            400, f"Content-Type must be application/json, got {content_type or 'none'}"
        )
    config = request.app[CONFIG]
    try:
        body = await asyncio.wait_for(request.read(), config.body_read_timeout_seconds)
    except web.HTTPRequestEntityTooLarge:
        raise RequestRejected(
            413,
            f"request body is larger than max_body_bytes ({config.body_limit} bytes); raise "
            "max_body_bytes or register the extender with nodeCacheCapable: true",
        ) from None
    except TimeoutError:
        raise RequestRejected(
            408, f"request body not received within body_read_timeout_seconds "
                 f"({config.body_read_timeout_seconds:g} s)") from None
    try:
        return decode_json(body)
    except InputError as error:
        raise RequestRejected(400, str(error)) from None


async def _read_args(request: web.Request) -> ExtenderArgs:
    document = await _read_json(request)
    if not isinstance(document, dict):
        raise RequestRejected(400, "request body: expected a JSON object (ExtenderArgs)")
    return parse_extender_args(document)


# ---- faults --------------------------------------------------------------------------


def _error_response(status: int, message: str) -> web.Response:
    return web.Response(
        status=status, body=json.dumps({"Error": message}).encode(), content_type="application/json"
    )


@web.middleware
async def fault_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    verb = _VERBS.get(request.path)
    started = time.perf_counter()
    outcome = "ok"
    try:
        response = await handler(request)
    except RequestRejected as error:
        outcome = "rejected"
        response = _error_response(error.status, str(error))
    except InputError as error:
        if verb == "filter":
            outcome = "error"
            response = _json_bytes(encode_filter_error(str(error), _cache_mode(request)))
        elif verb == "bind":  # ExtenderBindingResult has an Error field too
            outcome = "error"
            response = _json_bytes(encode_binding_result(str(error)))
        else:
            outcome = "rejected"
            response = _error_response(400, str(error))
    except web.HTTPException as error:
        outcome = "rejected"
        response = _error_response(error.status, error.reason)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("unexpected fault handling a request", extra={"path": request.path})
        outcome = "error"
        message = "internal error in the headstart extender; see its log"
        if verb == "filter":
            response = _json_bytes(encode_filter_error(message, _cache_mode(request)))
        else:
            response = _error_response(500, message)
    if verb is not None:
        request.app[METRICS].observe(verb, outcome, time.perf_counter() - started)
    return response


def _cache_mode(request: web.Request) -> bool:
    return request.app[CONFIG].node_cache_capable


# ---- background ----------------------------------------------------------------------


async def _background(app: web.Application) -> AsyncIterator[None]:
    """Start the watches, the assumption sweep and the admitter; stop them on shutdown."""
    sync = app[SYNC]
    if sync is not None:
        sync.start(asyncio.get_running_loop())
    tasks = [asyncio.create_task(_sweep_assumptions(app[DECIDER]))]
    admitter = app[ADMITTER]
    if admitter is not None:
        tasks.append(asyncio.create_task(admitter.run()))
    yield
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    if sync is not None:
        await sync.stop()
    if admitter is not None:
        admitter.close()  # its planning process, if any


async def _sweep_assumptions(decider: Decider) -> None:
    while True:
        await asyncio.sleep(ASSUMPTION_SWEEP_SECONDS)
        decider.expire(time.monotonic())
