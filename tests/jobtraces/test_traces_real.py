"""Loaders on the real Alibaba traces in $TRACES (docs/traces.md; skipped when absent).

Expected counts are derived from the raw files with plain pandas here, so the test
checks the loader's mapping, not numbers copied from its own output.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jobtraces.demand import snapshots, totals
from jobtraces.load import load_trace

OPENB = "alibaba-gpu-2023-openb_pod_list_default.csv.gz"
DLRM = "alibaba-gpu-2025-disaggregated_DLRM_trace.csv.gz"

pytestmark = pytest.mark.traces


def test_openb(traces_dir):
    raw = pd.read_csv(traces_dir / OPENB)
    table = load_trace(traces_dir / OPENB, gpu_sharing=True)
    assert table.source.endswith("(alibaba-openb)")
    assert len(table) == len(raw)  # nothing dropped
    assert table.frame["job_id"].nunique() == len(raw)  # one job per pod
    censoring = table.censoring
    assert censoring.started_before_trace == int((raw["creation_time"] == 0).sum())
    assert censoring.never_scheduled == int(raw["scheduled_time"].isna().sum())
    assert censoring.running_at_end == int(
        (raw["scheduled_time"].notna() & raw["deletion_time"].isna()).sum()
    )
    assert censoring.dropped == {}
    # the pods never scheduled are the ones in phase Pending
    never = table.frame["start_s"].isna().to_numpy()
    assert set(raw.loc[never, "pod_phase"]) == {"Pending"}
    times = raw[["creation_time", "scheduled_time", "deletion_time"]].to_numpy()
    assert table.trace_start_s == np.nanmin(np.where(times > 0, times, np.nan))
    assert table.trace_end_s == np.nanmax(times)
    # gpu_milli is the share per GPU: the table's total is num_gpu x share
    assert table.frame["gpu_milli"].sum() == int((raw["num_gpu"] * raw["gpu_milli"]).sum())
    # Without GPU sharing (the default) each pod asking for part of a GPU takes a whole one.
    whole = load_trace(traces_dir / OPENB)
    shared_pods = int(((raw["num_gpu"] == 1) & (raw["gpu_milli"] < 1000)).sum())
    assert whole.gpus_rounded == shared_pods
    assert whole.frame["gpu_milli"].sum() == int((raw["num_gpu"] * 1000).sum())


def test_dlrm(traces_dir):
    raw = pd.read_csv(traces_dir / DLRM)
    table = load_trace(traces_dir / DLRM)
    assert table.source.endswith("(alibaba-dlrm)")
    assert len(table) == len(raw)
    assert table.frame["job_id"].nunique() == raw["app_name"].nunique()
    assert (table.frame["role"] == "ps").sum() == (raw["role"] == "CN").sum()
    assert (table.frame["role"] == "worker").sum() == (raw["role"] == "HN").sum()
    censoring = table.censoring
    assert censoring.started_before_trace == int(raw["creation_time"].isna().sum())
    assert censoring.running_at_end == int(raw["deletion_time"].isna().sum())
    assert censoring.never_scheduled == int(
        (raw["creation_time"].notna() & raw["scheduled_time"].isna()).sum()
    )
    assert table.trace_start_s == 0
    times = raw[["creation_time", "scheduled_time", "deletion_time"]]
    assert table.trace_end_s == times.max().max()
    assert table.frame["cpu_milli"].sum() == int(raw["cpu_request"].sum() * 1000)


def test_dlrm_running_gpus_at_the_start(traces_dir):
    raw = pd.read_csv(traces_dir / DLRM)
    table = load_trace(traces_dir / DLRM)
    demand = totals(table, snapshots(table, 300))
    # at t = 0 exactly the instances created before the trace run (blank creation)
    before = raw["creation_time"].isna() & ~(raw["deletion_time"] <= 0)
    assert demand["gpus_running"].iloc[0] == raw.loc[before, "gpu_request"].sum()
    assert len(demand) == int(np.ceil(table.trace_end_s / 300))
