"""Live demand recorder: pods (watched from the API) -> per-tick bucket counts -> the history store.

The adapter around the pure core in `predictor.snapshot` (what a tick's demand is, and
which tick to write when): `Informer` keeps a list+watch cache of one resource with the
official kubernetes client (list, then watch from the list's resourceVersion; relist on
410 Gone; exponential backoff on any other error), and `Recorder` writes one snapshot
per tick into a `HistoryStore`, with an injectable clock and sleep for tests.

Restarts: the tick grid is absolute (multiples of tick_s since the Unix epoch), the
store keeps one row per tick, and ticks between the last one on disk and the first
one written after a restart are recorded as gaps. A tick for which the pod cache is
not fresh (never listed, or erroring for longer than max_stale_ticks) is a gap too:
no snapshot is better than a made-up one.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bucketing.catalog import InstanceType
from bucketing.errors import ConfigError, InputError
from bucketing.labels import PLACEMENT_GROUP_LABELS
from predictor.snapshot import (
    LivePod,
    TickPlan,
    live_pod,
    node_group,
    plan_tick,
    snapshot_values,
)
from predictor.store import HistoryStore, StoreConfig

LIST_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10.0
WATCH_READ_SLACK_S = 30.0  # past the server's own watch timeout before giving up a read

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


def recorder_config_from_mapping(raw: Any, source: str) -> RecorderConfig:
    """Validate a parsed YAML mapping into a RecorderConfig; errors name source and field."""
    if raw is None:
        return RecorderConfig()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: recorder: expected a mapping")
    known = set(RecorderConfig.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{source}: recorder.{unknown[0]}: unknown field "
                          f"(known: {', '.join(sorted(known))})")
    values: dict[str, Any] = {}
    for name in ("tick_s", "max_stale_ticks", "backoff_initial_s", "backoff_max_s",
                 "watch_timeout_s"):
        if name in raw:
            value = raw[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{source}: recorder.{name}: expected a positive number, "
                                  f"got {value!r}")
            values[name] = int(value) if name == "watch_timeout_s" else float(value)
    for name in ("catalog", "namespace"):
        if name in raw:
            if not isinstance(raw[name], str):
                raise ConfigError(f"{source}: recorder.{name}: expected a string")
            values[name] = raw[name]
    if "placement_group_labels" in raw:
        keys = raw["placement_group_labels"]
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k
                                                             for k in keys):
            raise ConfigError(f"{source}: recorder.placement_group_labels: expected a list of "
                              "node label keys")
        values["placement_group_labels"] = tuple(keys)
    if "buckets" in raw:
        buckets = raw["buckets"]
        if not isinstance(buckets, list) or not all(isinstance(b, str) and b for b in buckets):
            raise ConfigError(f"{source}: recorder.buckets: expected a list of type names")
        values["buckets"] = tuple(buckets)
    if "store" in raw:
        store = raw["store"]
        if not isinstance(store, Mapping) or set(store) - {"path", "retention_days"}:
            raise ConfigError(f"{source}: recorder.store: expected a mapping with path and "
                              "retention_days")
        path = store.get("path", StoreConfig.path)
        days = store.get("retention_days", StoreConfig.retention_days)
        if not isinstance(path, str) or not path:
            raise ConfigError(f"{source}: recorder.store.path: expected a file path")
        if isinstance(days, bool) or not isinstance(days, (int, float)) or not days > 0:
            raise ConfigError(f"{source}: recorder.store.retention_days: expected a positive "
                              f"number, got {days!r}")
        values["store"] = StoreConfig(path=path, retention_days=float(days))
    return RecorderConfig(**values)


# ------------------------------------------------------------------------------ adapter


class Informer:
    """A list+watch cache of one resource's raw JSON objects, refreshed in its own thread.

    list_call: a kubernetes client list method (e.g. CoreV1Api.list_pod_for_all_namespaces).
    parse: raw object -> cached value, or None to leave it out (a placeholder pod).
    on_event: told (type, raw object) of every watch event after it is applied (not of
        relists), in the informer's thread; e.g. the overprovisioner's preemption wake-up.
    """

    def __init__(
        self,
        name: str,
        list_call: Callable[..., Any],
        parse: Callable[[Mapping[str, Any]], Any],
        config: RecorderConfig,
        clock: Callable[[], float] = time.time,
        list_kwargs: Mapping[str, Any] | None = None,
        on_event: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> None:
        self.name = name
        self._on_event = on_event
        self._list_call = list_call
        self._parse = parse
        self._config = config
        self._clock = clock
        self._list_kwargs = dict(list_kwargs or {})
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}
        self._resource_version = ""
        self.synced = threading.Event()
        self.failing_since: float | None = None
        self.relists = 0
        self.errors = 0
        self.unparseable = 0
        self.last_error = ""

    def items(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._items)

    def fresh(self, now_s: float, max_stale_s: float) -> bool:
        """Listed at least once and not failing for longer than max_stale_s."""
        failing = self.failing_since
        return self.synced.is_set() and (failing is None or now_s - failing <= max_stale_s)

    def _key(self, obj: Mapping[str, Any]) -> str:
        metadata = obj.get("metadata") or {}
        return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"

    def _parsed(self, obj: Mapping[str, Any]) -> Any:
        """The cached value of `obj`; an object we cannot read is left out and counted."""
        try:
            return self._parse(obj)
        except InputError:
            self.unparseable += 1
            return None

    def _relist(self) -> None:
        response = self._list_call(_preload_content=False, _request_timeout=LIST_TIMEOUT_S,
                                   **self._list_kwargs)
        body = json.loads(response.data)
        items: dict[str, Any] = {}
        for obj in body.get("items") or []:
            value = self._parsed(obj)
            if value is not None:
                items[self._key(obj)] = value
        with self._lock:
            self._items = items
            self._resource_version = (body.get("metadata") or {}).get("resourceVersion", "")
        self.relists += 1
        self.synced.set()

    def _apply(self, event: Mapping[str, Any]) -> None:
        obj = event.get("object") or {}
        if event.get("type") == "BOOKMARK":
            with self._lock:
                self._resource_version = (obj.get("metadata") or {}).get(
                    "resourceVersion", self._resource_version)
            return
        key = self._key(obj)
        value = None if event.get("type") == "DELETED" else self._parsed(obj)
        with self._lock:
            if value is None:
                self._items.pop(key, None)
            else:
                self._items[key] = value
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self._resource_version = version
        if self._on_event is not None:
            self._on_event(str(event.get("type")), obj)

    def run(self, stop: threading.Event) -> None:
        """List, then watch until `stop`; relist on 410 Gone or a bad event; back off on errors."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        backoff = self._config.backoff_initial_s
        # Run again after a stop, an informer resumes its watch where it left off.
        need_list = not self.synced.is_set()
        while not stop.is_set():
            try:
                if need_list:
                    self._relist()
                    need_list = False
                self.failing_since = None
                backoff = self._config.backoff_initial_s
                watcher = watch.Watch()
                events = 0
                for event in watcher.stream(
                    self._list_call, resource_version=self._resource_version,
                    timeout_seconds=self._config.watch_timeout_s,
                    # A half-open connection never ends by itself: bound every read.
                    _request_timeout=(CONNECT_TIMEOUT_S,
                                      self._config.watch_timeout_s + WATCH_READ_SLACK_S),
                    **self._list_kwargs,
                ):
                    if stop.is_set():
                        watcher.stop()
                        break
                    # raw_object is the JSON as served (deserialize=False would drop it and
                    # break the client's own handling of ERROR events).
                    self._apply({"type": event["type"], "object": event["raw_object"]})
                    events += 1
                if not events and not stop.is_set():
                    # A watch that ended without an event (a proxy cutting streams, or a
                    # quiet server timeout) is re-opened after a pause, never in a hot loop.
                    stop.wait(self._config.backoff_initial_s)
            except ApiException as error:
                if error.status == 410:  # our resourceVersion was compacted away
                    need_list = True
                    continue
                self._note_error(f"{error.status} {error.reason}")
                need_list = True
                stop.wait(backoff)
                backoff = min(backoff * 2, self._config.backoff_max_s)
            except Exception as error:
                # Transport errors (urllib3), a bad response body: anything else. The
                # cache may have missed events, so relist after backing off; the
                # recorder writes gaps meanwhile (see `fresh`).
                self._note_error(f"{type(error).__name__}: {error}")
                need_list = True
                stop.wait(backoff)
                backoff = min(backoff * 2, self._config.backoff_max_s)

    def _note_error(self, message: str) -> None:
        self.errors += 1
        self.last_error = message
        if self.failing_since is None:
            self.failing_since = self._clock()


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
        self.known = known  # a predictor.known.recording.KnownRecorder, or None
        self.ticks_written = 0
        self.gaps_written = 0

    def record(self, now_s: float | None = None) -> TickPlan:
        """Write the tick containing `now_s` (default: the clock) and any missed ticks as gaps."""
        now = self.clock() if now_s is None else now_s
        plan = plan_tick(self.store.last_time(), now, self.config.tick_s)
        if plan.tick_time is None:
            return plan
        self.gaps_written += self.store.write_gaps(plan.gap_from, plan.gap_to)
        max_stale = self.config.max_stale_ticks * self.config.tick_s
        if self.pods.fresh(now, max_stale) and self.nodes.fresh(now, max_stale):
            pods: list[LivePod] = list(self.pods.items().values())
            node_groups = self.nodes.items()
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


def make_recorder(config: RecorderConfig, api_client: Any, clock: Callable[[], float] = time.time,
                  known: Any = None, horizon_s: float = 0.0,
                  startup_s: float = 0.0) -> Recorder:
    """Wire a Recorder to a kubernetes ApiClient, the catalog and the SQLite store in config.

    known: a `predictor.known.config.KnownDemandConfig` to record known-ahead demand due
    within `horizon_s` too (discovers the sources' resources now), or None; pods created
    less than `startup_s` after their work was first counted are not announced."""
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

    pods = Informer("pods", list_pods, parse_pod, config, clock, pod_kwargs)
    nodes = _NodeGroups("nodes", core.list_node, parse_node, config, clock)
    store = HistoryStore(config.store.path, config.tick_s)
    known_recorder = None
    if known is not None and known.enabled():
        from predictor.known.reader import make_known_reader
        from predictor.known.recording import KnownRecorder

        reader = make_known_reader(known, config, api_client, gpu_resource, horizon_s, clock)
        known_recorder = KnownRecorder(reader, store, types, startup_s)
    return Recorder(config, store, types, pods, nodes, clock, known_recorder)


class _NodeGroups(Informer):
    """Nodes keyed by name alone (they have no namespace), valued by group ("" = none)."""

    def _key(self, obj: Mapping[str, Any]) -> str:
        return (obj.get("metadata") or {}).get("name", "")

    def items(self) -> dict[str, Any]:
        return {name: (group or None) for name, group in super().items().items()}
