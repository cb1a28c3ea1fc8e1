"""The overprovisioner's HTTP service: /healthz /readyz /metrics /plan around the tick loop.

Decides: routes, what each endpoint answers, and the lifecycle of the background work
(leader elector, demand informers, the tick loop) through aiohttp's `cleanup_ctx`, so
SIGTERM (aiohttp's `run_app` turns it into shutdown) stops the loop, releases the
Lease and stops the informers inside the pod's termination grace period.

- `/healthz`: 200 while the loop task is alive (a dead loop is a 500: restart me).
- `/readyz`: 200 once the first tick has finished (planned, even if it failed), else 503.
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

from overprovisioner.leader import LeaderElector
from overprovisioner.loop import OverprovisionerLoop, TickReport

log = logging.getLogger("headstart.overprovisioner.service")

LOOP = web.AppKey("loop", OverprovisionerLoop)
LOOP_TASK = web.AppKey("loop_task", asyncio.Task)
STOP_GRACE_S = 20.0  # within Kubernetes' default 30 s termination grace period


def create_app(
    loop: OverprovisionerLoop,
    elector: LeaderElector | None = None,
    background: Callable[[], Callable[[], None]] | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> web.Application:
    """The app. `background()` starts extra work (the demand informers) and returns
    its stop function; `clock` and `sleep` drive the loop (tests inject fakes)."""
    app = web.Application()
    app[LOOP] = loop
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/plan", plan)

    async def run_background(app: web.Application) -> AsyncIterator[None]:
        stop_background = background() if background is not None else None
        yield
        if stop_background is not None:
            await asyncio.to_thread(stop_background)

    async def run_elector(app: web.Application) -> AsyncIterator[None]:
        if elector is not None:
            elector.start()
        yield
        if elector is not None:
            await asyncio.to_thread(elector.stop)

    async def run_loop(app: web.Application) -> AsyncIterator[None]:
        stop = asyncio.Event()
        app[LOOP_TASK] = asyncio.create_task(loop.run(clock, sleep, stop))
        yield
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(app[LOOP_TASK]), STOP_GRACE_S)
        except TimeoutError:
            log.warning("tick still running after %.0f s; leaving it", STOP_GRACE_S)

    # Started in this order, stopped in reverse: the loop stops before the Lease goes.
    app.cleanup_ctx.extend([run_background, run_elector, run_loop])
    return app


async def healthz(request: web.Request) -> web.Response:
    task = request.app.get(LOOP_TASK)
    if task is not None and task.done():
        return web.json_response({"status": "loop stopped"}, status=500)
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
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
            size = report.sizes.get(bucket.instance_type)
            entry["placeholder_request"] = _request_json(size.request) if size else None
            entry["request_source"] = size.source if size else None
            entry["request_detail"] = size.detail if size else None
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
        "autoscaler_status": report.checks.autoscaler.detail,
        "errors": list(report.errors),
    }


def _request_json(request: Any) -> dict[str, Any]:
    return {"gpus": request.gpu_milli / 1000, "cpu": f"{request.cpu_milli}m",
            "memory": f"{request.memory_bytes // 1024**2}Mi"}
