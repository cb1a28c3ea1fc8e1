"""KALE's worker estimator (SoCC 2024), pure: a training job's throughput model fitted
from its own measurements, and the least number of workers whose throughput exceeds a
forecast sample rate, stabilized over the horizon.

Decides:
- the model of samples per second at `w` workers, with non-negative thetas:
  synchronous  f(w) = M / (theta0 + theta1/w + theta2/w^2 + theta3*w)   (M: global batch)
  asynchronous f(w) = w / (theta0 + theta1/w + theta2*w);
- the fit: both are linear in theta once inverted (M/f, resp. w/f, is theta . [1, 1/w,
  1/w^2, w], resp. [1, 1/w, w]), so the thetas are the non-negative least-squares
  solution (scipy's NNLS) over the observed (workers, samples/s) pairs, each weighed by
  the inverse of its time (throughput is measured with a relative error). A fit needs at
  least as many distinct worker counts as it has thetas (4, resp. 3): fewer cannot tell
  the terms apart (all samples at one w fit any split of the time between them), and
  the error says how many more sizes to observe;
- the size: the least w in [minimum, maximum] with f(w) > rate; when no size keeps up,
  the least w of the highest f within the bounds, marked `short` (the job cannot keep up
  at any size it allows, and past its peak more workers only slow it: the synchronous
  model's theta3*w term);
- the plan over a forecast horizon: that size per forecast step, stabilized with
  `predictor.models.stabilize` (rho in workers, tau in steps), so a blip in the rate does
  not scale the job out and back in.

The worked example in KALE's paper: synchronous, M = 16,384, thetas (0.00035, 2.5726,
0.9824, 0.02786), 30,000 samples/s: f(9) = 29,840 falls short, f(10) = 30,005 does, so 10.

Must not: read metrics, talk to the cluster, read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from common.errors import InputError
from predictor.models.stabilize import stabilize

SYNCHRONOUS = "synchronous"
ASYNCHRONOUS = "asynchronous"
THETAS = {SYNCHRONOUS: 4, ASYNCHRONOUS: 3}


@dataclass(frozen=True)
class ThroughputModel:
    """Samples per second of a job at `w` workers (module docstring)."""

    mode: str
    thetas: tuple[float, ...]
    global_batch: float = 1.0
    """M, the synchronous model's global batch size (unused when asynchronous)."""

    def __post_init__(self) -> None:
        if self.mode not in THETAS:
            raise InputError(f"throughput model: mode {self.mode!r} is not one of "
                             f"{', '.join(THETAS)}")
        if len(self.thetas) != THETAS[self.mode]:
            raise InputError(f"throughput model: the {self.mode} model has "
                             f"{THETAS[self.mode]} thetas, got {len(self.thetas)}")
        if any(not np.isfinite(t) or t < 0 for t in self.thetas):
            raise InputError(f"throughput model: thetas must be finite and non-negative, "
                             f"got {self.thetas}")
        if self.mode == SYNCHRONOUS and not self.global_batch > 0:
            raise InputError(f"throughput model: the global batch must be positive, got "
                             f"{self.global_batch}")

    def rate(self, workers: np.ndarray | float) -> np.ndarray:
        """f(w), samples per second (inf where the model's time per sample is 0)."""
        w = np.asarray(workers, dtype=np.float64)
        features = _features(self.mode, w)
        time = features @ np.asarray(self.thetas)
        numerator = self.global_batch if self.mode == SYNCHRONOUS else w
        with np.errstate(divide="ignore"):
            return np.where(time > 0, numerator / np.where(time > 0, time, 1.0), np.inf)


def _features(mode: str, w: np.ndarray) -> np.ndarray:
    if mode == SYNCHRONOUS:
        return np.stack([np.ones_like(w), 1 / w, 1 / w**2, w], axis=-1)
    return np.stack([np.ones_like(w), 1 / w, w], axis=-1)


def fit(mode: str, workers: Sequence[float], rates: Sequence[float],
        global_batch: float = 1.0) -> ThroughputModel:
    """The thetas that best explain the observed (workers, samples/s) pairs; InputError
    naming what is wrong when the pairs cannot determine them."""
    if mode not in THETAS:
        raise InputError(f"throughput fit: mode {mode!r} is not one of {', '.join(THETAS)}")
    w = np.asarray(workers, dtype=np.float64)
    f = np.asarray(rates, dtype=np.float64)
    if w.shape != f.shape or w.ndim != 1:
        raise InputError(f"throughput fit: {w.size} worker counts for {f.size} rates")
    bad = ~(np.isfinite(w) & np.isfinite(f) & (w >= 1) & (f > 0))
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise InputError(f"throughput fit: sample {index} ({w[index]:g} workers, "
                         f"{f[index]:g} samples/s) is not a positive measurement")
    needed = THETAS[mode]
    distinct = np.unique(w).size
    if distinct < needed:
        raise InputError(
            f"throughput fit: the {mode} model needs samples at {needed} different worker "
            f"counts, got {distinct} ({', '.join(f'{v:g}' for v in np.unique(w))}): "
            "observe the job at more sizes")
    target = (global_batch if mode == SYNCHRONOUS else w) / f
    # Throughput is measured with a relative error: weigh each pair by 1/target, so the
    # fit minimises relative, not absolute, error in the time per sample.
    weights = 1.0 / target
    thetas, _ = nnls(_features(mode, w) * weights[:, None], target * weights)
    return ThroughputModel(mode, tuple(float(t) for t in thetas), global_batch)


@dataclass(frozen=True)
class Size:
    """The workers a rate needs: `short` when no allowed size keeps up (`workers` is then
    the fastest size)."""

    workers: int
    short: bool


def least_sufficient(model: ThroughputModel, rate: float, minimum: int, maximum: int
                     ) -> Size:
    """The least w in [minimum, maximum] with f(w) > rate (module docstring)."""
    if not 1 <= minimum <= maximum:
        raise InputError(f"worker bounds: need 1 <= minimum <= maximum, got {minimum}, "
                         f"{maximum}")
    sizes = np.arange(minimum, maximum + 1)
    enough = np.flatnonzero(model.rate(sizes) > rate)
    if enough.size:
        return Size(int(sizes[enough[0]]), False)
    return Size(int(sizes[int(np.argmax(model.rate(sizes)))]), True)


def planned_workers(model: ThroughputModel, forecast: Sequence[float], minimum: int,
                    maximum: int, rho: float = 1.0, tau_steps: int = 2) -> np.ndarray:
    """The stabilized worker count per forecast step (the rate forecast one step each)."""
    sizes = np.array([least_sufficient(model, float(r), minimum, maximum).workers
                      for r in forecast], dtype=np.float64)
    return stabilize(sizes, rho=rho, tau_ticks=tau_steps).astype(int)
