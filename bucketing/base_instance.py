"""Base-instance selection (docs/buckets.md, "Algorithms"): which small types a bucket list
can do without.

Decides: starting from the full bucket list sorted increasingly in cost order, drop
the smallest type while dropping it does not increase the scale needed over the
trace. Every list tried is returned (they are the tuner's candidates), with the
chosen one.

What "scale" is, numerically: the dollar cost of the embedded bucket counts summed
over the trace, sum over ticks t and buckets b of ceil(count[t, b]) x price_b x the
tick in hours. The research calls it the count-weighted size; a size needs one
scalar per bucket vector, and a price is the one weighting of GPUs, CPUs and memory
that a cluster owner pays for (counting GPUs alone would let CPU buckets vanish for
free; summing raw units would add cores to GiB). The counts are the embedding's
(a lower bound on nodes), because the embedding is what the overprovisioner plans
with; the tuner reports packed node counts beside it.

Tiers: types without GPUs sort before every GPU type, so dropping strictly "the
smallest" would never reach a GPU type while a CPU type is left. The walk runs once
over the GPU-less tier, then once over the GPU tier (keeping the first walk's
result); this is our reading of the rule for mixed lists, stated here because it is
one. A drop that leaves more pods unbucketable is never taken.

Must not: read files, log, or mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bucketing.embed import assign, counts_from_sums, round_up

# Relative slack: a drop that changes the scale only by float noise does not increase it.
SCALE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ScaleResult:
    """The scale a bucket list needs over a trace.

    series: (T,) scale per tick in $/hour (embedded counts x prices).
    total: the scale over the trace in dollars (series x tick hours, summed).
    unbucketable_shapes: indices of the shapes that fit no bucket of the list.
    unbucketable_pods: how many pods of the trace have one of those shapes.
    """

    series: np.ndarray
    total: float
    unbucketable_shapes: np.ndarray
    unbucketable_pods: int


def per_bucket_sums(
    shapes: np.ndarray, histogram: np.ndarray, shape_bucket: np.ndarray, bucket_count: int
) -> np.ndarray:
    """(T, B, 3) summed vectors per tick and bucket from a (T, S) shape histogram."""
    sums = np.zeros((len(histogram), bucket_count, shapes.shape[1]))
    # One product per bucket over its own shapes: T x S x 3 in all, whatever B is (the
    # --max-types trim evaluates hundreds of lists).
    for bucket in np.unique(shape_bucket[shape_bucket >= 0]):
        columns = np.flatnonzero(shape_bucket == bucket)
        sums[:, bucket, :] = histogram[:, columns] @ shapes[columns]
    return sums


def scale_over_trace(
    shapes: np.ndarray,
    histogram: np.ndarray,
    shape_pods: np.ndarray,
    buckets: np.ndarray,
    prices: np.ndarray,
    tick_hours: float,
    shape_bucket: np.ndarray | None = None,
) -> ScaleResult:
    """The scale `buckets` (B, 3) with `prices` (B,) need for a (T, S) histogram of shapes.

    shapes: (S, 3) distinct pod vectors; histogram[t, s]: pods of shape s wanting
    capacity at tick t; shape_pods[s]: how many pods of the trace have shape s.
    shape_bucket: (S,) the bucket of each shape (-1 = none) when the caller's fit rule
    decides it (`bucketing.fit`); None = `bucketing.embed.assign`.
    """
    if shape_bucket is None:
        shape_bucket = assign(shapes, buckets)
    sums = per_bucket_sums(shapes, histogram.astype(np.float64), shape_bucket, len(buckets))
    counts = round_up(counts_from_sums(sums, buckets))
    series = counts @ np.asarray(prices, dtype=np.float64)
    unbucketable = np.flatnonzero(shape_bucket < 0)
    return ScaleResult(
        series=series,
        total=float(series.sum() * tick_hours),
        unbucketable_shapes=unbucketable,
        unbucketable_pods=int(np.asarray(shape_pods)[unbucketable].sum()),
    )


@dataclass(frozen=True)
class Step:
    """One bucket list the selection tried.

    types: indices into the caller's type list, increasing in cost order.
    scale: its ScaleResult.
    accepted: whether the walk kept it (the first list is always kept).
    """

    types: tuple[int, ...]
    scale: ScaleResult
    accepted: bool


@dataclass(frozen=True)
class Selection:
    """Every list tried, in order, and the chosen one (the last accepted)."""

    steps: tuple[Step, ...]

    @property
    def chosen(self) -> Step:
        return [step for step in self.steps if step.accepted][-1]


def select_base_instance(
    shapes: np.ndarray,
    histogram: np.ndarray,
    shape_pods: np.ndarray,
    buckets: np.ndarray,
    prices: np.ndarray,
    tick_hours: float,
    order: Sequence[int],
    place: Callable[[tuple[int, ...]], np.ndarray] | None = None,
) -> Selection:
    """Walk the drops; `order` lists bucket indices increasingly in cost order (ties by price).

    place(types): (S,) each shape's position within `types` (-1 = none), when the
    caller's fit rule decides it; None = `bucketing.embed.assign` on their vectors."""
    buckets = np.asarray(buckets, dtype=np.float64)
    prices = np.asarray(prices, dtype=np.float64)

    def scale_of(types: tuple[int, ...]) -> ScaleResult:
        index = list(types)
        return scale_over_trace(
            shapes, histogram, shape_pods, buckets[index], prices[index], tick_hours,
            None if place is None else place(types),
        )

    current = tuple(order)
    current_scale = scale_of(current)
    steps = [Step(current, current_scale, accepted=True)]
    for gpu_tier in (False, True):
        while True:
            tier = [i for i in current if (buckets[i, 0] > 0) == gpu_tier]
            if not tier or len(current) == 1:
                break
            smallest = tier[0]
            trial = tuple(i for i in current if i != smallest)
            trial_scale = scale_of(trial)
            keeps = trial_scale.unbucketable_pods <= current_scale.unbucketable_pods and (
                trial_scale.total <= current_scale.total * (1 + SCALE_TOLERANCE)
            )
            steps.append(Step(trial, trial_scale, accepted=keeps))
            if not keeps:
                break
            current, current_scale = trial, trial_scale
    return Selection(tuple(steps))
