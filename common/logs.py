"""Structured logging for every service (extender, overprovisioner): one JSON object per
line on stderr, or plain text for a human at a terminal (`--log-format text`).

Decides: the one log format (JSON lines: what log pipelines such as Fluent Bit, Loki or
CloudWatch parse without a custom regex) and the record layout: `time` (UTC, ISO 8601,
milliseconds), `level`, `logger`, `message`, then every `extra=` field, then
`exception` with the traceback text when there is one. Tracebacks go to the log only,
never into an HTTP answer. And how much one line may repeat: each logger's message
template (its unformatted `msg`) at most `RATE_BURST` times per `RATE_WINDOW_SECONDS`
at WARNING (the level of refused requests and retried API faults), so a client that
sends a bad request a thousand times a second, or an API fault repeated every round,
cannot flood the log; the next line let through says how many were dropped
(`suppressed`).

Must not: configure anything but the root handler's format, level and rate limit.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

RATE_WINDOW_SECONDS = 60.0
RATE_BURST = 10

_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


class RateLimit(logging.Filter):
    """Drops a WARNING whose (logger, message template) already passed `burst` times in
    the current `window` seconds; the first one let through after drops carries
    `suppressed`: how many. Other levels always pass (errors must; info lines are state
    changes, debug is asked for). Thread-safe. Keys are templates
    (`"could not lift the gate"`), not formatted text: extra fields and %-arguments do
    not make a flood look like many messages."""

    def __init__(self, window: float = RATE_WINDOW_SECONDS, burst: int = RATE_BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window = window
        self.burst = burst
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], list[float]] = {}  # key -> [window start, count, dropped]

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        key = (record.name, str(record.msg))
        now = self.clock()
        with self._lock:
            entry = self._seen.get(key)
            if entry is None or now - entry[0] >= self.window:
                dropped = int(entry[2]) if entry is not None else 0
                self._seen[key] = [now, 1, 0]
                if len(self._seen) > 10_000:  # an f-string message keys on its input
                    self._seen = {key: self._seen[key]}
            elif entry[1] < self.burst:
                entry[1] += 1
                dropped = int(entry[2])
                entry[2] = 0
            else:
                entry[2] += 1
                return False
        if dropped:
            record.suppressed = dropped
        return True


LOG_FORMATS = ("json", "text")


def configure_logging(log_format: str = "json", level: str = "info") -> None:
    """Route every logger to one stderr handler in `log_format` at `level` (any case)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RateLimit())
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
