"""Stabilization of a planned series (docs/forecasters.md, "Stabilization": rho, tau).

Decides: which short-lived levels of a planned node count are smoothed away so
the autoscaler is not asked to scale up and down for a blip. Walk the series;
where consecutive values differ by at least `rho`, a new level starts; the level
runs while consecutive values differ by less than `rho`; if it lasts fewer than
`tau_ticks` ticks and a value follows it, it is replaced by the larger of its two
neighbours (the stabilized value before it and the value after it).

Consequences worth knowing: a short dip is filled up to its neighbours (no
scale-down then scale-up), a short spike is flattened down to the larger
neighbour, and a short step in a staircase is raised to the next step. A level at
the end of the series is kept: nothing says yet that it will not last, so pass
the forecast steps ahead as part of the series when you want the newest level
judged. Pure: never mutates its input, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from common.errors import ConfigError


@dataclass(frozen=True)
class StabilizeConfig:
    """How the planned series is stabilized.

    rho: smallest change between consecutive values (in nodes) that starts a new
        level; smaller wiggles belong to the current level. Default 1 node.
    tau_seconds: a new level lasting less than this is replaced by the larger of
        its neighbours. Default 600 s (10 minutes).
    """

    rho: float = 1.0
    tau_seconds: float = 600.0

    def tau_ticks(self, tick_seconds: float) -> int:
        """tau in whole ticks, rounded up (10 min at 5-min ticks = 2 ticks)."""
        if tick_seconds <= 0:
            raise ConfigError(f"stabilize: tick_seconds must be > 0, got {tick_seconds}")
        if self.rho <= 0 or self.tau_seconds < 0:
            raise ConfigError(
                f"stabilize: rho must be > 0 and tau_seconds >= 0, got rho={self.rho}, "
                f"tau_seconds={self.tau_seconds}")
        return max(0, math.ceil(self.tau_seconds / tick_seconds - 1e-9))


def stabilize(series: np.ndarray, rho: float = 1.0, tau_ticks: int = 2) -> np.ndarray:
    """The stabilized copy of a planned series: (T,) or (T, K), each column on its own."""
    values = np.asarray(series, dtype=np.float64)
    if values.ndim == 2:
        return np.column_stack([_stabilize_1d(values[:, k], rho, tau_ticks)
                                for k in range(values.shape[1])]).reshape(values.shape)
    if values.ndim != 1:
        raise ValueError(f"stabilize expects a (T,) or (T, K) series, got {values.shape}")
    return _stabilize_1d(values, rho, tau_ticks)


def _stabilize_1d(values: np.ndarray, rho: float, tau_ticks: int) -> np.ndarray:
    out = values.copy()
    n = len(values)
    start = 1
    while start < n:
        if not abs(values[start] - out[start - 1]) >= rho:
            start += 1
            continue
        end = start + 1  # the level runs over [start, end)
        while end < n and abs(values[end] - values[end - 1]) < rho:
            end += 1
        if end - start < tau_ticks and end < n:
            out[start:end] = max(out[start - 1], values[end])
        start = end
    return out
