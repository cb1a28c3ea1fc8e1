"""The simulator's pieces: CA's scale-up estimate, MostAllocated, policy names, config checks,
comparison, rate-oracle's headroom."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from common.durations import parse_duration
from common.errors import InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.policy_names import parse_policy_name, peer_size, schedule_name
from overprovisioner.sim.assess import assess, interpolate_extra
from overprovisioner.sim.autoscaler import scale_up
from overprovisioner.sim.cluster import Cluster, SimNode
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.metrics import Metrics
from overprovisioner.sim.oracles import demand_and_most_ahead, future_most, rate_headroom
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
    "name, kind, fields",
    [
        ("reactive", "reactive", {}),
        ("static:4", "static", {"count": 4}),
        ("static:0", "static", {"count": 0}),
        ("oracle", "oracle", {}),
        ("predictive", "predictive", {"quantile": None}),
        ("predictive:0.99", "predictive", {"quantile": 0.99}),
        ("rate-oracle:0.97", "rate-oracle", {"quantile": 0.97}),
        # CPA's defaults: min 1, no max
        ("proportional:8", "proportional",
         {"nodes_per_placeholder": 8, "min_count": 1, "max_count": 0}),
        ("proportional:4,max=6,min=2", "proportional",
         {"nodes_per_placeholder": 4, "min_count": 2, "max_count": 6}),
        ("scheduled:08-20=4,else=1", "scheduled", {"hours": ((8, 20, 4),), "count": 1}),
        # no else: 0 outside; a range across midnight
        ("scheduled:22-06=2", "scheduled", {"hours": ((22, 6, 2),), "count": 0}),
    ],
    ids=["reactive", "static-4", "static-0", "oracle", "predictive", "predictive-q",
         "rate-oracle-q", "proportional", "proportional-min-max", "scheduled",
         "scheduled-wraps"],
)
def test_policy_names(name, kind, fields):
    spec = parse_policy_name(name)
    assert spec.kind == kind and spec.name == name
    for field, value in fields.items():
        assert getattr(spec, field) == value


@pytest.mark.parametrize(
    "name, message",
    [
        ("static", "unknown policy"),
        ("static:x", "static:N"),
        ("static:-2", "static:N"),
        ("magic", "unknown policy"),
        ("predictive:1.5", "0 < Q < 1"),
        ("rate-oracle:0", "0 < Q < 1"),
        ("proportional:0", "nodes per placeholder"),
        ("proportional:x", "nodes per placeholder"),
        ("proportional:4,min=0", "raises min 0 to 1"),
        ("proportional:4,max=1,min=2", "below min"),
        ("proportional:4,cores=8", "is not min=M or max=X"),
        ("proportional:4,max=2,max=3", "is not min=M or max=X"),
        ("scheduled:8-20", "is not HH-HH=N"),
        ("scheduled:08-25=1", "hours run 0-24"),
        ("scheduled:08-08=1", "two different hours"),
        ("scheduled:08-20=4,18-22=2", "overlaps another range at hour 18"),
        ("scheduled:22-06=1,05-07=2", "overlaps another range at hour 05"),
        ("scheduled:else=2", "scheduled needs HH-HH=N"),
        ("scheduled:08-20=4,else=1,else=2", "else= given twice"),
        ("scheduled:08-20=x", "is not HH-HH=N"),
    ],
    ids=["static-no-count", "static-not-int", "static-negative", "unknown", "bad-quantile",
         "rate-oracle-zero", "proportional-zero", "proportional-not-int", "cpa-min-0",
         "max-below-min", "unknown-option", "option-twice", "no-count", "hour-25",
         "empty-range", "overlap", "overlap-across-midnight", "only-else", "else-twice",
         "count-not-int"],
)
def test_bad_policy_names_say_what_is_wrong(name, message):
    with pytest.raises(InputError, match=message):
        parse_policy_name(name)


def test_scheduled_counts_by_hour():
    spec = parse_policy_name("scheduled:08-20=4,22-02=2,else=1")
    # 08..19 -> 4; 22, 23, 00, 01 -> 2; the rest -> 1
    assert [spec.count_at_hour(h) for h in range(24)] == (
        [2, 2] + [1] * 6 + [4] * 12 + [1, 1] + [2, 2])
    # the mean over the day orders a family: (12 x 4 + 4 x 2 + 8 x 1) / 24 = 64 / 24
    assert peer_size(spec) == pytest.approx(64 / 24)


@pytest.mark.parametrize(
    "hours, expected",
    [
        ((8, 9, 10), "scheduled:08-11=2,else=1"),
        ((8, 9, 10, 22, 23, 0), "scheduled:08-11=2,22-01=2,else=1"),  # wraps midnight
        ((20, 21, 22, 23), "scheduled:20-24=2,else=1"),
        ((), None),
    ],
    ids=["one-range", "two-ranges-one-wrapping", "to-midnight", "none"],
)
def test_schedule_name_round_trips(hours, expected):
    name = schedule_name(hours, 2, 1)
    assert name == expected
    if name:
        spec = parse_policy_name(name)
        assert {h for h in range(24) if spec.count_at_hour(h) == 2} == set(hours)


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
        (SimConfig(gpu_startup_s=0), "gpu_startup_s"),
        (SimConfig(scoring="random"), "scoring"),
        (SimConfig(rate_window_s=float("nan")), "rate_window_s"),
        (SimConfig(cpa_poll_s=0), "cpa_poll_s"),
    ],
    ids=["zero-startup", "scoring", "nan-rate-window", "zero-poll"],
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
    assert result.peers[0].extra is None and result.best_peer is None
    runs[3] = metrics("predictive", 300.0, 112.0)  # 70%: static 10 + 20 x 0.5 = 20
    result = assess(runs)
    assert result.best_peer.extra == pytest.approx(20.0)
    assert result.ratio_to_best_peer == pytest.approx(0.6)


def test_rate_oracle_knows_the_rhythm_around_a_tick_not_its_own_arrival():
    # Demand steps 0 -> 1 at tick 10; horizon 2 ticks, so the true increase is 1 at
    # origins 8 and 9 only. The window (10 ticks) keeps origins 3..5 ticks away.
    demand = np.zeros((30, 1))
    demand[10:] = 1
    horizon = np.array([2])
    increase = np.maximum(future_most(demand, horizon) - demand, 0.0)
    headroom = rate_headroom(increase, horizon, 0.9, window_ticks=10)[:, 0]
    assert headroom[4] == 1.0   # origins 7, 8, 9 lie ahead of it: the rise is near
    assert headroom[9] == 0.0   # its own rise (origins 7..11) is what it must not see
    assert headroom[20] == 0.0  # quiet around
    assert rate_headroom(increase, horizon, 0.5, window_ticks=10)[4, 0] == 0.0


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


ONE_MINUTE = OverprovisionerConfig(tick_s=60.0, horizon_s=310.0)


@pytest.mark.parametrize(
    "name, config, quantile, window",
    [
        # the name's quantile wins over the configured one; 3600 s / 60 s = 60 ticks
        ("rate-oracle:0.5", SimConfig(service=ONE_MINUTE), 0.5, 60),
        # without one, the service's quantile (0.9); 1800 s / 60 s = 30 ticks
        ("rate-oracle", SimConfig(rate_window_s=1800.0, service=ONE_MINUTE), 0.9, 30),
    ],
    ids=["quantile-from-name", "quantile-from-service-window-from-config"],
)
def test_make_policy_wires_rate_oracle(name, config, quantile, window):
    from overprovisioner.sim.build import make_policy, placement_groups
    from overprovisioner.sim.workload import build_workload
    from tests.overprovisioner.simbuild import CATALOG, pod, table

    rows = [pod(f"p{i}", 600 * i, 1800 + 300 * (i % 3)) for i in range(12)]
    workload = build_workload(table(rows, end=9000.0), types("g4dn.xlarge"))
    policy = make_policy(name, workload, CATALOG, config, placement_groups(workload, config))
    # the service's horizon: 310 s at 60-s ticks -> 6 ticks
    assert policy.context.horizon_ticks.tolist() == [6] and policy.tick_s == 60.0
    now, most = demand_and_most_ahead(workload, 60.0, policy.context.horizon_ticks)
    expected = rate_headroom(np.maximum(most - now, 0.0), policy.context.horizon_ticks,
                             quantile, window)
    assert policy.name == name
    assert np.array_equal(policy.headroom, expected)


def test_oracle_sees_pods_shorter_than_a_tick():
    # A 2-minute pod between two 5-minute ticks: invisible at the ticks, seen on the
    # 10-s grid. Ticks at 0, 300, 600; horizon 2 ticks. The pod runs 330..450.
    from overprovisioner.sim.workload import build_workload
    from tests.overprovisioner.simbuild import pod, table

    workload = build_workload(table([pod("short", 330, 120)], end=900.0),
                              types("g4dn.xlarge"))
    now, most = demand_and_most_ahead(workload, 300.0, np.array([2]))
    assert now[:, 0].tolist() == [0.0, 0.0, 0.0, 0.0]
    # from tick 0 the horizon is 0..600 (holds the pod), from 300 it is 300..900 too
    assert most[:, 0].tolist()[:2] == [1.0, 1.0] and most[2, 0] == 0.0


def test_predictive_runs_the_services_defaults_without_a_config():
    # One source of truth: the simulator's predictive settings are the service's.
    from overprovisioner.config import ForecastConfig, LimitsConfig
    from overprovisioner.sim.build import make_policy, placement_groups
    from overprovisioner.sim.workload import build_workload
    from tests.overprovisioner.simbuild import CATALOG, pod, table

    workload = build_workload(table([pod("p", 100, 600)]), types("g4dn.xlarge"))
    config = SimConfig()
    policy = make_policy("predictive", workload, CATALOG, config,
                         placement_groups(workload, config))
    assert policy.service.forecast == ForecastConfig()
    assert policy.tick_s == OverprovisionerConfig().tick_s
    assert policy.service.limits.cost_cap_per_hour == LimitsConfig().cost_cap_per_hour
    adjuster = policy.forecaster.adjuster
    assert adjuster.fallback is None and adjuster.tau_ticks == 0
    # the plan's limits are the service's: max 8 per type, its cost cap
    assert policy.context.config.limits("g4dn.xlarge").max == LimitsConfig().default.max
    assert policy.context.config.cost_cap_per_hour == LimitsConfig().cost_cap_per_hour
