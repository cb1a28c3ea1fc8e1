"""Cold-start ladder: what to plan while the history is shorter than the model needs.

Decides: the planned count per bucket before a forecaster can run. The plan is
the demand observed now (the last observed tick; a bucket never observed counts
as 0 there, it has no history to be wrong about) plus a static per-bucket
headroom from config, e.g. one node of each of the smallest GPU buckets, so the
first jobs find a warm node. Once `history_ticks >= needed_ticks` the ladder
steps aside and the forecaster plans.

Pure: plain data in, plain data out; the bucket list and counts come from config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from common.errors import ConfigError, InputError
from predictor.models.forecast import as_history, forward_fill


@dataclass(frozen=True)
class LadderConfig:
    """Static headroom used until the forecaster has enough history.

    headroom: bucket name -> nodes planned on top of the current demand during
        cold start. Buckets not named get 0. Default: empty (the service's default
        config fills it with `default_headroom`).
    """

    headroom: Mapping[str, int] = field(default_factory=dict)

    def validate(self, bucket_names: Sequence[str]) -> None:
        unknown = sorted(set(self.headroom) - set(bucket_names))
        if unknown:
            raise ConfigError(
                f"ladder.headroom names unknown buckets {unknown}; buckets are "
                f"{list(bucket_names)}")
        for name, count in self.headroom.items():
            if int(count) != count or count < 0:
                raise ConfigError(f"ladder.headroom.{name} must be a whole number >= 0, "
                                  f"got {count!r}")


@dataclass(frozen=True)
class ColdStart:
    """active: the ladder is in charge (history too short); planned: (K,) nodes;
    reason: one line for logs and /plan."""

    active: bool
    planned: np.ndarray
    reason: str


def default_headroom(gpus_per_bucket: Mapping[str, int], smallest: int = 2) -> dict[str, int]:
    """One node of each of the `smallest` GPU buckets (fewest GPUs first, then name)."""
    gpu_buckets = sorted((gpus, name) for name, gpus in gpus_per_bucket.items() if gpus > 0)
    return {name: 1 for _, name in gpu_buckets[:smallest]}


def cold_start(bucket_names: Sequence[str], history: np.ndarray, needed_ticks: int,
               config: LadderConfig) -> ColdStart:
    """The ladder's plan while len(history) < needed_ticks; inactive afterwards.

    history: (T, K) bucket counts so far (T may be 0), columns in bucket_names order.
    needed_ticks: what the forecaster needs, e.g. `model.min_history(for_fit=True)`.
    """
    config.validate(bucket_names)
    n_series = len(bucket_names)
    observed = (np.zeros((0, n_series)) if np.size(history) == 0
                else as_history(history, "cold-start history"))
    if observed.shape[1] != n_series:
        raise InputError(f"cold start: {n_series} buckets but history has "
                         f"{observed.shape[1]} series")
    n_ticks = observed.shape[0]
    headroom = np.array([float(config.headroom.get(name, 0)) for name in bucket_names])
    if n_ticks >= needed_ticks:
        return ColdStart(False, np.zeros(n_series),
                         f"history {n_ticks} ticks >= {needed_ticks} needed: forecasting")
    current = forward_fill(observed)[-1] if n_ticks else np.full(n_series, np.nan)
    current = np.nan_to_num(current, nan=0.0)
    return ColdStart(True, current + headroom,
                     f"cold start: history {n_ticks} of {needed_ticks} ticks; planning "
                     "current demand plus the static ladder")
