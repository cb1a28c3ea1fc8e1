"""A demand series: per tick, bucket counts (per placement group where known) and totals.

Decides: the one in-memory shape of demand history every forecaster, the backtest
and the stores read and write, what a gap is (a NaN row, never a zero), and how a
canonical job table becomes a series (per tick, the pods running plus the pods
pending, since both want capacity, embedded into instance-type buckets).

Times are float seconds on a regular grid `times[0] + i * tick_s`: trace seconds for
job tables, Unix epoch seconds for wall-clock series (CSV files, the live recorder,
Prometheus). Every tick of the grid has a row; a tick without data is a NaN row.

Must not: read files, log, or read the clock.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bucketing.catalog import InstanceType
from bucketing.embed import assign, counts_from_sums, round_up
from common.errors import InputError
from jobtraces.demand import resource_matrix, snapshots, totals
from jobtraces.jobtable import JobTable

TIME_INDEX = "time_s"
TOTAL_COLUMNS = (
    "gpus_running", "cpus_running", "memory_gib_running", "pods_running",
    "gpus_pending", "cpus_pending", "memory_gib_pending", "pods_pending",
)
GROUP_SEPARATOR = "@"
# A snapshot's totals (TOTAL_COLUMNS) are stored as `total:NAME` beside the bucket columns.
TOTAL_PREFIX = "total:"
_TICKS_PER_CHUNK = 512


def series_column(bucket: str, group: str | None = None) -> str:
    """The column name of a bucket's counts: `bucket`, or `bucket@group` in a placement group."""
    return f"{bucket}{GROUP_SEPARATOR}{group}" if group else bucket


def split_column(column: str) -> tuple[str, str | None]:
    """Inverse of `series_column`: (bucket, group or None)."""
    bucket, separator, group = column.partition(GROUP_SEPARATOR)
    return bucket, (group if separator else None)


@dataclass(frozen=True)
class DemandSeries:
    """Demand history on a regular tick grid.

    tick_s: spacing of the ticks in seconds.
    counts: float DataFrame indexed by tick time (`time_s`, float seconds), one column
        per bucket (`bucket` or `bucket@group`); NaN = no observation at that tick.
    totals: optional float DataFrame on the same index with the raw sums of the pods'
        requests (TOTAL_COLUMNS, plus `pods_unbucketable` when built by embedding);
        None when the source only has counts (an aggregate CSV column).
    source: where the series came from, for messages.
    """

    tick_s: float
    counts: pd.DataFrame
    totals: pd.DataFrame | None = None
    source: str = "series"

    def __post_init__(self) -> None:
        validate_series(self)

    @property
    def times(self) -> np.ndarray:
        return self.counts.index.to_numpy(dtype=np.float64)

    @property
    def columns(self) -> list[str]:
        return [str(column) for column in self.counts.columns]

    def __len__(self) -> int:
        return len(self.counts)

    def history(self) -> np.ndarray:
        """(T, K) float counts, NaN for gaps: what forecasters take."""
        return self.counts.to_numpy(dtype=np.float64)

    def total_gpus(self) -> np.ndarray | None:
        """(T,) GPUs requested by running plus pending pods, or None without totals."""
        if self.totals is None or not {"gpus_running", "gpus_pending"} <= set(self.totals):
            return None
        return (self.totals["gpus_running"] + self.totals["gpus_pending"]).to_numpy(
            dtype=np.float64
        )

    def gap_ticks(self) -> int:
        """How many ticks have no observation at all (every column NaN)."""
        return int(self.counts.isna().all(axis=1).sum())


def validate_series(series: DemandSeries) -> None:
    """Raise InputError naming the source when the series breaks the invariants above."""
    where = series.source
    if not (series.tick_s > 0 and math.isfinite(series.tick_s)):
        raise InputError(f"{where}: tick must be a positive number of seconds, got {series.tick_s}")
    counts = series.counts
    if not isinstance(counts, pd.DataFrame):
        raise InputError(f"{where}: counts must be a DataFrame")
    if counts.shape[1] == 0:
        raise InputError(f"{where}: the series has no columns")
    times = counts.index.to_numpy(dtype=np.float64)
    if len(times) > 1:
        steps = np.diff(times)
        bad = np.flatnonzero(np.abs(steps - series.tick_s) > 1e-6 * series.tick_s)
        if bad.size:
            row = int(bad[0]) + 1
            raise InputError(
                f"{where}: tick {row} at {times[row]} is not one tick ({series.tick_s} s) "
                f"after the previous one ({times[row - 1]})"
            )
    values = counts.to_numpy(dtype=np.float64)
    negative = np.argwhere(values < 0)
    if negative.size:
        row, column = (int(v) for v in negative[0])
        raise InputError(
            f"{where}: tick {row} (time {times[row]}), column {counts.columns[column]}: "
            f"negative count {values[row, column]}"
        )
    if np.isinf(values).any():
        row, column = (int(v) for v in np.argwhere(np.isinf(values))[0])
        raise InputError(f"{where}: tick {row}, column {counts.columns[column]}: infinite count")
    if series.totals is not None and not series.totals.index.equals(counts.index):
        raise InputError(f"{where}: totals and counts have different tick times")


def make_series(
    times: np.ndarray,
    columns: Sequence[str],
    values: np.ndarray,
    tick_s: float,
    totals_frame: pd.DataFrame | None = None,
    source: str = "series",
) -> DemandSeries:
    """Build a DemandSeries from (T,) times and (T, K) values (float, NaN = gap)."""
    index = pd.Index(np.asarray(times, dtype=np.float64), name=TIME_INDEX)
    counts = pd.DataFrame(
        np.asarray(values, dtype=np.float64).reshape(len(index), len(columns)),
        index=index,
        columns=list(columns),
    )
    if totals_frame is not None:
        totals_frame = totals_frame.set_axis(index, axis=0).astype(np.float64)
    return DemandSeries(float(tick_s), counts, totals_frame, source)


def bucket_vectors(bucket_types: Sequence[InstanceType]) -> np.ndarray:
    """(B, 3) the room one node of each type leaves for pods: its placeholder request."""
    return np.stack([t.placeholder_request.as_vector() for t in bucket_types])


def series_from_jobtable(
    table: JobTable,
    bucket_types: Sequence[InstanceType],
    tick_s: float,
    start_s: float | None = None,
    end_s: float | None = None,
) -> DemandSeries:
    """Per tick, the bucket counts of the pods running or pending, plus the totals.

    Counts are rounded up (buckets needed, a lower bound on nodes). Pods that fit no
    bucket are not dropped silently: `totals["pods_unbucketable"]` counts them per tick.
    A job table has no nodes, so there are no placement groups: one column per bucket.
    """
    if not bucket_types:
        raise InputError(f"{table.source}: the bucket list is empty")
    snaps = snapshots(table, tick_s, start_s, end_s)
    vectors = resource_matrix(table)
    buckets = bucket_vectors(bucket_types)
    bucket_of = assign(vectors, buckets)
    tick_count, bucket_count = len(snaps.times), len(buckets)
    sums = np.zeros((tick_count * bucket_count, 3))
    unbucketable = np.zeros(tick_count)
    # Pending pods want capacity as much as running ones: both go into the count.
    # Ticks are taken in chunks so the per-entry arrays stay small (DLRM: 40M entries).
    for offsets, index in ((snaps.running_offsets, snaps.running_index),
                           (snaps.pending_offsets, snaps.pending_index)):
        for first in range(0, tick_count, _TICKS_PER_CHUNK):
            stop = min(first + _TICKS_PER_CHUNK, tick_count)
            rows = index[offsets[first]:offsets[stop]]
            tick_of_entry = np.repeat(np.arange(stop - first), np.diff(offsets[first:stop + 1]))
            entry_bucket = bucket_of[rows]
            placed = entry_bucket >= 0
            flat = tick_of_entry[placed] * bucket_count + entry_bucket[placed]
            placed_rows = rows[placed]
            block = sums[first * bucket_count:stop * bucket_count]
            for dimension in range(3):
                block[:, dimension] += np.bincount(
                    flat, weights=vectors[placed_rows, dimension], minlength=len(block)
                )
            unbucketable[first:stop] += np.bincount(tick_of_entry[~placed],
                                                    minlength=stop - first)
    raw = counts_from_sums(sums.reshape(tick_count, bucket_count, 3), buckets)
    frame_totals = totals(table, snaps).astype(np.float64)
    frame_totals["pods_unbucketable"] = unbucketable
    return make_series(
        snaps.times, [t.name for t in bucket_types], round_up(raw).astype(np.float64), tick_s,
        frame_totals, table.source,
    )


