"""List+watch of nodes, pods and NodeResourceTopology objects with the kubernetes client.

Decides: the list/watch life cycle of one resource kind, in its own thread, with the
official (sync) client: list all objects (paged), hand them over, then watch from the
list's resourceVersion; a watch that ends normally (server timeout) resumes from the
last resourceVersion seen; an ERROR event or HTTP status 410 Gone (history compacted)
relists at once; any other failure retries with exponential backoff (doubling from
`backoff_initial_seconds` up to `backoff_max_seconds`). A kind marked optional whose
list answers 404 (the NodeResourceTopology CRD is not installed) counts as synced and
empty ("no NUMA data") and is re-checked every `optional_recheck_seconds`.

Objects are parsed into locality dataclasses in the watch thread; the parsed values
reach the cache through `loop.call_soon_threadsafe`, so all cache mutation happens on
the event loop. `WatchStatus` is what /readyz and /metrics show.

Must not: decide anything about placements, or touch the cache from its own thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from bucketing.api_reachability import unreachable_reason
from bucketing.errors import HeadstartError

log = logging.getLogger("headstart.extender.watch")

# A sink receives (op, payload) on the event loop: ("replace", [objects]),
# ("upsert", object) or ("delete", object).
Sink = Callable[[str, Any], None]
Parser = Callable[[dict[str, Any]], Any]
ListCall = Callable[..., Any]


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): relist."""


@dataclass
class WatchStatus:
    """What one watch is doing; written by its thread, read by /readyz and /metrics."""

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
    last_sync_monotonic: float | None = None
    last_event_monotonic: float | None = None
    failing_since_monotonic: float | None = None

    def as_dict(self, now: float) -> dict[str, Any]:
        """A JSON-able summary with ages in seconds relative to `now` (monotonic)."""
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
            "seconds_since_sync": age(self.last_sync_monotonic),
            "seconds_since_event": age(self.last_event_monotonic),
            "failing_for_seconds": age(self.failing_since_monotonic),
        }


@dataclass(frozen=True)
class WatchSettings:
    page_size: int = 500
    watch_timeout_seconds: int = 300
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 30.0
    optional_recheck_seconds: float = 60.0
    request_timeout_seconds: float = 60.0


class ResourceWatch:
    """Keeps one resource kind listed and watched until `stop()`."""

    def __init__(
        self,
        kind: str,
        list_call: ListCall,
        parse: Parser,
        sink: Sink,
        loop: asyncio.AbstractEventLoop,
        settings: WatchSettings,
        optional: bool = False,
    ) -> None:
        self.kind = kind
        self.status = WatchStatus(kind)
        self._list_call = list_call
        self._parse = parse
        self._sink = sink
        self._loop = loop
        self._settings = settings
        self._optional = optional
        self._stop = threading.Event()
        self._response: Any = None
        self._resource_version = ""
        self._thread = threading.Thread(target=self._run, name=f"watch-{kind}", daemon=True)

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

    def _run(self) -> None:
        backoff = self._settings.backoff_initial_seconds
        resource_version: str | None = None  # None: (re)list before watching
        while not self._stop.is_set():
            try:
                if resource_version is None:
                    resource_version = self._list()
                    self._succeeded()
                    backoff = self._settings.backoff_initial_seconds
                # A watch that ends or breaks resumes from the last version it saw; only
                # 410 Gone (history compacted) needs a relist.
                self._resource_version = resource_version
                started, events = time.monotonic(), self.status.events_total
                self._watch()
                self._succeeded()
                backoff = self._settings.backoff_initial_seconds
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
                    self._stop.wait(self._settings.optional_recheck_seconds)
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
        once, for all watches, by bucketing.api_reachability; /readyz shows each error."""
        status = self.status
        status.streaming = False
        status.errors_total += 1
        status.consecutive_failures += 1
        status.last_error = message
        if status.failing_since_monotonic is None:
            status.failing_since_monotonic = time.monotonic()
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
        self.status.failing_since_monotonic = None

    def _absent(self) -> None:
        if not self.status.absent:
            log.info("resource not served; treating it as empty", extra={"kind": self.kind})
        self.status.absent = True
        self._succeeded()
        self._deliver("replace", [])
        self._mark_synced(0)

    def _mark_synced(self, count: int) -> None:
        now = time.monotonic()
        self.status.synced = True
        self.status.objects = count
        self.status.last_sync_monotonic = now
        self.status.last_event_monotonic = now

    def _list(self) -> str:
        """List every object (paged), deliver them, return the list's resourceVersion."""
        items: list[Any] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
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
        response = self._list_call(
            watch=True,
            resource_version=self._resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=self._settings.watch_timeout_seconds,
            _preload_content=False,
            _request_timeout=(10, self._settings.watch_timeout_seconds + 30),
        )
        self._response = response
        self.status.streaming = True
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
            self.status.last_event_monotonic = time.monotonic()
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
            self._loop.call_soon_threadsafe(self._sink, op, payload)
        except RuntimeError:  # the loop is closed: we are shutting down
            self._stop.set()
