"""The tick loop against the fake API server with an in-memory demand history."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from kube.retry import RetryPolicy
from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.config.parse import parse_config
from overprovisioner.service.apply import Applier, KubeApi
from overprovisioner.service.loop import OverprovisionerLoop
from overprovisioner.service.metrics import Metrics
from overprovisioner.service.observe import ClusterReader
from predictor.history.series import make_series

NS = "headstart"
DEPLOY = ("apps/v1", "Deployment")
TICK = 300.0
START = 1_700_000_100.0  # on the 300 s grid: 1_700_000_100 / 300 = 5_666_667


class MemoryDemand:
    """A DemandSource over a fixed (T, K) array: tick i is at START + i * TICK; no known
    or pinned demand recorded."""

    known = None
    pinned = None

    def __init__(self, columns, values):
        self.columns = list(columns)
        self.values = np.asarray(values, dtype=float).reshape(len(values), len(self.columns))
        self.recorded: list[float] = []

    def record(self, now_s: float) -> None:
        self.recorded.append(now_s)

    def series(self, now_s: float):
        rows = int((now_s - START) // TICK) + 1
        values = self.values[:rows]
        times = START + TICK * np.arange(len(values))
        return make_series(times, self.columns, values, TICK)


def make_config(**extra):
    document = {
        "instance_types": ["g5.xlarge", "p4d.24xlarge"],
        "placeholders": {"backend": "deployment"},
        "api": {"max_attempts": 2, "backoff_base": "1ms", "backoff_max": "2ms"},
        "limits": {"cost_cap_per_hour": None},
    }
    document.update(extra)
    return parse_config(document, "test.yaml")


def make_loop(fake_kube, config, demand, leader=True, load_model=None, metrics=None,
              save_model=None, lease_vacant=lambda: False):
    catalog = resolve_catalog(config)
    api = KubeApi(fake_kube.api_client(), 5.0)
    rng = np.random.default_rng(0)
    reader = ClusterReader(api, RetryPolicy(2, 0.001, 0.002), rng, lambda s: None)
    applier = Applier(api, config, rng, lambda s: None)
    return OverprovisionerLoop(config, catalog, demand, metrics or Metrics(), reader, applier,
                               is_leader=lambda: leader, load_model=load_model,
                               save_model=save_model, lease_vacant=lease_vacant)


# Rising demand on g5.xlarge: 0, 1, ..., 29 nodes. Last value forecasts 29; every
# 2-step residual is +2, so the 0.9 quantile 2 ticks ahead is 29 + 2 = 31. In use now
# is 29, nothing free: wanted = 31 - 29 = 2.
RISING = [[float(i), 0.0] for i in range(30)]


def at_tick(i: int) -> float:
    return START + i * TICK


def writes(fake_kube):
    return [(m, p) for m, p, _ in fake_kube.requests if m in ("PATCH", "POST", "PUT", "DELETE")]


def test_forecast_plan_apply(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(forecast={"model": "last"}), demand)
    report = loop.tick(at_tick(29))
    assert report.ok, report.errors
    assert report.mode == "forecast" and report.model == "last"
    assert report.plan.wanted("g5.xlarge") == 2
    assert report.plan.wanted("p4d.24xlarge") == 0
    assert demand.recorded == [at_tick(29)]
    deployment = fake_kube.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)
    assert deployment["spec"]["replicas"] == 2
    metrics = loop.metrics.registry
    assert metrics.get_sample_value(
        "headstart_overprovisioner_placeholders_wanted",
        {"instance_type": "g5.xlarge", "placement_group": ""}) == 2
    assert metrics.get_sample_value(
        "headstart_overprovisioner_forecast_quantile_nodes",
        {"instance_type": "g5.xlarge", "placement_group": "", "quantile": "0.9"}) == 31
    assert metrics.get_sample_value(
        "headstart_overprovisioner_last_successful_tick_timestamp_seconds") == at_tick(29)
    # g5.xlarge at 1.006 $/h: 2 placeholders = 2.012 $/h.
    assert metrics.get_sample_value(
        "headstart_overprovisioner_placeholder_cost_dollars_per_hour") == pytest.approx(2.012)


def test_free_nodes_are_observed_for_the_plan(fake_kube) -> None:
    fake_kube.create({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": "n1", "labels": {
                          "node.kubernetes.io/instance-type": "g5.xlarge"}},
                      "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    report = make_loop(fake_kube, make_config(), demand).tick(at_tick(29))
    # The loop's job is to observe it: the empty Ready node is one free g5.xlarge node
    # (how the planner uses free nodes is plan.py's rule and its tests').
    (g5,) = [b for b in report.plan.buckets if b.instance_type == "g5.xlarge"]
    assert g5.free == 1 and g5.in_use == 29


def test_cold_start_uses_the_ladder(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], [[1.0, 0.0]])
    config = make_config(forecast={"cold_start_placeholders": 1},
                         limits={"per_bucket": {"p4d.24xlarge": {"max": 0}},
                                 "cost_cap_per_hour": None})
    report = make_loop(fake_kube, config, demand).tick(at_tick(0))
    assert report.mode == "ladder"
    assert report.plan.wanted("g5.xlarge") == 1
    assert report.plan.wanted("p4d.24xlarge") == 0  # ladder still within max


@pytest.mark.parametrize("leader, dry_run", [(False, False), (True, True)],
                         ids=["follower", "dry-run"])
def test_follower_and_dry_run_plan_but_never_write(fake_kube, leader, dry_run) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(dry_run=dry_run), demand, leader=leader)
    report = loop.tick(at_tick(29))
    assert report.plan.wanted("g5.xlarge") == 2
    assert writes(fake_kube) == []
    assert loop.latest is report


def test_failed_apply_keeps_the_previous_placeholders(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    loop.tick(at_tick(20))
    before = fake_kube.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)["spec"]["replicas"]
    fake_kube.fail_next("GET", "/deployments", 503, count=100)
    report = loop.tick(at_tick(21))
    assert not report.ok and any("503" in e for e in report.errors)
    assert fake_kube.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)["spec"][
        "replicas"] == before
    registry = loop.metrics.registry
    assert registry.get_sample_value(
        "headstart_overprovisioner_last_successful_tick_timestamp_seconds") == at_tick(20)


def test_failed_observation_fails_the_tick_and_keeps_the_plan(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    first = loop.tick(at_tick(29))
    fake_kube.fail_next("GET", "/api/v1/nodes", 500, count=100)
    report = loop.tick(at_tick(29))
    assert not report.ok and report.plan is first.plan
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_ticks_total", {"result": "failed"}) == 1


def test_an_outage_is_logged_once_not_every_tick(fake_kube, caplog) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    loop.tick(at_tick(26))
    fake_kube.fail_next("GET", "/api/v1/nodes", 500, count=100)
    with caplog.at_level("DEBUG", logger="headstart"):
        for tick in (27, 28, 29):
            assert not loop.tick(at_tick(tick)).ok
        fake_kube.heal()
        assert loop.tick(at_tick(30)).ok
    said = [(r.levelname, r.getMessage()) for r in caplog.records
            if r.levelname in ("ERROR", "WARNING", "INFO") and "tick" in r.getMessage()]
    assert [level for level, _ in said] == ["ERROR", "INFO"]
    assert "said once until a tick succeeds" in said[0][1]
    assert said[1][1] == "ticks succeed again after 3 failed"
    # every failed tick is still counted
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_ticks_total", {"result": "failed"}) == 3


def test_corrupt_model_falls_back_to_seasonal_naive_with_a_metric(fake_kube, tmp_path) -> None:
    from overprovisioner.service.commands import model_files

    path = tmp_path / "model.pt"
    path.write_bytes(b"not a torch archive")
    load, save = model_files(int(TICK))
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config(forecast={"model": "last", "model_path": str(path)})
    loop = make_loop(fake_kube, config, demand, load_model=load)
    report = loop.tick(at_tick(29))
    # Seasonal naive needs a day of history (288 ticks): 30 ticks -> cold-start ladder.
    assert report.model == "seasonal" and report.mode == "ladder"
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_model_fallbacks_total", {"reason": "corrupt_model"}) == 1


def test_model_is_saved_after_a_fit_and_loaded_at_start(fake_kube, tmp_path) -> None:
    from overprovisioner.service.commands import model_files

    path = tmp_path / "model.pt"
    load, save = model_files(int(TICK))
    config = make_config(forecast={"model": "last", "model_path": str(path)})
    columns = ["g5.xlarge", "p4d.24xlarge"]
    first = make_loop(fake_kube, config, MemoryDemand(columns, RISING), load_model=load,
                      save_model=save)
    first.tick(at_tick(29))
    assert path.exists()
    loaded = []

    def spy(p, c):
        loaded.append(list(c))
        return load(p, c)

    again = make_loop(fake_kube, config, MemoryDemand(columns, RISING), load_model=spy)
    report = again.tick(at_tick(29))
    assert loaded == [columns] and report.mode == "forecast"
    assert report.plan.wanted("g5.xlarge") == 2


def test_a_model_for_other_buckets_is_refitted_not_replaced(fake_kube, tmp_path) -> None:
    from overprovisioner.service.commands import model_files
    from predictor.live import persist
    from predictor.models.baselines import LastValue

    path = tmp_path / "model.pt"
    persist.save(LastValue().fit(np.ones((20, 1))), path, ["m5.large"], int(TICK))
    load, _ = model_files(int(TICK))
    config = make_config(forecast={"model": "last", "model_path": str(path)})
    loop = make_loop(fake_kube, config, MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING),
                     load_model=load)
    report = loop.tick(at_tick(29))
    assert report.model == "last" and report.mode == "forecast"
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_model_fallbacks_total", {"reason": "model_mismatch"}) == 1


def test_hits_are_counted_once_per_event(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    fake_kube.create({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "evt-1", "namespace": NS},
        "reason": "Preempted", "count": 1,
        "involvedObject": {"kind": "Pod", "namespace": NS,
                           "name": "headstart-placeholder-g5-xlarge-5d8f7c9b6-x2k4q"},
    })
    loop.tick(at_tick(28))
    loop.tick(at_tick(29))
    registry = loop.metrics.registry
    assert registry.get_sample_value(
        "headstart_overprovisioner_placeholder_preemptions_total",
        {"instance_type": "g5.xlarge", "placement_group": ""}) == 1
    # One hit x a 2-tick horizon of 300 s = 600 s avoided.
    assert registry.get_sample_value(
        "headstart_overprovisioner_pending_seconds_avoided_total") == 600


def test_run_ticks_on_the_grid_until_stopped(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(dry_run=True), demand)
    now = [at_tick(27) + 17.0]
    stop = asyncio.Event()

    async def sleep(seconds: float) -> None:
        now[0] += seconds
        if now[0] >= at_tick(30):  # the sleep after the tick at 29
            stop.set()

    asyncio.run(loop.run(lambda: now[0], sleep, stop))
    assert demand.recorded == [at_tick(27), at_tick(28), at_tick(29)]


def test_a_broken_history_falls_back_to_the_ladder_without_stopping(fake_kube) -> None:
    class Broken(MemoryDemand):
        def record(self, now_s: float) -> None:
            raise OSError("disk full")

        def series(self, now_s: float):
            raise RuntimeError("database disk image is malformed")

    loop = make_loop(fake_kube, make_config(), Broken(["g5.xlarge"], [[1.0]]))
    report = loop.tick(at_tick(5))
    assert report.mode == "ladder" and not report.ok
    assert any("disk full" in e for e in report.errors)
    # The ladder still applies (1 per type, default cold_start_placeholders).
    assert fake_kube.get(*DEPLOY, "headstart-placeholder-g5-xlarge", NS)["spec"]["replicas"] == 1
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_model_fallbacks_total", {"reason": "forecast_error"}) == 1


def test_placement_groups_get_one_deployment_each_and_no_ungrouped_one(fake_kube) -> None:
    # p4d demand runs in two groups (recorded as p4d.24xlarge@pg-a / @pg-b) and pending
    # pods count in the ungrouped column. Rising by 1 node per tick in pg-a only:
    # forecast 0.9 two ticks ahead = last + 2 in pg-a, flat elsewhere -> 2 wanted for
    # the type, balanced over pg-a and pg-b by nodes now (pg-a 29, pg-b 3): pg-b gets
    # the first block, then pg-b again (3 + 1 = 4 < 29).
    columns = ["p4d.24xlarge", "p4d.24xlarge@pg-a", "p4d.24xlarge@pg-b"]
    values = [[0.0, float(i), 3.0] for i in range(30)]
    config = make_config(limits={"placement_groups": {"p4d.24xlarge": ["pg-a", "pg-b"]},
                                 "cost_cap_per_hour": None})
    report = make_loop(fake_kube, config, MemoryDemand(columns, values)).tick(at_tick(29))
    assert report.ok, report.errors
    assert report.plan.wanted("p4d.24xlarge", "pg-a") + report.plan.wanted(
        "p4d.24xlarge", "pg-b") == 2
    assert report.plan.wanted("p4d.24xlarge", "pg-b") == 2
    names = sorted(d["metadata"]["name"] for d in fake_kube.list(*DEPLOY, NS))
    assert names == [
        "headstart-placeholder-g5-xlarge",
        "headstart-placeholder-p4d-24xlarge-pg-a",
        "headstart-placeholder-p4d-24xlarge-pg-b",
    ]
    group_b = fake_kube.get(*DEPLOY, "headstart-placeholder-p4d-24xlarge-pg-b", NS)
    assert group_b["spec"]["template"]["spec"]["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "p4d.24xlarge",
        "headstart.io/placement-group": "pg-b",
    }


def test_capacity_buffers_when_the_cluster_serves_them(fake_kube) -> None:
    fake_kube.serve("autoscaling.x-k8s.io/v1alpha1")
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(placeholders={"backend": "auto"}), demand)
    report = loop.tick(at_tick(29))
    assert report.applied.backend == "capacitybuffer"
    buffer = fake_kube.get("autoscaling.x-k8s.io/v1alpha1", "CapacityBuffer",
                           "headstart-placeholder-g5-xlarge", NS)
    assert buffer["spec"]["replicas"] == 2
    assert fake_kube.list(*DEPLOY, NS) == []


def test_a_loaded_model_for_other_buckets_is_refitted(fake_kube) -> None:
    from predictor.models.baselines import LastValue

    def load(path: str, columns):
        # A model fitted on 3 series; the history has 2.
        return LastValue(max_horizon=12).fit(np.ones((20, 3)))

    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config(forecast={"model": "last", "model_path": "/models/m.pt"})
    report = make_loop(fake_kube, config, demand, load_model=load).tick(at_tick(29))
    assert report.ok and report.mode == "forecast"
    assert report.plan.wanted("g5.xlarge") == 2


def test_an_empty_history_is_a_cold_start_not_an_error(fake_kube) -> None:
    from common.errors import InputError

    class Empty(MemoryDemand):
        def series(self, now_s: float):
            raise InputError("history.sqlite: the history has no bucket counts")

    report = make_loop(fake_kube, make_config(), Empty(["g5.xlarge"], [[0.0]])).tick(at_tick(0))
    assert report.ok and report.mode == "ladder"


def run_and_poke(loop, demand, poke, settle_s: float = 0.0) -> None:
    """Run the loop with a sleep that never ends; after its first tick call `poke()`
    (which must wake it), wait for the second tick and `settle_s` more, then stop."""
    stop = asyncio.Event()

    async def never(seconds: float) -> None:
        await asyncio.Event().wait()

    async def main() -> None:
        task = asyncio.create_task(loop.run(lambda: at_tick(29), never, stop))
        while not demand.recorded:
            await asyncio.sleep(0.01)
        poke()
        while len(demand.recorded) < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(settle_s)
        stop.set()
        await task

    asyncio.run(asyncio.wait_for(main(), 10))


def test_wake_runs_the_next_tick_at_once(fake_kube) -> None:
    import threading

    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(dry_run=True), demand)
    # As the elector does on winning the Lease: from another thread.
    run_and_poke(loop, demand, lambda: threading.Thread(target=loop.wake).start())
    assert demand.recorded == [at_tick(29), at_tick(29)]
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_wakeups_total", {"reason": "leader"}) == 1


def test_a_leader_that_loses_the_lease_mid_tick_does_not_write(fake_kube) -> None:
    # Leading when the tick starts; the Lease is lost while the tick records and
    # forecasts (a Transformer refit can take minutes). The apply must ask again.
    answers = iter([True])
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config()
    catalog = resolve_catalog(config)
    api = KubeApi(fake_kube.api_client(), 5.0)
    rng = np.random.default_rng(0)
    loop = OverprovisionerLoop(
        config, catalog, demand, Metrics(),
        ClusterReader(api, RetryPolicy(2, 0.001, 0.002), rng, lambda s: None),
        Applier(api, config, rng, lambda s: None),
        is_leader=lambda: next(answers, False),
    )
    report = loop.tick(at_tick(29))
    assert report.plan.wanted("g5.xlarge") == 2
    assert writes(fake_kube) == []
    assert report.applied is None and not report.leader


class KnownMemoryDemand(MemoryDemand):
    """MemoryDemand plus recorded known demand: `announced` per tick and column, and the
    known nodes due within the horizon at every tick."""

    def __init__(self, columns, values, announced, known_nodes):
        super().__init__(columns, values)
        self.known = FixedKnown(np.asarray(announced, dtype=float), known_nodes)


class FixedKnown:
    """ports.KnownDemand with the same known nodes at every tick."""

    def __init__(self, announced, known_nodes):
        self.announced_values = announced
        self.known_nodes = known_nodes

    def state(self, now_s: float):
        from predictor.known.combine import KnownValues
        from predictor.live.known_reader import KnownReport
        from predictor.live.known_recording import KnownState

        values = KnownValues(self.known_nodes, {"kueue": self.known_nodes}, {"kueue": 2}, 0)
        return KnownState(now_s, KnownReport((), {}, (), (), 0), (), values, {})

    def announced(self, series):
        return self.announced_values[: len(series)]


# Flat demand: 12 g5.xlarge nodes observed at every tick, 4 of them announced work.
FLAT = [[12.0, 0.0]] * 30
ANNOUNCED = [[4.0, 0.0]] * 30


@pytest.mark.parametrize("known, wanted", [({}, 0), ({"g5.xlarge": 2.0}, 2)],
                         ids=["no-known-demand", "two-known-nodes"])
def test_the_model_forecasts_the_unannounced_demand_and_known_is_added(fake_kube, known,
                                                                        wanted) -> None:
    demand = KnownMemoryDemand(["g5.xlarge", "p4d.24xlarge"], FLAT, ANNOUNCED, known)
    loop = make_loop(fake_kube, make_config(forecast={"model": "last"}), demand)
    report = loop.tick(at_tick(29))
    assert report.ok, report.errors
    forecast = report.forecasts[("g5.xlarge", "")]
    # the model saw 12 - 4 = 8 at every tick and forecasts 8; the 4 announced nodes
    # running now are added back: 12; in use is the observed 12
    assert (forecast.point, forecast.quantile, forecast.in_use, forecast.announced) == (
        12.0, 12.0, 12.0, 4.0)
    # wanted = ceil(12 + known - 12) = known
    assert report.plan.wanted("g5.xlarge") == wanted
    assert report.known is not None


def test_a_failing_known_demand_source_does_not_stop_the_tick(fake_kube) -> None:
    class Broken(FixedKnown):
        def state(self, now_s):
            raise RuntimeError("cache gone")

    demand = KnownMemoryDemand(["g5.xlarge", "p4d.24xlarge"], FLAT, ANNOUNCED, {})
    demand.known = Broken(demand.known.announced_values, {})
    loop = make_loop(fake_kube, make_config(forecast={"model": "last"}), demand)
    report = loop.tick(at_tick(29))
    # planned without known demand, on the whole observed history: 12 forecast, 12 in use
    assert report.plan.wanted("g5.xlarge") == 0 and report.known is None
    assert report.errors == ("known demand: RuntimeError: cache gone",)


@pytest.mark.parametrize(
    "known, expected",
    [({}, {}), ({"g5.xlarge": 2.0}, {("g5.xlarge", "kueue"): 2.0})],
    ids=["none-due", "two-kueue-nodes"],
)
def test_known_demand_is_exported_per_bucket_and_source(fake_kube, known, expected) -> None:
    metrics = Metrics()
    demand = KnownMemoryDemand(["g5.xlarge", "p4d.24xlarge"], FLAT, ANNOUNCED, known)
    loop = make_loop(fake_kube, make_config(forecast={"model": "last"}), demand,
                     metrics=metrics)
    loop.tick(at_tick(29))
    registry = metrics.registry
    prefix = "headstart_overprovisioner_"
    for (instance_type, source), value in expected.items():
        labels = {"instance_type": instance_type, "placement_group": ""}
        assert registry.get_sample_value(prefix + "known_nodes", labels) == value
        assert registry.get_sample_value(prefix + "known_source_nodes",
                                         {**labels, "source": source}) == value
    # KnownMemoryDemand reports 2 counted kueue pods whatever is due
    assert registry.get_sample_value(prefix + "known_counted_pods", {"source": "kueue"}) == 2
    if not expected:
        assert registry.get_sample_value(
            prefix + "known_nodes", {"instance_type": "g5.xlarge", "placement_group": ""}) is None


def test_known_gauges_clear_when_nothing_is_recorded(fake_kube) -> None:
    metrics = Metrics()
    loop = make_loop(fake_kube, make_config(forecast={"model": "last"}),
                     KnownMemoryDemand(["g5.xlarge", "p4d.24xlarge"], FLAT, ANNOUNCED,
                                       {"g5.xlarge": 2.0}), metrics=metrics)
    loop.tick(at_tick(29))
    loop.observer.demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], FLAT)  # sources switched off
    loop.tick(at_tick(29))
    assert metrics.registry.get_sample_value(
        "headstart_overprovisioner_known_counted_pods", {"source": "kueue"}) is None


G5_DEPLOYMENT = "headstart-placeholder-g5-xlarge"


def replicas(fake_kube, name=G5_DEPLOYMENT):
    return fake_kube.get(*DEPLOY, name, NS)["spec"]["replicas"]


def test_each_write_stamps_how_long_its_count_is_valid(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    make_loop(fake_kube, make_config(), demand).tick(at_tick(29))
    from overprovisioner.service.objects import format_time

    annotations = fake_kube.get(*DEPLOY, G5_DEPLOYMENT, NS)["metadata"]["annotations"]
    # expire_after 15m by default: valid until tick 29 + 900 s = tick 32
    assert annotations["headstart.io/valid-until"] == format_time(at_tick(32))


def test_a_leader_whose_ticks_fail_shrinks_to_the_floor_once_expired(fake_kube) -> None:
    # Tick 20 writes 2 placeholders valid until tick 23 (15 min). Then the Deployment
    # list fails every tick: ticks 21 and 22 keep them; at 23 they are scaled to the
    # floor (min 0), without the observation, from what tick 20 saw.
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    assert loop.tick(at_tick(20)).ok and replicas(fake_kube) == 2
    fake_kube.fail_next("GET", "/deployments", 503, count=1000)
    for tick in (21, 22):
        assert not loop.tick(at_tick(tick)).ok
        assert replicas(fake_kube) == 2
    report = loop.tick(at_tick(23))
    assert replicas(fake_kube) == 0
    assert report.expired == (f"apps/v1 Deployment {NS}/{G5_DEPLOYMENT} to 0",)
    assert loop.metrics.registry.get_sample_value(
        "headstart_overprovisioner_placeholders_expired_total", {"by": "leader"}) == 1


def test_the_floor_is_the_types_min(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config(limits={"per_bucket": {"g5.xlarge": {"min": 1}},
                                 "cost_cap_per_hour": None})
    loop = make_loop(fake_kube, config, demand)
    loop.tick(at_tick(20))
    fake_kube.fail_next("GET", "/api/v1/nodes", 503, count=1000)
    loop.tick(at_tick(23))
    assert replicas(fake_kube) == 1


def _stale_placeholders(fake_kube) -> None:
    """Two placeholders a leader wrote at tick 20 and never renewed."""
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    make_loop(fake_kube, make_config(), demand).tick(at_tick(20))
    assert replicas(fake_kube) == 2


@pytest.mark.parametrize("vacant, expected", [(True, 0), (False, 2)],
                         ids=["nobody-leads", "a-leader-holds-the-lease"])
def test_a_standby_enforces_expiry_only_when_nobody_holds_the_lease(fake_kube, vacant,
                                                                     expected) -> None:
    _stale_placeholders(fake_kube)
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    standby = make_loop(fake_kube, make_config(), demand, leader=False,
                        lease_vacant=lambda: vacant)
    standby.tick(at_tick(22))  # still valid (until 23): nobody touches them
    assert replicas(fake_kube) == 2
    standby.tick(at_tick(24))
    assert replicas(fake_kube) == expected
    assert standby.metrics.registry.get_sample_value(
        "headstart_overprovisioner_placeholders_expired_total",
        {"by": "standby"}) == (1 if vacant else 0)


def test_dry_run_never_enforces_expiry(fake_kube) -> None:
    _stale_placeholders(fake_kube)
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    make_loop(fake_kube, make_config(dry_run=True), demand, lease_vacant=lambda: True
              ).tick(at_tick(24))
    assert replicas(fake_kube) == 2


def test_a_bucket_whose_write_keeps_failing_expires_while_the_others_are_renewed(
        fake_kube) -> None:
    # Stamps renew once they are more than half of expire_after (15 min = 3 ticks) behind
    # what a write now would stamp: tick 21 writes nothing (1 tick behind), ticks 22 and
    # 23 renew. p4d's Deployment write is refused (422, permanent) at both; g5's goes
    # through. At tick 23 only p4d's (ladder: 1, valid until tick 20 + 3) expired and
    # goes to 0.
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], [[1.0, 1.0]])
    loop = make_loop(fake_kube, make_config(), demand)
    loop.tick(at_tick(20))
    p4d = "headstart-placeholder-p4d-24xlarge"
    assert replicas(fake_kube, p4d) == 1
    patches = len([r for r in fake_kube.requests if r[0] == "PATCH"])
    loop.tick(at_tick(21))
    assert len([r for r in fake_kube.requests if r[0] == "PATCH"]) == patches, \
        "tick 21 re-wrote objects whose only change is a fresh enough stamp"
    fake_kube.fail_next("PATCH", f"/deployments/{p4d}", 422, count=2)
    for tick in (22, 23):
        report = loop.tick(at_tick(tick))
    assert report.expired == (f"apps/v1 Deployment {NS}/{p4d} to 0",)
    assert replicas(fake_kube, p4d) == 0 and replicas(fake_kube) == 1


def fault(loop, name):
    return loop.metrics.registry.get_sample_value("headstart_overprovisioner_fault",
                                                  {"fault": name})


def test_a_403_on_a_write_is_one_fault_logged_once_and_cleared(fake_kube, caplog) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    fake_kube.fail_next("PATCH", "/deployments/", 403, count=4)
    with caplog.at_level("INFO", logger="headstart"):
        first = loop.tick(at_tick(28))
        loop.tick(at_tick(29))
        fake_kube.heal()
        healed = loop.tick(at_tick(30))
    assert set(first.faults) == {"forbidden"} and "403" in first.faults["forbidden"]
    assert healed.faults == {} and fault(loop, "forbidden") == 0
    said = [r.getMessage() for r in caplog.records if "fault" in r.getMessage()]
    assert len(said) == 2
    assert said[0].startswith("fault forbidden: apply apps/v1 Deployment")
    assert said[1] == "fault forbidden cleared"


def test_a_cluster_scoped_buffer_crd_is_a_fault_and_deployments_are_used(fake_kube) -> None:
    fake_kube.serve("autoscaling.x-k8s.io/v1beta1")
    fake_kube.scope("autoscaling.x-k8s.io/v1beta1", "capacitybuffers", namespaced=False)
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(placeholders={"backend": "auto"}), demand)
    report = loop.tick(at_tick(29))
    assert report.ok and report.applied.backend == "deployment"
    assert "cluster-scoped" in report.faults["capacitybuffer_unusable"]
    assert fault(loop, "capacitybuffer_unusable") == 1
    assert replicas(fake_kube) == 2


def test_an_unreadable_autoscaler_status_is_a_fault(fake_kube) -> None:
    fake_kube.fail_next("GET", "/configmaps/cluster-autoscaler-status", 403, count=10)
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    report = loop.tick(at_tick(29))
    assert "403" in report.faults["autoscaler_status_unreadable"]
    assert fault(loop, "autoscaler_status_unreadable") == 1


class FixedWorkerPlanner:
    """A worker planner whose step returns fixed growth (or raises)."""

    def __init__(self, growths=(), fail=False):
        self.growths = list(growths)
        self.fail = fail
        self.writes: list[bool] = []

    def step(self, now_s, rooms, write):
        from overprovisioner.service.worker_planner import StepResult

        self.writes.append(write)
        if self.fail:
            raise RuntimeError("planner broke")
        return StepResult(plans=[], growths=list(self.growths))


def test_a_planned_growth_is_placeholders_in_the_jobs_group(fake_kube) -> None:
    from bucketing.resources import Resources
    from overprovisioner.planner.worker_plan import Growth

    # flat zero demand: the forecast asks for nothing; 8 one-GPU workers of growth in
    # pg-a need one p4d.24xlarge there (8 GPUs), which the plan keeps as a placeholder
    worker = Resources.of(1, 4, 16)
    planner = FixedWorkerPlanner([Growth("Job.ml.stream", 8, worker, "pg-a", False)])
    config = make_config(forecast={"model": "last"},
                         limits={"placement_groups": {"p4d.24xlarge": ["pg-a"]},
                                 "cost_cap_per_hour": None})
    loop = make_loop(fake_kube, config, MemoryDemand(["g5.xlarge", "p4d.24xlarge"], FLAT))
    loop.observer.worker_planner = planner
    report = loop.tick(at_tick(29))
    assert report.ok, report.errors
    assert report.plan.wanted("p4d.24xlarge", "pg-a") == 1
    assert report.plan.wanted("g5.xlarge") == 0
    assert planner.writes == [True]
    registry = loop.metrics.registry
    labels = {"instance_type": "p4d.24xlarge", "placement_group": "pg-a"}
    assert registry.get_sample_value("headstart_overprovisioner_known_nodes", labels) == 1
    assert registry.get_sample_value("headstart_overprovisioner_known_source_nodes",
                                     {**labels, "source": "worker_plans"}) == 1


def test_a_failing_worker_planner_does_not_stop_the_tick(fake_kube) -> None:
    loop = make_loop(fake_kube, make_config(forecast={"model": "last"}, dry_run=True),
                     MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING))
    loop.observer.worker_planner = FixedWorkerPlanner(fail=True)
    report = loop.tick(at_tick(29))
    assert report.plan.wanted("g5.xlarge") == 2  # planned as without it
    assert any("worker plans: RuntimeError: planner broke" in e for e in report.errors)
    assert loop.observer.worker_planner.writes == [False]  # dry-run never writes
