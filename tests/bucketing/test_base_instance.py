"""Base-instance selection: drop the smallest type while the scale does not grow."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.base_instance import scale_over_trace, select_base_instance


def vecs(*rows: tuple[float, float, float]) -> np.ndarray:
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


# Buckets A, B (GPU-less) and C, D (GPU), increasing in cost order.
BUCKETS = vecs((0, 2, 8), (0, 4, 16), (1, 4, 16), (1, 8, 32))
SHAPES = vecs((0, 1, 4), (1, 2, 8))
# tick 0: two (0,1,4) and one (1,2,8); tick 1: four (0,1,4)
HISTOGRAM = np.array([[2, 1], [4, 0]])
SHAPE_PODS = np.array([4, 1])


def test_scale_is_embedded_counts_times_prices():
    # (0,1,4) -> A, (1,2,8) -> C.
    # tick 0: A (0,2,8)/(0,2,8) = 1 -> $1; C (1,2,8)/(1,4,16) = 1 -> $5  => $6/h
    # tick 1: A (0,4,16)/(0,2,8) = 2 -> 2 x $1                           => $2/h
    result = scale_over_trace(SHAPES, HISTOGRAM, SHAPE_PODS, BUCKETS,
                              np.array([1.0, 2.0, 5.0, 6.0]), tick_hours=0.5)
    assert result.series.tolist() == [6.0, 2.0]
    assert result.total == 4.0  # (6 + 2) x 0.5 h
    assert result.unbucketable_pods == 0


@pytest.mark.parametrize(
    ("price_b", "steps", "chosen"),
    [
        # full list: $8 over two 1-hour ticks (above).
        # drop A: (0,1,4) -> B; tick 0 B 0.5 -> 1 x $2 + C $5 = 7, tick 1 B 1 -> $2: $9 > 8,
        #   rejected; GPU tier: drop C: (1,2,8) -> D $6: 1 + 6 + 2 = $9 > 8, rejected.
        (2.0, [((0, 1, 2, 3), True), ((1, 2, 3), False), ((0, 1, 3), False)], (0, 1, 2, 3)),
        # B at $1.5: drop A gives 1.5 + 5 + 1.5 = $8, not more: kept. Drop B too: everything
        # in C: tick 0 (1,3,12)/(1,4,16) -> 1, tick 1 (0,4,16) -> 1: $10 > 8, rejected.
        # GPU tier: drop C from (B,C,D): 1.5 + 6 + 1.5 = $9 > 8, rejected.
        (1.5, [((0, 1, 2, 3), True), ((1, 2, 3), True), ((2, 3), False), ((1, 3), False)],
         (1, 2, 3)),
    ],
    ids=["first-drop-costs-more", "equal-scale-drop-is-kept"],
)
def test_walk(price_b, steps, chosen):
    selection = select_base_instance(
        SHAPES, HISTOGRAM, SHAPE_PODS, BUCKETS, np.array([1.0, price_b, 5.0, 6.0]),
        tick_hours=1.0, order=range(4),
    )
    assert [(step.types, step.accepted) for step in selection.steps] == steps
    assert selection.chosen.types == chosen


def test_a_drop_that_leaves_pods_unbucketable_is_never_taken():
    # (0,1,40) fits only the memory-heavy CPU type A; dropping A costs less ($0) but
    # leaves the pod out, so it is rejected. The GPU tier then drops C (no GPU pods):
    # scale stays $0.1, kept.
    buckets = vecs((0, 4, 64), (1, 8, 32))
    selection = select_base_instance(
        vecs((0, 1, 40)), np.array([[1]]), np.array([1]), buckets, np.array([0.1, 5.0]),
        tick_hours=1.0, order=range(2),
    )
    assert [(s.types, s.accepted) for s in selection.steps] == [
        ((0, 1), True), ((1,), False), ((0,), True)]
    assert selection.steps[1].scale.unbucketable_pods == 1
    assert selection.chosen.types == (0,)
