"""An arm repeated at other node start-up seeds: its median figures and their spread.

Decides, from one summary row per seed (`gangs.table.summarize`), the row the verdict
reads: each figure (`FIGURES`) the median over the seeds, `seeds` its value at each
seed, and `spread` its run-to-run noise, (largest - smallest) / median; the other
fields are the first seed's. The spread is what `verdict.band` widens a tie to.

Must not: run replays, read files, print.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

FIGURES = ("queue_mean_min", "queue_p95_min", "jct_mean_h", "jct_p95_h", "node_gpu_hours",
           "dollars")


def over_seeds(rows: Sequence[dict], seeds: Sequence[int]) -> dict:
    """The median row of one arm's `rows`, one per seed of `seeds`, in that order."""
    out = dict(rows[0])
    out["seed_list"] = list(seeds)
    out["seeds"], out["spread"] = {}, {}
    for key in FIGURES:
        values = [row[key] for row in rows]
        out["seeds"][key] = values
        if any(value is None for value in values):
            out[key] = out["spread"][key] = None
            continue
        middle = statistics.median(values)
        out[key] = round(middle, 3) + 0.0
        out["spread"][key] = round((max(values) - min(values)) / middle, 4) if middle else 0.0
    return out
