"""A multi-dimensional bin packer: how many nodes of each bucket type a snapshot really needs.

Decides: the node count per instance type when each pod goes to the bucket the
embedding chose (`bucketing.embed.assign`), so the packer and the embedding are
comparable type by type: the embedding's rounded count is a lower bound, the
packer's count is achievable.

Algorithm: first-fit-decreasing, pods ordered by their dominant share of the node
(the largest of GPU, CPU, memory as a fraction of the node's capacity), ties broken
by the vector in cost order. Pods with identical vectors are placed as a group:
FFD puts consecutive identical items exactly where one-at-a-time FFD would (the
nodes before the one that last took an item still cannot take another), so a
snapshot costs O(distinct shapes x open nodes) numpy work, not O(pods x nodes).

Bounds, as a simulation should state them: a node's capacity is one vector, so a
fractional GPU share (Alibaba's gpu_milli) is packed as a divisible amount of the
node's GPUs, not onto a particular device; placement constraints (affinity, NUMA,
max pods per node) are ignored. All-zero vectors take no room and open no node.

Must not: read files, log, or mutate its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bucketing.embed import assign, bucket_sums, counts_from_sums, round_up
from common.errors import InputError

# Float slack when asking "does one more item fit": 4 x 0.905 CPUs fill 3.62 CPUs.
FIT_EPSILON = 1e-9


@dataclass(frozen=True)
class PackResult:
    """One snapshot packed into nodes of its buckets' types.

    nodes: (B,) nodes of each bucket type that first-fit-decreasing opens.
    lower_bound: (B,) the embedding's rounded counts, which `nodes` never undercuts.
    bucket_of: (N,) bucket of each vector (-1 = fits no bucket, not packed).
    """

    nodes: np.ndarray
    lower_bound: np.ndarray
    bucket_of: np.ndarray


def _items_that_fit(free: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """How many more items of `shape` each row of `free` (K, 3) holds."""
    used = shape > 0
    ratios = (free[..., used] + FIT_EPSILON) / shape[used]
    return np.floor(ratios.min(axis=-1)).clip(min=0).astype(np.int64)


def dominant_share_order(shapes: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Indices of `shapes` by decreasing dominant share of `capacity`, then decreasing vector."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(capacity > 0, shapes / np.where(capacity > 0, capacity, 1.0), 0.0)
    dominant = shares.max(axis=1)
    keys = tuple(-shapes[:, d] for d in reversed(range(shapes.shape[1]))) + (-dominant,)
    return np.lexsort(keys)


def pack_shapes(shapes: np.ndarray, counts: np.ndarray, capacity: np.ndarray) -> int:
    """Nodes of `capacity` (3,) that FFD needs for counts[s] items of each shapes[s] (S, 3)."""
    shapes = np.asarray(shapes, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    capacity = np.asarray(capacity, dtype=np.float64)
    present = (counts > 0) & shapes.any(axis=1)
    if not present.any():
        return 0
    too_big = present & np.any(shapes > capacity + FIT_EPSILON, axis=1)
    if too_big.any():
        shape = shapes[np.flatnonzero(too_big)[0]]
        raise InputError(f"pack: a pod {shape.tolist()} does not fit a node {capacity.tolist()}")
    free_rows: list[np.ndarray] = []
    free = np.zeros((0, shapes.shape[1]))
    for s in dominant_share_order(shapes, capacity):
        if not present[s]:
            continue
        shape = shapes[s]
        remaining = int(counts[s])
        if len(free):
            room = _items_that_fit(free, shape)
            taken_before = np.cumsum(room) - room
            take = np.minimum(room, np.clip(remaining - taken_before, 0, None))
            free = free - take[:, None] * shape
            remaining -= int(take.sum())
        if remaining > 0:
            per_node = int(_items_that_fit(capacity, shape))
            full_nodes, last = divmod(remaining, per_node)
            free_rows = [free, np.tile(capacity - per_node * shape, (full_nodes, 1))]
            if last:
                free_rows.append((capacity - last * shape)[None, :])
            free = np.concatenate(free_rows)
    return len(free)


def pack(vectors: np.ndarray, buckets: np.ndarray) -> PackResult:
    """Pack one snapshot: each vector into nodes of the bucket `embed` assigns it to."""
    vectors = np.asarray(vectors, dtype=np.float64)
    buckets = np.asarray(buckets, dtype=np.float64)
    bucket_of = assign(vectors, buckets)
    lower = round_up(counts_from_sums(bucket_sums(vectors, bucket_of, len(buckets)), buckets))
    nodes = np.zeros(len(buckets), dtype=np.int64)
    for b in range(len(buckets)):
        mine = vectors[bucket_of == b]
        if len(mine) == 0:
            continue
        shapes, counts = np.unique(mine, axis=0, return_counts=True)
        nodes[b] = pack_shapes(shapes, counts, buckets[b])
    return PackResult(nodes=nodes, lower_bound=lower, bucket_of=bucket_of)


def pack_histogram(
    shapes: np.ndarray,
    histogram: np.ndarray,
    shape_bucket: np.ndarray,
    buckets: np.ndarray,
    memo: dict | None = None,
) -> np.ndarray:
    """(T, B) packed nodes per tick from a (T, S) histogram of distinct shapes (S, 3).

    shape_bucket[s] is the bucket of shape s (-1: not packed). A bucket is packed only
    at ticks where its own columns of the histogram change, and each distinct content
    once: a month of 5-minute ticks where a bucket's pods change a few hundred times
    costs a few hundred packings, not 8,640. `memo` (a dict the caller owns and passes
    to every call) carries packings across calls, e.g. across candidate bucket lists
    that share a type.
    """
    shapes = np.asarray(shapes, dtype=np.float64)
    buckets = np.asarray(buckets, dtype=np.float64)
    memo = {} if memo is None else memo
    nodes = np.zeros((len(histogram), len(buckets)), dtype=np.int64)
    for b in range(len(buckets)):
        columns = np.flatnonzero(shape_bucket == b)
        if columns.size == 0 or len(histogram) == 0:
            continue
        mine = histogram[:, columns]
        changes = np.flatnonzero(np.any(mine[1:] != mine[:-1], axis=1)) + 1
        starts = np.concatenate(([0], changes))
        prefix = buckets[b].tobytes() + shapes[columns].tobytes()
        per_start = np.empty(len(starts), dtype=np.int64)
        for k, tick in enumerate(starts):
            row = mine[tick]
            key = (prefix, row.tobytes())  # the tuple shares one prefix object
            if key not in memo:
                memo[key] = pack_shapes(shapes[columns], row, buckets[b])
            per_start[k] = memo[key]
        lengths = np.diff(np.concatenate((starts, [len(mine)])))
        nodes[:, b] = np.repeat(per_start, lengths)
    return nodes
