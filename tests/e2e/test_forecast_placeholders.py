"""The overprovisioner planning from its FORECAST (not the cold-start ladder) against a
real cluster-autoscaler: started on a history file that already holds enough demand for
p4d.24xlarge in placement group pg-a, it plans in `forecast` mode, its placeholder
Deployment asks for the forecast's nodes, CA launches that many kwok nodes of the type
and group, and the placeholders run there.

The history is written with headstart's own store (`predictor.live.store.HistoryStore`, the
recorder's file) before the service starts; the service then records live ticks into
the same file (no real demand runs, so they read 0).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from predictor.history.series import make_series
from predictor.live.store import HistoryStore
from tests.e2e.headstart import Overprovisioner
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, phase
from tests.e2e.placeholders import (
    LADDER_CONFIG,
    NAMESPACE,
    placeholder_deployments,
    placeholder_pods,
)
from tests.e2e.test_overprovisioner import INSTANCE_TYPE, PLACEMENT_GROUP, start_cluster

TICK_S = 5.0
GPU_TYPE = "p4d.24xlarge"
GROUP = "pg-a"
COLUMN = f"{GPU_TYPE}@{GROUP}"  # the store's series name for a bucket in a group
HISTORY_TICKS = 240  # 20 minutes at 5 s; last_adaptive needs 1 + 12 (max_horizon) to fit
# Demand alternating 0, 2, 0, 2, ... nodes: the last-value model's one-tick-ahead peak
# excess is +2 from every 0 and -2 from every 2, half each, so its 0.9 quantile is +2.
# The live ticks record 0 (nothing real runs), so the forecast is 0 + 2 = 2 nodes and
# wanted = ceil(2 - in_use 0 - pending 0) = 2. (The few live ticks add residuals of 0
# and one of -2: +2 stays well above 10% of the ~240 recent residuals.)
PEAK = 2
WANTED = 2
# The ladder scenario's settings (5 s tick and horizon, pg-a for p4d, no cost cap,
# Deployments) for the GPU type alone, with the ladder asking for nothing: every
# placeholder comes from the forecast.
FORECAST_CONFIG = {**LADDER_CONFIG, "instance_types": [GPU_TYPE],
                   "forecast": {"model": "last_adaptive", "cold_start_placeholders": 0}}
assert FORECAST_CONFIG["limits"]["placement_groups"] == {GPU_TYPE: [GROUP]}
assert (FORECAST_CONFIG["tick"], FORECAST_CONFIG["horizon"]) == ("5s", "5s")


def write_history(path: Path, now_s: float) -> int:
    """HISTORY_TICKS observed ticks of COLUMN ending at the tick before `now_s`, written
    as the recorder's store writes them; returns the observed ticks written."""
    last = math.floor(now_s / TICK_S) * TICK_S - TICK_S
    times = last - TICK_S * np.arange(HISTORY_TICKS)[::-1]
    values = np.array([[PEAK * (i % 2)] for i in range(HISTORY_TICKS)], dtype=float)
    with HistoryStore(path, TICK_S) as store:
        observed, gaps = store.write_series(make_series(times, [COLUMN], values, TICK_S))
    assert (observed, gaps) == (HISTORY_TICKS, 0)
    return observed


@pytest.fixture(scope="module")
def forecasting(e2e_clusters):
    cluster = start_cluster(e2e_clusters, "forecast")
    history = cluster.workdir / "forecast-history.sqlite"
    write_history(history, time.time())
    settings = {**FORECAST_CONFIG,
                "forecast": {**FORECAST_CONFIG["forecast"], "history_path": str(history)}}
    overprovisioner = Overprovisioner(cluster, settings)
    started = time.monotonic()
    overprovisioner.start().wait_ready()
    yield cluster, overprovisioner, started
    cluster.stop()


def gpu_buckets(plan):
    return [b for b in plan["buckets"] if b["instance_type"] == GPU_TYPE]


def test_a_forecast_from_the_history_file_makes_cluster_autoscaler_launch_its_nodes(
        forecasting, e2e_timings):
    cluster, overprovisioner, started = forecasting
    kube = cluster.kube
    logs = ["headstart-overprovisioner", "cluster-autoscaler", "headstart-scheduler"]

    def forecast_plan():
        response = overprovisioner.get("/plan")  # 503 until the first tick is planned
        if response.status_code != 200:
            return NotYet(response.text[:300])
        plan = response.json()
        return plan if plan["buckets"] else NotYet(plan)

    plan = cluster.wait("a plan", forecast_plan, 60, logs)
    planned_s = time.monotonic() - started
    assert plan["mode"] == "forecast", plan
    assert plan["model"] == "last_adaptive", plan
    [bucket] = [b for b in gpu_buckets(plan) if b["placement_group"] == GROUP]
    assert bucket["forecast"] == pytest.approx(PEAK), bucket
    assert (bucket["in_use"], bucket["pending"], bucket["wanted"]) == (0, 0, WANTED), bucket
    assert sum(b["wanted"] for b in gpu_buckets(plan)) == WANTED, plan["buckets"]

    def deployments_asking():
        replicas = sum(d["spec"]["replicas"] for d in placeholder_deployments(kube)
                       if d["metadata"]["labels"].get("headstart.io/instance-type")
                       == GPU_TYPE)
        return replicas or NotYet("no p4d placeholder Deployment yet")

    assert cluster.wait("the placeholder Deployment", deployments_asking, 30, logs) == WANTED

    def placeholders_bound():
        pods = [p for p in placeholder_pods(kube, GPU_TYPE)
                if not p["metadata"].get("deletionTimestamp")]
        bound = [p for p in pods if bound_node(p)]
        return bound if len(bound) >= WANTED else NotYet(
            [(p["metadata"]["name"], bound_node(p)) for p in pods])

    # CA holds GPU pods back ~30 s before scaling up for them (a hard-coded buffer).
    bound = cluster.wait(f"{WANTED} p4d placeholders bound", placeholders_bound, 150, logs)
    bound_s = time.monotonic() - started
    assert len(bound) == WANTED, [p["metadata"]["name"] for p in bound]
    node_names = {bound_node(p) for p in bound}
    assert len(node_names) == WANTED, node_names  # one placeholder fills one node
    nodes = kube.list("/api/v1/nodes", label_selector=f"{INSTANCE_TYPE}={GPU_TYPE}")
    assert {n["metadata"]["name"] for n in nodes} == node_names, \
        "cluster-autoscaler launched p4d nodes no placeholder runs on"
    for node in nodes:
        assert node["metadata"]["labels"].get(PLACEMENT_GROUP) == GROUP, node["metadata"]
        assert node["metadata"]["annotations"]["cluster-autoscaler.kwok.nodegroup/name"] \
            == GPU_TYPE, "the node was not made by cluster-autoscaler"
    names = [p["metadata"]["name"] for p in bound]
    cluster.wait(f"the {WANTED} p4d placeholders to run",
                 lambda: all(phase(kube.pod(NAMESPACE, n)) == "Running" for n in names),
                 60, ["kwok"])
    running_s = time.monotonic() - started

    # Live ticks (demand 0) went on meanwhile: still the forecast, still the same nodes.
    plan = overprovisioner.plan()
    assert plan["mode"] == "forecast", plan
    assert sum(b["wanted"] for b in gpu_buckets(plan)) == WANTED, plan["buckets"]
    e2e_timings.record("overprovisioner forecast: 2 p4d.24xlarge placeholders in pg-a",
                       forecast_plan_since_overprovisioner_start=planned_s,
                       bound_since_overprovisioner_start=bound_s,
                       running_since_overprovisioner_start=running_s)
