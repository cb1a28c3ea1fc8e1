"""Live demand recorder: pods (watched from the API) -> per-tick bucket counts -> the history store.

The adapter around the pure core in `predictor.history.snapshot` (what a tick's demand is, and
which tick to write when): pods and nodes are cached by `kube.informer.Informer`s (the
one list+watch implementation), and `Recorder` writes one snapshot per tick into a
`HistoryStore`, with an injectable clock and sleep for tests.

Restarts: the tick grid is absolute (multiples of tick_s since the Unix epoch), the
store keeps one row per tick, and ticks between the last one on disk and the first
one written after a restart are recorded as gaps. A tick for which the pod cache is
not fresh (never listed, or erroring for longer than max_stale_ticks) is a gap too:
no snapshot is better than a made-up one.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bucketing.catalog import InstanceType
from common.errors import ConfigError
from common.fields import FieldReader
from kube.informer import Informer, WatchSettings
from kube.labels import PLACEMENT_GROUP_LABELS
from predictor.history.snapshot import (
    TickPlan,
    node_group,
    plan_tick,
    snapshot_values,
)
from predictor.known.pods import LivePod, live_pod
from predictor.live.store import HistoryStore, StoreConfig

# ------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class RecorderConfig:
    """The live recorder's settings (YAML section `recorder`)."""

    tick_s: float = 300.0
    """Seconds between snapshots; ticks fall on multiples of it since the Unix epoch."""

    catalog: str = "aws"
    """Instance catalog: `aws`, `gcp` or a path to a catalog YAML."""

    buckets: tuple[str, ...] = ()
    """Instance types to count demand in (names in the catalog); empty = every type."""

    store: StoreConfig = field(default_factory=StoreConfig)
    """The SQLite history (path, retention_days)."""

    namespace: str = ""
    """Watch pods of this namespace only; empty = all namespaces."""

    max_stale_ticks: float = 2.0
    """A tick is a gap when the pod watch has been failing for longer than this many ticks."""

    watch_timeout_s: int = 300
    """Server-side timeout of one watch request; the watch is re-opened after it."""

    backoff_initial_s: float = 1.0
    """First wait after an API error; doubles per consecutive error."""

    backoff_max_s: float = 60.0
    """Longest wait between retries after API errors."""

    placement_group_labels: tuple[str, ...] = PLACEMENT_GROUP_LABELS
    """Node label keys naming a node's placement group, first match wins (the
    overprovisioner puts its `placeholders.placement_group_label` first)."""

    @property
    def max_stale_s(self) -> float:
        """How long a failing watch's cache still counts as fresh."""
        return self.max_stale_ticks * self.tick_s

    def watch_settings(self) -> WatchSettings:
        """The settings of the recorder's informers (and the known-demand reader's)."""
        return WatchSettings(watch_timeout_seconds=self.watch_timeout_s,
                             backoff_initial_seconds=self.backoff_initial_s,
                             backoff_max_seconds=self.backoff_max_s)


def recorder_config_from_mapping(raw: Any, source: str) -> RecorderConfig:
    """Validate a parsed YAML mapping into a RecorderConfig; errors name source and field
    (`common.fields.FieldReader`, as every headstart config)."""
    if raw is None:
        return RecorderConfig()
    reader = FieldReader(source)
    raw = reader.mapping(raw, "recorder", optional=False)
    reader.known(raw, "recorder", set(RecorderConfig.__dataclass_fields__))
    values: dict[str, Any] = {}
    for name in ("tick_s", "max_stale_ticks", "backoff_initial_s", "backoff_max_s"):
        if name in raw:
            values[name] = reader.as_number(raw[name], f"recorder.{name}", positive=True)
    if "watch_timeout_s" in raw:
        values["watch_timeout_s"] = reader.as_int(raw["watch_timeout_s"],
                                                  "recorder.watch_timeout_s", low=1)
    if "catalog" in raw:
        values["catalog"] = reader.as_string(raw["catalog"], "recorder.catalog")
    if "namespace" in raw:  # "" (or left out): every namespace
        values["namespace"] = reader.as_string(raw["namespace"], "recorder.namespace",
                                               allow_empty=True)
    if "placement_group_labels" in raw:
        values["placement_group_labels"] = reader.as_strings(
            raw["placement_group_labels"], "recorder.placement_group_labels",
            expected="a non-empty list of node label keys")
    if "buckets" in raw:
        values["buckets"] = reader.as_strings(raw["buckets"], "recorder.buckets",
                                              allow_empty=True,
                                              expected="a list of type names")
    if "store" in raw:
        store = reader.mapping(raw["store"], "recorder.store", optional=False)
        reader.known(store, "recorder.store", {"path", "retention_days"})
        values["store"] = StoreConfig(
            path=reader.string(store, "path", "recorder.store", StoreConfig.path),
            retention_days=reader.as_number(
                store.get("retention_days", StoreConfig.retention_days),
                "recorder.store.retention_days", positive=True, unit="days"))
    return RecorderConfig(**values)


# ------------------------------------------------------------------------------ adapter


class Recorder:
    """Writes one demand snapshot per tick from pod and node informers into a HistoryStore,
    and, when `known` is given, the tick's known and announced demand beside it."""

    def __init__(
        self,
        config: RecorderConfig,
        store: HistoryStore,
        bucket_types: Sequence[InstanceType],
        pods: Informer,
        nodes: Informer,
        clock: Callable[[], float] = time.time,
        known: Any = None,
    ) -> None:
        if store.tick_s != config.tick_s:
            raise ConfigError(f"{store.path}: store tick {store.tick_s:g} s differs from the "
                              f"recorder's {config.tick_s:g} s")
        self.config = config
        self.store = store
        self.bucket_types = tuple(bucket_types)
        self.pods = pods
        self.nodes = nodes
        self.clock = clock
        self.known = known  # a predictor.live.known_recording.KnownRecorder, or None
        self.ticks_written = 0
        self.gaps_written = 0

    def record(self, now_s: float | None = None) -> TickPlan:
        """Write the tick containing `now_s` (default: the clock) and any missed ticks as gaps."""
        now = self.clock() if now_s is None else now_s
        plan = plan_tick(self.store.last_time(), now, self.config.tick_s)
        if plan.tick_time is None:
            return plan
        self.gaps_written += self.store.write_gaps(plan.gap_from, plan.gap_to)
        max_stale = self.config.max_stale_s
        if self.pods.fresh(now, max_stale) and self.nodes.fresh(now, max_stale):
            pods: list[LivePod] = list(self.pods.items().values())
            # Nodes are cached as their group, "" for none (None would leave them out).
            node_groups = {name: group or None for name, group in self.nodes.items().items()}
            values = snapshot_values([p.demand for p in pods if p.demand is not None],
                                     node_groups, self.bucket_types)
            self.store.write_tick(plan.tick_time, values)
            self.ticks_written += 1
            if self.known is not None:
                self.known.record(plan.tick_time, pods, node_groups, self.clock())
        else:
            self.gaps_written += self.store.write_gaps(
                plan.tick_time, plan.tick_time + self.config.tick_s)
        self.store.delete_older_than(now, self.config.store.retention_days)
        return plan

    def run(self, stop: threading.Event, sleep: Callable[[float], bool] | None = None) -> None:
        """Start the informers, then record at every tick boundary until `stop` is set."""
        wait = sleep or stop.wait
        threads = [threading.Thread(target=informer.run, args=(stop,), daemon=True,
                                    name=f"headstart-{informer.name}-informer")
                   for informer in (self.pods, self.nodes)]
        for thread in threads:
            thread.start()
        if self.known is not None:
            threads += self.known.start(stop)
        # Give the first list a moment, so the first tick is a snapshot rather than a gap.
        self.pods.synced.wait(min(30.0, self.config.tick_s))
        self.nodes.synced.wait(min(30.0, self.config.tick_s))
        while not stop.is_set():
            self.record()
            now = self.clock()
            next_tick = (math.floor(now / self.config.tick_s) + 1) * self.config.tick_s
            if wait(max(0.0, next_tick - now)):
                break
        for thread in threads:
            thread.join(timeout=self.config.watch_timeout_s)


def make_recorder(config: RecorderConfig, api_client: Any,
                  clock: Callable[[], float] = time.time) -> Recorder:
    """Wire a Recorder to a kubernetes ApiClient, the catalog and the SQLite store in config.
    Known-ahead demand is wired beside it by the service's start-up
    (`predictor.live.known_recording.make_known_recorder`), not here: the known-demand reader
    builds on this module."""
    from kubernetes import client

    from bucketing.catalog import load_catalog

    catalog = load_catalog(config.catalog)
    types = (catalog.subset(list(config.buckets)) if config.buckets else catalog).instance_types
    core = client.CoreV1Api(api_client)
    if config.namespace:
        list_pods: Callable[..., Any] = core.list_namespaced_pod
        pod_kwargs: dict[str, Any] = {"namespace": config.namespace}
    else:
        list_pods, pod_kwargs = core.list_pod_for_all_namespaces, {}
    gpu_resource = catalog.gpu_resource

    def parse_pod(obj: Mapping[str, Any]) -> LivePod | None:
        return live_pod(obj, gpu_resource)

    def parse_node(obj: Mapping[str, Any]) -> str | None:
        return node_group(obj, config.placement_group_labels)[1] or ""

    pods = Informer("pods", list_pods, parse_pod, config.watch_settings(), clock, pod_kwargs)
    nodes = node_group_informer(core.list_node, parse_node, config.watch_settings(), clock)
    store = HistoryStore(config.store.path, config.tick_s)
    return Recorder(config, store, types, pods, nodes, clock)


def node_group_informer(list_call: Callable[..., Any],
                        parse: Callable[[Mapping[str, Any]], Any], settings: WatchSettings,
                        clock: Callable[[], float] = time.time) -> Informer:
    """Nodes keyed by name alone (they have no namespace), valued by group ("" = none)."""
    return Informer("nodes", list_call, parse, settings, clock,
                    key=lambda obj: (obj.get("metadata") or {}).get("name", ""))
