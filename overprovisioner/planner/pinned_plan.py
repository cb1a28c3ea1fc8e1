"""Which placeholders to pin to a zone and capacity type, from the pinned demand history.

Decides, per (instance type, placement group) bucket, how the placeholders the plan
wants there (`plan.py`, unchanged) are split over *pinned columns* (type, group, zone,
capacity type). A pod pinned to a zone or to on-demand capacity (an EBS volume, a job
that must not be interrupted) can use a placeholder's node only in that zone and of
that capacity type; an unpinned pod can use any. So pinning a placeholder costs
unpinned pods nothing, and not pinning it may leave a pinned pod waiting for a new node
while the placeholder's node idles.

The rule:
1. Only where the history shows pinned demand: a bucket with no pinned series in the
   window keeps all its placeholders unpinned (`UNPINNED`), as today.
2. Each pinned column's share is its peak over the window (nodes, as recorded in the
   `pinned:` series, predictor.history.pinning) over the bucket's peak demand (all pods, pinned
   or not), the shares together capped at 1 (peaks of different columns need not
   coincide); the rest is the unpinned share.
3. The bucket's placeholders are split by those shares with the largest-remainder
   method (floors first, then one more to the largest remainders, ties to the pinned
   columns, then by name), so the split sums to what the plan wants exactly.

4. The placed columns (`place_columns`, what objects.py makes one object each of): every
   planned bucket's unpinned column, even at 0 (its object stays exactly as before
   pinning existed), and each pinned column with demand in the window, at 0 too when
   the split gives it none (its object keeps its name rather than being deleted and
   re-created tick after tick); a pinned column without demand in the window is not
   placed, so the applier prunes its object.

The loop (loop.py) calls this after the plan, with the window `placeholders.pin_window`
of the history, the pins reduced to what placeholders can select (`restrict_pins`,
pin_selectors.selectable_pin). The simulator does not: it models no zones
(docs/overprovisioner.md "Zone and capacity type").

Must not: read the clock, log, call the API, or mutate its inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from overprovisioner.planner.pin_selectors import selectable_pin
from predictor.history.pinning import UNPINNED, Pin, split_pinned_column
from predictor.history.series import split_column

Bucket = tuple[str, str]  # (instance type, placement group or "")


@dataclass(frozen=True)
class PinnedBucket:
    """A placeholder column: a bucket and the zone and capacity type its nodes must have
    (`pin` UNPINNED: any, as placeholders select today)."""

    instance_type: str
    placement_group: str
    pin: Pin = UNPINNED

    @property
    def bucket(self) -> Bucket:
        return (self.instance_type, self.placement_group)


def pinned_peaks(history: pd.DataFrame) -> dict[PinnedBucket, float]:
    """The peak of each pinned series (`pinned:` columns, NaN = gap) over the rows given;
    series that never rose above 0 are left out."""
    peaks: dict[PinnedBucket, float] = {}
    for column in history.columns:
        values = history[column].to_numpy(dtype=np.float64)
        if np.all(np.isnan(values)):
            continue
        peak = float(np.nanmax(values))
        if peak > 0:
            bucket, group, pin = split_pinned_column(str(column))
            peaks[PinnedBucket(bucket, group or "", pin)] = peak
    return peaks


def pin_placeholders(wanted: Mapping[Bucket, int], bucket_peaks: Mapping[Bucket, float],
                     pinned: Mapping[PinnedBucket, float]) -> dict[PinnedBucket, int]:
    """Split each bucket's wanted placeholders over its pinned columns (module docstring).

    wanted: placeholders per bucket (the plan's). bucket_peaks: the bucket's peak demand
    in nodes over the window (all pods). pinned: peak pinned demand per pinned column
    over the same window (`pinned_peaks`). Columns given 0 are left out.
    """
    result: dict[PinnedBucket, int] = {}
    for bucket, count in sorted(wanted.items()):
        columns = sorted((c for c in pinned if c.bucket == bucket and c.pin), key=str)
        unpinned = PinnedBucket(bucket[0], bucket[1])
        if count <= 0:
            continue
        if not columns:
            result[unpinned] = count
            continue
        total = max(bucket_peaks.get(bucket, 0.0), sum(pinned[c] for c in columns))
        shares = {c: pinned[c] / total for c in columns}
        shares[unpinned] = max(0.0, 1.0 - sum(shares.values()))
        exact = {c: share * count for c, share in shares.items()}
        given = {c: math.floor(value + 1e-9) for c, value in exact.items()}
        left = count - sum(given.values())
        order = sorted(exact, key=lambda c: (-(exact[c] - given[c]), c == unpinned, str(c)))
        for column in order[:left]:
            given[column] += 1
        result.update({c: n for c, n in given.items() if n > 0})
    return result


@dataclass(frozen=True)
class PlacedColumn:
    """The placeholders of one column: what objects.py turns into one object (its `pin`
    selected beside the type and group)."""

    instance_type: str
    placement_group: str
    pin: Pin
    wanted: int

    @property
    def bucket(self) -> Bucket:
        return (self.instance_type, self.placement_group)


def bucket_peaks(counts: pd.DataFrame) -> dict[Bucket, float]:
    """The peak of each bucket-count column (`bucket` or `bucket@group`, NaN = gap) over
    the rows given; all-gap columns are left out."""
    peaks: dict[Bucket, float] = {}
    for column in counts.columns:
        values = counts[column].to_numpy(dtype=np.float64)
        if not np.all(np.isnan(values)):
            bucket, group = split_column(str(column))
            peaks[(bucket, group or "")] = float(np.nanmax(values))
    return peaks


def restrict_pins(pinned: Mapping[PinnedBucket, float], selectable: Callable[[Pin], Pin]
                  ) -> dict[PinnedBucket, float]:
    """The pinned peaks with each pin reduced to what a placeholder can select: columns
    that become one add up (an upper bound of the merged column's peak), columns left
    with no pin are dropped (their demand is served by the unpinned placeholders)."""
    result: dict[PinnedBucket, float] = {}
    for column, peak in pinned.items():
        pin = selectable(column.pin)
        if pin:
            key = PinnedBucket(column.instance_type, column.placement_group, pin)
            result[key] = result.get(key, 0.0) + peak
    return result


def place_columns(planned: Iterable[tuple[str, str, int]], peaks: Mapping[Bucket, float],
                  pinned: Mapping[PinnedBucket, float]) -> tuple[PlacedColumn, ...]:
    """The columns to write for the planned (instance type, group, wanted) buckets (rule
    4): each bucket's unpinned column first, then its pinned columns by name."""
    planned = list(planned)
    split = pin_placeholders({(t, g): w for t, g, w in planned}, peaks, pinned)
    columns: list[PlacedColumn] = []
    for instance_type, group, _ in planned:
        unpinned = PinnedBucket(instance_type, group)
        columns.append(PlacedColumn(instance_type, group, UNPINNED, split.get(unpinned, 0)))
        for column in sorted((c for c in pinned if c.bucket == (instance_type, group)
                              and c.pin and pinned[c] > 0), key=str):
            columns.append(PlacedColumn(instance_type, group, column.pin, split.get(column, 0)))
    return tuple(columns)


def split_from_history(planned: Iterable[tuple[str, str, int]], counts: pd.DataFrame,
                       history: pd.DataFrame, capacity_label: str) -> tuple[PlacedColumn, ...]:
    """`place_columns` for the planned buckets from the window's bucket counts and pinned
    series (`pinned:` columns), pins reduced to what `capacity_label` can select."""
    pinned = restrict_pins(pinned_peaks(history),
                           lambda pin: selectable_pin(pin, capacity_label))
    return place_columns(planned, bucket_peaks(counts), pinned)
