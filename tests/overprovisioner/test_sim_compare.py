"""Judging every predictive quantile and the rate-oracle against static and the oracle."""

from __future__ import annotations

import pytest

from overprovisioner.sim.compare import assess, assess_all
from overprovisioner.sim.metrics import Metrics


def metrics(policy, pending, gpu_hours, scoring="headstart"):
    return Metrics(policy, scoring, 10, 10, 0, 0.0, 0.0, 0.0, pending, gpu_hours, 0.0, 0.0,
                   0.0, 0.0, 0, 0, 0, 0.0, 0.0)


RUNS = [
    metrics("reactive", 1000.0, 100.0),
    metrics("static:1", 500.0, 110.0),          # 50% for +10
    metrics("static:2", 100.0, 130.0),          # 90% for +30
    metrics("predictive", 700.0, 103.0),        # 30% for +3; static 10 x 30/50 = 6
    metrics("predictive:0.97", 300.0, 112.0),   # 70%; static 10 + 20 x 20/40 = 20
    metrics("rate-oracle:0.97", 100.0, 114.0),  # 90% for +14; static 30
    metrics("oracle", 0.0, 101.0),
    metrics("predictive", 650.0, 103.0, scoring="default"),  # the scoring comparison run
]


def test_every_predictive_quantile_and_the_rate_oracle_is_judged_in_run_order():
    judged = assess_all(RUNS)
    assert [a.policy for a in judged] == ["predictive", "predictive:0.97", "rate-oracle:0.97"]
    ratios = [a.extra_ratio_to_static for a in judged]
    assert ratios == pytest.approx([3 / 6, 12 / 20, 14 / 30])
    lines = judged[2].lines()
    assert lines[0].startswith("rate-oracle:0.97 cuts pending GPU-minutes by 90.0%")
    assert "target >= 90%: met" in lines[0]
    assert "rate-oracle:0.97 spends 0.47x" in lines[1] and "target <= 0.5x: met" in lines[1]


@pytest.mark.parametrize(
    "runs, policy, first_line",
    [
        (RUNS[:3], "predictive", "(assessment needs the reactive and predictive runs)"),
        ([], "predictive", "(assessment needs the reactive and predictive runs)"),
        (RUNS, "predictive:0.99", "(assessment needs the reactive and predictive:0.99 runs)"),
    ],
    ids=["no-predictive-run", "no-runs", "unknown-quantile"],
)
def test_missing_runs_say_which(runs, policy, first_line):
    assert assess(runs, policy).lines() == [first_line]
    if policy == "predictive":
        assert [a.lines()[0] for a in assess_all(runs)] == [first_line]
