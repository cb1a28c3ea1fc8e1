"""Demand series (predictor.history.series) and the CSV series reader (predictor.live.series_io)."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from bucketing.embed import embed
from common.errors import InputError
from jobtraces.demand import resource_matrix, snapshots
from jobtraces.jobtable import JobTable
from jobtraces.load import load_trace
from jobtraces.synthetic import SyntheticWorkload, generate
from predictor.history.series import (
    DemandSeries,
    bucket_vectors,
    make_series,
    series_column,
    series_from_jobtable,
    split_column,
)
from predictor.live.series_io import read_series_csv
from tests.predictor.builders import CATALOG

GIB = 2**30
NAN = np.nan



def make_pod(name, submit, start=NAN, end=NAN, cpu=1.0, memory_gib=1.0, gpus=0):
    return dict(pod=name, job_id="", job_name="", role="", submit_s=float(submit),
                start_s=float(start), end_s=float(end), cpu_milli=int(cpu * 1000),
                memory_bytes=int(memory_gib * GIB), gpus=gpus, gpu_milli=gpus * 1000,
                priority_class="")


def make_table(*pods, end_s=900.0):
    return JobTable(pd.DataFrame(list(pods)), "test", 0.0, end_s)


def test_running_and_pending_pods_both_count():
    table = make_table(
        make_pod("a", 0, 0, 600, cpu=2, memory_gib=4),      # runs ticks 0, 300
        make_pod("b", 0, 300, cpu=2, memory_gib=4),         # pending at 0, runs from 300
        make_pod("c", 300, cpu=4, memory_gib=8, gpus=1),    # pending from 300, never runs
        make_pod("huge", 0, 0, cpu=2, memory_gib=1, gpus=9),  # fits no bucket
    )
    series = series_from_jobtable(table, list(CATALOG.instance_types), 300)
    assert series.times.tolist() == [0.0, 300.0, 600.0]
    # tick 0: a + b on cpu4: cpu 4/4 = 1 -> 1 | tick 300: same, and c on gpu1 -> 1
    # tick 600: only b: cpu 2/4 = 0.5 -> ceil 1; c still pending -> gpu1 1
    assert series.counts["cpu4"].tolist() == [1.0, 1.0, 1.0]
    assert series.counts["gpu1"].tolist() == [0.0, 1.0, 1.0]
    assert series.totals["pods_unbucketable"].tolist() == [1.0, 1.0, 1.0]
    # total GPUs wanted: huge 9 (running) + c 1 (pending from 300)
    assert series.total_gpus().tolist() == [9.0, 10.0, 10.0]
    assert series.totals["pods_pending"].tolist() == [1.0, 1.0, 1.0]


def test_counts_agree_with_embedding_each_snapshot():
    table = generate(SyntheticWorkload(days=1.0, seed=3))
    types = list(CATALOG.instance_types)
    series = series_from_jobtable(table, types, 600)
    snaps = snapshots(table, 600)
    vectors = resource_matrix(table)
    for tick in (0, len(snaps) // 2, len(snaps) - 1):
        rows = np.concatenate([snaps.running(tick), snaps.pending(tick)])
        expected = embed(vectors[rows], bucket_vectors(types)).counts
        assert series.counts.iloc[tick].tolist() == expected.astype(float).tolist()


def test_empty_bucket_list_is_refused():
    with pytest.raises(InputError, match="bucket list is empty"):
        series_from_jobtable(make_table(make_pod("a", 0, 0)), [], 300)


@pytest.mark.parametrize(
    "times, values, message",
    [
        ([0, 300, 900], [1, 2, 3], "not one tick"),
        ([0, 300], [1, -2], "negative count"),
        ([0, 300], [1, np.inf], "infinite"),
    ],
    ids=["irregular", "negative", "infinite"],
)
def test_series_invariants(times, values, message):
    with pytest.raises(InputError, match=message):
        make_series(np.array(times, float), ["x"], np.array(values, float)[:, None], 300)


def test_gap_rows_are_nan_and_counted():
    series = make_series(np.array([0.0, 300, 600]), ["x", "y"],
                         np.array([[1, 2], [NAN, NAN], [3, NAN]]), 300)
    assert series.gap_ticks() == 1  # only the all-NaN row is a gap tick
    assert isinstance(series, DemandSeries) and series.history().shape == (3, 2)


@pytest.mark.parametrize("bucket, group", [("p4d.24xlarge", "pg-a"), ("m5.large", None)],
                         ids=["grouped", "plain"])
def test_column_names_round_trip(bucket, group):
    assert split_column(series_column(bucket, group)) == (bucket, group)


def write_csv(tmp_path, text, name="s.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, times, values",
    [
        ("time,v\n0,1\n300,2\n900,4\n", [0, 300, 600, 900], [1, 2, NAN, 4]),  # hole -> NaN
        ("time,v\n300,2\n0,1\n600,3\n", [0, 300, 600], [1, 2, 3]),            # sorted
        ("time,v\n0,1\n300,2\n300,2\n600,3\n", [0, 300, 600], [1, 2, 3]),     # same dup kept once
        ("time,v\n0,1\n300,\n600,3\n", [0, 300, 600], [1, NAN, 3]),           # blank -> gap
        ("time,v\n2020-05-01 00:00:00,1\n2020-05-01 00:05:00,2\n",
         [1588291200, 1588291500], [1, 2]),                                   # datetimes, UTC
    ],
    ids=["gap", "unsorted", "duplicate-same", "blank-value", "datetimes"],
)
def test_csv_repairs(tmp_path, text, times, values):
    series = read_series_csv(write_csv(tmp_path, text), "v")
    assert series.times.tolist() == times
    np.testing.assert_array_equal(series.history()[:, 0], np.array(values, float))
    assert series.tick_s == 300


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("time,v\n0,1\n300,-2\n", "v", "line 3: v is -2"),
        ("time,v\n0,1\n300,abc\n", "v", "line 3: v 'abc' is not a number"),
        ("time,v\n0,1\n300,2\n300,3\n", "v", "lines 3 and 4: the same time"),
        ("time,v\n0,1\n300,2\n750,3\n", "v", "line 4: time 750 is not on the 300 s grid"),
        ("time,v\n0,1\n300,2\n", "w", "no column 'w' \\(have: v\\)"),
        ("t,v\n0,1\n", "v", "no 'time' column"),
        ("time,v\n0,1\nnot-a-time,2\n", "v", "line 3: time 'not-a-time' is not a number"),
        ("time,v\n2020-05-01,1\nnot-a-time,2\n", "v", "line 3: time 'not-a-time' is neither"),
        ("time,v,w\n0,1,2\n", None, "name the column"),
        ("time,v\n0,1\n", "v", "one timestamp"),
    ],
    ids=["negative", "not-number", "duplicate-conflict", "off-grid", "unknown-column",
         "no-time", "bad-seconds", "bad-datetime", "ambiguous-column", "single-row"],
)
def test_csv_refusals_name_the_line(tmp_path, text, column, message):
    with pytest.raises(InputError, match=message):
        read_series_csv(write_csv(tmp_path, text), column)


def test_csv_gzip_and_missing_file(tmp_path):
    path = tmp_path / "s.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("time,v\n0,1\n300,2\n")
    assert read_series_csv(path).history()[:, 0].tolist() == [1.0, 2.0]
    with pytest.raises(InputError, match="no such file"):
        read_series_csv(tmp_path / "absent.csv", "v")


@pytest.mark.traces
def test_real_helios_and_philly_series(traces_dir):
    helios = read_series_csv(traces_dir / "helios-earth-gpu-5min.csv.gz", "gpus_running")
    assert helios.tick_s == 300 and helios.gap_ticks() == 0
    assert np.nanmax(helios.history()) <= 856  # the Earth cluster has 856 GPUs
    philly = read_series_csv(traces_dir / "philly-active-nodes-5min.csv.gz", "nodes_active")
    # about 10 hours missing on 25-26 Oct are blank values: gaps, never zeros
    assert 100 <= philly.gap_ticks() <= 130


@pytest.mark.traces
def test_real_openb_trace_series(traces_dir):
    table = load_trace(traces_dir / "alibaba-gpu-2023-openb_pod_list_default.csv.gz")
    types = list(CATALOG.instance_types)
    series = series_from_jobtable(table, types, 3600)
    # every pod is counted in the totals whether or not it fits a bucket
    snaps = snapshots(table, 3600)
    tick = len(snaps) // 2
    rows = np.concatenate([snaps.running(tick), snaps.pending(tick)])
    assert series.totals["pods_running"].iloc[tick] + series.totals["pods_pending"].iloc[
        tick] == len(rows)
    expected = embed(resource_matrix(table)[rows], bucket_vectors(types))
    assert series.counts.iloc[tick].tolist() == expected.counts.astype(float).tolist()
    assert series.totals["pods_unbucketable"].iloc[tick] == len(expected.unbucketable)
