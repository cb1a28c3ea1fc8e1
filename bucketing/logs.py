"""Structured logging for every service (extender, overprovisioner): one JSON object per
line on stderr, or plain text for a human at a terminal (`--log-format text`).

Decides: the one log format (JSON lines: what log pipelines such as Fluent Bit, Loki or
CloudWatch parse without a custom regex) and the record layout: `time` (UTC, ISO 8601,
milliseconds), `level`, `logger`, `message`, then every `extra=` field, then
`exception` with the traceback text when there is one. Tracebacks go to the log only,
never into an HTTP answer.

Must not: configure anything but the root handler's format and level.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

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


LOG_FORMATS = ("json", "text")


def configure_logging(log_format: str = "json", level: str = "info") -> None:
    """Route every logger to one stderr handler in `log_format` at `level` (any case)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
