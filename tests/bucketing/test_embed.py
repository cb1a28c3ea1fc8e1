"""The embedding: cost-order comparison, first-fit-increasing assignment, bucket counts."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.embed import (
    assign,
    embed,
    embed_series,
    lexicographic_order,
    lexicographically_less,
    round_up,
)
from common.errors import InputError


def vecs(*rows: tuple[float, float, float]) -> np.ndarray:
    """(N, 3) vectors (GPUs, CPUs, GiB) from tuples."""
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def reference_assign(vectors: np.ndarray, buckets: np.ndarray) -> list[int]:
    """The embedding rule (docs/buckets.md) written the slow, obvious way, one vector at a time."""
    order = sorted(range(len(buckets)), key=lambda i: (tuple(buckets[i]), i))
    result = []
    for v in vectors:
        fitting = [i for i in order if all(v <= buckets[i])]
        strictly = [i for i in fitting if tuple(v) < tuple(buckets[i])]
        result.append(strictly[0] if strictly else fitting[-1] if fitting else -1)
    return result


def test_the_worked_example():
    # docs/buckets.md's example: vectors (0,1,1), (0,1,2), (1,2,4) into buckets (0,1,2), (1,2,4).
    # (0,1,1) < (0,1,2) -> bucket 0; (0,1,2) equals bucket 0, so -> (1,2,4);
    # (1,2,4) is smaller than nothing it fits -> the last it fits, (1,2,4).
    # bucket 0: (0,1,1)/(0,1,2) -> max(0/0 ignored, 1/1, 1/2) = 1
    # bucket 1: (1,3,6)/(1,2,4) -> max(1, 1.5, 1.5) = 1.5
    result = embed(vecs((0, 1, 1), (0, 1, 2), (1, 2, 4)), vecs((0, 1, 2), (1, 2, 4)))
    assert result.bucket_of.tolist() == [0, 1, 1]
    assert result.raw_counts.tolist() == [1.0, 1.5]
    assert result.counts.tolist() == [1, 2]
    assert result.unbucketable.tolist() == []


def test_results_follow_the_callers_bucket_order():
    # Same example with the buckets given largest first: indices refer to that order.
    result = embed(vecs((0, 1, 1), (0, 1, 2), (1, 2, 4)), vecs((1, 2, 4), (0, 1, 2)))
    assert result.bucket_of.tolist() == [1, 0, 0]
    assert result.raw_counts.tolist() == [1.5, 1.0]


BUCKETS = vecs((0, 2, 8), (0, 8, 32), (1, 4, 16), (1, 8, 64), (4, 32, 128))


@pytest.mark.parametrize(
    ("vector", "expected"),
    [
        ((0, 1, 4), 0),  # strictly smaller than (0,2,8) and fits it
        ((0, 2, 8), 1),  # equal to (0,2,8): next bucket it is smaller than, (0,8,32)
        ((0, 4, 40), 3),  # memory 40 > 32: skips the CPU buckets and (1,4,16) to (1,8,64)
        ((0, 40, 1), -1),  # 40 CPUs fit no bucket (largest has 32)
        ((1, 2, 32), 3),  # lexicographically < (1,4,16) but 32 GiB > 16: next fitting
        ((4, 32, 128), 4),  # equal to the largest bucket: the last bucket it fits
        ((5, 1, 1), -1),  # more GPUs than any bucket
        ((0, 0, 0), 0),  # an empty request goes to the smallest bucket (and counts 0)
    ],
    ids=["strictly-smaller", "equal-goes-up", "memory-skips", "too-many-cpus",
         "lex-smaller-but-no-fit", "equal-to-largest", "too-many-gpus", "zero"],
)
def test_assignment(vector, expected):
    assert assign(vecs(vector), BUCKETS).tolist() == [expected]
    assert reference_assign(vecs(vector), BUCKETS) == [expected]


@pytest.mark.parametrize("seed", [0, 1, 2, 3], ids=lambda s: f"seed{s}")
def test_assignment_matches_the_one_at_a_time_reference(seed):
    rng = np.random.default_rng(seed)
    # Small integer grids make ties and equal vectors common.
    vectors = rng.integers(0, 5, size=(300, 3)).astype(float)
    buckets = rng.integers(0, 5, size=(6, 3)).astype(float)
    assert assign(vectors, buckets).tolist() == reference_assign(vectors, buckets)


@pytest.mark.parametrize(
    ("a", "b", "less"),
    [
        ((0, 9, 9), (1, 0, 0), True),  # fewer GPUs decides, whatever follows
        ((1, 2, 9), (1, 3, 0), True),  # GPUs tie, fewer CPUs decides
        ((1, 3, 4), (1, 3, 4), False),  # equal is not smaller
        ((1, 3, 5), (1, 3, 4), False),  # more memory
    ],
    ids=["gpu-decides", "cpu-decides", "equal", "memory-larger"],
)
def test_cost_order_comparison(a, b, less):
    assert lexicographically_less(vecs(a), np.array(b, dtype=float)).tolist() == [less]


def test_lexicographic_order_sorts_gpu_first():
    vectors = vecs((1, 1, 1), (0, 9, 9), (0, 9, 1), (1, 0, 5))
    # (0,9,1) < (0,9,9) < (1,0,5) < (1,1,1)
    assert lexicographic_order(vectors).tolist() == [2, 1, 3, 0]


@pytest.mark.parametrize(
    ("vectors", "bucket", "raw", "count"),
    [
        # CPU bucket (0,2,8): GPU dimension 0/0 adds nothing; max(3/2, 4/8) = 1.5
        (((0, 1, 2), (0, 2, 2)), (0, 2, 8), 1.5, 2),
        # 0.2 x 10 = 2.0000000000000004 in floats: still two buckets
        (((0, 0.2, 0.2),) * 10, (0, 1, 1), 2.0, 2),
        # 3 x 1/3 GPU of a 1-GPU bucket: exactly one after rounding slack
        (((1 / 3, 1, 1),) * 3, (1, 4, 16), 1.0, 1),
        # memory decides: 3 x 10 GiB / 16 = 1.875
        (((1, 1, 10),) * 3, (4, 16, 16), 1.875, 2),
    ],
    ids=["zero-gpu-dimension", "float-noise", "gpu-shares", "memory-decides"],
)
def test_counts(vectors, bucket, raw, count):
    result = embed(vecs(*vectors), vecs(bucket))
    assert result.raw_counts[0] == pytest.approx(raw)
    assert result.counts.tolist() == [count]


def test_unbucketable_vectors_are_reported_and_left_out_of_counts():
    result = embed(vecs((0, 1, 1), (8, 1, 1), (0, 1, 100)), vecs((1, 4, 16)))
    assert result.unbucketable.tolist() == [1, 2]
    assert result.bucket_of.tolist() == [0, -1, -1]
    # only (0,1,1) counts: max(0/1, 1/4, 1/16) = 0.25 -> 1
    assert result.raw_counts.tolist() == [0.25]
    assert result.counts.tolist() == [1]


def test_series_equals_one_embed_per_tick():
    rng = np.random.default_rng(7)
    vectors = np.column_stack([rng.integers(0, 3, 50), rng.uniform(0, 8, 50),
                               rng.uniform(0, 40, 50)])
    buckets = vecs((0, 4, 16), (0, 16, 64), (1, 8, 32), (2, 16, 64))
    ticks = [rng.choice(50, size=n, replace=False) for n in (0, 5, 20, 50)]
    series = embed_series(vectors, buckets, ticks)
    assert series.shape == (4, 4)
    for t, rows in enumerate(ticks):
        expected = embed(vectors[rows], buckets).raw_counts if len(rows) else np.zeros(4)
        np.testing.assert_allclose(series[t], expected)


def test_round_up_keeps_exact_integers():
    # 2.0000000001 stays 2; 2.01 becomes 3; 0 stays 0.
    assert round_up(np.array([2.0000000001, 2.01, 0.0])).tolist() == [2, 3, 0]


@pytest.mark.parametrize(
    ("vectors", "buckets", "message"),
    [
        (vecs((0, -1, 1)), vecs((1, 1, 1)), "vectors row 0"),
        (vecs((0, 1, np.nan)), vecs((1, 1, 1)), "vectors row 0"),
        (vecs((0, 1, 1)), np.zeros((0, 3)), "bucket list is empty"),
        (np.zeros((2, 2)), vecs((1, 1, 1)), "expected (N, 3)"),
    ],
    ids=["negative", "nan", "no-buckets", "wrong-shape"],
)
def test_bad_input_raises_input_error(vectors, buckets, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        embed(vectors, buckets)
