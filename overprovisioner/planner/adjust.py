"""Turns each tick's quantile forecast into the value to plan for: fallback, then stabilization.

Decides, per series (bucket column) and tick, with state carried between ticks:
1. the reactive fallback (`predictor.models.fallback.step`; skipped when `fallback` is None):
   the forecast made `horizon` ticks ago for this tick is scored against what was
   recorded now; a series whose recent mean shortfall is too large plans for the
   demand seen now (what a reactive autoscaler provisions) until the forecaster
   recovers;
2. stabilization (`predictor.models.stabilize`, rho and tau): the series of values planned for
   consecutive target ticks (the ones already planned, then this tick's forecast for
   the horizon and `tau` steps beyond it) is stabilized, and the value for the horizon
   is taken from it. So a level the forecast expects to last less than tau (a blip up
   or down) does not make cluster-autoscaler launch or drain nodes.

Targets are absolute tick numbers (time / tick seconds), so restarts and gaps do not
misalign anything; a change of the column list resets the state; the same tick adjusted
twice in a row replaces its first step.

Must not: read the clock, log, or call the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from predictor.models.fallback import (
    FallbackConfig,
    FallbackDecision,
    FallbackState,
    initial_state,
    step,
)
from predictor.models.stabilize import stabilize


@dataclass(frozen=True)
class Adjusted:
    """planned: (K,) values to plan for at the horizon; reactive: per series, fallback on;
    mean_shortfall: (K,) the fallback window's mean shortfall in nodes."""

    planned: np.ndarray
    reactive: tuple[bool, ...]
    mean_shortfall: np.ndarray


@dataclass
class ForecastAdjuster:
    """State across ticks for fallback and stabilization (one per service).

    fallback: None = no fallback (every series follows the forecast); tau_ticks 0 = no
    stabilization.
    """

    horizon_ticks: int
    tau_ticks: int
    rho: float
    fallback: FallbackConfig | None = field(default_factory=FallbackConfig)
    columns: tuple[str, ...] = ()
    state: FallbackState | None = None
    predicted: dict[int, np.ndarray] = field(default_factory=dict)  # target tick -> (K,)
    planned: dict[int, np.ndarray] = field(default_factory=dict)  # target tick -> (K,)
    # The last tick adjusted and the state before it, so that the same tick run again
    # (the loop re-runs a tick when leadership arrives mid-tick) replaces that step
    # instead of being scored a second time.
    _last_tick: int | None = field(default=None, init=False, repr=False)
    _before_last: tuple[FallbackState | None, dict[int, np.ndarray],
                        dict[int, np.ndarray]] | None = field(default=None, init=False,
                                                               repr=False)

    @property
    def steps(self) -> int:
        """Forecast steps to ask for: the horizon plus tau beyond it."""
        return self.horizon_ticks + self.tau_ticks

    def adjust(
        self, columns: Sequence[str], tick: int, actual_now: np.ndarray, ahead: np.ndarray
    ) -> Adjusted:
        """ahead: (S, K) quantile forecast for steps 1..S (S >= horizon); actual_now: (K,)."""
        columns = tuple(columns)
        if tick == self._last_tick and columns == self.columns and self._before_last:
            self.state, predicted, planned = self._before_last
            self.predicted, self.planned = dict(predicted), dict(planned)
        if columns != self.columns or self.state is None:
            self.columns = columns
            self.state = initial_state(len(columns))
            self.predicted, self.planned = {}, {}
        self._last_tick = tick
        self._before_last = (self.state, dict(self.predicted), dict(self.planned))
        ahead = np.asarray(ahead, dtype=np.float64)
        horizon = self.horizon_ticks
        at_horizon = ahead[horizon - 1]
        predicted_now = self.predicted.pop(tick, np.full(len(columns), np.nan))
        if self.fallback is not None:
            self.state, decision = step(self.state, predicted_now, actual_now, at_horizon,
                                        self.fallback)
        else:
            decision = FallbackDecision(at_horizon.copy(), (False,) * len(columns),
                                        np.zeros(len(columns)))
        target = tick + horizon
        self.predicted[target] = at_horizon
        planned = decision.planned.copy()
        if self.tau_ticks > 0:
            past = self._past_planned(target)
            for k, reactive in enumerate(decision.reactive):
                if reactive:
                    continue
                series = np.concatenate([past[:, k], ahead[horizon - 1:, k]])
                planned[k] = stabilize(series, self.rho, self.tau_ticks)[len(past)]
        self.planned[target] = planned
        for old in [t for t in self.planned if t < target - self.tau_ticks - 1]:
            del self.planned[old]
        for old in [t for t in self.predicted if t <= tick]:
            del self.predicted[old]
        return Adjusted(planned, decision.reactive, decision.mean_shortfall)

    def _past_planned(self, target: int) -> np.ndarray:
        """Planned values for the targets right before `target`, contiguous, oldest first."""
        rows = []
        for earlier in range(target - 1, target - self.tau_ticks - 2, -1):
            if earlier not in self.planned:
                break
            rows.append(self.planned[earlier])
        return np.array(rows[::-1]).reshape(len(rows), len(self.columns))
