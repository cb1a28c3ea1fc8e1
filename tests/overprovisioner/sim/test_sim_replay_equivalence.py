"""The simulator's `predictive` plans what the service's loop plans from the same recorded stretch.

The simulator runs a trace with placement groups and known demand under `predictive`.
At each of its service ticks (re-plans after preemptions included), this test records
the simulated cluster as the service's recorder would (`predictor.history.snapshot` on the
pods where they are, into a real SQLite `HistoryStore`, announced demand included),
then runs `OverprovisionerLoop.tick` at that tick's time on a fake clock and a fake
cluster view holding the same free nodes and placeholders. The plans must be equal,
bucket by bucket, at every tick: same columns, same window, same forecaster lifecycle,
same known-demand rule, same sizing of the plan.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bucketing.known_ahead import with_lead
from bucketing.resources import Resources
from overprovisioner.config import ForecastConfig, OverprovisionerConfig
from overprovisioner.service.loop import OverprovisionerLoop
from overprovisioner.service.metrics import Metrics
from overprovisioner.service.observe import ClusterView
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.pod_engine import _Run
from overprovisioner.sim.workload import build_workload
from predictor.history.series import TOTAL_PREFIX
from predictor.history.snapshot import PodDemand, snapshot_values
from predictor.known.combine import KnownValues
from predictor.live.store import PINNED_PREFIX, HistoryStore
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

KINDS = types("g4dn.xlarge", "p3.8xlarge")

# One-minute ticks, an hour of history read back (the window slides within the run), a
# refit every 20 minutes, stabilization and the fallback on: every part of the
# forecaster's lifecycle runs.
SERVICE = OverprovisionerConfig(
    tick_s=60.0, horizon_s=310.0,
    forecast=ForecastConfig(model="last_adaptive", retention_s=3600.0,
                            retrain_every_s=1200.0, stabilize_tau_s=120.0, fallback=True,
                            fallback_window_ticks=4, cold_start_placeholders=1),
)


def trace(seed: int):
    """Jobs of 1-GPU and 4-GPU pods arriving in bursts over 5 hours."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(40):
        submit = float(rng.uniform(0, 18000))
        gpus = 4 if rng.random() < 0.3 else 1
        for i in range(int(rng.integers(1, 6))):
            rows.append(pod(f"j{j}-{i}", submit + i, float(rng.uniform(600, 3600)),
                            gpus=gpus, cpu=2 * gpus, memory_gib=8 * gpus, job=f"j{j}"))
    return with_lead(table(rows, end=21600.0), 0.5, 900.0, np.random.default_rng(seed))


class StoreDemand:
    """The loop's demand source over a store the test writes, as RecorderDemand reads it."""

    pinned = None

    def __init__(self, store: HistoryStore, config: OverprovisionerConfig) -> None:
        self.store = store
        self.config = config
        self.known_now: KnownValues | None = None
        self.known = self

    def record(self, now_s: float) -> None:
        pass  # the test wrote the tick already

    def series(self, now_s: float):
        return self.store.read_series(start_s=now_s - self.config.forecast.retention_s,
                                      end_s=now_s + self.config.tick_s)

    def announced(self, series):
        return self.store.read_announced(series.times, series.columns)

    def state(self, now_s: float):
        return None if self.known_now is None else SimpleNamespace(values=self.known_now)


class FixedReader:
    """A cluster view holding what the simulated cluster held at the tick."""

    view_now: ClusterView

    def view(self, *args, **kwargs) -> ClusterView:
        return self.view_now

    def events(self, namespace: str) -> list[dict]:
        return []  # the checks read Events; there are none here

    def configmap(self, reference: str) -> dict | None:
        return None


def record_like_the_service(run: _Run, store: HistoryStore, time_s: float) -> None:
    """Write the tick as predictor.live.recorder would: every live pod where it is, and the
    announced pods' demand apart (KnownRecorder)."""
    pods, groups = [], {}
    for queue in run.pending:
        for index in queue:
            pods.append(PodDemand(str(index), Resources(*run.requests[index]), None))
    for node in run.cluster.nodes:
        groups[node.name] = node.group or None
        for index in node.pods:
            pods.append(PodDemand(str(index), Resources(*run.requests[index]), node.name))
    announced = [p for p in pods if run.announced[int(p.key)]]
    store.write_tick(time_s, snapshot_values(pods, groups, run.w.types))
    store.write_known(time_s, {}, {
        column: value for column, value in snapshot_values(announced, groups, run.w.types).items()
        if not column.startswith((TOTAL_PREFIX, PINNED_PREFIX))})


@pytest.mark.parametrize("seed", [1, 2])
def test_simulator_and_service_loop_plan_alike_tick_by_tick(tmp_path, seed):
    config = SimConfig(service=SERVICE, groups_per_gpu_type=2).validate()
    run = _Run(build_workload(trace(seed), KINDS), CATALOG, "predictive", config)
    policy = run.policy
    assert policy.replay is not None  # known demand is replayed in this trace
    service = policy.service
    store = HistoryStore(tmp_path / "history.sqlite", service.tick_s)
    demand = StoreDemand(store, service)
    reader = FixedReader()
    loop = OverprovisionerLoop(service, CATALOG, demand, Metrics(), reader=reader)
    compared, modes, replans = [], set(), 0
    decide = policy.decide

    def decide_and_compare(view):
        nonlocal replans
        plan, forecast = decide(view)
        replans += view.now != view.tick_time
        record_like_the_service(run, store, view.tick_time)
        names = [kind.name for kind in run.w.types]
        known = policy.known_demand(view)
        demand.known_now = KnownValues({name: value for (name, _), value in known.items()},
                                       {}, {}, 0)
        nodes: dict = {}
        for node in run.cluster.nodes:
            if node.status != 2:  # not removed
                key = (names[node.type_index], node.group)
                nodes[key] = nodes.get(key, 0) + 1
        reader.view_now = ClusterView(
            nodes=nodes,
            free_nodes={(names[b], g): n for (b, g), n in view.free.items()},
            placeholders_running={(names[b], g): n for (b, g), n in view.placeholders.items()},
            placeholders_pending=0)
        # What the simulator's predictive read is what the store gives the service.
        series = demand.series(view.tick_time)
        recording = view.recording
        first = max(0, view.tick - policy.window_ticks + 1)
        columns = recording.present(first, view.tick)
        assert [recording.columns[k] for k in columns] == series.columns
        np.testing.assert_array_equal(recording.history[first:view.tick + 1, columns],
                                      series.history())
        report = loop.tick(view.tick_time)
        assert report.ok, report.errors
        modes.add(report.mode)
        assert report.plan.buckets == plan.buckets, f"tick {view.tick} at {view.now}"
        compared.append(view.tick)
        return plan, forecast

    policy.decide = decide_and_compare
    run.execute()
    # Every tick was compared, forecasting and at the cold start, re-plans included.
    assert len(compared) >= 300
    assert modes == {"ladder", "forecast"}
    assert replans > 0
    assert policy.fits >= 10


def test_the_recorded_columns_include_placement_groups():
    # The service forecasts bound pods per group: a trace whose pods run in two groups
    # gives the simulator's history `type@group` columns, as the recorder's.
    config = SimConfig(service=SERVICE, groups_per_gpu_type=2).validate()
    run = _Run(build_workload(trace(1), KINDS), CATALOG, "predictive", config)
    run.execute()
    recording = run.recording
    used = [recording.columns[k] for k in range(len(recording.columns))
            if recording.history[:, k].any()]
    assert {"g4dn.xlarge@pg-a", "g4dn.xlarge@pg-b", "g4dn.xlarge"} <= set(used)
