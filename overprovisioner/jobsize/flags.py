"""Numbers read from command-line flags: each value checked once, and a bad one is an
`InputError` naming the flag (one line, exit 2; never argparse's usage dump).

Decides only the syntax of a value (a number, a whole number, a comma-separated list);
the ranges a rule needs (a theta >= 0, alpha in (0, 1]) are checked by that rule.
"""

from __future__ import annotations

import math

from common.errors import InputError


def number(text: str, flag: str, minimum: float | None = None, above: bool = False) -> float:
    """A finite number; at least `minimum` (strictly above it when `above`)."""
    try:
        value = float(str(text).strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(f"{flag}: expected a number, got {text!r}")
    if minimum is not None and (value < minimum or (above and value == minimum)):
        raise InputError(f"{flag}: expected a number {'>' if above else '>='} {minimum:g}, "
                         f"got {text!r}")
    return value


def whole(text: str, flag: str, minimum: int = 0) -> int:
    """A whole number, at least `minimum`."""
    raw = str(text).strip()
    if not raw.isdigit() or int(raw) < minimum:
        raise InputError(f"{flag}: expected a whole number >= {minimum}, got {text!r}")
    return int(raw)


def numbers(text: str, flag: str) -> tuple[float, ...]:
    """Comma-separated finite numbers (`0.00035,2.5726,0.9824,0.02786`)."""
    parts = [part.strip() for part in str(text).split(",")]
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(f"{flag}: expected numbers separated by commas, got {text!r}")
        values.append(value)
    return tuple(values)
