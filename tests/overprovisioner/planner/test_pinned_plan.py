"""Splitting a bucket's placeholders over zones and capacity types (pure core)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from overprovisioner.planner.pin_selectors import selectable_pin
from overprovisioner.planner.pinned_plan import (
    PinnedBucket,
    PlacedColumn,
    bucket_peaks,
    pin_placeholders,
    pinned_peaks,
    place_columns,
    restrict_pins,
)
from predictor.history.pinning import Pin

G5 = ("g5.xlarge", "")
P4 = ("p4d.24xlarge", "pg-a")
ANY_G5 = PinnedBucket("g5.xlarge", "")
A = PinnedBucket("g5.xlarge", "", Pin("us-east-1a"))
B = PinnedBucket("g5.xlarge", "", Pin("us-east-1b"))
OD = PinnedBucket("g5.xlarge", "", Pin(None, "on-demand"))
P4_A = PinnedBucket("p4d.24xlarge", "pg-a", Pin("us-east-1a"))

SPLITS = [
    # no pinned history: every placeholder unpinned, as today
    ({G5: 4}, {G5: 10.0}, {}, {ANY_G5: 4}, "no-pinned-demand"),
    # peak 10 nodes, 5 of them pinned to us-east-1a: 4 x 0.5 = 2 pinned, 2 unpinned
    ({G5: 4}, {G5: 10.0}, {A: 5.0}, {A: 2, ANY_G5: 2}, "half-pinned"),
    # 4 x 3/10 = 1.2 -> 1; 4 x 7/10 = 2.8 -> 2, one left: to the larger remainder (0.8)
    ({G5: 4}, {G5: 10.0}, {A: 3.0}, {A: 1, ANY_G5: 3}, "largest-remainder"),
    # 3 x 5/10 = 1.5 (a) and 3 x 5/10 = 1.5 (unpinned): the tie goes to the pinned column
    ({G5: 3}, {G5: 10.0}, {A: 5.0}, {A: 2, ANY_G5: 1}, "tie-to-pinned"),
    # every pod pinned, to two zones: 4 x 6/8 = 3, 4 x 2/8 = 1
    ({G5: 4}, {G5: 8.0}, {A: 6.0, B: 2.0}, {A: 3, B: 1}, "all-pinned-two-zones"),
    # pinned peaks that add up to more than the bucket's peak: shares capped at 1 (6 + 6)
    ({G5: 2}, {G5: 8.0}, {A: 6.0, OD: 6.0}, {A: 1, OD: 1}, "peaks-apart"),
    # the other bucket's pinned demand does not move this one's placeholders
    ({G5: 2, P4: 1}, {G5: 4.0, P4: 1.0}, {P4_A: 1.0},
     {ANY_G5: 2, P4_A: 1}, "per-bucket"),
    ({G5: 0}, {G5: 4.0}, {A: 4.0}, {}, "nothing-wanted"),
]


@pytest.mark.parametrize("wanted, peaks, pinned, expected", [s[:4] for s in SPLITS],
                         ids=[s[4] for s in SPLITS])
def test_pin_placeholders(wanted, peaks, pinned, expected):
    split = pin_placeholders(wanted, peaks, pinned)
    assert split == expected
    for bucket, count in wanted.items():  # never more or fewer than the plan wants
        assert sum(n for c, n in split.items() if c.bucket == bucket) == max(count, 0)


def test_pinned_peaks_from_the_history():
    history = pd.DataFrame({
        "pinned:g5.xlarge/zone=us-east-1a": [1.0, np.nan, 3.0],
        "pinned:p4d.24xlarge@pg-a/zone=us-east-1a": [0.0, 0.0, 0.0],  # never pinned
        "pinned:g5.xlarge/capacity=on-demand": [np.nan, np.nan, np.nan],  # gaps only
    })
    assert pinned_peaks(history) == {A: 3.0}


def test_bucket_peaks_from_the_counts():
    counts = pd.DataFrame({"g5.xlarge": [2.0, np.nan, 5.0], "p4d.24xlarge@pg-a": [1.0, 0.0, 0.0],
                           "g6.xlarge": [np.nan, np.nan, np.nan]})
    assert bucket_peaks(counts) == {G5: 5.0, P4: 1.0}


UNPINNED_G5 = PlacedColumn("g5.xlarge", "", Pin(), 0)
PLACED = [
    # no pinned demand: one unpinned column per planned bucket, at 0 too (as today)
    ([("g5.xlarge", "", 2), ("p4d.24xlarge", "pg-a", 0)], {}, [
        PlacedColumn("g5.xlarge", "", Pin(), 2), PlacedColumn("p4d.24xlarge", "pg-a", Pin(), 0),
    ], "unpinned"),
    # 4 x 5/10 = 2 to us-east-1a, 2 unpinned
    ([("g5.xlarge", "", 4)], {A: 5.0}, [
        PlacedColumn("g5.xlarge", "", Pin(), 2), PlacedColumn("g5.xlarge", "", A.pin, 2),
    ], "split"),
    # nothing wanted: the pinned column keeps its object at 0 while it has demand
    ([("g5.xlarge", "", 0)], {A: 5.0}, [UNPINNED_G5, PlacedColumn("g5.xlarge", "", A.pin, 0)],
     "pinned-at-zero"),
    # 1 x 2/10 = 0.2 (a) and 0.8 (unpinned): the one placeholder goes unpinned, a stays at 0
    ([("g5.xlarge", "", 1)], {A: 2.0}, [
        PlacedColumn("g5.xlarge", "", Pin(), 1), PlacedColumn("g5.xlarge", "", A.pin, 0),
    ], "too-small-a-share"),
]


@pytest.mark.parametrize("planned, pinned, expected", [p[:3] for p in PLACED],
                         ids=[p[3] for p in PLACED])
def test_place_columns(planned, pinned, expected):
    peaks = {G5: 10.0, P4: 1.0}
    assert list(place_columns(planned, peaks, pinned)) == expected


def test_restrict_pins_merges_what_placeholders_cannot_tell_apart():
    spot_a = PinnedBucket("g5.xlarge", "", Pin("us-east-1a", "spot"))
    od_a = PinnedBucket("g5.xlarge", "", Pin("us-east-1a", "on-demand"))
    reserved = PinnedBucket("g5.xlarge", "", Pin(None, "reserved"))
    pinned = {spot_a: 2.0, od_a: 3.0, reserved: 1.0}
    # no capacity-type label: both zone-a columns become one (2 + 3 = 5), reserved unpinned
    assert restrict_pins(pinned, lambda pin: selectable_pin(pin, "")) == {A: 5.0}
    # EKS managed node groups have no reserved capacity type: that column goes
    assert restrict_pins(pinned, lambda pin: selectable_pin(
        pin, "eks.amazonaws.com/capacityType")) == {spot_a: 2.0, od_a: 3.0}
