"""The torch module behind the Transformer forecaster (no data handling here).

Decides: the network. An encoder-decoder `nn.Transformer` over all K series
jointly. A linear input layer maps values plus periodic time features to
d_model, and the positional encoding is the research's sum_i sin(2 pi pos /
period_i) over the seasonal periods (absolute tick positions, so it carries the
time of day and week). The decoder sees the last `label_ticks` context ticks, one
token each, followed by one zero token per target step, with a look-ahead
(causal) mask; the whole horizon comes out of one pass (no autoregressive loop,
so predict costs one forward call).

One departure from the research: the encoder reads the context in patches of
`patch_ticks` ticks (one token = the K series over p ticks), not one token per
tick. Per-tick attention over a day of 5-minute ticks cost over a second per
training step on the 2 shared CPU cores here; patches of 12 make it 144x smaller
(24 x 24 instead of 288 x 288 attention) and keep the whole day in view.

Output: per target step and series, the change from the last observed value in
scaled units at each quantile level. The median is one output; higher levels add
softplus increments and lower levels subtract them, so quantiles never cross.
Must not: read files, pick devices, or touch global random state.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def _angle(positions: torch.Tensor, period: int) -> torch.Tensor:
    """2 pi pos / period, taken modulo the period first: absolute tick numbers
    (millions since the epoch) would lose their phase in float32."""
    return (2.0 * math.pi / float(period)) * torch.remainder(positions, period).float()


def time_features(positions: torch.Tensor, periods: tuple[int, ...]) -> torch.Tensor:
    """(..., 2 * len(periods)) sin and cos of 2 pi pos / period for each period."""
    angles = [_angle(positions, period) for period in periods]
    return torch.stack([f(a) for a in angles for f in (torch.sin, torch.cos)], dim=-1)


def periodic_encoding(positions: torch.Tensor, periods: tuple[int, ...]) -> torch.Tensor:
    """(..., 1) the research's positional encoding: sum_i sin(2 pi pos / period_i)."""
    total = torch.zeros_like(positions, dtype=torch.float32)
    for period in periods:
        total = total + torch.sin(_angle(positions, period))
    return total.unsqueeze(-1)


class DemandTransformer(nn.Module):
    """Encoder-decoder Transformer mapping a context window to quantile deltas.

    forward(context (B, C, K), context_pos (B, C), label (B, L, K), target_pos (B, L + H))
    -> (B, H, K, n_levels) in level order. C must be a multiple of patch_ticks.
    """

    def __init__(self, n_series: int, periods: tuple[int, ...], horizon: int,
                 levels: tuple[float, ...], patch_ticks: int = 12, d_model: int = 32,
                 n_heads: int = 4, n_layers: int = 2, dim_feedforward: int = 64,
                 dropout: float = 0.2) -> None:
        super().__init__()
        self.n_series = n_series
        self.periods = tuple(periods)
        self.horizon = horizon
        self.levels = tuple(levels)
        self.median_index = self.levels.index(0.5)
        self.patch_ticks = patch_ticks
        n_time = 2 * len(self.periods)
        self.patch_input = nn.Linear(patch_ticks * n_series + n_time, d_model)
        self.input = nn.Linear(n_series + n_time, d_model)
        self.transformer = nn.Transformer(
            d_model=d_model, nhead=n_heads, num_encoder_layers=n_layers,
            num_decoder_layers=n_layers, dim_feedforward=dim_feedforward,
            dropout=dropout, batch_first=True)
        self.head = nn.Linear(d_model, n_series * len(self.levels))

    def _embed(self, values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        features = torch.cat([values, time_features(positions, self.periods)], dim=-1)
        return self.input(features) + periodic_encoding(positions, self.periods)

    def _embed_patches(self, values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Tokens of patch_ticks ticks each, positioned at their last tick."""
        batch, n_ticks, _ = values.shape
        n_patches = n_ticks // self.patch_ticks
        patches = values.reshape(batch, n_patches, self.patch_ticks * self.n_series)
        ends = positions[:, self.patch_ticks - 1 :: self.patch_ticks]
        features = torch.cat([patches, time_features(ends, self.periods)], dim=-1)
        return self.patch_input(features) + periodic_encoding(ends, self.periods)

    def forward(self, context: torch.Tensor, context_pos: torch.Tensor,
                label: torch.Tensor, target_pos: torch.Tensor) -> torch.Tensor:
        batch = context.shape[0]
        zeros = context.new_zeros(batch, self.horizon, self.n_series)
        decoder_values = torch.cat([label, zeros], dim=1)
        source = self._embed_patches(context, context_pos)
        target = self._embed(decoder_values, target_pos)
        mask = nn.Transformer.generate_square_subsequent_mask(
            target.shape[1], device=target.device, dtype=target.dtype)
        hidden = self.transformer(source, target, tgt_mask=mask, tgt_is_causal=True)
        raw = self.head(hidden[:, -self.horizon:])
        raw = raw.view(batch, self.horizon, self.n_series, len(self.levels))
        return self._monotone(raw)

    def _monotone(self, raw: torch.Tensor) -> torch.Tensor:
        m = self.median_index
        median = raw[..., m : m + 1]
        above = median + torch.cumsum(nn.functional.softplus(raw[..., m + 1 :]), dim=-1)
        below_steps = torch.cumsum(nn.functional.softplus(raw[..., :m].flip(-1)), dim=-1)
        below = (median - below_steps).flip(-1)
        return torch.cat([below, median, above], dim=-1)


def pinball(prediction: torch.Tensor, target: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    """Mean pinball loss; prediction (B, H, K, L), target (B, H, K) with NaN = skip."""
    observed = ~torch.isnan(target)
    error = torch.nan_to_num(target).unsqueeze(-1) - prediction
    loss = torch.maximum(levels * error, (levels - 1.0) * error)
    weight = observed.unsqueeze(-1).to(loss.dtype)
    return (loss * weight).sum() / (weight.sum() * loss.shape[-1]).clamp_min(1.0)
