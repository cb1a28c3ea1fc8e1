"""The tuner's report on a hand-built job table and a small catalog."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bucketing.catalog import parse_catalog
from bucketing.tune import demand_histogram, family, tune, without_duplicates
from common.errors import ConfigError, InputError
from jobtraces.demand import resource_matrix, snapshots
from jobtraces.jobtable import GPU_MODEL, JobTable

GIB = 1024**3
NAN = float("nan")


def make_table(pods: list[tuple], end_s: float = 3600.0, models: list[str] | None = None
               ) -> JobTable:
    """pods: (gpus, cpus, memory GiB, submit_s, start_s, end_s) each; NaN as in the table.
    models: the GPU model each pod asks for ("" = any); None = no gpu_model column."""
    rows = [
        {
            "pod": f"pod-{i}", "job_id": f"job-{i}", "job_name": "train", "role": "worker",
            "submit_s": submit, "start_s": start, "end_s": end,
            "cpu_milli": int(cpus * 1000), "memory_bytes": int(memory * GIB),
            "gpus": int(np.ceil(gpus)), "gpu_milli": int(gpus * 1000), "priority_class": "",
        }
        for i, (gpus, cpus, memory, submit, start, end) in enumerate(pods)
    ]
    frame = pd.DataFrame(rows).astype(
        {"cpu_milli": "int64", "memory_bytes": "int64", "gpus": "int64", "gpu_milli": "int64"})
    if models is not None:
        frame[GPU_MODEL] = np.array(models, dtype=object)
    return JobTable(frame, "hand-built", 0.0, end_s)


def make_type(name, gpus, cpus, memory_gib, price, model=None) -> dict:
    return {
        "name": name, "vcpu": cpus, "memory_gib": memory_gib, "gpus": gpus,
        "gpu_model": model, "price_per_hour": price,
        "allocatable": {"cpu": cpus, "memory": f"{memory_gib}Gi", "gpus": gpus},
    }


CATALOG_DOC = {
    "provider": "test",
    "instance_types": [
        make_type("c.small", 0, 4, 16, 1.0),
        make_type("g.one", 1, 8, 32, 3.0, "T4"),
        make_type("v.one", 1, 8, 32, 9.0, "V100"),  # same vector as g.one, dearer
        make_type("g.four", 4, 32, 128, 10.0, "T4"),
    ],
}
CATALOG = parse_catalog(CATALOG_DOC, "test.yaml")

# Two ticks, at 0 s and 1800 s (half an hour each):
PODS = [
    (0, 2, 8, 0, 0, NAN),  # p0: CPU pod, both ticks
    (1, 4, 16, 0, 0, 1800),  # p1: tick 0 only
    (1, 4, 16, 0, NAN, NAN),  # p2: pending forever: wants capacity at both ticks
    (2, 8, 32, 1800, 1800, NAN),  # p3: tick 1 only
]


@pytest.fixture
def report():
    table = make_table(PODS)
    return tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4")


def test_histogram_counts_running_and_pending():
    table = make_table(PODS)
    demand = demand_histogram(resource_matrix(table), snapshots(table, 1800))
    # shapes sorted: (0,2,8), (1,4,16), (2,8,32)
    assert demand.histogram.tolist() == [[1, 2, 0], [1, 1, 1]]
    running_only = demand_histogram(resource_matrix(table), snapshots(table, 1800), False)
    assert running_only.histogram.tolist() == [[1, 1, 0], [1, 0, 1]]


def test_family_is_cpu_types_plus_one_gpu_model_without_duplicates():
    assert [t.name for t in family(CATALOG, "T4")] == ["c.small", "g.one", "g.four"]
    assert [t.name for t in family(CATALOG, "V100")] == ["c.small", "v.one"]
    # v.one duplicates g.one's vector at three times the price: never reachable
    assert [t.name for t in without_duplicates(CATALOG.instance_types)] == [
        "c.small", "g.one", "g.four"]
    with pytest.raises(ConfigError, match="no GPU model 'H100'"):
        family(CATALOG, "H100")


def test_base_zero_costs_and_waste(report):
    base0 = next(c for c in report.candidates if c.label == "base 0")
    assert base0.instance_types == ("c.small", "g.one", "g.four")
    # tick 0: c.small (0,2,8)/(0,4,16) -> 1 x $1; g.one p1+p2 (2,8,32)/(1,8,32) -> 2 x $3
    # tick 1: c.small 1 x $1; g.one p2 -> 1 x $3; g.four p3 (2,8,32)/(4,32,128) -> 1 x $10
    # scale = (7 + 14) x 0.5 h = 10.5; packing equals the embedding here.
    assert base0.scale_usd == pytest.approx(10.5)
    assert base0.cost_usd == pytest.approx(10.5)
    assert base0.node_hours == pytest.approx(3.0)  # (3 + 3) nodes x 0.5 h
    assert base0.embed_node_hours == pytest.approx(3.0)
    # GPUs allocated 2 + (1 + 4) = 7, requested 2 + (1 + 2) = 5 -> 1 - 5/7
    assert base0.gpu_waste_fraction == pytest.approx(2 / 7)
    # CPUs allocated (4 + 16) + (4 + 8 + 32) = 64, requested 10 + 14 = 24 -> 1 - 24/64
    assert base0.cpu_waste_fraction == pytest.approx(0.625)
    assert base0.peak_nodes == 3
    assert list(base0.nodes_series) == [3, 3]


def test_walk_and_recommendation(report):
    # Drop c.small: p0 joins g.one; tick 0 (2,10,40)/(1,8,32) -> 2 x $3 = 6;
    # tick 1 g.one (1,6,24) -> $3, g.four $10 = 13: (6 + 13) x 0.5 = 9.5 < 10.5, kept.
    # Drop g.one: all in g.four, $10 each tick = 10 > 9.5, rejected.
    labels = [(c.label, c.instance_types, c.accepted) for c in report.candidates]
    assert labels == [
        ("catalog", ("c.small", "g.one", "v.one", "g.four"), None),
        ("base 0", ("c.small", "g.one", "g.four"), True),
        ("base 1", ("g.one", "g.four"), True),
        ("base 2", ("g.four",), False),
    ]
    assert report.candidates[2].scale_usd == pytest.approx(9.5)
    assert report.candidates[3].scale_usd == pytest.approx(10.0)
    assert report.recommended == ("g.one", "g.four")
    assert report.unbucketable_pods == 0


def test_auto_prefers_the_model_that_holds_every_pod():
    table = make_table(PODS)
    report = tune(table, snapshots(table, 1800), CATALOG)
    # V100 has no 2-GPU type: p3 is unbucketable there; T4 and "all" tie at $10.5
    assert report.family_scales["V100"][1] == 1
    assert report.family_scales["T4"] == pytest.approx((10.5, 0))
    assert report.gpu_model == "T4"


def test_unbucketable_pods_are_counted_with_examples():
    table = make_table(PODS + [(8, 4, 16, 0, 0, NAN)])
    report = tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4")
    assert report.unbucketable_pods == 1
    assert report.unbucketable_examples == (("pod-4", (8.0, 4.0, 16.0)),)
    as_json = report.to_json()["unbucketable_pods"]
    # 8 GPUs and 4 CPUs from 0 to the trace's end (NaN end) at 3600 s: 8 GPU-hours and
    # 4 CPU-hours (a GPU-less pod the list cannot hold has CPU-hours and no GPU-hours)
    assert as_json == {"count": 1, "gpu_hours": 8.0, "cpu_hours": 4.0, "never_scheduled": 0,
                       "examples": [{"pod": "pod-4", "gpus": 8.0, "cpus": 4.0,
                                     "memory_gib": 16.0}]}


def test_a_pod_asking_for_a_gpu_model_goes_only_to_that_model():
    # p1 asks for V100: the T4 list cannot hold it; "all" sends it to v.one, not g.one
    # (same vector, cheaper, listed first: where a pod asking for no model would go)
    models = ["", "V100", "", ""]
    table = make_table(PODS, models=models)
    t4 = tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4")
    assert t4.unbucketable_pods == 1
    assert t4.unbucketable_examples[0][0] == "pod-1"
    every = tune(table, snapshots(table, 1800), CATALOG, gpu_model="all")
    assert every.unbucketable_pods == 0
    assert "v.one" in every.recommended
    # auto: T4 and V100 leave one pod out each, "all" none
    auto = tune(table, snapshots(table, 1800), CATALOG)
    assert auto.gpu_model == "all"
    assert auto.family_scales["T4"][1] == 1


def test_max_types_cuts_the_kept_list():
    # base-instance selection keeps (g.one, g.four) (test_walk_and_recommendation); one
    # type: without g.one everything goes to g.four ($10 x 2 ticks x 0.5 h = $10), without
    # g.four p3 (2 GPUs) fits none: g.one goes
    table = make_table(PODS)
    report = tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4", max_types=1)
    assert report.recommended == ("g.four",)
    assert report.trimmed == ("g.one",)
    assert report.candidates[-1].label == "max 1"
    assert report.candidates[-1].scale_usd == pytest.approx(10.0)
    assert tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4",
                max_types=None).recommended == ("g.one", "g.four")


def test_pods_that_never_ran_are_counted_apart():
    # p2 never starts; with 9 GPUs it fits no type: not among the pods simulate would
    # drop as unfit (it is never scheduled there), counted on its own
    table = make_table([*PODS[:2], (9, 4, 16, 0, NAN, NAN), PODS[3]])
    report = tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4")
    assert (report.unbucketable_pods, report.unbucketable_never_scheduled) == (0, 1)


def test_a_trace_without_gpu_pods_is_refused():
    table = make_table([(0, 2, 8, 0, 0, NAN)])
    with pytest.raises(InputError, match="hand-built: no pod asks for a GPU"):
        tune(table, snapshots(table, 1800), CATALOG)
