"""Demand snapshots: who runs and who waits at each tick, and the per-tick totals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from common.errors import InputError
from jobtraces.demand import resource_matrix, snapshots, totals
from jobtraces.jobtable import COLUMNS, JobTable

NAN = float("nan")
GIB = 2**30


def make_table(rows: list[dict], start: float = 0.0, end: float = 40.0) -> JobTable:
    """Rows give submit/start/end and optional gpus/cpu/mem_gib; the rest is filler."""
    records = []
    for number, row in enumerate(rows):
        gpus = row.get("gpus", 0)
        records.append(
            {
                "pod": f"pod-{number}",
                "job_id": "job",
                "job_name": "job",
                "role": "worker",
                "submit_s": row["submit"],
                "start_s": row.get("start", NAN),
                "end_s": row.get("end", NAN),
                "cpu_milli": int(row.get("cpu", 1) * 1000),
                "memory_bytes": int(row.get("mem_gib", 1) * GIB),
                "gpus": int(np.ceil(gpus)),
                "gpu_milli": int(gpus * 1000),
                "priority_class": "",
            }
        )
    frame = pd.DataFrame(records).astype(COLUMNS)
    return JobTable(frame, "test", start, end)


# Ticks at 0, 10, 20, 30 (window 0..40, tick 10).
TABLE = make_table(
    [
        {"submit": 0, "start": 0, "end": 20, "gpus": 1, "cpu": 4, "mem_gib": 16},  # 0
        {"submit": 0, "start": 10, "gpus": 0.5, "cpu": 2, "mem_gib": 8},  # 1: runs to the end
        {"submit": 5, "cpu": 1, "mem_gib": 2},  # 2: never scheduled, waits forever
        {"submit": 10, "start": 15, "end": 25, "gpus": 8, "cpu": 32},  # 3
        {"submit": 12, "end": 18, "cpu": 3},  # 4: deleted at 18 while pending
        {"submit": 0, "start": 0, "end": 10, "cpu": 1},  # 5: end is exclusive
    ]
)

SNAPSHOT_CASES = [
    (0, [0, 5], [1], "t0"),  # 1 waits for its start at 10
    (1, [0, 1], [2, 3], "t10"),  # 5 ended at 10 (exclusive); 2 submitted at 5; 3 at 10
    (2, [1, 3], [2], "t20"),  # 0 ended at 20; 4 was deleted at 18
    (3, [1], [2], "t30"),  # 3 ended at 25
]


@pytest.mark.parametrize(
    "tick, running, pending",
    [c[:3] for c in SNAPSHOT_CASES],
    ids=[c[3] for c in SNAPSHOT_CASES],
)
def test_running_and_pending(tick, running, pending):
    snaps = snapshots(TABLE, 10)
    assert snaps.running(tick).tolist() == running
    assert snaps.pending(tick).tolist() == pending


def test_ticks_cover_the_window_inclusive_exclusive():
    snaps = snapshots(TABLE, 10)
    assert snaps.times.tolist() == [0, 10, 20, 30]  # 40 is the end, excluded
    assert len(snaps) == 4
    assert snaps.tick_s == 10
    # 35 s at 10 s ticks from 5: 5, 15, 25, 35 -> ceil(35 / 10) = 4 ticks
    assert snapshots(TABLE, 10, start_s=5, end_s=40).times.tolist() == [5, 15, 25, 35]


def test_totals_sum_the_snapshots():
    snaps = snapshots(TABLE, 10)
    frame = totals(TABLE, snaps)
    assert frame.index.name == "time_s"
    # t0: pods 0 and 5 run: 1 GPU; 4 + 1 = 5 CPUs; 16 + 1 = 17 GiB. Pod 1 waits: 0.5 GPU
    assert frame.loc[0.0].to_dict() == {
        "gpus_running": 1.0,
        "cpus_running": 5.0,
        "memory_gib_running": 17.0,
        "pods_running": 2,
        "gpus_pending": 0.5,
        "cpus_pending": 2.0,
        "memory_gib_pending": 8.0,
        "pods_pending": 1,
    }
    # t20: pods 1 and 3 run: 0.5 + 8 = 8.5 GPUs; 2 + 32 = 34 CPUs
    assert frame.loc[20.0, "gpus_running"] == 8.5
    assert frame.loc[20.0, "cpus_running"] == 34.0
    # t10 pending: pods 2 (1 CPU) and 3 (32 CPUs) = 33
    assert frame.loc[10.0, "cpus_pending"] == 33.0


def test_totals_match_a_brute_force_sum_on_random_pods():
    rng = np.random.default_rng(7)
    rows = []
    for _ in range(300):
        submit = float(rng.uniform(0, 1000))
        start = submit + float(rng.uniform(0, 50)) if rng.random() < 0.9 else NAN
        end = start + float(rng.uniform(0, 400)) if rng.random() < 0.8 else NAN
        rows.append(
            {"submit": submit, "start": start, "end": end, "gpus": int(rng.integers(0, 9)),
             "cpu": float(rng.integers(1, 64)), "mem_gib": float(rng.integers(1, 256))}
        )
    table = make_table(rows, end=1200)
    snaps = snapshots(table, 7)
    frame = totals(table, snaps)
    matrix = resource_matrix(table)
    submit, start, end = (table.frame[c].to_numpy() for c in ("submit_s", "start_s", "end_s"))
    for i, t in enumerate(snaps.times):
        running = np.flatnonzero((start <= t) & ~(end <= t))
        pending = np.flatnonzero((submit <= t) & ~(start <= t) & ~(end <= t))
        assert snaps.running(i).tolist() == running.tolist()
        assert snaps.pending(i).tolist() == pending.tolist()
        np.testing.assert_allclose(
            frame.iloc[i][["gpus_running", "cpus_running", "memory_gib_running"]],
            matrix[running].sum(axis=0),
        )
        assert frame.iloc[i]["pods_pending"] == pending.size


def test_resource_matrix_is_cost_order():
    # pod 1: 500 gpu_milli -> 0.5 GPU, 2000 cpu_milli -> 2 CPUs, 8 GiB
    np.testing.assert_array_equal(resource_matrix(TABLE)[1], [0.5, 2.0, 8.0])
    assert resource_matrix(TABLE).shape == (6, 3)


@pytest.mark.parametrize("tick", [0, -5, float("nan")], ids=["zero", "negative", "nan"])
def test_bad_tick_is_an_input_error(tick):
    with pytest.raises(InputError, match="tick"):
        snapshots(TABLE, tick)


def test_a_window_of_too_many_ticks_is_an_input_error_not_a_memory_error():
    # One corrupt end time: 0..1e12 s at 300 s ticks = 3,333,333,334 ticks > 10,000,000.
    table = make_table([{"submit": 0.0, "start": 0.0, "end": 1e12}], end=1e12)
    with pytest.raises(InputError, match=r"^test: the window 0\.\.1e\+12 s .* 3,333,333,334 ticks"):
        snapshots(table, 300.0)
