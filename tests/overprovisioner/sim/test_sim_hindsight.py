"""The per-type static peer chosen in hindsight (`overprovisioner.sim.hindsight`): its
policy syntax, the search, and a replay where one count for every type overpays."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.policy_names import parse_policy_name, per_type_name
from overprovisioner.sim.assess import assess
from overprovisioner.sim.compare import run_policies
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.hindsight import best_within, cheapest_vector, hindsight_policies
from overprovisioner.sim.metrics import measure, per_type
from overprovisioner.sim.pod_engine import run
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

TWO = types("g4dn.xlarge", "g4dn.2xlarge")
CONFIG = SimConfig(groups_per_gpu_type=1, startup_spread=0.0,
                   service=OverprovisionerConfig(tick_s=60.0, horizon_s=370.0))


def test_a_count_per_type_parses_and_names_round_trip():
    spec = parse_policy_name("static:g4dn.xlarge=2,g4dn.2xlarge=0")
    assert (spec.kind, spec.per_type, spec.role) == (
        "per-type", (("g4dn.xlarge", 2), ("g4dn.2xlarge", 0)), "peer")
    assert per_type_name({"g4dn.xlarge": 2, "g4dn.2xlarge": 0}) == "static:g4dn.xlarge=2"
    assert per_type_name({"a": 0}) == "static:0"


@pytest.mark.parametrize("name, message", [
    ("static:g4dn.xlarge=two", "g4dn.xlarge=N needs a whole number"),
    ("static:g4dn.xlarge=1,g4dn.xlarge=2", "g4dn.xlarge is given twice"),
    ("static:=1", "is not TYPE=N"),
])
def test_bad_counts_per_type_are_refused(name, message):
    with pytest.raises(InputError, match=message):
        parse_policy_name(name)


def test_a_type_the_simulation_does_not_have_is_refused():
    workload = build_workload(table([pod("p", 100, 600)]), TWO)
    with pytest.raises(InputError, match="p4d.24xlarge is not a simulated instance type"):
        run(workload, CATALOG, "static:p4d.24xlarge=1", CONFIG)


def test_the_search_takes_the_cheapest_vector_that_reaches_the_cut():
    # Type 0 waits 100 GPU-min with no headroom, 10 with 1, 0 with 2; type 1 waits 50,
    # 45, 44 (headroom barely helps it). Target 60: (1, 0) waits 60 for 1 + 0 extra
    # GPU-hours; (2, 0) waits 50 for 2; (0, x) never gets below 144.
    curves = {0: (np.array([100.0, 50.0]), np.array([0.0, 0.0])),
              1: (np.array([10.0, 45.0]), np.array([1.0, 4.0])),
              2: (np.array([0.0, 44.0]), np.array([2.0, 8.0]))}
    assert cheapest_vector(curves, 60.0) == (1, 0)
    assert cheapest_vector(curves, 50.0) == (2, 0)
    assert cheapest_vector(curves, 10.0) is None  # 0 + 44 at best


def test_the_greedy_search_for_many_types_reaches_the_cut(monkeypatch):
    import overprovisioner.sim.hindsight as hindsight

    monkeypatch.setattr(hindsight, "EXHAUSTIVE", 1)
    curves = {0: (np.array([100.0, 50.0]), np.array([0.0, 0.0])),
              1: (np.array([10.0, 45.0]), np.array([1.0, 4.0])),
              2: (np.array([0.0, 44.0]), np.array([2.0, 8.0]))}
    assert cheapest_vector(curves, 60.0) == (1, 0)


@pytest.mark.parametrize("exhaustive", [20_000, 1], ids=["exhaustive", "greedy"])
def test_the_search_within_a_budget_takes_the_least_waiting(monkeypatch, exhaustive):
    import overprovisioner.sim.hindsight as hindsight

    monkeypatch.setattr(hindsight, "EXHAUSTIVE", exhaustive)
    # The curves above. Budget 2 GPU-hours: (1, 0) waits 10 + 50 = 60 for 1; (2, 0)
    # waits 0 + 50 = 50 for 2; (0, 1) waits 145 for 4 (over). Budget 5: (1, 1) waits
    # 10 + 45 = 55 for 5, more than (2, 0)'s 50: (2, 0). Budget 9: (2, 1) waits 45 for
    # 6 ((2, 2) would take 10). Budget 10: (2, 2) waits 44.
    curves = {0: (np.array([100.0, 50.0]), np.array([0.0, 0.0])),
              1: (np.array([10.0, 45.0]), np.array([1.0, 4.0])),
              2: (np.array([0.0, 44.0]), np.array([2.0, 8.0]))}
    assert best_within(curves, 2.0) == (2, 0)
    assert best_within(curves, 5.0) == (2, 0)
    assert best_within(curves, 9.0) == (2, 1)
    assert best_within(curves, 10.0) == (2, 2)
    assert best_within(curves, 0.0) == (0, 0)
    assert best_within({0: (np.array([1.0]), np.array([3.0]))}, 2.0) is None


def test_per_type_figures_sum_to_the_runs_totals():
    rows = [pod(f"a{i}", 600 * i + 100, 900) for i in range(6)] + [
        pod(f"b{i}", 1800 * i + 200, 900, cpu=6) for i in range(2)]
    result = run(build_workload(table(rows, end=7200.0), TWO), CATALOG, "static:1", CONFIG)
    pending, hours = per_type(result)
    totals = measure(result)
    assert pending.sum() == pytest.approx(totals.pending_gpu_minutes)
    assert hours.sum() == pytest.approx(totals.gpu_hours)
    assert pending[1] > 0 and hours[1] > 0  # the 2xlarge pods and nodes count as type 1


def test_hindsight_keeps_headroom_only_where_the_demand_is():
    # A pod every 10 minutes on g4dn.xlarge, one pod on g4dn.2xlarge in 4 hours: static:1
    # also keeps an idle 2xlarge all along. The search puts 1 on the xlarge only, and its
    # real run reaches predictive's cut for fewer GPU-hours than static's family.
    rows = [pod(f"a{i}", 600 * i + 100, 1200) for i in range(24)] + [
        pod("b", 7000, 600, cpu=6)]
    workload = build_workload(table(rows, end=14_400.0), TWO)
    results = run_policies(workload, CATALOG, ["reactive", "static:1", "static:2",
                                               "predictive"], CONFIG)
    names = [m.policy for _, m in results]
    assert names[:4] == ["reactive", "static:1", "static:2", "predictive"]
    hindsight = names[4:]
    assert hindsight and all(parse_policy_name(n).kind == "per-type" for n in hindsight)
    assert "g4dn.2xlarge" not in hindsight[0]
    assessment = assess([m for _, m in results], "predictive")
    families = {p.family: p for p in assessment.peers}
    assert families["per-type"].extra is not None
    assert families["per-type"].extra < families["static"].extra
    assert families["per-type"].member in hindsight
    # Without static runs there is nothing to search.
    assert hindsight_policies(results[:1] + results[3:4], [t.name for t in TWO]) == []
    # A vector already run is not searched again (the lifted run, the lead curve).
    assert hindsight_policies(results[:4], [t.name for t in TWO]) == hindsight[:1]
    assert hindsight_policies(results, [t.name for t in TWO]) == []
