"""Records known demand beside observed demand, once per tick, and keeps the latest for the plan.

Decides the order of one tick's known-demand bookkeeping (the rules are in
`predictor.known.combine`): read the items, keep those due within the horizon, embed
them (all together and per source), remember the workloads counted for the first time,
split the running pods into announced and the rest, and write the tick's known and
announced demand into the history store. The latest result is kept as a `KnownState`
for the overprovisioner's plan and `/plan`.

Must not: decide what a source announces, or plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bucketing.catalog import InstanceType
from kube.informer import WatchSettings
from predictor.history.pinning import PINNED_PREFIX
from predictor.history.series import TOTAL_PREFIX
from predictor.history.snapshot import snapshot_values
from predictor.known.combine import (
    KnownValues,
    announced_pods,
    counted,
    covered,
    known_values,
    newly_announced,
)
from predictor.known.config import KnownDemandConfig
from predictor.known.model import KnownItem
from predictor.known.pods import LivePod
from predictor.live.known_reader import KnownDemandReader, KnownReport, make_known_reader
from predictor.live.store import KNOWN_TOTAL, HistoryStore


@dataclass(frozen=True)
class KnownState:
    """Known demand at one tick, as the plan reads it.

    time_s: the tick. report: every item and the sources' state. counted: the items due
    within the horizon. values: their embedding (nodes per bucket column). announced:
    nodes per bucket column of the running or pending pods that were announced ahead.
    """

    time_s: float
    report: KnownReport
    counted: tuple[KnownItem, ...]
    values: KnownValues
    announced: Mapping[str, float] = field(default_factory=dict)


class KnownRecorder:
    """The per-tick known-demand step of the live recorder."""

    def __init__(self, reader: KnownDemandReader, store: HistoryStore,
                 bucket_types: Sequence[InstanceType], startup_s: float = 0.0) -> None:
        """startup_s: the node start-up (the config's horizon): pods created sooner after
        their work was first counted are not announced demand (`announced_pods`)."""
        self.reader = reader
        self.startup_s = startup_s
        self.store = store
        self.bucket_types = tuple(bucket_types)
        self.announced = store.announced_work()
        self.latest: KnownState | None = None

    def record(self, tick_s: float, pods: Iterable[LivePod],
               node_groups: Mapping[str, str | None], now_s: float | None = None
               ) -> KnownState:
        """Known and announced demand of the tick at `tick_s`, written to the store.

        now_s: the clock when the caches were read (default the tick): work counted now
        for the first time is announced from then, and only pods created after it are
        announced demand."""
        now_s = tick_s if now_s is None else now_s
        pods = list(pods)
        report = self.reader.items(tick_s, pods)
        due = counted(report.items, tick_s, self.reader.horizon_s)
        values = known_values(due, self.bucket_types)
        fresh = newly_announced(due + covered(report.items), self.announced, now_s)
        if fresh:
            self.store.remember_announced(fresh)
            self.announced.update({key: first for key, (_, first) in fresh.items()})
        demand = announced_pods(pods, self.announced, self.startup_s)
        announced = {series: value for series, value in
                     snapshot_values(demand, node_groups, self.bucket_types).items()
                     if not series.startswith((TOTAL_PREFIX, PINNED_PREFIX))}
        self.store.write_known(tick_s, {KNOWN_TOTAL: values.total, **values.by_source},
                               announced)
        self.latest = KnownState(tick_s, report, tuple(due), values, announced)
        return self.latest

    def start(self, stop: Any) -> list[Any]:
        return self.reader.start(stop)


def make_known_recorder(config: KnownDemandConfig, store: HistoryStore,
                        bucket_types: Sequence[InstanceType], settings: WatchSettings,
                        max_stale_s: float, api_client: Any, gpu_resource: str,
                        horizon_s: float, startup_s: float = 0.0,
                        clock: Callable[[], float] = time.time) -> KnownRecorder | None:
    """The known-demand step beside a recorder (its store, buckets and watch settings), or
    None when no source is enabled: discovers the sources' resources now. Records known
    demand due within `horizon_s`; pods created less than `startup_s` after their work
    was first counted are not announced."""
    if not config.enabled():
        return None
    reader = make_known_reader(config, settings, max_stale_s, api_client, gpu_resource,
                               horizon_s, clock)
    return KnownRecorder(reader, store, bucket_types, startup_s)
