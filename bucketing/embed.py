"""The embedding of a demand snapshot into instance-type bucket counts (docs/buckets.md,
"Algorithms").

Decides: which bucket each pod's resource vector goes to, and how many of each
bucket a snapshot needs as a lower bound on nodes.

Vectors are (GPUs, CPUs, GiB), compared lexicographically in that cost order (the
first smaller element decides). Buckets are sorted increasingly in that order; a
vector goes to the first bucket it is strictly smaller than among the buckets it
fits element-wise; when it is strictly smaller than no bucket it fits (it equals
the largest one it fits) it goes to the last bucket it fits; when it fits no bucket
at all it is *unbucketable*: reported by index, never dropped. A bucket's count is
the largest ratio, over the dimensions, of its vectors' sum to the bucket vector,
rounded up.

The assignment of one vector does not depend on the others, so vectors are never
sorted here: each of the B buckets is one vectorised pass over all N vectors.
Results are indexed in the caller's bucket order, whatever order that is.

Must not: read files, log, or mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from common.errors import InputError

# A count of 2.0000000001 (float sums of GiB) is two buckets, not three.
COUNT_EPSILON = 1e-9


@dataclass(frozen=True)
class EmbedResult:
    """One snapshot embedded into buckets.

    raw_counts: (B,) the largest per-dimension ratio of each bucket's summed vectors
        to the bucket vector, before rounding (docs/buckets.md's worked example: 1 and 1.5).
    counts: (B,) raw_counts rounded up: buckets needed, a lower bound on nodes.
    bucket_of: (N,) the bucket index (caller's order) of each vector; -1 = fits none.
    unbucketable: indices of the vectors that fit no bucket element-wise.
    """

    raw_counts: np.ndarray
    counts: np.ndarray
    bucket_of: np.ndarray
    unbucketable: np.ndarray


def lexicographic_order(vectors: np.ndarray) -> np.ndarray:
    """Indices that sort (N, 3) vectors increasingly in cost order (GPU, then CPU, then memory)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    # lexsort's last key is the primary one.
    return np.lexsort(tuple(vectors[:, d] for d in reversed(range(vectors.shape[1]))))


def lexicographically_less(vectors: np.ndarray, bucket: np.ndarray) -> np.ndarray:
    """(N,) bool: vector < bucket in cost order, the first differing element deciding."""
    less = np.zeros(len(vectors), dtype=bool)
    equal_so_far = np.ones(len(vectors), dtype=bool)
    for d in range(vectors.shape[1]):
        column = vectors[:, d]
        less |= equal_so_far & (column < bucket[d])
        equal_so_far &= column == bucket[d]
    return less


def _checked(vectors: np.ndarray, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vectors = np.asarray(vectors, dtype=np.float64)
    buckets = np.asarray(buckets, dtype=np.float64)
    if vectors.ndim != 2 or buckets.ndim != 2 or vectors.shape[1] != buckets.shape[1]:
        raise InputError(
            f"embed: expected (N, 3) vectors and (B, 3) buckets, got {vectors.shape} and "
            f"{buckets.shape}"
        )
    if len(buckets) == 0:
        raise InputError("embed: the bucket list is empty")
    for name, array in (("vectors", vectors), ("buckets", buckets)):
        bad = ~np.isfinite(array) | (array < 0)
        if bad.any():
            row = int(np.flatnonzero(bad.any(axis=1))[0])
            raise InputError(f"embed: {name} row {row} is negative or not finite: {array[row]}")
    return vectors, buckets


def assign(vectors: np.ndarray, buckets: np.ndarray) -> np.ndarray:
    """(N,) bucket index (caller's order) of each vector, -1 for a vector that fits none."""
    vectors, buckets = _checked(vectors, buckets)
    order = lexicographic_order(buckets)
    # Contiguous columns and in-place boolean ops: this loop is the whole cost of
    # embedding a million pods.
    columns = [np.ascontiguousarray(vectors[:, d]) for d in range(vectors.shape[1])]
    first_strict = np.full(len(vectors), -1, dtype=np.int64)
    last_fitting = np.full(len(vectors), -1, dtype=np.int64)
    fits = np.empty(len(vectors), dtype=bool)
    less = np.empty(len(vectors), dtype=bool)
    scratch = np.empty(len(vectors), dtype=bool)
    # Walk the sorted buckets from the largest down, so the last write is the first
    # (smallest) bucket the vector is strictly smaller than and fits.
    for position in reversed(range(len(order))):
        bucket_index = int(order[position])
        bucket = buckets[bucket_index]
        np.less_equal(columns[0], bucket[0], out=fits)
        for d in range(1, len(columns)):
            fits &= np.less_equal(columns[d], bucket[d], out=scratch)
        # less = c0 < b0 | (c0 == b0 & (c1 < b1 | (c1 == b1 & c2 < b2))), built inside out
        np.less(columns[-1], bucket[-1], out=less)
        for d in reversed(range(len(columns) - 1)):
            less &= np.equal(columns[d], bucket[d], out=scratch)
            less |= np.less(columns[d], bucket[d], out=scratch)
        # The first write from the top is the largest fitting bucket: keep it.
        np.copyto(last_fitting, bucket_index, where=fits & (last_fitting < 0))
        less &= fits
        np.copyto(first_strict, bucket_index, where=less)
    return np.where(first_strict >= 0, first_strict, last_fitting)


def counts_from_sums(sums: np.ndarray, buckets: np.ndarray) -> np.ndarray:
    """(..., B) raw counts from (..., B, 3) per-bucket sums: the largest ratio per bucket.

    A zero bucket dimension contributes nothing (0/0); a positive sum over a zero
    dimension cannot happen for vectors that fit the bucket, and counts as infinite.
    """
    buckets = np.asarray(buckets, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(buckets > 0, sums / np.where(buckets > 0, buckets, 1.0),
                          np.where(sums > 0, np.inf, 0.0))
    return ratios.max(axis=-1)


def round_up(raw_counts: np.ndarray) -> np.ndarray:
    """Ceil with COUNT_EPSILON slack, as int64."""
    return np.ceil(np.asarray(raw_counts) - COUNT_EPSILON).clip(min=0).astype(np.int64)


def embed(vectors: np.ndarray, buckets: np.ndarray) -> EmbedResult:
    """Embed one snapshot of (N, 3) pod vectors into (B, 3) buckets."""
    vectors, buckets = _checked(vectors, buckets)
    bucket_of = assign(vectors, buckets)
    sums = bucket_sums(vectors, bucket_of, len(buckets))
    raw = counts_from_sums(sums, buckets)
    return EmbedResult(
        raw_counts=raw,
        counts=round_up(raw),
        bucket_of=bucket_of,
        unbucketable=np.flatnonzero(bucket_of < 0),
    )


def bucket_sums(vectors: np.ndarray, bucket_of: np.ndarray, bucket_count: int) -> np.ndarray:
    """(B, 3) sum of the vectors assigned to each bucket (unbucketable ones left out)."""
    placed = bucket_of >= 0
    return np.stack(
        [
            np.bincount(bucket_of[placed], weights=vectors[placed, d], minlength=bucket_count)
            for d in range(vectors.shape[1])
        ],
        axis=1,
    )


def embed_series(
    vectors: np.ndarray, buckets: np.ndarray, snapshots: Sequence[np.ndarray],
    bucket_of: np.ndarray | None = None,
) -> np.ndarray:
    """(T, B) raw counts of many snapshots, each a row-index array into `vectors`.

    Every vector is assigned once (assignment depends on the vector alone; `bucket_of`
    gives the assignment instead, e.g. pods pinned to a type, -1 = none), then each
    tick only sums its rows per bucket. Round with `round_up` for bucket counts.
    """
    vectors, buckets = _checked(vectors, buckets)
    if bucket_of is None:
        bucket_of = assign(vectors, buckets)
    bucket_count = len(buckets)
    lengths = np.array([len(rows) for rows in snapshots], dtype=np.int64)
    rows = (
        np.concatenate([np.asarray(r, dtype=np.int64) for r in snapshots])
        if len(snapshots)
        else np.zeros(0, dtype=np.int64)
    )
    tick_of_entry = np.repeat(np.arange(len(snapshots)), lengths)
    entry_bucket = bucket_of[rows]
    placed = entry_bucket >= 0
    flat = tick_of_entry[placed] * bucket_count + entry_bucket[placed]
    sums = np.stack(
        [
            np.bincount(flat, weights=vectors[rows[placed], d],
                        minlength=len(snapshots) * bucket_count)
            for d in range(vectors.shape[1])
        ],
        axis=1,
    ).reshape(len(snapshots), bucket_count, vectors.shape[1])
    return counts_from_sums(sums, buckets)
