"""`headroom:` in the service config: the loop applies a headroom users run today (the
plan `headstart simulate` prints when such a headroom wins) instead of a forecast, with
the simulator's counting rule, against the fake API server."""

from __future__ import annotations

import pytest

from common.errors import ConfigError
from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.planner.headroom import headroom_counts
from overprovisioner.policy_names import parse_headroom
from overprovisioner.sim.build import make_policy
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.service.test_loop import (
    DEPLOY,
    NS,
    RISING,
    MemoryDemand,
    at_tick,
    make_config,
    make_loop,
)
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

G5 = "headstart-placeholder-g5-xlarge"
P4D = "headstart-placeholder-p4d-24xlarge"


def replicas(fake_kube, name):
    return fake_kube.get(*DEPLOY, name, NS)["spec"]["replicas"]


def node(fake_kube, name, instance_type):
    fake_kube.create({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": name, "labels": {
                          "node.kubernetes.io/instance-type": instance_type}},
                      "status": {"conditions": [{"type": "Ready", "status": "True"}]}})


def test_a_count_per_type_is_applied_instead_of_the_forecast(fake_kube) -> None:
    # RISING would forecast 2 g5.xlarge placeholders; the headroom asks for 3 and 1.
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config(headroom="static:g5.xlarge=3,p4d.24xlarge=1",
                         limits={"cost_cap_per_hour": 1.0,
                                 "default": {"max": 2}})
    report = make_loop(fake_kube, config, demand).tick(at_tick(29))
    assert report.ok, report.errors
    assert report.mode == "headroom" and report.model == "static:g5.xlarge=3,p4d.24xlarge=1"
    # No cost cap and no per-type max: the headroom runs as the simulator ran it.
    assert (report.plan.wanted("g5.xlarge"), report.plan.wanted("p4d.24xlarge")) == (3, 1)
    assert (replicas(fake_kube, G5), replicas(fake_kube, P4D)) == (3, 1)
    # Demand is still recorded, so a later simulate or backtest can use it.
    assert demand.recorded == [at_tick(29)]


def test_proportional_headroom_counts_the_types_nodes(fake_kube) -> None:
    for i in range(5):
        node(fake_kube, f"g5-{i}", "g5.xlarge")
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config(headroom="proportional:2,min=1")
    report = make_loop(fake_kube, config, demand).tick(at_tick(29))
    assert report.ok, report.errors
    # g5.xlarge: 5 nodes / 2 per placeholder -> 3; p4d: no node -> min 1.
    assert (replicas(fake_kube, G5), replicas(fake_kube, P4D)) == (3, 1)


def test_a_schedule_follows_the_utc_hour(fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    config = make_config(headroom="scheduled:08-20=2,else=0")
    loop = make_loop(fake_kube, config, demand)
    day = 1_700_006_400.0  # 2023-11-15 00:00 UTC
    assert day % 86_400 == 0
    assert loop.tick(day + 9 * 3600).plan.wanted("g5.xlarge") == 2
    assert loop.tick(day + 21 * 3600).plan.wanted("g5.xlarge") == 0


# Types g4dn.xlarge, g4dn.2xlarge; at 01:00, 07:00 and 19:00 UTC with (0, 0), (1, 4)
# and (7, 2) nodes of them, the placeholders per type each headroom keeps:
HOURS = (3_600.0, 7 * 3_600.0, 19 * 3_600.0)
NODES = ((0, 0), (1, 4), (7, 2))
EXPECTED = {
    "static:2": {h: {n: [2, 2] for n in NODES} for h in HOURS},
    "static:g4dn.xlarge=1": {h: {n: [1, 0] for n in NODES} for h in HOURS},
    # max(1, min(2, ceil(nodes / 3))) per type
    "proportional:3,min=1,max=2": {h: {(0, 0): [1, 1], (1, 4): [1, 2], (7, 2): [2, 1]}
                                   for h in HOURS},
    # 2 from 06:00 to 18:00, 1 otherwise
    "scheduled:06-18=2,else=1": {h: {n: [c, c] for n in NODES}
                                 for h, c in zip(HOURS, (1, 2, 1), strict=True)},
    # g4dn.xlarge: max(1, ceil(nodes / 2)); g4dn.2xlarge: 1
    "per-type:g4dn.xlarge=proportional:2+g4dn.2xlarge=static:1": {
        h: {(0, 0): [1, 1], (1, 4): [1, 1], (7, 2): [4, 1]} for h in HOURS},
}


@pytest.mark.parametrize("policy", list(EXPECTED))
def test_the_service_counts_what_the_simulators_peer_counts(policy) -> None:
    """One rule: the simulator's peer and the service's headroom keep the counts above
    for the same time and nodes."""
    two = types("g4dn.xlarge", "g4dn.2xlarge")
    workload = build_workload(table([pod("p", 0.0, 60.0, 1)], end=86_400.0), two)
    peer = make_policy(policy, workload, CATALOG, SimConfig(), {0: ("",), 1: ("",)})
    spec = parse_headroom(policy)
    names = [t.name for t in two]
    for now in HOURS:
        for nodes in NODES:
            expected = EXPECTED[policy][now][nodes]
            assert peer.counts(now, nodes) == expected, (now, nodes)
            assert headroom_counts(spec, names, now,
                                   dict(zip(names, nodes, strict=True))) == expected


@pytest.mark.parametrize("headroom, message", [
    ("predictive", "is not a headroom policy"),
    ("static:x", "static:N needs a whole number"),
    ("scheduled:25-26=1", "hours run 0-24"),
])
def test_a_bad_headroom_is_refused_naming_the_field(headroom, message) -> None:
    with pytest.raises(ConfigError, match=rf"test.yaml: headroom: .*{message}"):
        make_config(headroom=headroom)


def test_a_headroom_naming_a_type_outside_the_buckets_is_refused() -> None:
    config = make_config(headroom="static:g4dn.xlarge=1")
    with pytest.raises(ConfigError, match="headroom: g4dn.xlarge is not one of the bucket"):
        resolve_catalog(config)
