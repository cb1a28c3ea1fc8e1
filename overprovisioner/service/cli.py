"""`headstart overprovisioner --config FILE [--kubeconfig FILE] [--dry-run]`: run the service.

Decides: how the command line, the config file and the cluster credentials become a
running service: the Kubernetes client (kube.client: `--kubeconfig`, else the
in-cluster service account in a pod, else the default kubeconfig), the demand recorder
and its SQLite store (predictor.live.recorder), the leader elector (skipped in dry-run, which
never writes), the placeholder applier, the placeholder-pod watch that wakes the loop
after a preemption (wake.py) and the HTTP server on `host:port`.

Must not: contain service logic; everything here is wiring.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from common.errors import ConfigError, HeadstartError
from common.logs import LOG_FORMATS

log = logging.getLogger("headstart.overprovisioner")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "overprovisioner",
        help="run the predictive overprovisioner service (placeholder pods sized to the forecast)",
        description=(
            "Every tick: record the cluster's demand, forecast each bucket one node start-up "
            "ahead, plan placeholders (forecast minus capacity already free, within limits and "
            "the cost cap) and apply them as balloon Deployments or CapacityBuffers. Serves "
            "/healthz /readyz /metrics /plan on the configured port (8080). "
            "See docs/overprovisioner.md and overprovisioner/example-config.yaml."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="YAML config (see overprovisioner/example-config.yaml)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="kubeconfig to use instead of the in-cluster service account")
    parser.add_argument("--dry-run", action="store_true",
                        help="forecast-only: compute and serve the plan, never write to the "
                             "cluster (overrides dry_run in the config)")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="log verbosity")
    parser.add_argument("--log-format", default="json", choices=LOG_FORMATS,
                        help="json: one object per line on stderr (default, for log "
                             "pipelines); text: for a human at a terminal")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from aiohttp import web

    from common.logs import configure_logging
    from kube.client import load_api_client
    from kube.reachability import monitor_reachability
    from overprovisioner.config.catalog import config_warnings, resolve_catalog
    from overprovisioner.config.load import load_config
    from overprovisioner.service.server import HTTP_SHUTDOWN_S

    configure_logging(args.log_format, args.log_level)
    # The client library's election logs every retry at INFO.
    logging.getLogger("leaderelection").setLevel(logging.WARNING)
    config = load_config(args.config)
    if args.dry_run:
        config = replace(config, dry_run=True)
    catalog = resolve_catalog(config)  # config errors before any cluster access
    for warning in config_warnings(config, catalog):
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


def check_file_directories(config: Any) -> None:
    """The history and model files are created at run time, their directories are not:
    a missing one is a config error naming the field now, not a failed tick later."""
    from pathlib import Path

    for field, value in (("forecast.history_path", config.forecast.history_path),
                         ("forecast.model_path", config.forecast.model_path)):
        if value and not Path(value).parent.is_dir():
            raise ConfigError(f"{config.source}: {field}: directory {Path(value).parent} of "
                              f"{value} does not exist; create it or choose another path")


def model_files(tick_seconds: int) -> tuple[Any, Any]:
    """The loop's model loader and saver over `predictor.live.persist` (torch is imported only
    when a model file is used). load: None when no file exists yet, ModelFileError for a
    corrupt file, ConfigError for a model of other buckets or another tick."""

    def load_model(path: str, columns: Any) -> Any:
        from pathlib import Path

        if not Path(path).exists():
            return None  # first start: nothing saved yet, fit from the history
        from predictor.live import persist

        return persist.load(path, columns, tick_seconds).model

    def save_model(model: Any, path: str, columns: Any) -> None:
        from predictor.live import persist

        persist.save(model, path, columns, tick_seconds)

    return load_model, save_model


class StorePinned:
    """ports.PinnedDemand over the history store the recorder writes."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def read(self, start_s: float, end_s: float) -> tuple[Any, Any]:
        return (self.store.read_series(start_s=start_s, end_s=end_s).counts,
                self.store.read_pinned(start_s, end_s))


class RecordedKnown:
    """ports.KnownDemand over the recorder's known-demand step and its store."""

    def __init__(self, recorder: Any) -> None:
        self.recorder = recorder

    def state(self, now_s: float) -> Any:
        """The known demand recorded at this tick; None when the tick was a gap (then the
        plan has no known demand to add)."""
        latest = self.recorder.known.latest
        tick = self.recorder.config.tick_s
        return latest if latest is not None and latest.time_s == (now_s // tick) * tick \
            else None

    def announced(self, series: Any) -> Any:
        return self.recorder.store.read_announced(series.times, series.columns)


class RecorderDemand:
    """DemandSource over the predictor's live recorder and its SQLite history."""

    def __init__(self, recorder: Any, window_s: float, first_list_timeout_s: float = 30.0,
                 backfill: Callable[[float], None] | None = None) -> None:
        self.recorder = recorder
        self.window_s = window_s
        self.first_list_timeout_s = first_list_timeout_s
        self.backfill = backfill
        self._first_tick_done = False
        self.pinned = StorePinned(recorder.store)
        self.known = RecordedKnown(recorder) if recorder.known is not None else None

    def record(self, now_s: float) -> None:
        if not self._first_tick_done:
            self._first_tick_done = True
            if self.backfill is not None and self.recorder.store.last_time() is None:
                self._backfill(now_s)
            # The first tick starts with the service, before the informers' first list
            # has landed: wait for it (once, bounded) so that a restart records the
            # current tick instead of a needless gap.
            informers = [self.recorder.pods, self.recorder.nodes]
            if self.recorder.known is not None:
                informers += list(self.recorder.known.reader.informers.values())
            deadline = time.monotonic() + self.first_list_timeout_s
            for informer in informers:
                informer.synced.wait(max(0.0, deadline - time.monotonic()))
        self.recorder.record(now_s)

    def _backfill(self, now_s: float) -> None:
        assert self.backfill is not None
        try:
            self.backfill(now_s)
        except HeadstartError as error:  # no history then: the cold-start ladder runs
            log.warning("backfilling the history from Prometheus failed: %s", error)

    def series(self, now_s: float) -> Any:
        tick = self.recorder.config.tick_s
        return self.recorder.store.read_series(start_s=now_s - self.window_s,
                                               end_s=now_s + tick)

    def start(self, extra: tuple[Any, ...] = ()) -> Any:
        """Start the pod and node informers (and `extra` ones); returns the function
        that stops them."""
        stop = threading.Event()
        threads = [
            threading.Thread(target=informer.run, args=(stop,), daemon=True,
                             name=f"headstart-{informer.name}-informer")
            for informer in (self.recorder.pods, self.recorder.nodes, *extra)
        ]
        for thread in threads:
            thread.start()
        if self.recorder.known is not None:
            threads += self.recorder.known.start(stop)

        def stop_informers() -> None:
            # A watch only notices `stop` at its next event or server timeout; the
            # threads are daemons, so shutdown waits half a second for them in all, not
            # per thread (one per known-demand resource too).
            stop.set()
            deadline = time.monotonic() + 0.5
            for thread in threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
            self.recorder.store.close()  # the loop (its only user) has stopped by now

        return stop_informers


def recorder_config(config: Any) -> Any:
    """The recorder's settings from the overprovisioner's config: its tick, buckets and
    history file, and its placement-group label (only that one, as observe reads nodes),
    so demand is recorded in the same groups the placeholders are planned in."""
    from predictor.live.recorder import RecorderConfig
    from predictor.live.store import StoreConfig

    return RecorderConfig(
        tick_s=config.tick_s, catalog=config.catalog, buckets=config.instance_types,
        store=StoreConfig(path=config.forecast.history_path,
                          retention_days=config.forecast.retention_s / 86400.0),
        placement_group_labels=(config.placeholders.placement_group_label,),
    )


def prometheus_backfill(config: Any, catalog: Any, recorder: Any) -> Callable[[float], None]:
    """Fills an empty history with the `forecast.backfill` before the current tick, read
    from kube-state-metrics in Prometheus (`predictor.live.prometheus`). Runs in the tick's
    worker thread (no event loop there), so it drives its own with `asyncio.run`."""
    import asyncio
    import math
    import re

    from predictor.live.prometheus import PrometheusConfig, load_series

    tick_s = config.tick_s
    prometheus = PrometheusConfig(
        url=config.forecast.prometheus_url,
        # kube-state-metrics writes nvidia.com/gpu as nvidia_com_gpu.
        gpu_resource=re.sub(r"[^a-zA-Z0-9_]", "_", catalog.gpu_resource),
        exclude_namespaces=(config.placeholders.namespace,),
    )

    def backfill(now_s: float) -> None:
        end_s = math.floor(now_s / tick_s) * tick_s - tick_s  # the tick before this one
        series = asyncio.run(load_series(prometheus, end_s - config.forecast.backfill_s,
                                         end_s, tick_s, recorder.bucket_types))
        observed, gaps = recorder.store.write_series(series)
        log.info("backfilled %d ticks (%d gaps) from %s", observed, gaps, prometheus.url)

    return backfill


def cluster_pod_informer(api_client: Any, gpu_resource: str, recorder_config: Any,
                         clock: Any = time.time) -> Any:
    """A `kube.informer.Informer` of every unfinished pod as an observe.PodView (placeholder
    pods included: the cluster view counts them on their nodes)."""
    from kubernetes import client

    from kube.informer import Informer
    from overprovisioner.service.observe import live_pod_view

    return Informer("cluster-pods", client.CoreV1Api(api_client).list_pod_for_all_namespaces,
                    lambda obj: live_pod_view(obj, gpu_resource),
                    recorder_config.watch_settings(), clock)


def build_app(config: Any, api_client: Any, clock: Any = time.time, sleep: Any = None,
              reachability: Any = None) -> Any:
    """Wire config + ApiClient into the aiohttp app (the tests call this with the fake);
    `reachability` (kube.reachability) makes /readyz say when the API is down."""
    import asyncio

    import numpy as np

    from kube.leader import LeaderElector
    from overprovisioner.config.catalog import resolve_catalog
    from overprovisioner.service.apply import Applier, KubeApi
    from overprovisioner.service.errors import RetryPolicy
    from overprovisioner.service.loop import OverprovisionerLoop
    from overprovisioner.service.metrics import Metrics
    from overprovisioner.service.observe import ClusterReader, PodCache
    from overprovisioner.service.server import create_app
    from predictor.live.known_recording import make_known_recorder
    from predictor.live.recorder import make_recorder

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
        from overprovisioner.service.worker_planner import PrometheusReader, WorkerPlanner

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
    watches: tuple[Any, ...] = (pod_informer,)
    if config.placeholders.wake_debounce_s > 0:
        from overprovisioner.service.wake import placeholder_pod_watch

        watches += (placeholder_pod_watch(api_client, config, recorder.config,
                                          loop.wake_debounced),)
    return create_app(loop, elector=elector, background=lambda: demand.start(watches),
                      clock=clock, sleep=sleep or asyncio.sleep,
                      api_status=reachability.status if reachability is not None else None)
