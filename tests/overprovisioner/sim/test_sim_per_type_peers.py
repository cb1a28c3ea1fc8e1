"""Per-type headroom of every kind: `per-type:TYPE=POLICY+...` runs a static, proportional or
scheduled headroom of its own for each named instance type, as a user runs one
overprovisioning Deployment per node group with its own controller."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.policy_names import parse_policy_name, peer_size
from overprovisioner.sim.build import make_policy, placement_groups
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.metrics import measure
from overprovisioner.sim.pod_engine import run
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

TWO = types("g4dn.xlarge", "g4dn.2xlarge")
CONFIG = SimConfig(groups_per_gpu_type=1, startup_spread=0.0,
                   service=OverprovisionerConfig(tick_s=60.0, horizon_s=370.0))


def test_members_parse_with_their_own_specs():
    spec = parse_policy_name("per-type:g4dn.xlarge=proportional:4,max=3"
                             "+g4dn.2xlarge=scheduled:08-20=2,else=1")
    assert (spec.kind, spec.role) == ("per-type", "peer")
    (first, proportional), (second, scheduled) = spec.members
    assert (first, proportional.nodes_per_placeholder, proportional.max_count) == (
        "g4dn.xlarge", 4, 3)
    assert (second, scheduled.count_at_hour(9), scheduled.count_at_hour(22)) == (
        "g4dn.2xlarge", 2, 1)
    # Ordered in its family by the headroom it keeps: the members' sizes summed.
    assert peer_size(spec) == pytest.approx(peer_size(proportional) + peer_size(scheduled))


@pytest.mark.parametrize("name, message", [
    ("per-type:g4dn.xlarge", "is not TYPE=POLICY"),
    ("per-type:g4dn.xlarge=static:1+g4dn.xlarge=static:2", "g4dn.xlarge is given twice"),
    ("per-type:g4dn.xlarge=predictive", "each type runs static:N, proportional"),
    ("per-type:g4dn.xlarge=proportional:0", "g4dn.xlarge: policy 'proportional:0'"),
    ("per-type:g4dn.xlarge=static:g4dn.xlarge=1", "each type runs static:N"),
])
def test_bad_members_are_refused_naming_the_type(name, message):
    with pytest.raises(InputError, match=message):
        parse_policy_name(name)


def counts(name, now=0.0, nodes=(0, 0), end=86_400.0):
    workload = build_workload(table([pod("p", 100, 600)], end=end), TWO)
    policy = make_policy(name, workload, CATALOG, CONFIG, placement_groups(workload, CONFIG))
    return policy, policy.counts(now, nodes)


def test_each_type_counts_by_its_own_rule():
    policy, wanted = counts("per-type:g4dn.xlarge=proportional:4+g4dn.2xlarge=static:2",
                            nodes=(9, 9))
    assert wanted == [3, 2]  # ceil(9 / 4) for the first, 2 for the second
    assert policy.tick_s == CONFIG.cpa_poll_s  # CPA polls as CPA does
    _, wanted = counts("per-type:g4dn.2xlarge=scheduled:08-20=2", now=9 * 3600.0)
    assert wanted == [0, 2]  # the type not named keeps none
    _, wanted = counts("per-type:g4dn.2xlarge=scheduled:08-20=2", now=21 * 3600.0)
    assert wanted == [0, 0]


def test_a_static_member_runs_as_the_count_per_type_does():
    workload = build_workload(table([pod(f"p{i}", 600 + 900 * i, 600) for i in range(6)]),
                              TWO)
    member = run(workload, CATALOG, "per-type:g4dn.xlarge=static:1", CONFIG)
    count = run(workload, CATALOG, "static:g4dn.xlarge=1", CONFIG)
    assert measure(member).pending_gpu_minutes == measure(count).pending_gpu_minutes
    assert np.array_equal(member.node_launched, count.node_launched)
    assert measure(member).pending_gpu_minutes < measure(
        run(workload, CATALOG, "reactive", CONFIG)).pending_gpu_minutes


def test_a_type_the_simulation_does_not_have_is_refused():
    with pytest.raises(InputError, match="p4d.24xlarge is not a simulated instance type"):
        counts("per-type:p4d.24xlarge=static:1")


def test_a_member_schedule_that_never_matches_is_refused():
    # The window covers hours 00-02 only: the schedule would keep nothing.
    with pytest.raises(InputError, match=r"per-type:g4dn.2xlarge=scheduled:08-20=2'"
                                         r": g4dn.2xlarge: .*keeps no placeholder"):
        counts("per-type:g4dn.2xlarge=scheduled:08-20=2", end=7200.0)


def test_the_lead_curve_judges_each_lead_against_the_per_type_peer_for_its_cut():
    from overprovisioner.sim.lead_curve import run_lead_curve
    from overprovisioner.sim.what_if import WhatIf

    # Every pod asks for the first type: the count per type reaching any cut keeps the
    # second at 0, which no static:N run does.
    trace = table([pod(f"j{j}-{i}", 7800 * j + 1000, 600, job=f"j{j}") for j in range(6)
                   for i in range(4)], end=48000.0)
    config = SimConfig(groups_per_gpu_type=1, startup_spread=0.0)

    def build(t):
        return build_workload(t, TWO)

    runs, curve = run_lead_curve(trace, build, CATALOG,
                                 ["reactive", "static:1", "static:2", "static:4", "predictive"],
                                 config, WhatIf(1.0, (0.0, 900.0)))
    searched = [m.policy for m in curve.baseline if m.policy.startswith("static:g4dn")]
    assert searched and all(name.startswith("static:g4dn.xlarge=") for name in searched)
    # ...run on the trace as it is (no lead), and among the families each lead is judged by.
    assert all(lead is None for _, m, lead in runs if m.policy in searched)
    families = {p.family for point in curve.points for p in point.assessment.peers}
    assert "per-type" in families
