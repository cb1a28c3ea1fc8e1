"""The forecaster contract every model, backtest and service shares.

Decides: what a demand history is, what a forecast is, what a forecaster must
offer (scikit-learn style: `__init__` stores hyper-parameters only, `fit` returns
`self` and sets attributes ending in `_`, `predict` returns a `Forecast`), and
the checks every model runs its input through. Must not: read files, log, or know
any model's internals.

A *history* is a float64 array of shape (T, K): T consecutive ticks, K series
(buckets, or a single total). NaN marks a missing tick (a gap) and is never read
as zero. Negative or infinite values are refused (they are counts of nodes).

Ticks and phase: row 0 of a history is absolute tick `first_tick` (default 0).
Seasonal models (Holt-Winters with a season, the Transformer) use it to know the
time of day / week of each row. The default 0 is right whenever every history
given to one model starts at the same tick (a backtest passing `series[:t]`);
a service passing a trailing window passes `first_tick = window_start_seconds //
tick_seconds` to fit and predict alike (ticks since the Unix epoch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np

from common.errors import InputError

DEFAULT_QUANTILES: tuple[float, ...] = (0.9,)


class NotEnoughHistory(InputError):
    """The history is shorter than the model needs; `needed` and `got` are tick counts."""

    def __init__(
        self, model: str, needed: int, got: int, what: str = "predict", detail: str = ""
    ) -> None:
        super().__init__(
            f"{model}: {what} needs at least {needed} ticks of history, got {got}"
            + (f" ({detail})" if detail else "")
        )
        self.model = model
        self.needed = needed
        self.got = got


class NotFittedError(InputError):
    """`predict` was called on a forecaster that has not been fitted (or loaded)."""

    def __init__(self, model: str) -> None:
        super().__init__(f"{model}: not fitted yet; call fit() or load a saved model first")


@dataclass(frozen=True)
class Forecast:
    """A forecast for steps 1..H after the last history row, for K series.

    horizon_ticks: H, the number of ticks ahead the last row of `point` is.
    point: (H, K) point forecast (median-like; never negative).
    quantiles: level -> (H, K) forecast at that quantile level, step by step: row s-1
        is the level's quantile of the demand at tick s; a higher level is never lower
        than a lower one (never negative).
    peaks: level -> (H, K) the level's quantile of the *largest* demand over ticks
        1..s (row s-1): what placeholders must cover, since a pod arriving at any tick
        before the nodes are ready waits. Row s-1 is never below any per-step quantile
        of rows 0..s-1 (the most demand reaches up to s is at least its value at each
        tick), and rows never decrease with s. At q 0.9 the demand stays at or under
        `peaks[0.9][s-1]` over the whole of ticks 1..s at about 9 origins in 10, where
        the per-step quantiles cover each tick 9 times in 10 but the whole stretch less
        often.
    """

    horizon_ticks: int
    point: np.ndarray
    quantiles: Mapping[float, np.ndarray]
    peaks: Mapping[float, np.ndarray]

    def at(self, q: float | None = None, step: int | None = None) -> np.ndarray:
        """The (K,) forecast at quantile `q` (None = point) for `step` (default H)."""
        step = self.horizon_ticks if step is None else step
        if not 1 <= step <= self.horizon_ticks:
            raise InputError(f"forecast step {step} is outside 1..{self.horizon_ticks}")
        if q is None:
            return self.point[step - 1]
        for level, values in self.quantiles.items():
            if abs(level - q) < 1e-12:
                return values[step - 1]
        levels = ", ".join(f"{level:g}" for level in sorted(self.quantiles))
        raise InputError(f"no quantile {q:g} in this forecast (it has: {levels or 'none'})")

    def peak(self, q: float, step: int | None = None) -> np.ndarray:
        """The (K,) q-quantile of the most demand over steps 1..`step` (default H): the
        statistic placeholders are sized to (see `peaks`)."""
        step = self.horizon_ticks if step is None else step
        if not 1 <= step <= self.horizon_ticks:
            raise InputError(f"forecast step {step} is outside 1..{self.horizon_ticks}")
        for level, values in self.peaks.items():
            if abs(level - q) < 1e-12:
                return values[step - 1]
        levels = ", ".join(f"{level:g}" for level in sorted(self.peaks))
        raise InputError(f"no quantile {q:g} in this forecast (it has: {levels or 'none'})")

    def peak_path(self, q: float) -> np.ndarray:
        """(H, K) `peak(q, s)` for s = 1..H."""
        self.peak(q, 1)  # one error message for an absent level
        return next(v for level, v in self.peaks.items() if abs(level - q) < 1e-12)


@runtime_checkable
class Forecaster(Protocol):
    """What the backtest, the overprovisioner and the simulator call.

    Every implementation also sets, in `fit`: `n_series_` (K), `min_history_`
    (ticks `predict` needs) and its residual/quantile state; and `lookback_ticks_`
    when `predict` reads more of the recent history than it needs (see
    `lookback_ticks`).
    """

    name: str

    def fit(self, history: np.ndarray, first_tick: int = 0) -> Self:
        """Learn from `history` (T, K); raise NotEnoughHistory when T is too short."""
        ...

    def predict(
        self,
        history: np.ndarray,
        horizon_ticks: int,
        quantiles: Sequence[float] = DEFAULT_QUANTILES,
        first_tick: int = 0,
    ) -> Forecast:
        """Forecast steps 1..horizon_ticks after the last row of `history`.

        Uses only the most recent part of `history` the model needs, so a
        rolling backtest can fit rarely and predict often.
        """
        ...

    def min_history(self, for_fit: bool = False) -> int:
        """Ticks of history `predict` (or, with for_fit, `fit`) needs at least."""
        ...


def as_history(history: object, what: str = "history") -> np.ndarray:
    """Check and convert a history to float64 (T, K); a 1-D array becomes (T, 1).

    Raises InputError for a wrong shape, a negative or infinite value (naming row
    and column). NaN is allowed: it is a gap. Never mutates its input.
    """
    try:
        array = np.array(history, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as error:
        raise InputError(f"{what}: not numeric ({error})") from None
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise InputError(f"{what}: expected a (ticks, series) array, got shape {array.shape}")
    if array.shape[1] == 0:
        raise InputError(f"{what}: has no series (shape {array.shape})")
    bad = np.isinf(array) | (array < 0)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise InputError(
            f"{what}: row {row}, series {column} is {array[row, column]!r}; "
            "demand counts must be finite and >= 0 (use NaN for a missing tick)"
        )
    return array


def check_quantiles(quantiles: Sequence[float]) -> tuple[float, ...]:
    """Quantile levels as a sorted tuple of distinct floats strictly inside (0, 1)."""
    levels = tuple(sorted({float(q) for q in quantiles}))
    for q in levels:
        if not 0.0 < q < 1.0:
            raise InputError(f"quantile {q:g} is outside (0, 1)")
    return levels


def check_horizon(horizon_ticks: int, max_horizon: int, model: str) -> int:
    """A horizon 1..max_horizon (the longest horizon the model was fitted for)."""
    if int(horizon_ticks) != horizon_ticks or horizon_ticks < 1:
        raise InputError(f"{model}: horizon_ticks must be a positive integer, got {horizon_ticks}")
    if horizon_ticks > max_horizon:
        raise InputError(
            f"{model}: horizon {horizon_ticks} ticks is beyond max_horizon={max_horizon} "
            "it was built for; raise max_horizon and refit"
        )
    return int(horizon_ticks)


def check_series_count(history: np.ndarray, n_series: int, model: str) -> None:
    """Refuse a history with another number of series than the model was fitted on."""
    if history.shape[1] != n_series:
        raise InputError(
            f"{model}: fitted on {n_series} series, got a history with {history.shape[1]}"
        )


def check_predict_call(
    model: Any,
    fitted_attribute: str,
    history: object,
    horizon_ticks: int,
    quantiles: Sequence[float],
    needs_min_history: bool = False,
) -> tuple[np.ndarray, int, tuple[float, ...]]:
    """The checks every forecaster's `predict` runs first, in one place: fitted (has
    `fitted_attribute`), the history's shape and values, its series count, the horizon,
    the quantile levels and, with needs_min_history, at least `model.min_history_` ticks.

    Returns (history as float64 (T, K), horizon, sorted levels).
    """
    if not hasattr(model, fitted_attribute):
        raise NotFittedError(model.name)
    observed = as_history(history, f"{model.name} history")
    check_series_count(observed, model.n_series_, model.name)
    horizon = check_horizon(horizon_ticks, model.max_horizon_, model.name)
    levels = check_quantiles(quantiles)
    if needs_min_history and observed.shape[0] < model.min_history_:
        raise NotEnoughHistory(model.name, model.min_history_, observed.shape[0])
    return observed, horizon, levels


def lookback_ticks(model: Any) -> int:
    """How many of the most recent ticks `model.predict` reads; older rows change nothing.

    Callers that pass a window instead of the whole history (the simulator, for speed)
    must pass at least this many ticks: `min_history_` is only what predict *needs*, and
    a model that adapts to recent behaviour (last_adaptive's recent residuals) quietly
    falls back to its fit-time state when given less.
    """
    return int(getattr(model, "lookback_ticks_", model.min_history_))


def forward_fill(history: np.ndarray) -> np.ndarray:
    """Each NaN replaced by the last non-NaN value above it in its column (leading NaN stay).

    Used where a model needs a value to look up (the last value, a season ago);
    never used to make up residuals or training targets.
    """
    filled = history.copy()
    rows = np.arange(filled.shape[0])[:, None]
    index = np.where(np.isnan(filled), 0, rows)
    np.maximum.accumulate(index, axis=0, out=index)
    # Leading NaN point at row 0, itself NaN, so they stay NaN.
    return filled[index, np.arange(filled.shape[1])[None, :]]


def make_forecast(point: np.ndarray, quantiles: Mapping[float, np.ndarray],
                  peaks: Mapping[float, np.ndarray]) -> Forecast:
    """A Forecast with values clipped at 0, quantiles made monotone, arrays read-only.

    `peaks` (the models' estimates of the quantiles of the most demand over steps 1..s)
    are raised where needed to hold what the statistic guarantees: never below the
    per-step quantiles up to s, never decreasing in s, never decreasing in the level.
    An estimate breaking those is sampling noise (two quantiles from different
    origins), and the raise only ever adds headroom.
    """
    point = np.maximum(np.asarray(point, dtype=np.float64), 0.0)
    levels = sorted(quantiles)
    if sorted(peaks) != levels:
        raise InputError(f"forecast: peaks at levels {sorted(peaks)} but quantiles at {levels}")
    stacked = np.maximum(np.stack([np.asarray(quantiles[q], np.float64) for q in levels]), 0.0)
    peak = np.stack([np.asarray(peaks[q], np.float64) for q in levels])
    if stacked.size:
        stacked = np.maximum.accumulate(stacked, axis=0)
        peak = np.maximum(np.nan_to_num(peak, nan=0.0), stacked)
        peak = np.maximum.accumulate(np.maximum.accumulate(peak, axis=1), axis=0)
    point.setflags(write=False)
    frozen: dict[float, np.ndarray] = {}
    frozen_peaks: dict[float, np.ndarray] = {}
    for i, q in enumerate(levels):
        for target, block in ((frozen, stacked), (frozen_peaks, peak)):
            values = block[i].copy()
            values.setflags(write=False)
            target[q] = values
    return Forecast(horizon_ticks=point.shape[0], point=point, quantiles=frozen,
                    peaks=frozen_peaks)
