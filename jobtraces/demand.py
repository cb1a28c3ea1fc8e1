"""Per-tick demand snapshots of a job table: which pods run and which wait at each tick.

Decides: the resource matrix every tool reads a job table through (GPUs, CPUs, GiB
in cost order), which pods count as running or pending at a tick time, and the
per-tick totals. A pod runs at tick t when start_s <= t < end_s (a NaN end runs to
the end of time, a NaN start never runs) and is pending when submit_s <= t < start_s
(a NaN start waits until its end_s, the pod's deletion, or forever when that is
NaN too).

Snapshots are stored as CSR arrays (offsets + row indices into the frame), so a
month of 5-minute ticks over 15,000 pods is built with chunked numpy masks, never
a Python loop over ticks x pods.

Must not: read files, log, or mutate the job table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from common.errors import InputError
from jobtraces.jobtable import JobTable

GIB = 1024**3

# Ticks per chunked mask: a (chunk x candidate pods) boolean block stays a few MB.
_TICKS_PER_CHUNK = 256
# A year at 5 s ticks is 6.3 million; beyond this a time in the trace is surely wrong
# (one corrupt end time would otherwise ask for terabytes of tick arrays).
MAX_TICKS = 10_000_000


def resource_matrix(table: JobTable) -> np.ndarray:
    """(N, 3) float64: GPUs (gpu_milli / 1000), CPUs (cpu_milli / 1000), memory GiB.

    Row i is the frame's row i (positional, whatever the frame's index is).
    """
    frame = table.frame
    matrix = np.empty((len(frame), 3), dtype=np.float64)
    matrix[:, 0] = frame["gpu_milli"].to_numpy(dtype=np.float64) / 1000.0
    matrix[:, 1] = frame["cpu_milli"].to_numpy(dtype=np.float64) / 1000.0
    matrix[:, 2] = frame["memory_bytes"].to_numpy(dtype=np.float64) / GIB
    return matrix


@dataclass(frozen=True)
class DemandSnapshots:
    """The pods running and pending at each tick, as CSR arrays of frame row indices.

    tick_s: the spacing of the ticks in seconds.
    times: (T,) tick times in trace seconds.
    running_offsets, running_index: pods running at tick i are
        running_index[running_offsets[i]:running_offsets[i + 1]] (ascending rows).
        Offsets are int64 (T + 1,); indices int32 (a month of DLRM at 5 minutes holds
        40 million entries, so the narrower type halves the memory).
    pending_offsets, pending_index: the same for pods submitted but not yet started.
    """

    tick_s: float
    times: np.ndarray
    running_offsets: np.ndarray
    running_index: np.ndarray
    pending_offsets: np.ndarray
    pending_index: np.ndarray

    def __len__(self) -> int:
        return len(self.times)

    def running(self, i: int) -> np.ndarray:
        """Frame row indices of the pods running at tick i."""
        return self.running_index[self.running_offsets[i] : self.running_offsets[i + 1]]

    def pending(self, i: int) -> np.ndarray:
        """Frame row indices of the pods pending (submitted, not started) at tick i."""
        return self.pending_index[self.pending_offsets[i] : self.pending_offsets[i + 1]]

    def running_counts(self) -> np.ndarray:
        """(T,) number of pods running at each tick."""
        return np.diff(self.running_offsets)

    def pending_counts(self) -> np.ndarray:
        """(T,) number of pods pending at each tick."""
        return np.diff(self.pending_offsets)


def tick_times(start_s: float, end_s: float, tick_s: float, source: str = "") -> np.ndarray:
    """Tick times start_s, start_s + tick_s, ... strictly before end_s (at least one tick).

    source: the trace's name, to start error messages with."""
    if not (tick_s > 0 and math.isfinite(tick_s)):
        raise InputError(f"tick must be a positive number of seconds, got {tick_s}")
    if not (math.isfinite(start_s) and math.isfinite(end_s)):
        raise InputError(f"snapshot window must be finite, got {start_s}..{end_s}")
    count = max(1, math.ceil((end_s - start_s) / tick_s))
    if count > MAX_TICKS:
        prefix = f"{source}: " if source else ""
        raise InputError(
            f"{prefix}the window {start_s:g}..{end_s:g} s at a {tick_s:g} s tick is "
            f"{count:,} ticks (at most {MAX_TICKS:,}): a time in the trace is likely wrong, "
            "or use a longer tick"
        )
    return start_s + tick_s * np.arange(count, dtype=np.float64)


def interval_ticks(times: np.ndarray, begin: np.ndarray, stop: np.ndarray) -> tuple:
    """First tick index inside [begin, stop) and the first after it, per pod.

    NaN begin = never (empty interval); NaN stop = never ends.
    """
    count = len(times)
    first = np.searchsorted(times, np.where(np.isnan(begin), np.inf, begin), side="left")
    after = np.searchsorted(times, np.where(np.isnan(stop), np.inf, stop), side="left")
    first = np.where(np.isnan(begin), count, first)
    # A pod scheduled before it was submitted (clock skew in a trace) has no pending ticks.
    after = np.maximum(after, first)
    return first, after


def intervals_csr(first: np.ndarray, after: np.ndarray, tick_count: int) -> tuple:
    """CSR (offsets, rows) of the pods whose tick range [first, after) holds each tick."""
    counts = np.zeros(tick_count + 1, dtype=np.int64)
    np.add.at(counts, first, 1)
    np.add.at(counts, after, -1)
    per_tick = np.cumsum(counts[:-1])
    offsets = np.zeros(tick_count + 1, dtype=np.int64)
    np.cumsum(per_tick, out=offsets[1:])
    rows = np.empty(int(offsets[-1]), dtype=np.int32)
    for chunk_start in range(0, tick_count, _TICKS_PER_CHUNK):
        chunk_end = min(chunk_start + _TICKS_PER_CHUNK, tick_count)
        candidates = np.flatnonzero((first < chunk_end) & (after > chunk_start))
        if candidates.size == 0:
            continue
        ticks = np.arange(chunk_start, chunk_end)[:, None]
        mask = (first[candidates] <= ticks) & (after[candidates] > ticks)
        # nonzero walks the block row by row: tick-major, rows ascending within a tick.
        _, columns = np.nonzero(mask)
        rows[offsets[chunk_start] : offsets[chunk_end]] = candidates[columns]
    return offsets, rows


def snapshots(
    table: JobTable,
    tick_s: float,
    start_s: float | None = None,
    end_s: float | None = None,
) -> DemandSnapshots:
    """Running and pending pods at ticks start_s, start_s + tick_s, ... < end_s.

    The window defaults to the table's trace_start_s .. trace_end_s.
    """
    start = table.trace_start_s if start_s is None else float(start_s)
    end = table.trace_end_s if end_s is None else float(end_s)
    times = tick_times(start, end, float(tick_s), table.source)
    frame = table.frame
    submit = frame["submit_s"].to_numpy(dtype=np.float64)
    begin = frame["start_s"].to_numpy(dtype=np.float64)
    finish = frame["end_s"].to_numpy(dtype=np.float64)

    run_first, run_after = interval_ticks(times, begin, finish)
    # A pod deleted while still pending (NaN start, an end time) stops waiting then.
    wait_first, wait_after = interval_ticks(times, submit, np.fmin(begin, finish))
    running_offsets, running_index = intervals_csr(run_first, run_after, len(times))
    pending_offsets, pending_index = intervals_csr(wait_first, wait_after, len(times))
    return DemandSnapshots(
        tick_s=float(tick_s),
        times=times,
        running_offsets=running_offsets,
        running_index=running_index,
        pending_offsets=pending_offsets,
        pending_index=pending_index,
    )


def _per_tick_sums(first: np.ndarray, after: np.ndarray, values: np.ndarray, ticks: int):
    """Sum of `values` (integer units, so exact) over the pods whose tick range holds each tick."""
    delta = np.zeros(ticks + 1, dtype=np.int64)
    np.add.at(delta, first, values)
    np.add.at(delta, after, -values)
    return np.cumsum(delta[:-1])


def totals(table: JobTable, snaps: DemandSnapshots) -> pd.DataFrame:
    """Per-tick sums, indexed by tick time (named `time_s`).

    Columns: gpus_running, cpus_running, memory_gib_running, pods_running, and the
    same four with `_pending`. Pod counts are int64, the rest float64.

    `snaps` must come from `snapshots(table, ...)`: the sums are taken over the same
    per-pod tick intervals the CSR arrays were built from (difference arrays in the
    table's integer units: exact, and O(pods + ticks) instead of O(entries)).
    """
    frame = table.frame
    submit, begin, finish = (
        frame[name].to_numpy(dtype=np.float64) for name in ("submit_s", "start_s", "end_s")
    )
    units = {
        "gpus": (frame["gpu_milli"].to_numpy(dtype=np.int64), 1000.0),
        "cpus": (frame["cpu_milli"].to_numpy(dtype=np.int64), 1000.0),
        "memory_gib": (frame["memory_bytes"].to_numpy(dtype=np.int64), float(GIB)),
        "pods": (np.ones(len(frame), dtype=np.int64), None),
    }
    intervals = {
        "running": interval_ticks(snaps.times, begin, finish),
        "pending": interval_ticks(snaps.times, submit, np.fmin(begin, finish)),
    }
    columns: dict[str, np.ndarray] = {}
    for state, (first, after) in intervals.items():
        for name, (values, scale) in units.items():
            sums = _per_tick_sums(first, after, values, len(snaps.times))
            columns[f"{name}_{state}"] = sums if scale is None else sums / scale
    return pd.DataFrame(columns, index=pd.Index(snaps.times, name="time_s"))
