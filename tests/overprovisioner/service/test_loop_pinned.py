"""The tick loop with pinned demand: placeholders split over zones and capacity types."""

from __future__ import annotations

import numpy as np
import pandas as pd

from overprovisioner.service.objects import placeholder_name
from overprovisioner.service.server import plan_document
from predictor.history.pinning import Pin
from tests.overprovisioner.service.test_loop import (
    DEPLOY,
    NS,
    RISING,
    START,
    TICK,
    MemoryDemand,
    at_tick,
    make_config,
    make_loop,
)

G5 = "headstart-placeholder-g5-xlarge"
ZONE_A = "pinned:g5.xlarge/zone=us-east-1a"
ZONE_B = "pinned:g5.xlarge/zone=us-east-1b"
G5_A = placeholder_name("g5.xlarge", "", Pin("us-east-1a"))
G5_B = placeholder_name("g5.xlarge", "", Pin("us-east-1b"))


class PinnedMemoryDemand(MemoryDemand):
    """MemoryDemand that also records pinned series (`pinned`: column -> values per tick)."""

    def __init__(self, columns, values, pinned):
        super().__init__(columns, values)
        self.pinned = FixedPinned(self, pinned)


class FixedPinned:
    """ports.PinnedDemand over a MemoryDemand's counts and fixed pinned series."""

    def __init__(self, demand, pinned_values):
        self.demand = demand
        self.pinned_values = pinned_values

    def read(self, start_s: float, end_s: float):
        series = self.demand.series(end_s - TICK)
        times = series.counts.index.to_numpy()
        keep = (times >= start_s) & (times < end_s)
        history = pd.DataFrame({c: np.asarray(v[: len(times)], dtype=float)
                                for c, v in self.pinned_values.items()},
                               index=pd.Index(times, name="time_s"))
        return series.counts[keep], history[keep]


# g5 demand rises 0..29 (RISING: 2 placeholders wanted at tick 29, as at tick 20); half
# of it pinned to us-east-1a: peak 14.5 of 29 (tick 29) or 10 of 20 (tick 20), share 0.5,
# so 2 x 0.5 = 1 placeholder pinned there and 1 unpinned.
HALF_IN_A = {ZONE_A: [i / 2 for i in range(30)]}


def deployment(fake_kube, name):
    return fake_kube.get(*DEPLOY, name, NS)


def test_pinned_demand_gets_a_placeholder_selecting_its_zone(fake_kube) -> None:
    demand = PinnedMemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING, HALF_IN_A)
    loop = make_loop(fake_kube, make_config(), demand)
    report = loop.tick(at_tick(29))
    assert report.ok, report.errors
    assert report.plan.wanted("g5.xlarge") == 2  # the plan's arithmetic is unchanged
    assert deployment(fake_kube, G5)["spec"]["replicas"] == 1
    pinned = deployment(fake_kube, G5_A)
    assert pinned["spec"]["replicas"] == 1
    assert pinned["spec"]["template"]["spec"]["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "g5.xlarge",
        "topology.kubernetes.io/zone": "us-east-1a"}
    assert pinned["metadata"]["labels"]["headstart.io/zone"] == "us-east-1a"
    assert "headstart.io/capacity-type" not in pinned["metadata"]["labels"]
    metrics = loop.metrics.registry
    for zone, count in (("us-east-1a", 1), ("", 1)):
        assert metrics.get_sample_value(
            "headstart_overprovisioner_placeholders_wanted_pinned",
            {"instance_type": "g5.xlarge", "placement_group": "", "zone": zone,
             "capacity_type": ""}) == count
    (g5,) = [b for b in plan_document(report, loop)["buckets"]
             if b["instance_type"] == "g5.xlarge"]
    assert g5["split"] == [
        {"zone": None, "capacity_type": None, "wanted": 1, "object": G5},
        {"zone": "us-east-1a", "capacity_type": None, "wanted": 1, "object": G5_A}]


def test_without_pinned_demand_the_objects_are_those_of_before(fake_kube) -> None:
    demand = PinnedMemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING,
                                {ZONE_A: [0.0] * 30})  # recorded, never above 0
    report = make_loop(fake_kube, make_config(), demand).tick(at_tick(29))
    assert deployment(fake_kube, G5)["spec"]["replicas"] == 2
    assert deployment(fake_kube, G5_A) is None
    assert sorted(report.applied.written) == [
        f"apps/v1 Deployment {NS}/{G5}", f"apps/v1 Deployment {NS}/headstart-placeholder-"
        "p4d-24xlarge"]


def test_a_zone_no_longer_asked_for_loses_its_object(fake_kube) -> None:
    # pin_window 10m = the last 2 ticks. Zone a first; then the history shows zone b only.
    config = make_config(placeholders={"backend": "deployment", "pin_window": "10m"})
    demand = PinnedMemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING, HALF_IN_A)
    loop = make_loop(fake_kube, config, demand)
    loop.tick(at_tick(29))
    assert deployment(fake_kube, G5_A)["spec"]["replicas"] == 1
    demand.pinned.pinned_values = {ZONE_A: [0.0] * 30, ZONE_B: [i / 2 for i in range(30)]}
    report = loop.tick(at_tick(29))
    assert deployment(fake_kube, G5_A) is None
    assert report.applied.pruned == (f"apps/v1 Deployment {NS}/{G5_A}",)
    assert deployment(fake_kube, G5_B)["spec"]["template"]["spec"]["nodeSelector"][
        "topology.kubernetes.io/zone"] == "us-east-1b"
    assert deployment(fake_kube, G5)["spec"]["replicas"] == 1


def test_split_objects_expire_like_the_others(fake_kube) -> None:
    # Tick 20 writes 1 unpinned and 1 zone-a placeholder, valid until tick 23; the
    # Deployment list then fails: at tick 23 both go to the floor (min 0).
    demand = PinnedMemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING, HALF_IN_A)
    loop = make_loop(fake_kube, make_config(), demand)
    assert loop.tick(at_tick(20)).ok
    assert deployment(fake_kube, G5_A)["spec"]["replicas"] == 1
    fake_kube.fail_next("GET", "/deployments", 503, count=1000)
    for tick in (21, 22):
        loop.tick(at_tick(tick))
    report = loop.tick(at_tick(23))
    assert sorted(report.expired) == sorted(
        [f"apps/v1 Deployment {NS}/{G5} to 0", f"apps/v1 Deployment {NS}/{G5_A} to 0"])
    assert deployment(fake_kube, G5_A)["spec"]["replicas"] == 0


def test_a_foreign_object_with_a_split_objects_name_is_never_touched(fake_kube) -> None:
    foreign = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": G5_A, "namespace": NS,
                            "labels": {"headstart.io/placeholder": "true"}},
               "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "x"}},
                        "template": {"metadata": {"labels": {"app": "x"}},
                                     "spec": {"containers": [{"name": "x", "image": "x:1"}]}}}}
    fake_kube.create(foreign)
    demand = PinnedMemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING, HALF_IN_A)
    report = make_loop(fake_kube, make_config(), demand).tick(at_tick(29))
    assert deployment(fake_kube, G5_A)["spec"]["replicas"] == 5
    assert "not_owned" in report.faults
    assert deployment(fake_kube, G5)["spec"]["replicas"] == 1  # the rest still applied


def test_the_recorders_demand_source_reads_the_pinned_window(tmp_path) -> None:
    from types import SimpleNamespace

    from overprovisioner.service.demand import RecorderDemand
    from predictor.live.store import HistoryStore

    store = HistoryStore(tmp_path / "h.sqlite", TICK)
    store.write_tick(START, {"g5.xlarge": 4, ZONE_A: 3})
    store.write_tick(START + TICK, {"g5.xlarge": 2})
    recorder = SimpleNamespace(store=store, config=SimpleNamespace(tick_s=TICK), known=None)
    counts, pinned = RecorderDemand(recorder, 86400.0).pinned.read(START, START + 2 * TICK)
    assert counts["g5.xlarge"].tolist() == [4.0, 2.0]
    assert pinned[ZONE_A].tolist() == [3.0, 0.0]  # observed without a sample: 0
    store.close()


def test_a_buckets_buffer_verdict_reads_its_unpinned_buffer() -> None:
    from overprovisioner.service.observed import Observed

    def buffer(name, zone=None):
        labels = {"headstart.io/instance-type": "g5.xlarge"}
        if zone:
            labels["headstart.io/zone"] = zone
        return {"metadata": {"name": name, "labels": labels}}

    buffers = {("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer", NS, name): body
               for name, body in ((G5_A, buffer(G5_A, "us-east-1a")), (G5, buffer(G5)),
                                  (G5_B, buffer(G5_B, "us-east-1b")))}
    assert Observed(buffers).buffers()[("g5.xlarge", "")]["metadata"]["name"] == G5
