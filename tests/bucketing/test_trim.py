"""The --max-types trim: drop, one at a time, the type whose loss leaves the fewest pods
unbucketable, then needs the lowest scale."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.embed import assign
from bucketing.trim import trim_types


def vecs(*rows: tuple[float, float, float]) -> np.ndarray:
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


# A, B GPU-less and C, D GPU types, increasing in cost order, as in test_base_instance.
BUCKETS = vecs((0, 2, 8), (0, 4, 16), (1, 4, 16), (1, 8, 32))
PRICES = np.array([1.0, 2.0, 5.0, 6.0])


def trim(shapes, histogram, max_types):
    shapes = vecs(*shapes)
    histogram = np.array(histogram)
    drops = trim_types((0, 1, 2, 3), max_types, shapes, histogram, histogram.sum(axis=0),
                       BUCKETS, PRICES, tick_hours=1.0,
                       place=lambda types: assign(shapes, BUCKETS[list(types)]))
    return [drop.dropped for drop in drops], drops[-1].types


@pytest.mark.parametrize(
    ("shapes", "histogram", "max_types", "dropped", "left"),
    [
        # shapes (0,1,4), (1,2,8); tick 0: two and one, tick 1: four (0,1,4), 1-hour ticks.
        # Round 1, the scale of each list left: without A 7 + 2 = $9 (B holds (0,2,8) and
        # (0,4,16) once each), without B 6 + 2 = $8, without C 7 + 2 = $9 (D takes the GPU
        # pod), without D $8: B and D tie, the smaller (B) goes. Round 2 from (A, C, D):
        # A is the last GPU-less type; without C $9, without D $8: D goes.
        ([(0, 1, 4), (1, 2, 8)], [[2, 1], [4, 0]], 2, [1, 3], (0, 2)),
        # plus (1,6,24) at tick 1, which only D holds. Round 1: without A 7 + 8 = $15,
        # without B 6 + 8 = $14, without C 7 + 8 = $15, without D it is unbucketable:
        # B goes. Round 2: without C 7 + 8 = $15 and 0 unbucketable, without D 1: C goes,
        # though (A, C) would cost less.
        ([(0, 1, 4), (1, 2, 8), (1, 6, 24)], [[2, 1, 0], [4, 0, 1]], 2, [1, 2], (0, 3)),
        # one type: the GPU-less ones may go too (CPU pods then take the GPU type, as on
        # a GPU-only cluster). Round 3 from (A, C): without A, C holds everything
        # ((0,2,8) then (0,4,16): 5 + 5 = $10); without C the GPU pod fits none: A goes.
        ([(0, 1, 4), (1, 2, 8)], [[2, 1], [4, 0]], 1, [1, 3, 0], (2,)),
    ],
    ids=["cheapest-drop", "keeps-what-only-it-holds", "down-to-one"],
)
def test_trim(shapes, histogram, max_types, dropped, left):
    assert trim(shapes, histogram, max_types) == (dropped, left)


def test_a_short_list_is_left_alone():
    drops = trim_types((0, 3), 4, vecs((1, 2, 8)), np.array([[1]]), np.array([1]), BUCKETS,
                       PRICES, 1.0, place=lambda types: assign(vecs((1, 2, 8)),
                                                               BUCKETS[list(types)]))
    assert drops == ()
