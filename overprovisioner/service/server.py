"""The overprovisioner's HTTP service: /healthz /readyz /metrics /plan around the tick loop.

Decides: routes, what each endpoint answers, and the lifecycle of the background work
(leader elector, demand informers, the tick loop) through aiohttp's `cleanup_ctx`, so
SIGTERM or the first Ctrl-C (aiohttp's `run_app` turns both into shutdown) stops the
loop, releases the Lease and stops the informers inside the pod's termination grace
period (30 s in the manifests), even when a tick is stuck retrying API calls: each step
has its share of SHUTDOWN_BUDGET_S, and work still running after it is left to process
exit (daemon threads, overprovisioner.service.daemon_thread); the history file is closed only
when no tick uses it any more.

- `/healthz`: 200 while the loop task is alive (a dead loop is a 500: restart me).
- `/readyz`: 200 once the first tick has finished (planned, even if it failed) and the
  API server answers (`api_status`), else 503 with the reason.
- `/plan`: the latest plan as JSON with per-bucket reasons; 503 before the first tick.
- `/metrics`: Prometheus text from the service's own registry.

Must not: plan, forecast or call the API itself (loop.py does).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kube.leader import LeaderElector
from overprovisioner.planner.known_plan import known_by_source
from overprovisioner.service.daemon_thread import in_daemon_thread
from overprovisioner.service.loop import OverprovisionerLoop
from overprovisioner.service.objects import placeholder_name
from overprovisioner.service.ports import TickReport
from predictor.live.known_recording import KnownState

# /plan lists at most this many known items (the counted ones first), so a queue of
# thousands of Workloads does not make the answer megabytes long.
KNOWN_ITEMS_SHOWN = 100

log = logging.getLogger("headstart.overprovisioner.service")

LOOP = web.AppKey("loop", OverprovisionerLoop)
API_STATUS = web.AppKey("api_status", Callable[[], str | None])
LOOP_TASK = web.AppKey("loop_task", asyncio.Task)
# Shutdown, step by step: aiohttp stops listening and lets requests in flight finish
# (HTTP_SHUTDOWN_S, cli.py passes it to run_app), the loop finishes its tick, the
# elector releases the Lease, the informers stop. The sum stays well inside the
# manifests' terminationGracePeriodSeconds (30 s; tests/overprovisioner checks it).
HTTP_SHUTDOWN_S = 5.0
LOOP_STOP_S = 5.0
ELECTOR_STOP_S = 5.0
BACKGROUND_STOP_S = 3.0
SHUTDOWN_BUDGET_S = HTTP_SHUTDOWN_S + LOOP_STOP_S + ELECTOR_STOP_S + BACKGROUND_STOP_S


def create_app(
    loop: OverprovisionerLoop,
    elector: LeaderElector | None = None,
    background: Callable[[], Callable[[], None]] | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    api_status: Callable[[], str | None] | None = None,
) -> web.Application:
    """The app. `background()` starts extra work (the demand informers) and returns
    its stop function; `clock` and `sleep` drive the loop (tests inject fakes);
    `api_status()` is None while the API server answers, else why not."""
    app = web.Application()
    app[LOOP] = loop
    app[API_STATUS] = api_status or (lambda: None)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/plan", plan)

    async def run_background(app: web.Application) -> AsyncIterator[None]:
        stop_background = background() if background is not None else None
        yield
        if stop_background is None:
            return
        task = app.get(LOOP_TASK)
        if task is not None and not task.done():
            # The stuck tick still reads and writes the history: closing the file under
            # it would fail its next query. Both go with the process (SQLite is safe).
            log.warning("leaving the demand informers and the history file to process exit: "
                        "a tick still uses them")
            return
        await _bounded(in_daemon_thread(stop_background, name="headstart-stop-informers"),
                       BACKGROUND_STOP_S, "stopping the demand informers")

    async def run_elector(app: web.Application) -> AsyncIterator[None]:
        if elector is not None:
            elector.start()
        yield
        if elector is not None:
            await _bounded(in_daemon_thread(elector.stop, True, ELECTOR_STOP_S / 2,
                                            name="headstart-stop-elector"),
                           ELECTOR_STOP_S, "releasing the Lease")

    async def run_loop(app: web.Application) -> AsyncIterator[None]:
        stop = asyncio.Event()
        app[LOOP_TASK] = asyncio.create_task(loop.run(clock, sleep, stop))
        yield
        log.info("shutting down")
        stop.set()
        done, _ = await asyncio.wait({app[LOOP_TASK]}, timeout=LOOP_STOP_S)
        if not done:
            log.warning("the tick is still running after %.0f s (API calls retrying); "
                        "leaving it to process exit", LOOP_STOP_S)

    # Started in this order, stopped in reverse: the loop stops before the Lease goes.
    app.cleanup_ctx.extend([run_background, run_elector, run_loop])
    return app


async def _bounded(work: Awaitable[Any], timeout_s: float, what: str) -> None:
    """Await a shutdown step for at most `timeout_s`; a failure or an overrun is one log
    line (the step's thread is a daemon: it cannot hold the process)."""
    try:
        await asyncio.wait_for(work, timeout_s)
    except TimeoutError:
        log.warning("%s took longer than %.0f s; leaving it to process exit", what, timeout_s)
    except Exception as error:  # an unreachable API server: the Lease expires by itself
        log.warning("%s failed: %s: %s", what, type(error).__name__, error)


async def healthz(request: web.Request) -> web.Response:
    task = request.app.get(LOOP_TASK)
    if task is not None and task.done():
        return web.json_response({"status": "loop stopped"}, status=500)
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    unreachable = request.app[API_STATUS]()
    if unreachable is not None:
        return web.json_response({"status": unreachable}, status=503)
    if request.app[LOOP].latest is None:
        return web.json_response({"status": "waiting for the first tick"}, status=503)
    return web.json_response({"status": "ready"})


async def metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[LOOP].metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def plan(request: web.Request) -> web.Response:
    loop = request.app[LOOP]
    report = loop.latest
    if report is None:
        return web.json_response({"error": "no plan yet: the first tick has not finished"},
                                 status=503)
    return web.json_response(plan_document(report, loop))


def plan_document(report: TickReport, loop: OverprovisionerLoop) -> dict[str, Any]:
    """The /plan JSON: the tick, the plan per bucket with forecasts and reasons, the apply."""
    config = loop.config
    buckets = []
    if report.plan is not None:
        for bucket in report.plan.buckets:
            key = (bucket.instance_type, bucket.placement_group)
            entry = asdict(bucket)
            forecast = report.forecasts.get(key)
            entry["forecast_point"] = forecast.point if forecast else None
            entry["forecast_raw"] = forecast.raw_quantile if forecast else None
            entry["reactive"] = forecast.reactive if forecast else False
            entry["announced"] = forecast.announced if forecast else 0.0
            entry["known_by_source"] = known_by_source(
                report.known, (bucket.instance_type, bucket.placement_group))
            size = report.sizes.get(bucket.instance_type)
            entry["placeholder_request"] = _request_json(size.request) if size else None
            entry["request_source"] = size.source if size else None
            entry["request_detail"] = size.detail if size else None
            entry["split"] = [
                {"zone": c.pin.zone, "capacity_type": c.pin.capacity_type, "wanted": c.wanted,
                 "object": placeholder_name(c.instance_type, c.placement_group, c.pin)}
                for c in report.columns if c.bucket == key]
            problem = report.checks.problems.get(key)
            entry["problem"] = problem.problem if problem else None
            entry["problem_detail"] = problem.detail if problem else None
            buckets.append(entry)
    applied = None
    if report.applied is not None:
        applied = {
            "backend": report.applied.backend,
            "written": list(report.applied.written),
            "unchanged": list(report.applied.unchanged),
            "pruned": list(report.applied.pruned),
            "held": list(report.applied.held),
        }
    return {
        "time_s": report.time_s,
        "ok": report.ok,
        "leader": report.leader,
        "dry_run": report.dry_run,
        "model": report.model,
        "mode": report.mode,
        "quantile": config.forecast.quantile,
        "horizon_s": config.horizon_ticks * config.tick_s,
        "cost_per_hour": report.plan.cost_per_hour if report.plan else None,
        "cost_cap_per_hour": config.limits.cost_cap_per_hour,
        "buckets": buckets,
        "applied": applied,
        "known_demand": known_document(report.known),
        "autoscaler_status": report.checks.autoscaler.detail,
        "config_warnings": list(loop.config_warnings),
        "expired": list(report.expired),
        "faults": dict(report.faults),
        "errors": list(report.errors),
    }


def known_document(state: KnownState | None) -> dict[str, Any] | None:
    """What known demand the tick saw: sources, counted pods, and the items (capped)."""
    if state is None:
        return None
    report = state.report
    counted = set(state.counted)
    items = sorted(report.items, key=lambda i: (i not in counted, i.source, i.namespace,
                                                 i.name))
    return {
        "served": dict(report.served),
        "absent": list(report.absent),
        "stale": list(report.stale),
        "unreadable_objects": report.unreadable,
        "counted_pods": dict(state.values.pods),
        "unbucketable_pods": state.values.unbucketable,
        "items_total": len(report.items),
        "items": [
            {"source": i.source, "kind": i.kind, "namespace": i.namespace, "name": i.name,
             "pods": i.pods, "gpus": i.request.gpus, "cpus": i.request.cpus,
             "memory_gib": i.request.memory_gib, "expected_s": i.expected_s,
             "counted": i in counted, "covered": i.covered, "reason": i.reason}
            for i in items[:KNOWN_ITEMS_SHOWN]
        ],
    }


def _request_json(request: Any) -> dict[str, Any]:
    return {"gpus": request.gpu_milli / 1000, "cpu": f"{request.cpu_milli}m",
            "memory": f"{request.memory_bytes // 1024**2}Mi"}
