"""The `--max-types` trim: cut a bucket list to at most N types, a list a user can run.

Each type is a node group to create, watch and pay a minimum for, and a series the
overprovisioner forecasts; base-instance selection only drops small types whose
demand bigger ones absorb for free, so on a mixed trace it keeps 17 or more.

Decides: which types to drop. Greedy, one type at a time, until N are left: try
dropping each type of the list and take the drop that leaves the fewest pods
unbucketable, then the one whose list needs the lowest scale (embedded counts x
price over the trace, as base-instance selection measures it), then the smallest type
(first in the list). A GPU model some pod still asks for thus keeps a type for as
long as another drop is possible, because losing it leaves those pods out. The last
GPU-less type is kept while GPU-less pods exist (unless N is 1): without it the fit
rule (`bucketing.fit`) would move parameter servers onto tainted GPU nodes, which a
cluster with GPU-less node groups does not do.

Bounds: greedy, not an exhaustive search over subsets (a pair dropped together can
beat the two best single drops); O(B^2) scale evaluations.

Must not: read files, log, or mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bucketing.base_instance import ScaleResult, scale_over_trace


@dataclass(frozen=True)
class Drop:
    """One step of the trim: the type dropped (index into the caller's list) and the
    list left, as increasing indices, with its scale."""

    dropped: int
    types: tuple[int, ...]
    scale: ScaleResult


def trim_types(
    start: tuple[int, ...],
    max_types: int,
    shapes: np.ndarray,
    histogram: np.ndarray,
    shape_pods: np.ndarray,
    buckets: np.ndarray,
    prices: np.ndarray,
    tick_hours: float,
    place: Callable[[tuple[int, ...]], np.ndarray],
) -> tuple[Drop, ...]:
    """The drops from `start` (indices into buckets/prices) down to `max_types` types.

    place(types): (S,) each shape's position within `types`, -1 = none (the fit rule).
    """
    if max_types < 1:
        raise ValueError("max_types must be at least 1")
    buckets = np.asarray(buckets, dtype=np.float64)
    prices = np.asarray(prices, dtype=np.float64)
    gpu_less = buckets[:, 0] == 0
    has_cpu_pods = bool(np.asarray(shape_pods)[np.asarray(shapes)[:, 0] == 0].sum() > 0)

    def scale_of(types: tuple[int, ...]) -> ScaleResult:
        index = list(types)
        return scale_over_trace(shapes, histogram, shape_pods, buckets[index], prices[index],
                                tick_hours, place(types))

    current = tuple(start)
    drops: list[Drop] = []
    while len(current) > max_types:
        droppable = list(current)
        cpu_types = [i for i in current if gpu_less[i]]
        if has_cpu_pods and len(cpu_types) == 1 and max_types >= 2:
            droppable.remove(cpu_types[0])
        best: tuple[tuple[int, float, int], Drop] | None = None
        for position, index in enumerate(droppable):
            trial = tuple(i for i in current if i != index)
            scale = scale_of(trial)
            key = (scale.unbucketable_pods, scale.total, position)
            if best is None or key < best[0]:
                best = (key, Drop(index, trial, scale))
        if best is None:  # unreachable: len(current) > max_types >= 1 leaves a droppable
            break
        drops.append(best[1])
        current = best[1].types
    return tuple(drops)
