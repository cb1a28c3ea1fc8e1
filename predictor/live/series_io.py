"""Read an aggregate demand series from a CSV file (e.g. the Helios and Philly 5-minute series).

Decides: how a `time` column plus one value column becomes a one-column DemandSeries,
and which defects are repaired and which refused:

- `time` is either datetimes (parsed by pandas, read as UTC, stored as Unix seconds)
  or plain numbers of seconds.
- Unsorted rows are repaired: sorted by time (stable).
- A timestamp repeated with the same value is repaired (one row kept); repeated with
  different values it is refused, naming both CSV lines.
- Missing timestamps (a hole in the grid) become NaN rows: gaps, never zeros.
- A blank value is a gap (NaN). A value that is not a number, is negative or is
  infinite is refused, naming the CSV line (the header is line 1).
- The tick is the most common spacing between consecutive timestamps unless given;
  a timestamp off that grid is refused, naming its line.

Must not: fill gaps with anything but NaN, or guess a column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from common.errors import InputError
from predictor.history.series import DemandSeries, make_series

TIME_COLUMN = "time"


def read_series_csv(
    path: str | Path, column: str | None = None, tick_s: float | None = None
) -> DemandSeries:
    """Read `path` (CSV, optionally .gz) into a one-column DemandSeries of `column`.

    column: the value column; may be omitted when the file has exactly one besides `time`.
    tick_s: the grid spacing; inferred from the timestamps when None.
    """
    source = str(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, EOFError) as error:
        raise InputError(f"{source}: cannot read as CSV ({error})") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{source}: the file is empty") from None
    return series_from_frame(frame, column, tick_s, source)


def series_from_frame(
    frame: pd.DataFrame, column: str | None, tick_s: float | None, source: str
) -> DemandSeries:
    """The rules in the module docstring, applied to a frame of strings as read from CSV."""
    if TIME_COLUMN not in frame.columns:
        raise InputError(f"{source}: no {TIME_COLUMN!r} column (have: {', '.join(frame.columns)})")
    value_columns = [c for c in frame.columns if c != TIME_COLUMN]
    if column is None:
        if len(value_columns) != 1:
            raise InputError(
                f"{source}: name the column to read with --column "
                f"(have: {', '.join(value_columns)})"
            )
        column = value_columns[0]
    if column not in value_columns:
        raise InputError(
            f"{source}: no column {column!r} (have: {', '.join(value_columns)})"
        )
    if frame.empty:
        raise InputError(f"{source}: the file has no rows")
    lines = np.arange(len(frame)) + 2  # CSV line numbers: header is line 1
    times = _parse_times(frame[TIME_COLUMN].astype(str).str.strip().to_numpy(), lines, source)
    values = _parse_values(frame[column].astype(str).str.strip().to_numpy(), lines, source, column)

    order = np.argsort(times, kind="stable")
    times, values, lines = times[order], values[order], lines[order]
    times, values, lines = _drop_same_duplicates(times, values, lines, source)
    tick = _infer_tick(times, source) if tick_s is None else float(tick_s)
    if not tick > 0:
        raise InputError(f"{source}: tick must be positive, got {tick}")

    offsets = (times - times[0]) / tick
    slots = np.rint(offsets).astype(np.int64)
    off_grid = np.flatnonzero(np.abs(offsets - slots) > 1e-6)
    if off_grid.size:
        line = int(lines[off_grid[0]])
        raise InputError(
            f"{source}: line {line}: time {times[off_grid[0]]:.0f} is not on the {tick:g} s grid "
            f"starting at {times[0]:.0f}"
        )
    grid = np.full(int(slots[-1]) + 1, np.nan)
    grid[slots] = values
    grid_times = times[0] + tick * np.arange(len(grid), dtype=np.float64)
    return make_series(grid_times, [column], grid[:, None], tick, None, source)


def _parse_times(raw: np.ndarray, lines: np.ndarray, source: str) -> np.ndarray:
    blank = np.flatnonzero(raw == "")
    if blank.size:
        raise InputError(f"{source}: line {int(lines[blank[0]])}: {TIME_COLUMN} is blank")
    numeric = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=np.float64)
    if not np.isnan(numeric[0]):
        # The first row decides: seconds. A later row that is not a number is the error.
        bad = np.flatnonzero(np.isnan(numeric))
        if bad.size:
            raise InputError(f"{source}: line {int(lines[bad[0]])}: {TIME_COLUMN} "
                             f"{raw[bad[0]]!r} is not a number of seconds like line 2")
        return numeric
    parsed = pd.to_datetime(pd.Series(raw), errors="coerce", utc=True, format="ISO8601")
    if parsed.isna().any():
        parsed = pd.to_datetime(pd.Series(raw), errors="coerce", utc=True, format="mixed")
    bad = np.flatnonzero(parsed.isna().to_numpy())
    if bad.size:
        raise InputError(
            f"{source}: line {int(lines[bad[0]])}: {TIME_COLUMN} {raw[bad[0]]!r} is neither "
            "a datetime nor a number of seconds"
        )
    return (parsed - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=np.float64)


def _parse_values(raw: np.ndarray, lines: np.ndarray, source: str, column: str) -> np.ndarray:
    values = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=np.float64)
    not_number = np.flatnonzero(np.isnan(values) & (raw != "") & (np.char.lower(
        raw.astype(str)) != "nan"))
    if not_number.size:
        row = not_number[0]
        raise InputError(f"{source}: line {int(lines[row])}: {column} {raw[row]!r} is not a number")
    bad = np.flatnonzero(np.isinf(values) | (values < 0))
    if bad.size:
        row = bad[0]
        raise InputError(
            f"{source}: line {int(lines[row])}: {column} is {raw[row]} "
            "(must be a finite count >= 0)"
        )
    return values


def _drop_same_duplicates(
    times: np.ndarray, values: np.ndarray, lines: np.ndarray, source: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    repeat = np.flatnonzero(np.diff(times) == 0) + 1
    if repeat.size == 0:
        return times, values, lines
    first, second = values[repeat - 1], values[repeat]
    same = (first == second) | (np.isnan(first) & np.isnan(second))
    if not same.all():
        row = repeat[np.flatnonzero(~same)[0]]
        raise InputError(
            f"{source}: lines {int(lines[row - 1])} and {int(lines[row])}: the same time with "
            f"different values ({values[row - 1]:g} and {values[row]:g}); remove one"
        )
    keep = np.ones(len(times), dtype=bool)
    keep[repeat] = False
    return times[keep], values[keep], lines[keep]


def _infer_tick(times: np.ndarray, source: str) -> float:
    if len(times) < 2:
        raise InputError(f"{source}: one timestamp is not a series; give the tick or more rows")
    steps, counts = np.unique(np.diff(times), return_counts=True)
    return float(steps[np.argmax(counts)])
