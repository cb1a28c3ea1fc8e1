"""Durations as people write them in configs and on command lines -> seconds.

Decides: the one accepted syntax, shared by every package: Go-style parts with units
`ms`, `s`, `m`, `h`, `d`, `w`, alone or combined largest first (`90s`, `5m`, `6m30s`,
`1h30m`, `35d`). Negative, NaN and infinite values are refused; whether zero is
allowed is the caller's rule.

Two rules for a number without a unit:
- in a config file (`duration_seconds`) it is seconds (`tick: 300`), as documented in
  each config reference: YAML numbers are common there and the docs say what they mean;
- on a command line (`parse_duration`) it is refused: `--node-startup 5` reads as five
  minutes to some and five seconds to others, so the option must say which.

Raises ValueError (config rule, a message that does not name the field: callers wrap it
in their ConfigError naming file and field) or InputError naming the option.
"""

from __future__ import annotations

import math
import re
from typing import Any

from common.errors import InputError

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}
EXAMPLES = "like 90s, 5m, 6m30s, 1h, 1d"


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
    if text.startswith("-"):
        raise ValueError(f"{value!r} is negative; a duration is positive ({EXAMPLES})")
    parts = _PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"{value!r} is not a duration ({EXAMPLES})")
    return sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts)


def parse_duration(text: Any, what: str = "duration", allow_zero: bool = False) -> float:
    """A positive duration (zero too when `allow_zero`) for a command-line option:
    seconds, or InputError naming `what` (the option, e.g. `--horizon`). A number
    without a unit is refused."""
    if isinstance(text, str) and _NUMBER.fullmatch(text.strip()):
        number = text.strip()
        raise InputError(f"{what}: {number!r} has no unit; write {number}s, {number}m or "
                         f"{number}h (units: ms, s, m, h, d, w)")
    try:
        seconds = duration_seconds(text)
    except ValueError as error:
        raise InputError(f"{what}: {error}") from None
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise InputError(f"{what}: must be positive, got {text!r}")
    return seconds
