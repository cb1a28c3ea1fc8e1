"""Durations as people write them in configs and on command lines -> seconds.

Decides: the one accepted syntax, shared by every package: a plain number of seconds
(`300`, `1.5`), or Go-style parts with units `ms`, `s`, `m`, `h`, `d`, `w`, alone or
combined largest first (`90s`, `5m`, `6m30s`, `1h30m`, `35d`). Negative, NaN and
infinite values are refused; whether zero is allowed is the caller's rule.

Raises ValueError with a message that does not name the field: callers wrap it in
their own ConfigError or InputError naming the file, field or option.
"""

from __future__ import annotations

import math
import re
from typing import Any

from bucketing.errors import InputError

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}
EXAMPLES = "like 300, 90s, 5m, 6m30s, 1h, 1d"


def duration_seconds(value: Any) -> float:
    """Seconds from a number or a duration string (see the module docstring)."""
    if isinstance(value, bool):
        raise ValueError("expected a duration, got a boolean")
    if isinstance(value, (int, float)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{value!r} is not a non-negative duration")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a duration ({EXAMPLES})")
    text = value.strip().lower()
    if _NUMBER.fullmatch(text):
        return float(text)
    parts = _PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"{value!r} is not a duration ({EXAMPLES})")
    return sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts)


def parse_duration(text: Any, what: str = "duration") -> float:
    """A positive duration for a command-line option or a field: seconds, or InputError
    naming `what` (the option, e.g. `--horizon`)."""
    try:
        seconds = duration_seconds(text)
    except ValueError as error:
        raise InputError(f"{what}: {error}") from None
    if seconds <= 0:
        raise InputError(f"{what}: must be positive, got {text!r}")
    return seconds
