"""The forecaster's history when known demand is on: observed demand minus announced demand.

Decides the rule of `predictor.known.combine` (4) on a recorded series: per tick and
bucket column, observed nodes less the nodes of pods that were announced ahead,
never below zero; gap ticks stay gaps. Both are rounded-up embeddings of their own pods,
so the difference is exact to within one node per bucket column. Totals are left as
observed (they are not forecast).

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from common.errors import InputError
from predictor.history.series import DemandSeries


def unannounced(series: DemandSeries, announced: np.ndarray) -> DemandSeries:
    """`series` with `announced` ((T, K), aligned with its ticks and columns) taken off."""
    counts = series.counts.to_numpy(dtype=np.float64)
    announced = np.asarray(announced, dtype=np.float64)
    if announced.shape != counts.shape:
        raise InputError(f"{series.source}: announced demand {announced.shape} does not match "
                         f"the history {counts.shape}")
    rest = np.clip(counts - announced, 0.0, None)  # NaN (a gap) stays NaN
    frame = pd.DataFrame(rest, index=series.counts.index, columns=series.counts.columns)
    return DemandSeries(series.tick_s, frame, series.totals, series.source)
