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
   `pinned:` series, predictor.pinning) over the bucket's peak demand (all pods, pinned
   or not), the shares together capped at 1 (peaks of different columns need not
   coincide); the rest is the unpinned share.
3. The bucket's placeholders are split by those shares with the largest-remainder
   method (floors first, then one more to the largest remainders, ties to the pinned
   columns, then by name), so the split sums to what the plan wants exactly.

Not wired yet: the planner's observations, the applied objects (placeholders selecting
zone and capacity-type labels) and the simulator do not call this module; it is the pure
core they will call (docs/overprovisioner.md "Zone and capacity type").

Must not: read the clock, log, call the API, or mutate its inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from predictor.pinning import UNPINNED, Pin, split_pinned_column

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
