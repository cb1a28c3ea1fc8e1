"""The Transformer forecaster: sliding-window training, quantile forecasts.

Decides: how a (T, K) history becomes training windows, how series are scaled,
how the network (`transformer_model.DemandTransformer`) is trained (Adam with
betas (0.9, 0.98), eps 1e-9, linear warm-up then inverse-square-root decay,
pinball loss over `levels`) and how its output becomes a `Forecast`.

Choices worth knowing:
- Per-series scaling by the training mean and standard deviation.
- The network predicts the change from the last observed value (a skip
  connection from "last value", the hard baseline on real traces), so an
  untrained network already forecasts like last value.
- Calibration: the last `calibration_fraction` of the fit history is held out of
  training; on it each level's spread from the median is scaled (per step) so
  the level covers its share of the held-out targets (split-conformal scaling,
  `quantiles.spread_factors`). The pinball head alone fell short on 11-17% of
  ticks at q0.9 on the real traces depending on the run.
- Peaks (`Forecast.peaks`, the quantile of the most demand over steps 1..h): the
  median path's running maximum plus the quantiles of the held-out
  `quantiles.peak_excess`; without a held-out part (a short fit history) the
  per-step quantiles' running maximum, which covers the whole horizon less often
  than the level asks.
- Quantiles other than the trained `levels` are interpolated linearly between
  neighbouring levels; one outside the trained range is an InputError.
- Gaps: inputs are forward-filled (leading gaps read as the series' training
  mean); targets that are missing are left out of the loss, never read as zero.
- Reproducible: all randomness (initial weights, dropout, window sampling) comes
  from `seed` inside `torch.random.fork_rng`, so the caller's global torch state is
  untouched and two fits with one seed on one device give the same model.
- Threads: torch's intra-op thread count is set to `threads` (default 1) for the
  duration of fit and predict and restored afterwards; with 2 threads on 2 busy
  shared cores training ran 5-10x slower than with 1. None leaves torch's setting.
Must not: read files or log.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Self

import numpy as np
import torch

from common.errors import InputError
from predictor.models.forecast import (
    DEFAULT_QUANTILES,
    Forecast,
    NotEnoughHistory,
    as_history,
    check_predict_call,
    forward_fill,
    make_forecast,
)
from predictor.models.quantiles import (
    offsets_at,
    peak_excess,
    residual_quantile_grid,
    spread_factors,
)
from predictor.models.transformer_model import DemandTransformer, pinball

MIN_CALIBRATION_ORIGINS = 50


def resolve_device(device: str | None) -> str:
    """`device` as given, or "cuda" when a GPU is visible, else "cpu"."""
    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to `threads` inside the block, then restored."""
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, int(threads)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class TransformerForecaster:
    """Encoder-decoder Transformer over all series jointly (docs/forecasters.md, "Transformer").

    periods_ticks: seasonal periods for the positional encoding (288, 2016 = day,
        week at 5-minute ticks).
    context_ticks: ticks the encoder reads (also the least history predict needs).
    max_horizon: steps the decoder outputs (the longest horizon predict serves).
    label_ticks: last context ticks the decoder sees before the target tokens.
    patch_ticks: ticks per encoder token (context_ticks must be a multiple).
    levels: quantile levels the head is trained for (0.5 is added: the point).
    d_model, n_heads, n_layers, dim_feedforward, dropout: network size.
    train_steps, batch_size, learning_rate, warmup_steps: training schedule
        (a fixed number of optimizer steps, so training time does not grow with T).
    calibration_fraction: share of the fit history (its end) held out to calibrate
        the quantile spreads; 0 = off (also skipped when too short to be useful).
    seed: seeds weights, dropout and window sampling.
    device: "cpu", "cuda", or None = cuda when available.
    threads: torch intra-op threads during fit/predict (restored after); None = as set.
    """

    name = "transformer"

    def __init__(self, periods_ticks: tuple[int, ...] = (288, 2016), context_ticks: int = 288,
                 max_horizon: int = 12, label_ticks: int = 12, patch_ticks: int = 12,
                 levels: tuple[float, ...] = (0.1, 0.5, 0.8, 0.9, 0.95, 0.99),
                 d_model: int = 32, n_heads: int = 4, n_layers: int = 2,
                 dim_feedforward: int = 64, dropout: float = 0.2, train_steps: int = 1500,
                 batch_size: int = 32, learning_rate: float = 1e-3, warmup_steps: int = 100,
                 calibration_fraction: float = 0.1, seed: int = 0,
                 device: str | None = None, threads: int | None = 1) -> None:
        self.periods_ticks = periods_ticks
        self.context_ticks = context_ticks
        self.max_horizon = max_horizon
        self.label_ticks = label_ticks
        self.patch_ticks = patch_ticks
        self.levels = levels
        self.d_model = d_model
        self.n_heads = n_heads
        self.n_layers = n_layers
        self.dim_feedforward = dim_feedforward
        self.dropout = dropout
        self.train_steps = train_steps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.warmup_steps = warmup_steps
        self.calibration_fraction = calibration_fraction
        self.seed = seed
        self.device = device
        self.threads = threads

    def min_history(self, for_fit: bool = False) -> int:
        """predict: one context window; fit: a context window plus a full horizon."""
        return self.context_ticks + self.max_horizon if for_fit else self.context_ticks

    def build_module(self, n_series: int) -> DemandTransformer:
        """An untrained network for n_series series (fit and persist.load use it)."""
        levels = tuple(sorted({float(q) for q in self.levels} | {0.5}))
        for q in levels:
            if not 0.0 < q < 1.0:
                raise InputError(f"transformer: level {q:g} is outside (0, 1)")
        if self.label_ticks > self.context_ticks:
            raise InputError("transformer: label_ticks must be <= context_ticks")
        if self.patch_ticks < 1 or self.context_ticks % self.patch_ticks:
            raise InputError(f"transformer: context_ticks {self.context_ticks} must be a "
                             f"multiple of patch_ticks {self.patch_ticks}")
        return DemandTransformer(
            n_series=n_series, periods=tuple(int(p) for p in self.periods_ticks),
            horizon=self.max_horizon, levels=levels, patch_ticks=self.patch_ticks,
            d_model=self.d_model,
            n_heads=self.n_heads, n_layers=self.n_layers,
            dim_feedforward=self.dim_feedforward, dropout=self.dropout)

    def fit(self, history: np.ndarray, first_tick: int = 0) -> Self:
        with torch_threads(self.threads):
            return self._fit(history, first_tick)

    def _fit(self, history: np.ndarray, first_tick: int) -> Self:
        observed = as_history(history, "transformer fit history")
        n_ticks, n_series = observed.shape
        needed = self.min_history(for_fit=True)
        if n_ticks < needed:
            raise NotEnoughHistory(self.name, needed, n_ticks, "fit")
        if np.isnan(observed).all(axis=0).any():
            series = int(np.argmax(np.isnan(observed).all(axis=0)))
            raise NotEnoughHistory(self.name, needed, 0, "fit",
                                   f"series {series} has no observed tick")
        held_out = int(n_ticks * self.calibration_fraction)
        if held_out < self.max_horizon + MIN_CALIBRATION_ORIGINS or n_ticks - held_out < needed:
            held_out = 0
        train_end = n_ticks - held_out
        loc = np.nanmean(observed[:train_end], axis=0)
        loc = np.where(np.isnan(loc), np.nanmean(observed, axis=0), loc)
        scale = np.nanstd(observed[:train_end], axis=0)
        scale = np.where(scale > 1e-9, scale, 1.0)
        device = resolve_device(self.device)
        scaled_input = self._scaled_input(observed, loc, scale)
        scaled_target = (observed - loc) / scale
        with torch.random.fork_rng(devices=[] if device == "cpu" else None):
            torch.manual_seed(self.seed)
            module = self.build_module(n_series).to(device)
            losses = self._train(module, scaled_input[:train_end], scaled_target[:train_end],
                                 first_tick, device)
        module.eval()
        factors = np.ones((self.max_horizon, len(module.levels)))
        peak_grid = None
        if held_out:
            origins = np.arange(max(self.context_ticks - 1, train_end - 1),
                                n_ticks - self.max_horizon)
            delta = self._held_out_outputs(module, scaled_input, origins, first_tick, device)
            rows = origins[:, None] + np.arange(1, self.max_horizon + 1)[None, :]
            truth = scaled_target[rows] - scaled_input[origins][:, None, :]
            factors = spread_factors(delta, truth, module.levels, module.median_index)
            median = delta[..., module.median_index]  # (N, H, K), scaled change from last
            peak_grid = residual_quantile_grid(
                peak_excess(truth.transpose(1, 0, 2), median.transpose(1, 0, 2)))
        self.calibration_ = factors
        self.peak_grid_ = peak_grid
        self.held_out_ticks_ = held_out
        self.module_ = module
        self.device_ = device
        self.levels_ = module.levels
        self.loc_ = loc
        self.scale_ = scale
        self.n_series_ = n_series
        self.max_horizon_ = self.max_horizon
        self.min_history_ = self.min_history()
        self.fit_first_tick_ = int(first_tick)
        self.fit_n_ticks_ = int(n_ticks)
        self.train_loss_ = float(np.mean(losses[-max(1, len(losses) // 10):]))
        return self

    @staticmethod
    def _scaled_input(observed: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> np.ndarray:
        filled = forward_fill(observed)
        filled = np.where(np.isnan(filled), loc, filled)  # leading gaps: the mean
        return (filled - loc) / scale

    def _held_out_outputs(self, module: DemandTransformer, scaled_input: np.ndarray,
                          origins: np.ndarray, first_tick: int, device: str) -> np.ndarray:
        """(N, H, K, L) the network's outputs at the given origins, in batches."""
        inputs = torch.as_tensor(scaled_input, dtype=torch.float32, device=device)
        outputs = []
        with torch.inference_mode():
            for start in range(0, len(origins), 256):
                origin = torch.as_tensor(origins[start : start + 256], device=device)
                outputs.append(module(*self._window(inputs, origin, first_tick)[0]).cpu())
        return torch.cat(outputs).double().numpy()

    def _window(self, inputs: torch.Tensor, origin: torch.Tensor, first_tick: int):
        """Network arguments for windows ending at `origin` rows, and the target rows."""
        device = inputs.device
        rows = origin[:, None] + torch.arange(-self.context_ticks + 1, 1, device=device)
        target_rows = origin[:, None] + torch.arange(1, self.max_horizon + 1, device=device)
        label_rows = rows[:, -self.label_ticks:]
        arguments = (inputs[rows], first_tick + rows, inputs[label_rows],
                     first_tick + torch.cat([label_rows, target_rows], 1))
        return arguments, target_rows

    def _train(self, module: DemandTransformer, scaled_input: np.ndarray,
               scaled_target: np.ndarray, first_tick: int, device: str) -> list[float]:
        inputs = torch.as_tensor(scaled_input, dtype=torch.float32, device=device)
        targets = torch.as_tensor(scaled_target, dtype=torch.float32, device=device)
        n_ticks = inputs.shape[0]
        origins = torch.arange(self.context_ticks - 1, n_ticks - self.max_horizon, device=device)
        levels = torch.tensor(module.levels, dtype=torch.float32, device=device)
        optimizer = torch.optim.Adam(module.parameters(), lr=self.learning_rate,
                                     betas=(0.9, 0.98), eps=1e-9)
        warmup = max(1, self.warmup_steps)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min((step + 1) / warmup, (warmup / (step + 1)) ** 0.5))
        generator = torch.Generator(device="cpu").manual_seed(self.seed)
        module.train()
        losses: list[float] = []
        for _ in range(self.train_steps):
            pick = torch.randint(len(origins), (self.batch_size,), generator=generator)
            origin = origins[pick.to(device)]
            arguments, target_rows = self._window(inputs, origin, first_tick)
            last = inputs[origin].unsqueeze(1)
            prediction = module(*arguments)
            loss = pinball(prediction, targets[target_rows] - last, levels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(float(loss.detach()))
        return losses

    def predict(
        self,
        history: np.ndarray,
        horizon_ticks: int,
        quantiles: Sequence[float] = DEFAULT_QUANTILES,
        first_tick: int = 0,
    ) -> Forecast:
        with torch_threads(self.threads):
            return self._predict(history, horizon_ticks, quantiles, first_tick)

    def _predict(self, history: np.ndarray, horizon_ticks: int, quantiles: Sequence[float],
                 first_tick: int) -> Forecast:
        observed, horizon, requested = check_predict_call(
            self, "module_", history, horizon_ticks, quantiles
        )
        low, high = self.levels_[0], self.levels_[-1]
        for q in requested:
            if not low <= q <= high:
                raise InputError(f"transformer: quantile {q:g} is outside the trained levels "
                                 f"{low:g}..{high:g}; refit with it in `levels`")
        n_ticks = observed.shape[0]
        if n_ticks < self.context_ticks:
            raise NotEnoughHistory(self.name, self.context_ticks, n_ticks)
        window = observed[-self.context_ticks:]
        if np.isnan(window).all(axis=0).any():
            series = int(np.argmax(np.isnan(window).all(axis=0)))
            raise NotEnoughHistory(self.name, self.context_ticks, n_ticks, "predict",
                                   f"series {series} has no observed tick in the last "
                                   f"{self.context_ticks}")
        scaled = self._scaled_input(window, self.loc_, self.scale_)
        start = first_tick + n_ticks - self.context_ticks
        rows = torch.arange(self.context_ticks, device=self.device_)[None, :] + start
        target_rows = rows[:, -1:] + torch.arange(1, self.max_horizon + 1,
                                                  device=self.device_)[None, :]
        label = self.label_ticks
        with torch.inference_mode():
            inputs = torch.as_tensor(scaled, dtype=torch.float32, device=self.device_)[None]
            delta = self.module_(inputs, rows, inputs[:, -label:],
                                 torch.cat([rows[:, -label:], target_rows], 1))
        delta = delta[0, :horizon].double().cpu().numpy()  # (H, K, L)
        median = delta[..., self.levels_.index(0.5)][..., None]
        delta = median + self.calibration_[:horizon, None, :] * (delta - median)
        last = forward_fill(window)[-1]
        values = last[None, :, None] + delta * self.scale_[None, :, None]
        levels = np.asarray(self.levels_)
        point = values[..., self.levels_.index(0.5)]
        quantiles = {q: _interpolate(values, levels, q) for q in requested}
        peaks = quantiles  # raised to their running maximum by make_forecast
        if self.peak_grid_ is not None:
            most = np.maximum.accumulate(median[..., 0], axis=0)
            peaks = {q: last + (most + offsets_at(self.peak_grid_, q, horizon)) * self.scale_
                     for q in requested}
        return make_forecast(point, quantiles, peaks)


def _interpolate(values: np.ndarray, levels: np.ndarray, q: float) -> np.ndarray:
    """(H, K) value at level q, linear between the trained levels around it."""
    upper = int(np.clip(np.searchsorted(levels, q), 1, len(levels) - 1))
    lower = upper - 1
    weight = (q - levels[lower]) / (levels[upper] - levels[lower])
    return (1.0 - weight) * values[..., lower] + weight * values[..., upper]
