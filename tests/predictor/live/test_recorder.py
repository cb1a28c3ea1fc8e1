"""Live recorder: the pure pods -> counts core (predictor.history.snapshot), and the adapter
against the fake API server over real HTTP with a real SQLite file."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from bucketing.resources import Resources
from common.errors import ConfigError
from kube.informer import Informer
from predictor.history.snapshot import PodDemand, node_group, plan_tick, pod_demand, snapshot_values
from predictor.live.recorder import (
    Recorder,
    RecorderConfig,
    make_recorder,
    recorder_config_from_mapping,
)
from predictor.live.store import HistoryStore, StoreConfig
from tests.predictor.builders import CATALOG

TYPES = list(CATALOG.instance_types)
TICK = 300.0
T0 = 1_700_000_100.0  # on the 300-s grid


def make_pod(name, cpu="1", memory="1Gi", gpus=0, node=None, phase="Running",
             placeholder=False, namespace="team", gates=()):
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    labels = {"headstart.io/placeholder": "true"} if placeholder else {}
    spec = {"containers": [{"name": "main", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec, "status": {"phase": phase}}


def make_node(name, group=None, label="headstart.io/placement-group"):
    labels = {label: group} if group else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


# ---------------------------------------------------------------------------- pure core


@pytest.mark.parametrize(
    "pod, expected",
    [
        (make_pod("a", cpu="500m", gpus=1, node="n1"),
         PodDemand("team/a", Resources.of(1, 0.5, 1), "n1")),
        (make_pod("b", phase="Pending"), PodDemand("team/b", Resources.of(0, 1, 1), None)),
        (make_pod("c", placeholder=True), None),
        (make_pod("d", phase="Succeeded", node="n1"), None),
        (make_pod("e", phase="Failed", node="n1"), None),
        (make_pod("f", phase="Pending", gates=("example.com/a", "headstart.io/placement")),
         PodDemand("team/f", Resources.of(0, 1, 1), None,
                   ("example.com/a", "headstart.io/placement"))),
    ],
    ids=["running-gpu", "pending", "placeholder-skipped", "succeeded", "failed", "gated"],
)
def test_pod_demand(pod, expected):
    assert pod_demand(pod) == expected


@pytest.mark.parametrize(
    "node, group",
    [
        (make_node("n1", "pg-a"), "pg-a"),
        (make_node("n2", "blk-7", "cloud.google.com/gce-topology-block"), "blk-7"),
        (make_node("n3"), None),
    ],
    ids=["headstart-label", "gce-block", "none"],
)
def test_node_group(node, group):
    assert node_group(node)[1] == group


def test_node_group_tries_a_configured_key_first():
    node = make_node("n4", "rack-9", "example.com/rack")
    node["metadata"]["labels"]["headstart.io/placement-group"] = "pg-a"
    assert node_group(node)[1] == "pg-a"
    assert node_group(node, ("example.com/rack", "headstart.io/placement-group"))[1] == "rack-9"


def demand(key, gpus=0.0, cpu=1.0, memory_gib=1.0, node=None, gates=()):
    return PodDemand(key, Resources.of(gpus, cpu, memory_gib), node, gates)


def test_snapshot_values_per_group_and_totals():
    pods = [
        demand("a", gpus=1, cpu=4, memory_gib=8, node="n1"),  # gpu1 in pg-a
        demand("b", gpus=1, cpu=4, memory_gib=8),             # pending: plain gpu1
        demand("c", cpu=2, memory_gib=4, node="n2"),          # node without group: plain cpu4
        demand("d", cpu=3, memory_gib=4, node="n2"),          # c + d: cpu 5/4 -> 2 cpu4
        demand("huge", gpus=4, node="n1"),                    # fits no bucket
    ]
    values = snapshot_values(pods, {"n1": "pg-a", "n2": None}, TYPES)
    assert values["gpu1@pg-a"] == 1 and values["cpu4@pg-a"] == 0
    assert values["gpu1"] == 1 and values["cpu4"] == 2
    assert values["total:gpus_running"] == 5  # a 1 + huge 4
    assert values["total:gpus_pending"] == 1
    assert values["total:pods_running"] == 4 and values["total:pods_pending"] == 1
    assert values["total:pods_unbucketable"] == 1
    assert values["total:cpus_running"] == pytest.approx(10)  # 4 + 2 + 3 + 1


def test_gated_pods_are_not_observed_demand():
    """cluster-autoscaler launches no node for a gated pod: it must not be in the buckets
    (the plan would subtract it as capacity on its way), only in total:pods_gated."""
    pods = [
        demand("b", gpus=1, cpu=4, memory_gib=8),                             # pending gpu1
        demand("g", gpus=1, cpu=4, memory_gib=8, gates=("example.com/wait",)),  # gated
        demand("k", gpus=1, cpu=4, memory_gib=8, gates=("kueue.x-k8s.io/admission",)),
    ]
    values = snapshot_values(pods, {}, TYPES)
    assert values["gpu1"] == 1  # b alone; without the rule, b + g + k = 3 GPUs -> 3
    assert values["total:pods_pending"] == 1 and values["total:gpus_pending"] == 1
    assert values["total:pods_gated"] == 2


def test_pinned_pods_are_counted_in_their_bucket_and_in_their_pinned_series():
    """The bucket columns still count every pod (the forecaster and the plan read them as
    before); pinned pods are counted again, apart, per zone and capacity type."""
    from predictor.history.pinning import Pin

    def pinned(key, zone=None, capacity=None, node=None):
        return PodDemand(key, Resources.of(1, 4, 8), node, (), Pin(zone, capacity))

    pods = [
        pinned("a", zone="us-east-1a"),
        pinned("b", zone="us-east-1a"),
        pinned("c", zone="us-east-1b", capacity="on-demand", node="n1"),
        pinned("d"),  # not pinned
    ]
    values = snapshot_values(pods, {"n1": "pg-a"}, TYPES)
    assert values["gpu1"] == 3 and values["gpu1@pg-a"] == 1  # a, b, d; c
    assert {k: v for k, v in values.items() if k.startswith("pinned:")} == {
        "pinned:gpu1/zone=us-east-1a": 2.0,  # a + b: 2 GPUs -> 2 nodes
        "pinned:gpu1@pg-a/zone=us-east-1b/capacity=on-demand": 1.0,
    }


def test_a_pods_pin_is_read_at_the_edge():
    pod = make_pod("z", gpus=1, phase="Pending")
    pod["spec"]["nodeSelector"] = {"topology.kubernetes.io/zone": "us-east-1a",
                                   "karpenter.sh/capacity-type": "on-demand"}
    from predictor.history.pinning import Pin

    assert pod_demand(pod).pin == Pin("us-east-1a", "on-demand")


def test_empty_cluster_writes_zeros_not_nothing():
    values = snapshot_values([], {}, TYPES)
    assert values["cpu4"] == 0 and values["gpu1"] == 0 and values["total:pods_running"] == 0


@pytest.mark.parametrize(
    "last, now, tick_time, gap_from, gap_to",
    [
        (None, T0 + 10, T0, T0, T0),                  # empty store: no gap
        (T0, T0 + TICK + 5, T0 + TICK, T0 + TICK, T0 + TICK),  # next tick: no gap
        (T0, T0 + 4 * TICK, T0 + 4 * TICK, T0 + TICK, T0 + 4 * TICK),  # down 3 ticks: 3 gaps
        (T0, T0 + 20, T0, T0 + TICK, T0),             # same tick again: rewrite, no gap
        (T0, T0 - TICK, None, T0 - TICK, T0 - TICK),  # clock went backwards: write nothing
    ],
    ids=["first", "next", "after-downtime", "same-tick", "clock-backwards"],
)
def test_plan_tick(last, now, tick_time, gap_from, gap_to):
    plan = plan_tick(last, now, TICK)
    assert (plan.tick_time, plan.gap_from, plan.gap_to) == (tick_time, gap_from, gap_to)


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"tick_s": 0}, "recorder.tick_s: expected a positive number"),
        ({"ticks": 300}, "recorder.ticks: unknown field"),
        ({"buckets": "p4d"}, "recorder.buckets: expected a list"),
        ({"store": {"path": ""}}, "recorder.store.path"),
        ({"store": {"retention_days": -1}}, "recorder.store.retention_days"),
        ({"placement_group_labels": []}, "recorder.placement_group_labels"),
        ({"watch_timeout_s": 2.5}, "recorder.watch_timeout_s: expected a positive integer"),
        ({"catalog": ""}, "recorder.catalog: expected a non-empty string"),
        ({"store": {"path": "h.db", "days": 3}}, r"recorder.store.days: unknown field"),
        ("tick_s: 300", "cfg.yaml: recorder: expected a mapping, got str"),
    ],
    ids=["tick", "unknown", "buckets", "path", "retention", "group-labels", "watch-timeout",
         "catalog", "store-unknown", "not-a-mapping"],
)
def test_config_errors_name_the_field(raw, message):
    with pytest.raises(ConfigError, match=message):
        recorder_config_from_mapping(raw, "cfg.yaml")


def test_config_defaults_and_values():
    config = recorder_config_from_mapping(
        {"tick_s": 60, "buckets": ["gpu1"], "store": {"path": "/tmp/h.sqlite"}}, "cfg.yaml")
    assert config.tick_s == 60.0 and config.buckets == ("gpu1",)
    assert config.store == StoreConfig(path="/tmp/h.sqlite", retention_days=35.0)
    assert recorder_config_from_mapping(None, "cfg.yaml") == RecorderConfig()


# -------------------------------------------------------------------- adapter (fake API)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def live(fake_kube, tmp_path, monkeypatch):
    """A Recorder wired to the fake API server, its informers running in threads."""
    import bucketing.catalog

    monkeypatch.setattr(bucketing.catalog, "load_catalog", lambda ref: CATALOG)
    clock = Clock(T0)
    config = RecorderConfig(tick_s=TICK, store=StoreConfig(path=str(tmp_path / "h.sqlite")),
                            watch_timeout_s=1, backoff_initial_s=0.05, backoff_max_s=0.2)
    stop = threading.Event()
    started: list = []

    def start(run_informers=True):
        recorder = make_recorder(config, fake_kube.api_client(), clock)
        threads = [threading.Thread(target=i.run, args=(stop,), daemon=True)
                   for i in (recorder.pods, recorder.nodes) if run_informers]
        for thread in threads:
            thread.start()
        started.append((recorder, threads))
        return recorder

    yield fake_kube, start, clock, config, stop
    stop.set()
    for recorder, threads in started:
        for thread in threads:
            thread.join(5)
        recorder.store.close()


def test_records_pods_per_group_skipping_placeholders(live):
    kube, start, clock, _, _ = live
    kube.create(make_node("n1", "pg-a"))
    kube.create(make_pod("a", cpu="4", memory="8Gi", gpus=1, node="n1"))
    kube.create(make_pod("p", cpu="4", memory="8Gi", gpus=1, node="n1", placeholder=True))
    kube.create(make_pod("w", phase="Pending", cpu="2", memory="2Gi"))
    recorder = start()
    assert recorder.pods.synced.wait(10) and recorder.nodes.synced.wait(10)
    recorder.record()
    series = recorder.store.read_series()
    row = series.counts.iloc[0]
    # a: gpu1 in pg-a; the placeholder is not demand; w pending: plain cpu4
    assert row["gpu1@pg-a"] == 1 and row["cpu4"] == 1 and row["gpu1"] == 0
    assert series.totals["gpus_running"].iloc[0] == 1

    # a new pod arrives through the watch; the next tick sees it
    kube.create(make_pod("b", cpu="4", memory="8Gi", gpus=1, node="n1"))
    assert wait_for(lambda: "team/b" in recorder.pods.items())
    clock.now = T0 + TICK
    recorder.record()
    assert recorder.store.read_series().counts["gpu1@pg-a"].tolist() == [1.0, 2.0]


def test_restart_continues_the_series_with_gaps_for_downtime(live):
    kube, start, clock, config, _ = live
    kube.create(make_pod("a", cpu="2", memory="2Gi", node="n1"))
    first = start()
    assert first.pods.synced.wait(10) and first.nodes.synced.wait(10)
    first.record()                      # tick T0
    clock.now = T0 + TICK + 7
    first.record()                      # tick T0 + 1
    first.record()                      # same tick again: replaced, not duplicated
    first.store.close()

    clock.now = T0 + 4 * TICK + 1       # down for ticks 2 and 3
    second = start()
    assert second.pods.synced.wait(10) and second.nodes.synced.wait(10)
    second.record()
    series = second.store.read_series()
    assert series.times.tolist() == [T0 + i * TICK for i in range(5)]
    np.testing.assert_array_equal(series.counts["cpu4"].to_numpy(), [1, 1, np.nan, np.nan, 1])
    assert second.store.tick_count() == (3, 2)


def test_a_tick_without_a_fresh_pod_cache_is_a_gap(tmp_path):
    def failing_list(**kwargs):
        raise ConnectionError("API unreachable")

    config = RecorderConfig(tick_s=TICK, backoff_initial_s=0.01, backoff_max_s=0.02)
    clock = Clock(T0)
    pods = Informer("pods", failing_list, lambda obj: None, config.watch_settings(), clock)
    nodes = Informer("nodes", failing_list, lambda obj: None, config.watch_settings(), clock)
    stop = threading.Event()
    thread = threading.Thread(target=pods.run, args=(stop,), daemon=True)
    thread.start()
    assert wait_for(lambda: pods.status.errors_total >= 2)
    stop.set()
    thread.join(5)
    with HistoryStore(tmp_path / "h.sqlite", TICK) as store:
        recorder = Recorder(config, store, TYPES, pods, nodes, clock)
        recorder.record()
        assert store.tick_count() == (0, 1)
        assert "API unreachable" in pods.status.last_error


def test_store_with_another_tick_is_refused(tmp_path):
    config = RecorderConfig(tick_s=60)
    with HistoryStore(tmp_path / "h.sqlite", TICK) as store, pytest.raises(ConfigError):
        Recorder(config, store, TYPES, None, None)


def test_run_loop_writes_one_tick_per_boundary(live):
    kube, start, clock, _, _ = live
    kube.create(make_pod("a", cpu="2", memory="2Gi", node="n1"))
    recorder = start(run_informers=False)  # run() starts them itself
    stop = threading.Event()
    waits: list[float] = []

    def sleep(seconds: float) -> bool:
        # the loop asks to sleep until the next tick boundary; jump the clock there
        waits.append(seconds)
        clock.now += seconds
        if len(waits) == 3:
            stop.set()
        return stop.is_set()

    clock.now = T0 + 100  # 100 s into tick T0 -> first wait is 200 s
    recorder.run(stop, sleep=sleep)
    assert waits == [200.0, 300.0, 300.0]
    series = recorder.store.read_series()
    assert series.times.tolist() == [T0, T0 + TICK, T0 + 2 * TICK]
    assert series.counts["cpu4"].tolist() == [1.0, 1.0, 1.0]
