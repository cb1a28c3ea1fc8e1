"""The Transformer's own behaviour: encoding, causal decoder, quantile head, seeding.

Kept tiny (a 24-tick context, a few training steps) so it runs in seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from common.errors import InputError
from predictor.models.baselines import LastValue
from predictor.models.quantiles import spread_factors
from predictor.models.transformer import TransformerForecaster, resolve_device
from predictor.models.transformer_model import (
    DemandTransformer,
    periodic_encoding,
    pinball,
    time_features,
)
from tests.predictor.models.test_forecasters import TINY_TRANSFORMER, make_history


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny models run faster on one thread, and the 2 cores here are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny(**overrides) -> TransformerForecaster:
    return TransformerForecaster(**{**TINY_TRANSFORMER, "max_horizon": 3, **overrides})


@pytest.mark.parametrize(
    "position, periods, expected",
    [
        (72, (288,), 1.0),  # sin(2 pi 72 / 288) = sin(pi / 2)
        (144, (288,), 0.0),  # sin(pi)
        # sin(pi / 2) + sin(2 pi 72 / 2016) = 1 + sin(0.22440) = 1.22252
        (72, (288, 2016), 1.0 + math.sin(2 * math.pi * 72 / 2016)),
        # an absolute tick since the epoch keeps its phase: 5,800,104 = 20,139 * 288 + 72
        (5_800_104, (288,), 1.0),
    ],
    ids=["quarter-day", "half-day", "day-and-week", "epoch-ticks"],
)
def test_periodic_encoding(position, periods, expected):
    value = periodic_encoding(torch.tensor([position]), periods)
    assert value.item() == pytest.approx(expected, abs=1e-5)


def test_time_features_are_sin_and_cos_per_period():
    # pos 72 of 288: angle pi / 2 -> sin 1, cos 0
    np.testing.assert_allclose(time_features(torch.tensor([72]), (288,)).numpy(),
                               [[1.0, 0.0]], atol=1e-6)


def make_module(**overrides) -> DemandTransformer:
    params = dict(n_series=2, periods=(24, 48), horizon=3, levels=(0.1, 0.5, 0.9),
                  patch_ticks=6, d_model=8, n_heads=2, n_layers=1, dim_feedforward=16)
    torch.manual_seed(0)
    return DemandTransformer(**{**params, **overrides}).eval()


def module_inputs(target_last_position: int = 29):
    context = torch.randn(1, 24, 2, generator=torch.Generator().manual_seed(1))
    positions = torch.arange(24)[None]
    label = context[:, -4:]
    target_pos = torch.cat([positions[:, -4:], torch.tensor([[24, 25, target_last_position]])], 1)
    return context, positions, label, target_pos


def test_decoder_is_causal():
    """Changing the last target token (step 3) must not change steps 1 and 2."""
    module = make_module()
    with torch.no_grad():
        base = module(*module_inputs(26))
        moved = module(*module_inputs(40))
    torch.testing.assert_close(base[:, :2], moved[:, :2])
    assert not torch.allclose(base[:, 2], moved[:, 2])


def test_quantile_head_never_crosses():
    module = make_module()
    with torch.no_grad():
        out = module(*module_inputs())
    assert (out.diff(dim=-1) >= 0).all()


@pytest.mark.parametrize(
    "prediction, target, level, expected",
    [
        (8.0, 10.0, 0.9, 1.8),  # under by 2: 0.9 * 2
        (12.0, 10.0, 0.9, 0.2),  # over by 2: (1 - 0.9) * 2
        (8.0, float("nan"), 0.9, 0.0),  # missing target: no loss
    ],
    ids=["under", "over", "missing"],
)
def test_pinball(prediction, target, level, expected):
    loss = pinball(torch.tensor([[[[prediction]]]]), torch.tensor([[[target]]]),
                   torch.tensor([level]))
    assert loss.item() == pytest.approx(expected)


def test_fit_leaves_global_torch_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    tiny().fit(make_history())
    torch.testing.assert_close(torch.rand(3), expected)


def test_seed_changes_the_model():
    history = make_history()
    first = tiny(seed=0).fit(history).predict(history, 3)
    second = tiny(seed=1).fit(history).predict(history, 3)
    assert not np.array_equal(first.point, second.point)


def test_quantiles_between_levels_are_interpolated_and_outside_refused():
    history = make_history()
    model = tiny().fit(history)
    forecast = model.predict(history, 3, quantiles=(0.8, 0.85, 0.9))
    midpoint = (forecast.quantiles[0.8] + forecast.quantiles[0.9]) / 2
    np.testing.assert_allclose(forecast.quantiles[0.85], midpoint)
    with pytest.raises(InputError, match="outside the trained levels 0.1..0.99"):
        model.predict(history, 3, quantiles=(0.995,))


def test_context_must_be_whole_patches():
    with pytest.raises(InputError, match="multiple of patch_ticks"):
        tiny(patch_ticks=5).fit(make_history())


def test_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device(None) == ("cuda" if torch.cuda.is_available() else "cpu")
    assert tiny(device="cpu").fit(make_history()).device_ == "cpu"


def test_training_learns_a_clean_daily_wave():
    """On a noise-free 24-tick wave the trained model beats last value 3 steps ahead."""
    ticks = np.arange(400)[:, None]
    wave = 20.0 + 10.0 * np.sin(2 * np.pi * ticks / 24)
    model = tiny(train_steps=150, dropout=0.0, learning_rate=3e-3, warmup_steps=10).fit(wave)
    last = LastValue(max_horizon=3).fit(wave)
    errors = {"transformer": [], "last": []}
    for origin in range(300, 390, 7):
        actual = wave[origin + 2, 0]  # step 3 after history wave[:origin]
        errors["transformer"].append(abs(model.predict(wave[:origin], 3).at()[0] - actual))
        errors["last"].append(abs(last.predict(wave[:origin], 3).at()[0] - actual))
    # last value misses by up to 2 pi 10 3 / 24 ~ 7.9 nodes on the slopes
    assert np.mean(errors["transformer"]) < 0.5 * np.mean(errors["last"])


def test_spread_factors_table():
    # median 0, level-0.9 output 1 (spread 1); held-out errors 0.00 .. 0.99:
    # the 0.9-quantile of error / spread = 0.891; the 0.1 level (spread -1) gets the
    # 0.9-quantile of -error = -0.099 -> clipped to 0.
    errors = np.arange(100) / 100.0
    delta = np.zeros((100, 1, 1, 3))
    delta[..., 0] = -1.0
    delta[..., 2] = 1.0
    factors = spread_factors(delta, errors[:, None, None], (0.1, 0.5, 0.9), 1)
    np.testing.assert_allclose(factors, [[0.0, 1.0, 0.891]])


def test_calibration_holds_out_the_end_of_the_history():
    model = tiny(calibration_fraction=0.25).fit(make_history(n_ticks=400))
    assert model.held_out_ticks_ == 100  # 400 * 0.25 >= 3 + 50
    assert model.calibration_.shape == (3, 6)
    assert not np.allclose(model.calibration_, 1.0)
    assert tiny().fit(make_history(n_ticks=120)).held_out_ticks_ == 0  # 12 < 3 + 50


def test_threads_are_set_during_fit_and_restored():
    seen = []

    class Spy(TransformerForecaster):
        def _fit(self, history, first_tick):
            seen.append(torch.get_num_threads())
            return super()._fit(history, first_tick)

    torch.set_num_threads(2)
    Spy(**{**TINY_TRANSFORMER, "max_horizon": 3, "threads": 1}).fit(make_history())
    assert seen == [1]
    assert torch.get_num_threads() == 2
