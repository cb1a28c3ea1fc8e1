"""The service's demand source: the predictor's recorder and store, wired as the loop reads them.

Decides how the loop's `DemandSource` (ports.py) is met by the live predictor: each
tick's snapshot written by the recorder (`predictor.live.recorder`, its pods and nodes
from `kube.informer`s), the history read back from its SQLite store, a backfill from
Prometheus on a cold start when configured, the known demand the recorder keeps
(`RecordedKnown`) and the pinned demand in the store (`StorePinned`); and the recorder's
configuration from the service's.

Must not: plan or write to the cluster.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from kubernetes import client

from bucketing.catalog import Catalog
from common.errors import HeadstartError
from kube.informer import Informer
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.service.observe import live_pod_view
from predictor.history.series import DemandSeries
from predictor.live.known_recording import KnownState
from predictor.live.prometheus import PrometheusConfig, load_series
from predictor.live.recorder import Recorder, RecorderConfig
from predictor.live.store import HistoryStore, StoreConfig

log = logging.getLogger("headstart.overprovisioner")


class StorePinned:
    """ports.PinnedDemand over the history store the recorder writes."""

    def __init__(self, store: HistoryStore) -> None:
        self.store = store

    def read(self, start_s: float, end_s: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        return (self.store.read_series(start_s=start_s, end_s=end_s).counts,
                self.store.read_pinned(start_s, end_s))


class RecordedKnown:
    """ports.KnownDemand over the recorder's known-demand step and its store."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def state(self, now_s: float) -> KnownState | None:
        """The known demand recorded at this tick; None when the tick was a gap (then the
        plan has no known demand to add)."""
        assert self.recorder.known is not None
        latest = self.recorder.known.latest
        tick = self.recorder.config.tick_s
        return latest if latest is not None and latest.time_s == (now_s // tick) * tick \
            else None

    def announced(self, series: DemandSeries) -> np.ndarray:
        return self.recorder.store.read_announced(series.times, series.columns)


class RecorderDemand:
    """DemandSource over the predictor's live recorder and its SQLite history."""

    def __init__(self, recorder: Recorder, window_s: float, first_list_timeout_s: float = 30.0,
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

    def series(self, now_s: float) -> DemandSeries:
        tick = self.recorder.config.tick_s
        return self.recorder.store.read_series(start_s=now_s - self.window_s,
                                               end_s=now_s + tick)

    def start(self, extra: tuple[Informer, ...] = ()) -> Callable[[], None]:
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


def recorder_config(config: OverprovisionerConfig) -> RecorderConfig:
    """The recorder's settings from the overprovisioner's config: its tick, buckets and
    history file, and its placement-group label (only that one, as observe reads nodes),
    so demand is recorded in the same groups the placeholders are planned in."""

    return RecorderConfig(
        tick_s=config.tick_s, catalog=config.catalog, buckets=config.instance_types,
        store=StoreConfig(path=config.forecast.history_path,
                          retention_days=config.forecast.retention_s / 86400.0),
        placement_group_labels=(config.placeholders.placement_group_label,),
    )


def prometheus_backfill(config: OverprovisionerConfig, catalog: Catalog, recorder: Recorder
                        ) -> Callable[[float], None]:
    """Fills an empty history with the `forecast.backfill` before the current tick, read
    from kube-state-metrics in Prometheus (`predictor.live.prometheus`). Runs in the tick's
    worker thread (no event loop there), so it drives its own with `asyncio.run`."""

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


def cluster_pod_informer(api_client: client.ApiClient, gpu_resource: str,
                         recorder_config: RecorderConfig,
                         clock: Callable[[], float] = time.time) -> Informer:
    """A `kube.informer.Informer` of every unfinished pod as an observe.PodView (placeholder
    pods included: the cluster view counts them on their nodes)."""

    return Informer("cluster-pods", client.CoreV1Api(api_client).list_pod_for_all_namespaces,
                    lambda obj: live_pod_view(obj, gpu_resource),
                    recorder_config.watch_settings(), clock)
