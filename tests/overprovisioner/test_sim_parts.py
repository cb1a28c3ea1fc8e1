"""The simulator's pieces: CA's scale-up estimate, MostAllocated, policy names, config checks,
comparison, rate-oracle's headroom."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from bucketing.durations import parse_duration
from bucketing.errors import InputError
from overprovisioner.sim.autoscaler import scale_up
from overprovisioner.sim.cluster import Cluster, SimNode
from overprovisioner.sim.compare import assess, interpolate_extra
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.metrics import Metrics
from overprovisioner.sim.policies import (
    RateOracle,
    future_most,
    parse_policy_name,
    rate_headroom,
)
from overprovisioner.sim.scheduler import most_allocated
from tests.overprovisioner.simbuild import GIB, types

G4_12 = types("g4dn.12xlarge")  # 4 GPUs, 48 vCPU


def cluster(groups=("",), launching=0):
    built = Cluster(G4_12, {0: groups}, [(1000, 1000, GIB)])
    for index in range(launching):
        built.add_node(0, groups[index % len(groups)], 0.0, initial=False)
    return built


ONE_GPU = (1000, 4000, 8 * GIB)


@pytest.mark.parametrize(
    "launching, pods, placeholders, expected",
    [
        # 6 one-GPU pods, no node coming: ceil(6 / 4 GPUs) = 2 nodes
        (0, 6, {}, {"": 2}),
        # one node already starting holds 4 of them: 1 more
        (1, 6, {}, {"": 1}),
        # two placeholders need two whole nodes; the starting node is taken by pods
        (1, 2, {"": 2}, {"": 2}),
        # a starting node no pod needs takes a placeholder: 2 - 1 = 1 more
        (1, 0, {"": 2}, {"": 1}),
    ],
    ids=["pack-new", "upcoming-absorbs", "pods-first", "placeholder-takes-upcoming"],
)
def test_scale_up_estimate(launching, pods, placeholders, expected):
    built = cluster(launching=launching)
    launch = scale_up(built, 0, [ONE_GPU] * pods, placeholders, np.random.default_rng(0))
    assert launch == expected


def test_scale_up_respects_group_of_placeholders_and_max():
    built = cluster(groups=("pg-a", "pg-b"))
    launch = scale_up(built, 0, [], {"pg-b": 3}, np.random.default_rng(0),
                      max_nodes_per_group=2)
    # 3 wanted in pg-b, the group holds at most 2 nodes
    assert launch == {"pg-b": 2}



def sim_node(alloc, used):
    """A ready node with allocatable `alloc` and `used` taken, both (gpu_milli, cpu_milli, GiB)."""
    node = SimNode(0, 0, "", G4_12[0], 0.0, initial=True)
    node.alloc_gpu, node.alloc_cpu, node.alloc_mem = alloc[0], alloc[1], alloc[2] * GIB
    node.free_gpu = alloc[0] - used[0]
    node.free_cpu = alloc[1] - used[1]
    node.free_mem = (alloc[2] - used[2]) * GIB
    return node


@pytest.mark.parametrize(
    "alloc, used, pod, expected",
    [
        # GPU 3000*100//4000 = 75, CPU 12000*100//40000 = 30, memory 30*100//100 = 30:
        # (75 + 30 + 30) // 3 = 45
        ((4000, 40000, 100), (2000, 10000, 25), (1000, 2000, 5), 45),
        # the same node for a pod asking no GPU: kube-scheduler skips the extended
        # resource, (30 + 30) // 2 = 30 (counting GPUs would give (50 + 30 + 30) / 3)
        ((4000, 40000, 100), (2000, 10000, 25), (0, 2000, 5), 30),
        # a node without GPUs: CPU 2000*100//4000 = 50, memory 6*100//16 = 37 (37.5
        # floored): (50 + 37) // 2 = 43 (43.5 floored)
        ((0, 4000, 16), (0, 1000, 4), (0, 1000, 2), 43),
        # 1% apart is no difference: CPU 12100*100//40000 = 30 as for 12000 above
        ((4000, 40000, 100), (2000, 10100, 25), (1000, 2000, 5), 45),
    ],
    ids=["gpu-pod", "cpu-pod-skips-gpus", "cpu-node", "integer-rounding"],
)
def test_most_allocated_scores_as_kube_scheduler(alloc, used, pod, expected):
    node = sim_node(alloc, used)
    assert most_allocated(node, pod[0], pod[1], pod[2] * GIB) == expected

@pytest.mark.parametrize(
    "name, expected",
    [("reactive", ("reactive", 0)), ("static:4", ("static", 4)), ("static:0", ("static", 0)),
     ("oracle", ("oracle", 0)), ("predictive", ("predictive", 0)),
     ("predictive:0.99", ("predictive", 0.99)), ("rate-oracle", ("rate-oracle", 0)),
     ("rate-oracle:0.97", ("rate-oracle", 0.97))],
    ids=["reactive", "static-4", "static-0", "oracle", "predictive", "predictive-quantile",
         "rate-oracle", "rate-oracle-quantile"],
)
def test_policy_names(name, expected):
    assert parse_policy_name(name) == expected


@pytest.mark.parametrize("name", ["static", "static:x", "static:-2", "magic", "predictive:1.5",
                                  "rate-oracle:0"],
                         ids=["no-count", "not-int", "negative", "unknown", "bad-quantile",
                              "rate-oracle-zero"])
def test_bad_policy_names(name):
    with pytest.raises(InputError):
        parse_policy_name(name)


@pytest.mark.parametrize(
    "text, seconds",
    [("300s", 300.0), ("90s", 90.0), ("5m", 300.0), ("1.5h", 5400.0), ("2d", 172_800.0)],
    ids=["300s", "s", "m", "h", "d"],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "config, message",
    [
        (SimConfig(placeholder_priority=-11), "expendable cutoff"),
        (SimConfig(placeholder_priority=0), "below 0"),
        (SimConfig(gpu_startup_s=0), "gpu_startup_s"),
        (SimConfig(scoring="random"), "scoring"),
        (SimConfig(rate_window_s=float("nan")), "rate_window_s"),
    ],
    ids=["below-cutoff", "not-below-zero", "zero-startup", "scoring", "nan-rate-window"],
)
def test_config_checks(config, message):
    with pytest.raises(InputError, match=message):
        config.validate()


@pytest.mark.parametrize(
    "target, expected",
    [
        # curve (reduction, extra): (0,0) (0.5,100) (0.9,300): 0.7 -> 100 + 200 x 0.5 = 200
        (0.7, 200.0),
        (0.5, 100.0),
        (0.95, None),  # beyond the last static level
    ],
    ids=["between", "on-a-level", "beyond"],
)
def test_interpolate_extra(target, expected):
    got = interpolate_extra([(0.0, 0.0), (0.5, 100.0), (0.9, 300.0)], target)
    assert got == (None if expected is None else pytest.approx(expected))


def metrics(policy, pending, gpu_hours):
    return Metrics(policy, "headstart", 10, 10, 0, 0.0, 0.0, 0.0, pending, gpu_hours, 0.0, 0.0,
                   0.0, 0.0, 0, 0, 0, 0.0, 0.0)


def test_assess_by_hand():
    runs = [
        metrics("reactive", 1000.0, 100.0),
        metrics("static:1", 500.0, 110.0),  # 50% for +10
        metrics("static:2", 100.0, 130.0),  # 90% for +30
        metrics("predictive", 80.0, 112.0),  # 92% for +12
        metrics("oracle", 0.0, 101.0),
    ]
    result = assess(runs)
    assert result.reduction == pytest.approx(0.92)
    assert result.extra_gpu_hours == pytest.approx(12.0)
    # 92% is past static:2 (90%): no static level in the run reaches it
    assert result.static_extra_for_same is None
    runs[3] = metrics("predictive", 300.0, 112.0)  # 70%: static 10 + 20 x 0.5 = 20
    result = assess(runs)
    assert result.static_extra_for_same == pytest.approx(20.0)
    assert result.extra_ratio_to_static == pytest.approx(0.6)


def test_rate_oracle_knows_the_rhythm_around_a_tick_not_its_own_arrival():
    # Demand steps 0 -> 1 at tick 10; horizon 2 ticks, so the true increase is 1 at
    # origins 8 and 9 only. The window (10 ticks) keeps origins 3..5 ticks away.
    demand = np.zeros((30, 1))
    demand[10:] = 1
    context = SimpleNamespace(horizon_ticks=np.array([2]))
    headroom = RateOracle(context, demand, 0.9, window_ticks=10).headroom[:, 0]
    assert headroom[4] == 1.0   # origins 7, 8, 9 lie ahead of it: the rise is near
    assert headroom[9] == 0.0   # its own rise (origins 7..11) is what it must not see
    assert headroom[20] == 0.0  # quiet around
    assert RateOracle(context, demand, 0.5, window_ticks=10).headroom[4, 0] == 0.0


def test_rate_headroom_guards_each_type_by_its_own_horizon():
    # Type 1 (horizon 1 tick, e.g. CPU nodes) rises at origin 9 only; type 0 has horizon
    # 4. Window 6: type 1 keeps offsets 2 and 3 on either side. At t = 7 that is
    # origins 4, 5, 9, 10 -> [0, 0, 0, 1] sorted, q 0.9 at position 0.9 x 3 = 2.7:
    # 0 + 0.7 x (1 - 0) = 0.7. Guarding type 1 by type 0's horizon (4) would keep only
    # origins 2 and 12 and see nothing. At t = 8 origin 9 is within its horizon: 0.
    increase = np.zeros((30, 2))
    increase[9, 1] = 1.0
    headroom = rate_headroom(increase, np.array([4, 1]), 0.9, window_ticks=6)
    assert headroom[7, 1] == pytest.approx(0.7)
    assert headroom[8, 1] == 0.0
    assert not headroom[:, 0].any()


def test_rate_headroom_of_a_run_shorter_than_a_horizon_is_zero_and_quiet():
    # 3 ticks, horizon 6: no origin lies more than 6 ticks from any tick.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # np.nanquantile warns on all-NaN rows
        headroom = rate_headroom(np.ones((3, 1)), np.array([6]), 0.9, window_ticks=60)
    assert headroom.tolist() == [[0.0], [0.0], [0.0]]


def test_rate_headroom_matches_the_definition_at_the_edges_too():
    # The vectorised windows against the definition, origin by origin, on random
    # increases: two horizons, a window the run's ends cut into.
    rng = np.random.default_rng(3)
    increase = rng.integers(0, 4, size=(120, 2)).astype(float)
    horizons, window = np.array([6, 3]), 20
    expected = np.zeros_like(increase)
    for b, horizon in enumerate(horizons):
        half = max(horizon + 1, window // 2)
        for t in range(len(increase)):
            origins = [s for s in range(t - half, t + half + 1)
                       if 0 <= s < len(increase) and abs(s - t) > horizon]
            expected[t, b] = np.quantile(increase[origins, b], 0.8)
    assert np.allclose(rate_headroom(increase, horizons, 0.8, window), expected)


@pytest.mark.parametrize(
    "name, config, quantile, window",
    [
        # the name's quantile wins over the configured one; 3600 s / 60 s = 60 ticks
        ("rate-oracle:0.5", SimConfig(quantile=0.9), 0.5, 60),
        # without one, the configured quantile; 1800 s / 60 s = 30 ticks
        ("rate-oracle", SimConfig(quantile=0.8, rate_window_s=1800.0), 0.8, 30),
    ],
    ids=["quantile-from-name", "quantile-and-window-from-config"],
)
def test_make_policy_wires_rate_oracle(name, config, quantile, window):
    from overprovisioner.sim.build import make_policy, placement_groups
    from overprovisioner.sim.workload import build_workload, true_demand
    from tests.overprovisioner.simbuild import CATALOG, pod, table

    rows = [pod(f"p{i}", 600 * i, 1800 + 300 * (i % 3)) for i in range(12)]
    workload = build_workload(table(rows, end=9000.0), types("g4dn.xlarge"))
    policy = make_policy(name, workload, CATALOG, config, placement_groups(workload, config))
    increase = np.maximum(
        future_most(true_demand(workload, 60.0), policy.context.horizon_ticks)
        - true_demand(workload, 60.0), 0.0)
    expected = rate_headroom(increase, policy.context.horizon_ticks, quantile, window)
    assert policy.name == name
    assert np.array_equal(policy.headroom, expected)
