"""The known-ahead what-if of `headstart simulate`: options parsed and checked, then applied.

Decides the syntax and its rules:
- `--lead-share F`: the share of jobs (whole jobs: every pod of a job, a pod without a
  job is its own) marked as known ahead, 0 <= F <= 1;
- `--lead DURATION`: how long before creation they are known (a duration with a unit,
  or 0: `0`, `90s`, `10m`);
- `--lead-curve D1,D2,...`: several leads, one predictive run each, at the same share
  (and the same jobs, drawn once from the seed);
- `--lead` or `--lead-curve` needs `--lead-share`, and the other way round; `--lead`
  and `--lead-curve` exclude each other.
The jobs are drawn from `seed` (`bucketing.known_ahead.with_lead`); a pod the trace
already knows earlier keeps its earlier `known_at_s`.

Must not: read files or print.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bucketing.known_ahead import with_lead
from common.durations import _NUMBER, duration_seconds, parse_duration
from common.errors import InputError
from jobtraces.jobtable import JobTable


@dataclass(frozen=True)
class WhatIf:
    """share: of jobs known ahead; leads: seconds (one, or the curve's); seed: draws the
    jobs; curve: the leads came from --lead-curve."""

    share: float
    leads: tuple[float, ...]
    seed: int = 0
    curve: bool = False

    def apply(self, table: JobTable, lead_s: float) -> JobTable:
        """`table` with this what-if's share of jobs known `lead_s` before creation."""
        return with_lead(table, self.share, lead_s, np.random.default_rng(self.seed))


def parse_share(text: str | None) -> float | None:
    """--lead-share: a number within 0-1 (None = not given)."""
    if text is None:
        return None
    try:
        share = float(text)
    except ValueError:
        raise InputError(f"--lead-share: expected a number within 0-1, got {text!r}") from None
    if not 0.0 <= share <= 1.0:
        raise InputError(f"--lead-share: must be within 0-1, got {text!r}")
    return share


def parse_lead(text: str, option: str = "--lead") -> float:
    """One lead: a duration with a unit (`common.durations`), or 0 (which needs none)."""
    stripped = text.strip()
    try:
        if float(stripped) == 0.0:
            return 0.0
    except ValueError:
        pass
    if _NUMBER.fullmatch(stripped):
        return parse_duration(stripped, option)  # refuses a number without a unit
    try:
        return duration_seconds(stripped)
    except ValueError as error:
        raise InputError(f"{option}: {error}") from None


def parse_curve(text: str) -> tuple[float, ...]:
    """--lead-curve: comma-separated leads, each as --lead takes it; at least one, no
    repeats, returned in ascending order."""
    parts = [part for part in text.split(",")]
    if not text.strip() or any(not part.strip() for part in parts):
        raise InputError(f"--lead-curve: expected leads separated by commas, like 0,2m,5m,10m; "
                         f"got {text!r}")
    leads = [parse_lead(part, f"--lead-curve: {part.strip()!r}") for part in parts]
    if len(set(leads)) != len(leads):
        raise InputError(f"--lead-curve: a lead appears twice in {text!r}")
    return tuple(sorted(leads))


def parse_what_if(share: str | None, lead: str | None, curve: str | None,
                  seed: int = 0) -> WhatIf | None:
    """The what-if the three options ask for, or None when none of them is given."""
    value = parse_share(share)
    if lead is not None and curve is not None:
        raise InputError("--lead and --lead-curve: give one or the other")
    if value is None:
        if lead is not None or curve is not None:
            option = "--lead" if lead is not None else "--lead-curve"
            raise InputError(f"{option}: needs --lead-share (the share of jobs known ahead)")
        return None
    if lead is None and curve is None:
        raise InputError("--lead-share: needs --lead DURATION or --lead-curve D1,D2,...")
    if curve is not None:
        return WhatIf(value, parse_curve(curve), seed, curve=True)
    assert lead is not None
    return WhatIf(value, (parse_lead(lead),), seed)
