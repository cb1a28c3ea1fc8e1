"""The first-fit-decreasing packer and its per-tick form."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.embed import embed
from bucketing.pack import dominant_share_order, pack, pack_histogram, pack_shapes
from common.errors import InputError


def vecs(*rows: tuple[float, float, float]) -> np.ndarray:
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


def reference_ffd(items: list[np.ndarray], capacity: np.ndarray) -> int:
    """One item at a time into the first open node with room, items in packer order."""
    free: list[np.ndarray] = []
    for item in items:
        if not item.any():
            continue
        for k, room in enumerate(free):
            if np.all(item <= room + 1e-9):
                free[k] = room - item
                break
        else:
            free.append(capacity - item)
    return len(free)


@pytest.mark.parametrize(
    ("shapes", "counts", "capacity", "nodes"),
    [
        # 9 x 0.905 CPU, 4 per 3.62-CPU node (float slack) -> 4 + 4 + 1 = 3 nodes
        (((0, 0.905, 1),), (9,), (0, 3.62, 100), 3),
        # 2 GPUs + 6 x 1 GPU on 4-GPU nodes: FFD puts the 2s first:
        # node1 = 2 + 1 + 1, node2 = 1 + 1 + 1 + 1 -> 2 nodes
        (((2, 1, 1), (1, 1, 1)), (1, 6), (4, 16, 64), 2),
        # memory-bound: 3 x 40 GiB on 64 GiB nodes -> one per node -> 3
        (((0, 1, 40),), (3,), (0, 16, 64), 3),
        # dominant shares decide the order: (0,12,8) is 75% CPU, (0,2,48) is 75% memory;
        # each pair fits one node (14 CPU, 56 GiB) -> 2 of each -> 2 nodes
        (((0, 12, 8), (0, 2, 48)), (2, 2), (0, 16, 64), 2),
        # all-zero pods take no room
        (((0, 0, 0),), (5,), (1, 4, 16), 0),
        # nothing to pack
        (((1, 1, 1),), (0,), (1, 4, 16), 0),
    ],
    ids=["float-slack", "gpus-ffd", "memory-bound", "dominant-share", "zero-pods", "empty"],
)
def test_pack_shapes(shapes, counts, capacity, nodes):
    assert pack_shapes(vecs(*shapes), np.array(counts), np.array(capacity, float)) == nodes


@pytest.mark.parametrize("seed", range(6), ids=lambda s: f"seed{s}")
def test_grouped_ffd_equals_one_item_at_a_time(seed):
    rng = np.random.default_rng(seed)
    capacity = np.array([8.0, 32.0, 128.0])
    shapes = np.unique(
        np.column_stack([rng.integers(0, 5, 12), rng.integers(1, 17, 12),
                         rng.integers(1, 65, 12)]).astype(float), axis=0)
    counts = rng.integers(0, 6, len(shapes))
    items = [shapes[s] for s in dominant_share_order(shapes, capacity) for _ in range(counts[s])]
    assert pack_shapes(shapes, counts, capacity) == reference_ffd(items, capacity)


def test_pack_reports_nodes_beside_the_embedding_lower_bound():
    # docs/buckets.md's example: bucket (0,1,2) holds (0,1,1) -> 1 node;
    # bucket (1,2,4) holds (0,1,2) and (1,2,4): (1,3,6) > (1,2,4), two nodes; bound ceil 1.5 = 2
    result = pack(vecs((0, 1, 1), (0, 1, 2), (1, 2, 4)), vecs((0, 1, 2), (1, 2, 4)))
    assert result.nodes.tolist() == [1, 2]
    assert result.lower_bound.tolist() == [1, 2]


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_packed_nodes_never_undercut_the_embedding(seed):
    rng = np.random.default_rng(seed)
    vectors = np.column_stack([rng.integers(0, 3, 200), rng.uniform(0.5, 12, 200),
                               rng.uniform(1, 60, 200)])
    buckets = vecs((0, 16, 64), (1, 8, 32), (2, 16, 64), (4, 48, 192))
    result = pack(vectors, buckets)
    assert np.all(result.nodes >= result.lower_bound)
    np.testing.assert_array_equal(result.lower_bound, embed(vectors, buckets).counts)


def test_histogram_packing_equals_packing_each_tick():
    shapes = vecs((0, 4, 8), (1, 4, 16), (1, 8, 30))
    shape_bucket = np.array([0, 1, 1])
    buckets = vecs((0, 8, 32), (2, 16, 64))
    histogram = np.array([[1, 0, 0], [1, 0, 0], [3, 2, 1], [0, 4, 4], [3, 2, 1]])
    memo: dict = {}
    nodes = pack_histogram(shapes, histogram, shape_bucket, buckets, memo)
    for t, row in enumerate(histogram):
        for b in range(2):
            mine = shape_bucket == b
            assert nodes[t, b] == pack_shapes(shapes[mine], row[mine], buckets[b])
    # tick 2 and tick 4 are the same snapshot: memo holds each distinct bucket content once
    # bucket 0 saw (1), (3), (0) -> 3; bucket 1 saw (0,0), (2,1), (4,4) -> 3
    assert len(memo) == 6
    # a second call with the same memo answers from it, identically
    np.testing.assert_array_equal(
        pack_histogram(shapes, histogram, shape_bucket, buckets, memo), nodes)


def test_an_item_larger_than_the_node_is_an_error():
    with pytest.raises(InputError, match="does not fit"):
        pack_shapes(vecs((2, 1, 1)), np.array([1]), np.array([1.0, 4.0, 16.0]))
