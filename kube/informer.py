"""List+watch of one resource kind with the kubernetes client: the one implementation
the extender's cluster cache, the recorder, the known-demand reader and the
overprovisioner's preemption wake-up all use.

Decides the list/watch life cycle (`ListWatch`), in its own thread, with the official
(sync) client: list every object (paged), hand them over, then watch from the list's
resourceVersion with bookmarks; a watch that ends normally (server timeout) or breaks
resumes from the last resourceVersion seen; an ERROR event or HTTP status 410 Gone
(history compacted) relists at once; any other failure retries with exponential backoff
(doubling from `backoff_initial_seconds` up to `backoff_max_seconds`), and the watch
counts as failing until a list succeeds or a watch is streaming again; a watch that ends
within a second without an event is re-opened only after the initial backoff (a proxy
cutting streams must not get a hot reconnect loop). A kind marked optional whose list
answers 404 (a CRD not installed) counts as synced and empty and is re-checked every
`optional_recheck_seconds`. Every read is bounded (`request_timeout_seconds` for a list
page; the server's watch timeout plus 30 s for a watch): a half-open connection never
leaves a cache looking fresh while stale.

Objects are parsed in the watch thread; the parsed values go to a *sink* as
("replace", [values]) after each list, ("upsert", value) or ("delete", value) per event.
An object that does not parse is skipped, counted and logged. `WatchStatus` is what
/readyz and /metrics show and what `Informer.fresh` decides with.

`Informer` is a thread-safe cache (namespace/name -> parsed value) kept by a ListWatch.

Must not: decide anything about what the objects mean.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from common.errors import HeadstartError
from kube.reachability import unreachable_reason

log = logging.getLogger("headstart.kube.informer")

# A sink receives ("replace", [values]), ("upsert", value) or ("delete", value).
Sink = Callable[[str, Any], None]
Parser = Callable[[Mapping[str, Any]], Any]
ListCall = Callable[..., Any]

CONNECT_TIMEOUT_S = 10.0
WATCH_READ_SLACK_S = 30.0  # past the server's own watch timeout before giving up a read


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): relist."""


@dataclass(frozen=True)
class WatchSettings:
    page_size: int = 500
    watch_timeout_seconds: int = 300
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 30.0
    optional_recheck_seconds: float = 60.0
    request_timeout_seconds: float = 60.0


@dataclass
class WatchStatus:
    """What one watch is doing; written by its thread, read by /readyz, /metrics and
    `Informer.fresh`. Times are the watch's clock (monotonic unless it was given one)."""

    kind: str
    synced: bool = False
    streaming: bool = False
    absent: bool = False
    objects: int = 0
    consecutive_failures: int = 0
    errors_total: int = 0
    relists_total: int = 0
    parse_errors_total: int = 0
    events_total: int = 0
    last_error: str | None = None
    last_sync: float | None = None
    last_event: float | None = None
    failing_since: float | None = None

    def as_dict(self, now: float) -> dict[str, Any]:
        """A JSON-able summary with ages in seconds relative to `now` (the watch's clock)."""
        def age(moment: float | None) -> float | None:
            return None if moment is None else round(now - moment, 3)

        return {
            "synced": self.synced,
            "streaming": self.streaming,
            "absent": self.absent,
            "objects": self.objects,
            "consecutive_failures": self.consecutive_failures,
            "errors_total": self.errors_total,
            "relists_total": self.relists_total,
            "parse_errors_total": self.parse_errors_total,
            "last_error": self.last_error,
            "seconds_since_sync": age(self.last_sync),
            "seconds_since_event": age(self.last_event),
            "failing_for_seconds": age(self.failing_since),
        }


class ListWatch:
    """Keeps one resource kind listed and watched: `start()` in a thread of its own until
    `stop()`, or `run(stop)` in the caller's thread until `stop` is set. Run again after
    a stop, it resumes its watch where it left off.

    list_call: a kubernetes client list method (e.g. CoreV1Api.list_pod_for_all_namespaces),
        called with `list_kwargs` (a namespace, a label selector, a CRD's group/version).
    parse: raw object -> value handed to the sink, or None to leave it out.
    sink: called in the watch's thread; one that raises RuntimeError (its event loop is
        closed: shutting down) ends the watch.
    """

    def __init__(
        self,
        kind: str,
        list_call: ListCall,
        parse: Parser,
        sink: Sink,
        settings: WatchSettings,
        optional: bool = False,
        list_kwargs: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind = kind
        self.status = WatchStatus(kind)
        self._list_call = list_call
        self._parse = parse
        self._sink = sink
        self._settings = settings
        self._optional = optional
        self._list_kwargs = dict(list_kwargs or {})
        self._clock = clock
        self._stop = threading.Event()
        self._response: Any = None
        self._resource_version = ""
        self._thread = threading.Thread(target=self.run, name=f"watch-{kind}", daemon=True)

    @property
    def name(self) -> str:
        return self.kind

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end and unblock a read in progress."""
        self._stop.set()
        response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # noqa: BLE001 - best effort; the thread is a daemon anyway
                pass

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # ---- thread body -------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """List, then watch until `stop` (default: this watch's own, set by `stop()`)."""
        if stop is not None:
            self._stop = stop
        settings = self._settings
        backoff = settings.backoff_initial_seconds
        # None: (re)list before watching. Run again after a stop, resume the watch.
        resource_version: str | None = self._resource_version if self.status.synced else None
        while not self._stop.is_set():
            try:
                if resource_version is None:
                    resource_version = self._list()
                    self._succeeded()
                    backoff = settings.backoff_initial_seconds
                # A watch that ends or breaks resumes from the last version it saw; only
                # 410 Gone (history compacted) needs a relist.
                self._resource_version = resource_version
                started, events = time.monotonic(), self.status.events_total
                self._watch()  # marks success once the watch streams
                backoff = settings.backoff_initial_seconds
                if events == self.status.events_total and time.monotonic() - started < 1.0:
                    # A server that ends watches at once must not get a hot reconnect loop.
                    self._stop.wait(backoff)
            except _Gone:
                resource_version = None
                self.status.relists_total += 1
                log.info("watch expired, relisting", extra={"kind": self.kind})
            except ApiException as error:
                if error.status == 410:
                    resource_version = None
                    self.status.relists_total += 1
                elif error.status == 404 and self._optional:
                    resource_version = None
                    self._absent()
                    self._stop.wait(settings.optional_recheck_seconds)
                else:
                    backoff = self._failed(f"API status {error.status}: {error.reason}", backoff,
                                           unreachable=unreachable_reason(error) is not None)
            except Exception as error:  # noqa: BLE001 - any fault is retried; the thread lives on
                if self._stop.is_set():
                    break
                backoff = self._failed(f"{type(error).__name__}: {error}", backoff,
                                       unreachable=unreachable_reason(error) is not None)
            if resource_version is not None:
                resource_version = self._resource_version
        self.status.streaming = False

    def _failed(self, message: str, backoff: float, unreachable: bool = False) -> float:
        """Count a failure and back off. Logged as a warning only when it starts a streak
        and the server answered (a 403, a bad answer): an unreachable server is logged
        once, for all watches, by kube.reachability; /readyz shows each error."""
        status = self.status
        status.streaming = False
        status.errors_total += 1
        status.consecutive_failures += 1
        status.last_error = message
        if status.failing_since is None:
            status.failing_since = self._clock()
        quiet = unreachable or status.consecutive_failures > 1
        log.log(
            logging.DEBUG if quiet else logging.WARNING,
            "list/watch failed, retrying",
            extra={"kind": self.kind, "error": message, "retry_in_seconds": backoff},
        )
        self._stop.wait(backoff)
        return min(backoff * 2, self._settings.backoff_max_seconds)

    def _succeeded(self) -> None:
        self.status.consecutive_failures = 0
        self.status.failing_since = None

    def _absent(self) -> None:
        if not self.status.absent:
            log.info("resource not served; treating it as empty", extra={"kind": self.kind})
        self.status.absent = True
        self._succeeded()
        self._deliver("replace", [])
        self._mark_synced(0)

    def _mark_synced(self, count: int) -> None:
        now = self._clock()
        self.status.synced = True
        self.status.objects = count
        self.status.last_sync = now
        self.status.last_event = now

    def _list(self) -> str:
        """List every object (paged), deliver them, return the list's resourceVersion."""
        items: list[Any] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                **self._list_kwargs,
                "limit": self._settings.page_size,
                "_preload_content": False,
                "_request_timeout": self._settings.request_timeout_seconds,
            }
            if token:
                kwargs["_continue"] = token
            response = self._list_call(**kwargs)
            try:
                document = json.loads(response.data)
            finally:
                response.release_conn()
            for raw in document.get("items") or ():
                parsed = self._parse_one(raw)
                if parsed is not None:
                    items.append(parsed)
            metadata = document.get("metadata") or {}
            token = metadata.get("continue")
            if not token:
                break
        self.status.absent = False
        self._deliver("replace", items)
        self._mark_synced(len(items))
        return str(metadata.get("resourceVersion") or "")

    def _watch(self) -> None:
        """Stream events until the server ends the watch; `_resource_version` follows them."""
        timeout = self._settings.watch_timeout_seconds
        response = self._list_call(
            **self._list_kwargs,
            watch=True,
            resource_version=self._resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _preload_content=False,
            # A half-open connection never ends by itself: bound every read.
            _request_timeout=(CONNECT_TIMEOUT_S, timeout + WATCH_READ_SLACK_S),
        )
        self._response = response
        self.status.streaming = True
        # The server answered and streams: no longer failing. Waiting for the watch to end
        # (up to its timeout) would keep a resumed watch looking stale for minutes.
        self._succeeded()
        try:
            if self._stop.is_set():  # stop() ran before _response was set: it could not close it
                return
            for line in iter_resp_lines(response):
                if self._stop.is_set():
                    break
                self._handle_line(line)
        finally:
            self._response = None
            self.status.streaming = False
            response.close()
            response.release_conn()

    def _handle_line(self, line: str | bytes) -> None:
        event = json.loads(line)
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise _Gone()
            raise ApiException(status=code, reason=obj.get("message") or obj.get("reason"))
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind != "BOOKMARK":
            parsed = self._parse_one(obj)
            if parsed is not None:
                if kind == "DELETED":
                    self._deliver("delete", parsed)
                    self.status.objects = max(self.status.objects - 1, 0)
                elif kind in ("ADDED", "MODIFIED"):
                    self._deliver("upsert", parsed)
                    if kind == "ADDED":
                        self.status.objects += 1
            self.status.events_total += 1
            self.status.last_event = self._clock()
        if version:
            self._resource_version = version

    def _parse_one(self, raw: dict[str, Any]) -> Any:
        try:
            return self._parse(raw)
        except (HeadstartError, KeyError, TypeError, ValueError) as error:
            self.status.parse_errors_total += 1
            name = (raw.get("metadata") or {}).get("name") if isinstance(raw, dict) else None
            log.warning(
                "skipping an object that does not parse",
                extra={"kind": self.kind, "object": name, "error": str(error)},
            )
            return None

    def _deliver(self, op: str, payload: Any) -> None:
        try:
            self._sink(op, payload)
        except RuntimeError:  # the sink's event loop is closed: we are shutting down
            self._stop.set()


def namespaced_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name` (`/name` for a cluster-scoped object)."""
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


class Informer:
    """A thread-safe cache of one resource, kept by a `ListWatch`: key -> parsed value.

    parse: raw object -> cached value, or None to leave it out (a placeholder pod).
    key: raw object -> cache key (default `namespace/name`).
    clock: the time `fresh` is asked at (wall clock by default).
    """

    def __init__(
        self,
        name: str,
        list_call: ListCall,
        parse: Parser,
        settings: WatchSettings,
        clock: Callable[[], float] = time.time,
        list_kwargs: Mapping[str, Any] | None = None,
        key: Callable[[Mapping[str, Any]], str] = namespaced_key,
    ) -> None:
        self.name = name
        self._value = parse
        self._key = key
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}
        self.synced = threading.Event()
        self.watch = ListWatch(name, list_call, self._keyed, self._apply, settings,
                               list_kwargs=list_kwargs, clock=clock)

    @property
    def status(self) -> WatchStatus:
        return self.watch.status

    def run(self, stop: threading.Event) -> None:
        """List, then watch until `stop` (in the caller's thread)."""
        self.watch.run(stop)

    def items(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._items)

    def fresh(self, now_s: float, max_stale_s: float) -> bool:
        """Listed at least once and not failing for longer than max_stale_s."""
        failing = self.status.failing_since
        return self.synced.is_set() and (failing is None or now_s - failing <= max_stale_s)

    def _keyed(self, raw: Mapping[str, Any]) -> tuple[str, Any]:
        # Never None: a deleted object's key must reach the cache even when its value is.
        return self._key(raw), self._value(raw)

    def _apply(self, op: str, payload: Any) -> None:
        with self._lock:
            if op == "replace":
                self._items = {key: value for key, value in payload if value is not None}
            else:
                key, value = payload
                if op == "delete" or value is None:
                    self._items.pop(key, None)
                else:
                    self._items[key] = value
        if op == "replace":
            self.synced.set()
