"""The event loop on tiny traces whose waits, node lifetimes and costs can be worked by hand.

Defaults: GPU node start-up exactly 300 s (NO_GROUPS sets no spread), CA scan every 10
s from t0, no scale-up while the oldest pending GPU pod is younger than 30 s (CA's
allPodsAreNew; so a GPU pod alone is launched for at the first scan 30 s after its
creation), scale-down after 600 s empty
and not within 600 s of a scale-up; the service ticks every 60 s here (ONE_MINUTE) with
a 310-s horizon (6 ticks), peers every 60 s; g4dn.xlarge = 1 GPU at 0.526 $/h.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from overprovisioner.config import ForecastConfig, OverprovisionerConfig
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.metrics import measure
from overprovisioner.sim.pod_engine import run
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

G4 = types("g4dn.xlarge")
ONE_MINUTE = OverprovisionerConfig(tick_s=60.0, horizon_s=310.0)
NO_GROUPS = SimConfig(groups_per_gpu_type=1, service=ONE_MINUTE, startup_spread=0.0)


def simulate(rows, policy="reactive", config=NO_GROUPS, kinds=G4, end=7200.0):
    workload = build_workload(table(rows, end=end), kinds)
    return run(workload, CATALOG, policy, config)


@pytest.mark.parametrize(
    "submit, expected_wait",
    [
        # on the scan grid: scans at 100-120 wait for the pod to be 30 s old, 130
        # launches, ready at 130 + 300 = 430 -> 330 s
        (100.0, 330.0),
        # between scans: the first scan with the pod 30 s old is 140, ready 440 -> 335 s
        (105.0, 335.0),
    ],
    ids=["on-scan", "between-scans"],
)
def test_reactive_pod_waits_for_scan_and_startup(submit, expected_wait):
    result = simulate([pod("p", submit, 600)])
    assert result.placed_at[0] - submit == pytest.approx(expected_wait)


def test_reactive_costs_by_hand():
    # pod 1 GPU, submit 10, runs 3600 s. Node launched 40, ready 340, pod 340..3940,
    # node empty from 3940, removed at 3940 + 600 = 4540. GPU-hours 4500/3600 = 1.25,
    # used 1.0, idle 0.25, cost 1.25 x 0.526 = 0.6575; wait 330 s -> 5.5 GPU-minutes.
    metrics = measure(simulate([pod("p", 10, 3600)]))
    assert metrics.gpu_hours == pytest.approx(1.25)
    assert metrics.used_gpu_hours == pytest.approx(1.0)
    assert metrics.idle_gpu_hours == pytest.approx(0.25)
    assert metrics.cost_usd == pytest.approx(1.25 * 0.526)
    assert metrics.pending_gpu_minutes == pytest.approx(5.5)
    assert metrics.node_launches == 1
    assert (metrics.waited_pods, metrics.waited_p50_s) == (1, pytest.approx(330.0))


def test_static_placeholder_is_preempted_at_once_and_replaced():
    # static:1: placeholder created at 0, its node launched at 30, ready at 330. Pod at
    # 1000 preempts it: wait 0. The placeholder is pending again (a new pod): CA
    # launches its replacement at 1030.
    result = simulate([pod("p", 1000, 600)], policy="static:1")
    assert result.placed_at[0] == pytest.approx(1000.0)
    assert measure(result).waited_pods == 0  # it found room at once: it did not wait
    assert result.preemptions == 1
    assert result.node_launched.tolist() == [30.0, 1030.0]
    # Placeholder nodes are not unneeded: the replacement is never removed; the pod's
    # node empties at 1600 and goes at 1600 + 600 = 2200.
    assert math.isnan(result.node_removed[1])
    assert result.node_removed[0] == pytest.approx(2200.0)


def test_pod_prefers_a_free_node_over_preempting():
    # static:1's placeholder (created at 0) and pod a (at 10) are launched for together
    # at scan 30, when the oldest is 30 s old: n0 and n1, ready at 330. Real pods go
    # first: a takes n0 (no preemption), the placeholder n1. a ends at 430: n0 is empty
    # until its removal at 1030. b at 700 fits the empty n0 and must not preempt the
    # placeholder on n1.
    rows = [pod("a", 10, 100), pod("b", 700, 100)]
    result = simulate(rows, policy="static:1")
    assert result.node_launched.tolist() == [30.0, 30.0]
    assert result.placed_at.tolist() == [330.0, 700.0]
    assert result.preemptions == 0


def test_oracle_has_capacity_ready_before_the_pod():
    # oracle sees the pod 6 ticks (360 s >= 300 + 10) ahead: wait 0
    result = simulate([pod("p", 1800, 600)], policy="oracle")
    assert result.placed_at[0] == pytest.approx(1800.0)


def test_rate_oracle_covers_a_steady_trickle_without_knowing_each_arrival():
    # A pod every 10 minutes for 30 minutes: true demand climbs 0 -> 3 by tick 20, then
    # holds (each arrival meets a departure). Its rises (origins 4..9 and 14..19, 6-tick
    # horizon) are over a tenth of the origins around ticks 0..45, so q 0.9 keeps one
    # node ready there: pods 1 and 2 take placeholders (2 preemptions) instead of
    # waiting, and the later pods, no longer shifted by a wait, get the node their
    # predecessor frees. Reactive: pods 1, 2, 4, 7, ..., 19 wait 330 s, 8 x 5.5 = 44
    # GPU-minutes.
    rows = [pod(f"p{i}", 600 * i, 1800) for i in range(20)]
    reactive = measure(simulate(rows, end=14_400))
    result = simulate(rows, policy="rate-oracle:0.9", end=14_400)
    assert reactive.pending_gpu_minutes == pytest.approx(44.0)
    assert measure(result).pending_gpu_minutes == 0.0
    assert result.preemptions == 2


def test_predictive_runs_and_covers_a_steady_trickle():
    # A pod every 10 minutes, each running 30 min: demand climbs 0 -> 3 and stays.
    rows = [pod(f"p{i}", 600 * i, 1800) for i in range(20)]
    reactive = measure(simulate(rows, end=14_400))
    run_result = simulate(rows, policy="predictive", end=14_400)
    predictive = measure(run_result)
    assert predictive.pending_gpu_minutes < reactive.pending_gpu_minutes
    # the forecaster was fitted (13 ticks of history suffice for `last`), not the ladder only
    assert run_result.notes["fits"] >= 1
    assert run_result.notes["cold_start_ticks"] < len(run_result.times)


def test_pods_running_at_t0_have_nodes_without_launches():
    rows = [pod("old", -100, 1000, start=-50), pod("new", 2000, 100)]
    tbl = table(rows, start=0.0)
    workload = build_workload(tbl, G4)
    result = run(workload, CATALOG, "reactive", NO_GROUPS)
    # "old" runs from 0 for its remaining 950 s on an initial node
    assert bool(workload.initial[0]) and workload.duration_s[0] == pytest.approx(950.0)
    assert result.placed_at[0] == 0.0
    assert measure(result).node_launches == 1  # only for "new"


def test_runs_do_not_share_state():
    rows = [pod("p", 100, 600)]
    workload = build_workload(table(rows), G4)
    first = run(workload, CATALOG, "static:2", NO_GROUPS)
    second = run(workload, CATALOG, "static:2", NO_GROUPS)
    assert np.array_equal(first.placed_at, second.placed_at)
    assert workload.submit_s.tolist() == [100.0]


def test_locality_headstart_packs_a_job_default_spreads():
    # Two 4-GPU nodes exist at t0 (pods x, y end at 50, their nodes stay 600 s empty).
    # Worker w1 (1 GPU) at 100 takes n0 (tie -> lowest index); w2 at 110: headstart
    # scores n0 (holds the job) highest, least-allocated prefers the emptier n1.
    kinds = types("g4dn.12xlarge")
    rows = [
        pod("x", 0, 50, gpus=3, cpu=4), pod("y", 0, 50, gpus=3, cpu=4),
        pod("w1", 100, 600, job="j", role="worker"), pod("w2", 110, 600, job="j", role="worker"),
    ]
    spans = {}
    for scoring in ("headstart", "default"):
        config = SimConfig(groups_per_gpu_type=1, scoring=scoring, service=ONE_MINUTE)
        spans[scoring] = measure(simulate(rows, config=config, kinds=kinds)).mean_nodes_per_job
    assert spans == {"headstart": 1.0, "default": 2.0}


def test_headstart_profile_packs_single_pods_default_spreads():
    # Two 4-GPU nodes run at t0: n0 with 3 GPUs busy past the end, n1 with 2 busy until
    # 50, then empty. A 1-GPU pod at 100 (for 3000 s) fits both: the shipped profile's
    # MostAllocated puts it on the fuller n0, and n1 is removed at 50 + 600 (CA's
    # unneeded time, on the scan grid); the default scheduler's LeastAllocated puts it on
    # the emptier n1, which is removed only at 3100 + 600.
    kinds = types("g4dn.12xlarge")
    rows = [pod("x", 0, 7000, gpus=3, cpu=4), pod("y", 0, 50, gpus=2, cpu=4),
            pod("single", 100, 3000)]
    removed = {}
    for scoring in ("headstart", "default"):
        config = SimConfig(groups_per_gpu_type=1, scoring=scoring, service=ONE_MINUTE)
        result = simulate(rows, config=config, kinds=kinds)
        removed[scoring] = result.node_removed[~np.isnan(result.node_removed)].tolist()
    assert removed == {"headstart": [650.0], "default": [3700.0]}


@pytest.mark.parametrize(
    "forecast",
    [ForecastConfig(), ForecastConfig(fallback=False, stabilize_tau_s=0.0)],
    ids=["fallback-and-stabilization", "neither"],
)
def test_predictive_runs_the_service_config(forecast):
    rows = [pod(f"p{i}", 600 * i, 1800) for i in range(20)]
    service = OverprovisionerConfig(tick_s=60.0, horizon_s=310.0, forecast=forecast)
    result = simulate(rows, policy="predictive", end=14_400,
                      config=SimConfig(groups_per_gpu_type=1, service=service))
    reactive = measure(simulate(rows, end=14_400))
    assert result.notes["tick_s"] == 60.0
    assert measure(result).pending_gpu_minutes < reactive.pending_gpu_minutes


THREE_RUNNING = [pod(f"old{i}", -100, 5000, start=-50) for i in range(3)]


@pytest.mark.parametrize(
    "policy, launches",
    [
        # 3 ready nodes at t0: ceil(3 / 2) = 2 placeholders, launched at 0, ready at 300;
        # then 5 nodes: ceil(5 / 2) = 3, one more launched at the 300-s poll; 6 nodes:
        # ceil(6 / 2) = 3, stable. 3 launches.
        ("proportional:2", 3),
        # the same capped at max 2: 2 launches
        ("proportional:2,max=2", 2),
        # ceil(3 / 8) = 1, then ceil(4 / 8) = 1: 1 launch
        ("proportional:8", 1),
        # min 2 beats ceil(3 / 8) = 1: 2 launches, then ceil(5 / 8) = 1 < min: stable
        ("proportional:8,min=2", 2),
    ],
    ids=["half", "half-max-2", "eighth", "eighth-min-2"],
)
def test_proportional_follows_the_types_ready_nodes(policy, launches):
    result = simulate(THREE_RUNNING, policy=policy, end=2000.0)
    assert int((~result.node_initial).sum()) == launches


def test_scheduled_keeps_its_count_in_its_hours_only():
    # 2 placeholders from 00:00 to 01:00 (trace clock), none after: both nodes launched
    # at 30; at 3600 the placeholders go, the nodes empty and are removed 600 s later.
    result = simulate([pod("late", 7000, 10)], policy="scheduled:00-01=2,else=0",
                      end=7200.0)
    launched = ~result.node_initial
    assert result.node_launched[launched][:2].tolist() == [30.0, 30.0]
    assert result.node_removed[launched][:2].tolist() == [4200.0, 4200.0]


def woken_after(debounce_s: float) -> OverprovisionerConfig:
    """ONE_MINUTE whose placeholder-pod watch re-plans `debounce_s` after a preemption;
    its horizon covers CA's 30-s GPU-pod wait too (370 s: 7 ticks)."""
    from dataclasses import replace

    return replace(ONE_MINUTE, horizon_s=370.0, placeholders=replace(
        ONE_MINUTE.placeholders, wake_debounce_s=debounce_s))


@pytest.mark.parametrize(
    "debounce, launches",
    [
        # The oracle keeps 1 placeholder for the pod at 1805, which preempts it; the
        # ReplicaSet recreates it, a new GPU pod: CA will not scale up for it before
        # its scan at 1840. Re-planning 1 s later (1806) the service sees the pod
        # running and wants none: the replacement is cancelled, 1 launch in all.
        (1.0, 1),
        # 5 s later (1810, the default wake_debounce): still well before 1840.
        (5.0, 1),
        # 40 s later (1845): the scan at 1840 has launched a node for the replacement.
        (40.0, 2),
        # 0 = no watch, never before the next tick (1860): the scan at 1840 launches.
        (0.0, 2),
    ],
    ids=["1s", "5s", "40s", "no-watch"],
)
def test_wake_debounce_races_cluster_autoscalers_scan(debounce, launches):
    config = SimConfig(groups_per_gpu_type=1, service=woken_after(debounce), startup_spread=0.0)
    result = simulate([pod("p", 1805, 600)], policy="oracle", config=config)
    assert result.placed_at[0] == pytest.approx(1805.0) and result.preemptions == 1
    assert int((~result.node_initial).sum()) == launches


def test_peers_do_not_replan_after_a_preemption():
    # static:1 beside a service that would re-plan 1 s after: its ReplicaSet's
    # replacement is launched at the first scan it is 30 s old at (1840) whatever the
    # service does.
    config = SimConfig(groups_per_gpu_type=1, service=woken_after(1.0), startup_spread=0.0)
    result = simulate([pod("p", 1805, 600)], policy="static:1", config=config)
    assert result.node_launched.tolist() == [30.0, 1840.0]


# ---- cluster-autoscaler's delays (each on by default; SimConfig sets them to 0) ----------

IDEAL_CA = SimConfig(groups_per_gpu_type=1, service=ONE_MINUTE, new_pod_delay_s=0.0,
                     new_gpu_pod_delay_s=0.0, scale_down_delay_after_add_s=0.0,
                     startup_spread=0.0)


def test_cluster_autoscaler_waits_until_the_oldest_gpu_pod_is_30_s_old():
    # core/static_autoscaler.go allPodsAreNew: the scans at 100, 110 and 120 skip the
    # scale-up (the GPU pod is younger than 30 s); the one at 130 launches.
    assert simulate([pod("p", 100, 600)]).node_launched.tolist() == [130.0]
    assert simulate([pod("p", 100, 600)], config=IDEAL_CA).node_launched.tolist() == [100.0]


def test_an_old_gpu_pod_lets_a_new_one_scale_up_at_once():
    # The rule looks at the oldest pod: one pending since 100 makes the scan at 140
    # launch for both, the one that arrived at 135 included.
    rows = [pod("old", 100, 600, gpus=1, cpu=2), pod("new", 135, 600, gpus=1, cpu=2)]
    result = simulate(rows)
    assert result.node_launched.tolist() == [130.0, 140.0]


def test_a_gpu_less_pod_waits_2_s():
    rows = [pod("cpu", 100, 600, gpus=0, cpu=2)]
    kinds = types("m5.xlarge")
    assert simulate(rows, kinds=kinds).node_launched.tolist() == [110.0]
    assert simulate(rows, kinds=kinds, config=IDEAL_CA).node_launched.tolist() == [100.0]


def test_no_node_is_removed_for_10_minutes_after_a_scale_up():
    # p1 runs from t0 on an existing g4dn.xlarge until 100: empty from then, it would go
    # at 700. p2 needs a g4dn.2xlarge (6 CPUs); its launch at 530 starts CA's cooldown
    # (--scale-down-delay-after-add 10m): the first node goes at 1130 instead.
    rows = [pod("p1", 0, 100), pod("p2", 500, 3000, cpu=6)]
    kinds = types("g4dn.xlarge", "g4dn.2xlarge")
    result = simulate(rows, kinds=kinds)
    assert result.node_launched.tolist() == [0.0, 530.0]
    assert result.node_removed[0] == pytest.approx(1130.0)
    assert simulate(rows, kinds=kinds, config=IDEAL_CA).node_removed[0] == pytest.approx(700.0)


def test_node_start_up_is_spread_around_its_mean_by_default():
    # Ten pods an hour apart, each launching its own node: with the default spread
    # (+-20% of 300 s) the start-ups differ and stay within 240-360 s, seeded.
    from overprovisioner.sim.config import SimConfig as Config

    rows = [pod(f"p{i}", 3600 * i + 100, 600) for i in range(10)]
    spread = Config(groups_per_gpu_type=1, service=ONE_MINUTE)
    result = simulate(rows, config=spread, end=40_000.0)
    startups = result.node_ready - result.node_launched
    assert len(set(np.round(startups, 6))) == 10
    assert ((startups >= 240.0) & (startups <= 360.0)).all()
    again = simulate(rows, config=spread, end=40_000.0)
    assert np.array_equal(again.node_ready, result.node_ready)
    exact = simulate(rows, end=40_000.0)  # NO_GROUPS: spread 0
    assert np.allclose(exact.node_ready - exact.node_launched, 300.0)


def test_a_pending_pod_takes_the_room_a_finished_pod_frees_at_once():
    # g4dn.xlarge has 1 GPU. a runs from t0 on a node that exists then; b (1 GPU)
    # arrives at 100 and fits nowhere: pending. CA launches for it at 130 (30 s old),
    # ready at 430; but a ends at 200 and b takes its node then, not at 430. (The
    # engine skips searching for a shape that fitted nowhere until a node of its type
    # gains room: a finished pod must count as room gained.)
    result = simulate([pod("a", 0, 200, start=0), pod("b", 100, 600)])
    assert result.placed_at[1] == pytest.approx(200.0)
