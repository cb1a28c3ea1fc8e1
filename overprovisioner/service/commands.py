"""What `headstart overprovisioner` does, once its options are parsed (cli.py).

Decides how the config file and the cluster credentials become a running service: the
Kubernetes client (kube.client: `--kubeconfig`, else the in-cluster service account in a
pod, else the default kubeconfig), the demand source over the recorder and its SQLite
store (demand.py), the leader elector (skipped in dry-run, which never writes), the
placeholder applier, the placeholder-pod watch that wakes the loop after a preemption
(wake.py) and the HTTP server on `host:port`.

Must not: contain service logic; everything here is wiring.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from aiohttp import web
from kubernetes.client import ApiClient

from common.errors import ConfigError
from common.logs import configure_logging
from kube.client import load_api_client
from kube.informer import Informer
from kube.leader import LeaderElector
from kube.reachability import ApiReachability, monitor_reachability
from kube.retry import RetryPolicy
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.config.checked import load_checked_config
from overprovisioner.planner.forecasting import ModelLoader, ModelSaver
from overprovisioner.service.apply import Applier, KubeApi
from overprovisioner.service.demand import (
    RecorderDemand,
    cluster_pod_informer,
    prometheus_backfill,
    recorder_config,
)
from overprovisioner.service.loop import OverprovisionerLoop
from overprovisioner.service.metrics import Metrics
from overprovisioner.service.observe import ClusterReader, PodCache
from overprovisioner.service.server import HTTP_SHUTDOWN_S, create_app
from overprovisioner.service.wake import placeholder_pod_watch
from overprovisioner.service.worker_planner import PrometheusReader, WorkerPlanner
from predictor.live.known_recording import make_known_recorder
from predictor.live.recorder import make_recorder
from predictor.models.forecast import Forecaster

log = logging.getLogger("headstart.overprovisioner")


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, args.log_level)
    checked = load_checked_config(args.config)  # config errors before any cluster access
    config = checked.config
    if args.dry_run:
        config = replace(config, dry_run=True)
    for warning in checked.warnings:
        log.warning("config: %s", warning)
    check_file_directories(config)
    api_client = load_api_client(args.kubeconfig)
    app = build_app(config, api_client, reachability=monitor_reachability(api_client))
    log.info("starting", extra={"host": config.host, "port": config.port,
                                "dry_run": config.dry_run, "config": str(config.source),
                                "kubernetes": api_client.configuration.host})
    try:
        # No access log: the kubelet's probes would write a line every few seconds.
        web.run_app(app, host=config.host, port=config.port, print=None,
                    shutdown_timeout=HTTP_SHUTDOWN_S, access_log=None)
    except OSError as error:  # the port is taken, or the host is not an address here
        raise ConfigError(f"{config.source}: port: cannot listen on {config.host}:{config.port} "
                          f"({error.strerror or error})") from None
    return 0


def check_file_directories(config: OverprovisionerConfig) -> None:
    """The history and model files are created at run time, their directories are not:
    a missing one is a config error naming the field now, not a failed tick later."""

    for field, value in (("forecast.history_path", config.forecast.history_path),
                         ("forecast.model_path", config.forecast.model_path)):
        if value and not Path(value).parent.is_dir():
            raise ConfigError(f"{config.source}: {field}: directory {Path(value).parent} of "
                              f"{value} does not exist; create it or choose another path")


def model_files(tick_seconds: int) -> tuple[ModelLoader, ModelSaver]:
    """The loop's model loader and saver over `predictor.live.persist` (torch is imported only
    when a model file is used). load: None when no file exists yet, ModelFileError for a
    corrupt file, ConfigError for a model of other buckets or another tick."""

    def load_model(path: str, columns: Sequence[str]) -> Forecaster | None:
        if not Path(path).exists():
            return None  # first start: nothing saved yet, fit from the history
        from predictor.live import persist

        return persist.load(path, columns, tick_seconds).model

    def save_model(model: Forecaster, path: str, columns: Sequence[str]) -> None:
        from predictor.live import persist

        persist.save(model, path, columns, tick_seconds)

    return load_model, save_model


def build_app(config: OverprovisionerConfig, api_client: ApiClient,
              clock: Callable[[], float] = time.time,
              sleep: Callable[[float], Awaitable[Any]] | None = None,
              reachability: ApiReachability | None = None) -> web.Application:
    """Wire config + ApiClient into the aiohttp app (the tests call this with the fake);
    `reachability` (kube.reachability) makes /readyz say when the API is down."""

    catalog = resolve_catalog(config)
    recorder = make_recorder(recorder_config(config), api_client, clock)
    # Known-ahead demand is recorded beside observed demand, in the same store and buckets.
    recorder.known = make_known_recorder(
        config.known_demand, recorder.store, recorder.bucket_types,
        recorder.config.watch_settings(), recorder.config.max_stale_s, api_client,
        catalog.gpu_resource, config.known_window_s, config.horizon_s, clock)
    backfill = (prometheus_backfill(config, catalog, recorder)
                if config.forecast.prometheus_url else None)
    demand = RecorderDemand(recorder, config.forecast.retention_s, backfill=backfill)
    api = KubeApi(api_client, config.api.timeout_s)
    rng = np.random.default_rng()
    metrics = Metrics()

    def count_error(kind: str, error: BaseException) -> None:
        metrics.api_errors.labels(kind).inc()

    policy = RetryPolicy(config.api.max_attempts, config.api.backoff_base_s,
                         config.api.backoff_max_s)
    # Pods come from a watch cache, not a list of every pod each tick (the list stays
    # the fallback while the cache is not synced or its watch fails).
    pod_informer = cluster_pod_informer(api_client, catalog.gpu_resource, recorder.config,
                                        clock)
    reader = ClusterReader(api, policy, rng, time.sleep, count_error,
                           PodCache(pod_informer, 2 * config.tick_s, clock))
    applier = Applier(api, config, rng, time.sleep, count_error)
    elector = None
    if config.leader_election.enabled and not config.dry_run:
        elector = LeaderElector(api_client, config.placeholders.namespace,
                                config.leader_election,
                                on_change=lambda leading: leading and loop.wake("leader"))
    load_model, save_model = model_files(int(config.tick_s))
    worker_planner = None
    if config.worker_plans.enabled:
        prometheus = (PrometheusReader(config.forecast.prometheus_url)
                      if config.forecast.prometheus_url else None)
        worker_planner = WorkerPlanner(config, api, recorder.store, prometheus, rng,
                                       time.sleep, catalog.gpu_resource, count_error)
    loop = OverprovisionerLoop(
        config, catalog, demand, metrics, reader, applier,
        is_leader=elector.is_leader if elector is not None else (lambda: True),
        load_model=load_model, save_model=save_model,
        lease_vacant=elector.lease_vacant if elector is not None else (lambda: False),
        worker_planner=worker_planner,
    )
    watches: tuple[Informer, ...] = (pod_informer,)
    if config.placeholders.wake_debounce_s > 0:
        watches += (placeholder_pod_watch(api_client, config, recorder.config,
                                          loop.wake_debounced),)
    return create_app(loop, elector=elector, background=lambda: demand.start(watches),
                      clock=clock, sleep=sleep or asyncio.sleep,
                      api_status=reachability.status if reachability is not None else None)
