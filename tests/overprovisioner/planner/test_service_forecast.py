"""What the service (and the simulator) forecasts with, built from the config."""

from __future__ import annotations

import numpy as np
import pytest

from overprovisioner.config import ForecastConfig, OverprovisionerConfig
from overprovisioner.planner.service_forecast import (
    build_adjuster,
    build_forecaster,
    peak_path,
    tau_ticks,
)


def config(tick_s=300.0, horizon_s=390.0, **forecast) -> OverprovisionerConfig:
    return OverprovisionerConfig(instance_types=("g4dn.xlarge",), tick_s=tick_s,
                                 horizon_s=horizon_s, forecast=ForecastConfig(**forecast))


@pytest.mark.parametrize(
    "tick_s, tau_s, horizon, tau, model_steps",
    [
        # 390 s at 300-s ticks -> 2; tau 600 / 300 = 2; 2 + 2 < 12 -> 12 steps kept
        (300.0, 600.0, 2, 2, 12),
        # 390 / 60 = 6.5 -> 7; tau 600 / 60 = 10; 7 + 10 = 17 steps kept
        (60.0, 600.0, 7, 10, 17),
        # no stabilization: tau 0
        (60.0, 0.0, 7, 0, 12),
    ],
    ids=["5-min", "1-min", "no-stabilization"],
)
def test_horizon_tau_and_model_steps(tick_s, tau_s, horizon, tau, model_steps):
    built = config(tick_s=tick_s, stabilize_tau_s=tau_s)
    assert built.horizon_ticks == horizon and tau_ticks(built) == tau
    assert build_forecaster(built).max_horizon == model_steps
    assert build_adjuster(built).steps == horizon + tau


def test_fallback_off_builds_an_adjuster_without_one():
    assert build_adjuster(config()).fallback is None  # off by default
    on = build_adjuster(config(fallback=True, fallback_window_ticks=3))
    assert on.fallback is not None and on.fallback.window_ticks == 3


def test_peak_path_is_the_peak_at_the_configured_quantile():
    built = config(quantile=0.8, model="last")
    history = np.array([[0.0], [2.0], [1.0], [3.0]] * 10)
    model = build_forecaster(built).fit(history)
    result, path = peak_path(model, history, built, steps=4)
    assert path.shape == (4, 1)
    np.testing.assert_array_equal(path, result.peaks[0.8])


def test_peak_path_falls_back_to_the_horizon_for_a_model_built_shorter():
    built = config(model="hw")
    history = np.arange(40.0)[:, None] % 5
    model = build_forecaster(built).fit(history)
    _, path = peak_path(model, history, built, steps=model.max_horizon_ + 5)
    assert path.shape == (built.horizon_ticks, 1)
