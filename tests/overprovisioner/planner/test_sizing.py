"""Placeholder sizing (pure): live nodes when they are good templates, else the fraction rule."""

from __future__ import annotations

import pytest

from bucketing.resources import Resources
from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.config.parse import parse_config
from overprovisioner.planner.sizing import NodeRoom, fit_problem, size_placeholders, template_nodes

MI = 1024**2
NOW = 1_700_000_000.0
LONG_AGO = NOW - 3600.0


def make_config(**placeholders):
    return parse_config({"instance_types": ["m5.large", "g5.xlarge", "p4d.24xlarge"],
                         "placeholders": placeholders}, "test.yaml")


def room(name="n1", instance_type="g5.xlarge", gpus=1, cpu=3920, memory_mi=15000,
         ds_cpu=0, ds_memory_mi=0, usable=True, ready_since=LONG_AGO, group=""):
    return NodeRoom(name, instance_type, group, Resources(gpus * 1000, cpu, memory_mi * MI),
                    Resources(0, ds_cpu, ds_memory_mi * MI), usable, ready_since)


@pytest.mark.parametrize(
    "rooms, expected, source",
    [
        # No node of the type: the fraction rule, 3620m / 14307Mi x 0.8 = 2896m / 11445Mi.
        ([], Resources(1000, 2896, 11445 * MI), "fraction"),
        # One good node: allocatable 3920m / 15000Mi less its DaemonSets 250m / 1200Mi.
        ([room(ds_cpu=250, ds_memory_mi=1200)], Resources(1000, 3670, 13800 * MI), "nodes"),
        # Two nodes: the smallest allocatable (3900m, 14900Mi) less the largest
        # DaemonSet sums (300m on n2, 1200Mi on n1): 3600m, 13700Mi.
        ([room("n1", cpu=3920, memory_mi=14900, ds_cpu=250, ds_memory_mi=1200),
          room("n2", cpu=3900, memory_mi=15000, ds_cpu=300, ds_memory_mi=1000)],
         Resources(1000, 3600, 13700 * MI), "nodes"),
        # Ready for only 30 s: not a template yet (CA waits 1 minute), fraction rule.
        ([room(ready_since=NOW - 30)], Resources(1000, 2896, 11445 * MI), "fraction"),
        # Its device plugin has not registered the GPU yet: fraction rule.
        ([room(gpus=0)], Resources(1000, 2896, 11445 * MI), "fraction"),
        # Cordoned / draining: not a template.
        ([room(usable=False)], Resources(1000, 2896, 11445 * MI), "fraction"),
        # Another type's node says nothing about g5.xlarge.
        ([room(instance_type="m5.large", gpus=0)], Resources(1000, 2896, 11445 * MI),
         "fraction"),
        # DaemonSets take the whole node: nothing to measure, fraction rule.
        ([room(ds_cpu=3920)], Resources(1000, 2896, 11445 * MI), "fraction"),
    ],
    ids=["no-node", "one-node", "two-nodes-min-max", "ready-30s", "gpu-not-registered",
         "not-usable", "other-type", "daemonsets-fill-it"],
)
def test_gpu_type_sizes(rooms, expected, source) -> None:
    config = make_config()
    size = size_placeholders(config, resolve_catalog(config), rooms, NOW)["g5.xlarge"]
    assert (size.request, size.source) == (expected, source)


def test_cpu_type_from_a_node_and_without_one() -> None:
    config = make_config()
    catalog = resolve_catalog(config)
    without = size_placeholders(config, catalog, [], NOW)["m5.large"]
    # 1630m / 6115Mi x 0.9 = 1467m, 5503.5Mi -> 5503Mi.
    assert without.request == Resources(0, 1467, 5503 * MI)
    node = room(instance_type="m5.large", gpus=0, cpu=1930, memory_mi=7000, ds_cpu=200,
                ds_memory_mi=300)
    measured = size_placeholders(config, catalog, [node], NOW)["m5.large"]
    # The whole room left by the DaemonSets: 1930 - 200 = 1730m, 7000 - 300 = 6700Mi.
    assert measured.request == Resources(0, 1730, 6700 * MI)


@pytest.mark.parametrize(
    "applied, expected",
    [
        # Within 5% of the measured 3670m / 13800Mi and fits the node: kept.
        (Resources(1000, 3600, 13500 * MI), Resources(1000, 3600, 13500 * MI)),
        # More than 5% below (3670 x 0.95 = 3486.5m > 3400m): the measured size.
        (Resources(1000, 3400, 13500 * MI), Resources(1000, 3670, 13800 * MI)),
        # Above what the node has left (13900Mi > 13800Mi): never kept.
        (Resources(1000, 3600, 13900 * MI), Resources(1000, 3670, 13800 * MI)),
        # GPUs differ (request_gpus flipped): the measured size.
        (Resources(0, 3600, 13500 * MI), Resources(1000, 3670, 13800 * MI)),
    ],
    ids=["close-kept", "too-small", "does-not-fit", "gpus-differ"],
)
def test_an_applied_request_is_kept_while_it_fits_and_is_close(applied, expected) -> None:
    config = make_config()
    node = room(ds_cpu=250, ds_memory_mi=1200)  # room: 3670m, 13800Mi
    size = size_placeholders(config, resolve_catalog(config), [node], NOW,
                             {"g5.xlarge": applied})["g5.xlarge"]
    assert size.request == expected


def test_sizing_from_nodes_can_be_switched_off() -> None:
    config = make_config(size_from_nodes=False)
    size = size_placeholders(config, resolve_catalog(config), [room()], NOW)["g5.xlarge"]
    assert size.source == "fraction" and "off" in size.detail


def test_request_gpus_false_measures_cpu_and_memory_only() -> None:
    config = make_config(request_gpus=False)
    node = room("p", instance_type="p4d.24xlarge", gpus=8, cpu=95690, memory_mi=1100000,
                ds_cpu=690, ds_memory_mi=100000)
    size = size_placeholders(config, resolve_catalog(config), [node], NOW)["p4d.24xlarge"]
    # 95690 - 690 = 95000m; 1100000 - 100000 = 1000000Mi; no GPUs requested.
    assert size.request == Resources(0, 95000, 1000000 * MI)


def test_template_nodes_follow_cluster_autoscalers_rule() -> None:
    nodes = [room("ok"), room("fresh", ready_since=NOW - 59), room("unknown", ready_since=None),
             room("cordoned", usable=False)]
    assert [n.name for n in template_nodes(nodes, "g5.xlarge", 1, NOW)] == ["ok"]


@pytest.mark.parametrize(
    "request_, rooms, short",
    [
        # Fits the roomier of two nodes: no problem.
        (Resources(1000, 3000, 12000 * MI),
         [room("a", cpu=2000), room("b", cpu=3920)], None),
        # Kubelet reports less memory than the catalog: 14307Mi asked, 14000Mi there.
        (Resources(1000, 3000, 14307 * MI), [room("a", memory_mi=14000)], "memory"),
        # More GPUs than the node reports.
        (Resources(2000, 1000, 1000 * MI), [room("a")], "GPUs"),
        # No usable node of the type: nothing to compare with, no verdict here.
        (Resources(1000, 9000, 1000 * MI), [room("a", usable=False)], None),
        # Ready 30 s ago, or its device plugin has not registered the GPU yet: it may
        # still change, no verdict from it.
        (Resources(1000, 9000, 1000 * MI), [room("a", ready_since=NOW - 30)], None),
        (Resources(1000, 1000, 1000 * MI), [room("a", gpus=0)], None),
    ],
    ids=["fits-one", "memory-short", "gpus-short", "no-usable-node", "just-ready",
         "gpus-not-registered"],
)
def test_fit_problem(request_, rooms, short) -> None:
    problem = fit_problem(request_, rooms, "g5.xlarge", NOW)
    if short is None:
        assert problem is None
    else:
        assert problem is not None and f"short of {short}" in problem
