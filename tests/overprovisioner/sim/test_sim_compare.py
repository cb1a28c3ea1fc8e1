"""Judging every predictive quantile and the rate-oracle against the best peer and the oracle."""

from __future__ import annotations

import pytest

from overprovisioner.sim.assess import assess, assess_all
from overprovisioner.sim.compare import default_policies
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
    ratios = [a.ratio_to_best_peer for a in judged]
    assert ratios == pytest.approx([3 / 6, 12 / 20, 14 / 30])
    lines = judged[2].lines()
    assert lines[0] == "rate-oracle:0.97: waiting for capacity cut by 90.0% for +14.0 " \
                       "GPU-hours over cluster-autoscaler alone"
    assert "rate-oracle:0.97 spends 0.47x the cheapest (static): cheaper than it" in lines[1]
    # the oracle cuts 100% for +1: 10.0 points more, 13 GPU-hours less
    assert "(+10.0 points of cut, -13.0 GPU-hours against rate-oracle:0.97)" in lines[2]


# The proportional curve (ordered by headroom: R 8, then R 2) is cheaper at 70%:
# proportional:8 60% for +8, proportional:2 95% for +40 -> at 70%:
# 8 + 32 x (70 - 60) / (95 - 60) = 8 + 32 x 10 / 35 = 17.14; static needs 20 (above).
PEERS = RUNS[:3] + [metrics("proportional:2", 50.0, 140.0),
                    metrics("proportional:8", 400.0, 108.0),
                    metrics("scheduled:08-20=1,else=0", 800.0, 104.0),  # 20% for +4
                    RUNS[4]]


def test_the_best_peer_is_the_cheapest_family_at_the_same_reduction():
    judged = assess(PEERS, "predictive:0.97")
    by_family = {p.family: p.extra for p in judged.peers}
    assert by_family["static"] == pytest.approx(20.0)
    assert by_family["proportional"] == pytest.approx(8 + 32 * 10 / 35)
    assert by_family["scheduled"] is None  # its only member reaches 20%
    assert judged.best_peer.family == "proportional"
    assert judged.ratio_to_best_peer == pytest.approx(12 / (8 + 32 * 10 / 35))
    assert "scheduled never cuts that much" in judged.lines()[1]


def test_no_peer_reaching_the_reduction_is_said():
    runs = [metrics("reactive", 1000.0, 100.0), metrics("static:1", 500.0, 110.0),
            metrics("predictive", 10.0, 150.0)]
    assert assess(runs).lines()[1].startswith("  no headroom run cuts that much")


@pytest.mark.parametrize(
    "runs, policy, first_line",
    [
        (RUNS[:3], "predictive", "predictive: not compared (needs a reactive run too)"),
        ([], "predictive", "predictive: not compared (needs a reactive run too)"),
        (RUNS, "predictive:0.99", "predictive:0.99: not compared (needs a reactive run too)"),
    ],
    ids=["no-predictive-run", "no-runs", "unknown-quantile"],
)
def test_missing_runs_say_which(runs, policy, first_line):
    assert assess(runs, policy).lines() == [first_line]
    if policy == "predictive":
        assert [a.lines()[0] for a in assess_all(runs)] == [first_line]


def test_default_policies_hold_every_peer_family():
    from jobtraces.synthetic import SyntheticWorkload, generate
    from overprovisioner.sim.workload import build_workload, default_types
    from tests.overprovisioner.simbuild import CATALOG

    table = generate(SyntheticWorkload(days=2))
    workload = build_workload(table, default_types(table, CATALOG))
    names = default_policies(workload)
    kinds = {name.partition(":")[0] for name in names}
    assert kinds == {"reactive", "static", "proportional", "scheduled", "predictive", "oracle"}
    assert default_policies(workload, demo=True)[-2:] == ("predictive:0.97", "predictive:0.99")


def test_proportional_peers_are_sized_to_the_workload():
    # 8 one-GPU pods running the whole 2 hours: the type's mean is 8 nodes, so R =
    # 8 / 1, 8 / 2, 8 / 4 -> one, two and four placeholders.
    from overprovisioner.sim.compare import proportional_policies
    from overprovisioner.sim.workload import build_workload
    from tests.overprovisioner.simbuild import pod, table, types

    rows = [pod(f"p{i}", 0, 7200) for i in range(8)]
    workload = build_workload(table(rows, end=7200.0), types("g4dn.xlarge"))
    assert proportional_policies(workload) == ("proportional:8", "proportional:4",
                                               "proportional:2")
