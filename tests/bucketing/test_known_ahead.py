"""Known-ahead demand per tick from a job table, and the with_lead what-if."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bucketing.known_ahead import announced, known_counts, known_per_tick, with_lead
from common.errors import InputError
from jobtraces.jobtable import COLUMNS, KNOWN_AT, JobTable, known_at

GIB = 2**30
BUCKETS = np.array([[1.0, 4.0, 16.0], [4.0, 48.0, 192.0]])  # (GPUs, CPUs, GiB)


def table(rows) -> JobTable:
    """rows: (pod, job, submit, known_at, gpus, cpus, gib)."""
    frame = pd.DataFrame({
        "pod": [r[0] for r in rows], "job_id": [r[1] for r in rows],
        "job_name": [r[1] for r in rows], "role": "worker",
        "submit_s": [r[2] for r in rows], "start_s": [r[2] for r in rows], "end_s": np.nan,
        "cpu_milli": [r[5] * 1000 for r in rows], "memory_bytes": [r[6] * GIB for r in rows],
        "gpus": [r[4] for r in rows], "gpu_milli": [r[4] * 1000 for r in rows],
        "priority_class": "",
    }).astype(COLUMNS)
    frame[KNOWN_AT] = [r[3] for r in rows]
    return JobTable(frame, "test", 0.0, 3000.0)


TRACE = table([
    ("p1", "a", 1000.0, 400.0, 1, 2, 8),  # known 600 s ahead
    ("p2", "b", 1000.0, np.nan, 1, 2, 8),  # known at creation: never counted
    ("p3", "c", 2000.0, 1500.0, 4, 24, 96),  # known 500 s ahead
])
TIMES = 300.0 * np.arange(8)  # 0, 300, ..., 2100


def test_known_per_tick():
    counts = known_per_tick(TRACE, BUCKETS, TIMES, horizon_s=600.0)
    # p1 counts while max(400, 1000 - 600) = 400 <= t < 1000: ticks 600 and 900;
    # p3 while max(1500, 2000 - 600) = 1500 <= t < 2000: ticks 1500 and 1800
    assert counts.tolist() == [[0, 0], [0, 0], [1, 0], [1, 0], [0, 0], [0, 1], [0, 1], [0, 0]]


def test_a_short_horizon_sees_less():
    counts = known_per_tick(TRACE, BUCKETS, TIMES, horizon_s=200.0)
    # p1: max(400, 800) = 800 <= t < 1000: tick 900 only; p3: 1800 <= t < 2000: tick 1800
    assert counts[:, 0].tolist() == [0, 0, 0, 1, 0, 0, 0, 0]
    assert counts[:, 1].tolist() == [0, 0, 0, 0, 0, 0, 1, 0]


def test_known_pods_of_one_bucket_are_embedded_together():
    trace = table([(f"p{i}", "a", 1000.0, 0.0, 1, 2, 8) for i in range(5)])
    # 5 pods x 1 GPU / 1 GPU per bucket = 5 nodes at every tick within the horizon
    assert known_per_tick(trace, BUCKETS, np.array([500.0]), 600.0).tolist() == [[5, 0]]


def test_with_lead_marks_whole_jobs():
    rows = [(f"{job}-{i}", job, 1000.0 + 10 * j, np.nan, 1, 2, 8)
            for j, job in enumerate("abcdefghij") for i in range(3)]
    result = with_lead(table(rows), share=0.5, lead_s=900.0, rng=np.random.default_rng(3))
    known = pd.Series(known_at(result), index=result.frame["job_id"])
    per_job = known.groupby(level=0).agg(lambda k: k.isna().all() or (k.notna().all()))
    assert per_job.all()  # every pod of a job is marked, or none
    marked = result.frame.loc[~np.isnan(known_at(result))]
    assert 0 < marked["job_id"].nunique() < 10
    assert (marked["submit_s"] - marked[KNOWN_AT] == 900.0).all()
    # seeded: the same generator seed marks the same jobs
    again = with_lead(table(rows), 0.5, 900.0, np.random.default_rng(3))
    np.testing.assert_array_equal(known_at(again), known_at(result))


def test_with_lead_keeps_an_earlier_announcement_and_not_the_input():
    result = with_lead(TRACE, share=1.0, lead_s=100.0, rng=np.random.default_rng(0))
    # p1 was known at 400, earlier than 1000 - 100: kept; p2 now known at 900
    assert known_at(result)[:2].tolist() == [400.0, 900.0]
    assert np.isnan(known_at(TRACE)[1])  # the input table is unchanged


@pytest.mark.parametrize("share, lead, message", [(1.5, 10.0, "share"), (0.5, -1.0, "lead")],
                         ids=["share", "lead"])
def test_with_lead_bad_arguments(share, lead, message):
    with pytest.raises(InputError, match=message):
        with_lead(TRACE, share, lead, np.random.default_rng(0))


@pytest.mark.parametrize(
    "horizon_s, expected",
    [
        # p1 counts from max(400, 1000 - 600) = 400: tick 600 < 1000, announced;
        # p2 is never known ahead; p3 from max(1500, 1400) = 1500: tick 1500 < 2000
        (600.0, [True, False, True]),
        # p1 from max(400, 1000 - 50) = 950: the next tick, 1200, is after its creation;
        # p3 from max(1500, 1950) = 1950: next tick 2100 > 2000
        (50.0, [False, False, False]),
    ],
    ids=["long-horizon", "between-ticks"],
)
def test_announced_pods_were_counted_at_a_tick(horizon_s, expected):
    submit = TRACE.frame["submit_s"].to_numpy()
    assert announced(known_at(TRACE), submit, TIMES, horizon_s).tolist() == expected


@pytest.mark.parametrize(
    "startup_s, expected",
    [
        # p1 first counted at tick 600, 400 s before it; p3 at 1500, 500 s before it
        (400.0, [True, False, True]),
        (450.0, [False, False, True]),
        (501.0, [False, False, False]),
    ],
    ids=["both-in-time", "p1-too-late", "both-too-late"],
)
def test_announced_needs_a_start_up_of_lead(startup_s, expected):
    submit = TRACE.frame["submit_s"].to_numpy()
    assert announced(known_at(TRACE), submit, TIMES, 600.0, startup_s).tolist() == expected


def test_known_counts_with_pinned_buckets_agree_with_the_table_version():
    submit = TRACE.frame["submit_s"].to_numpy()
    vectors = np.array([[1.0, 2.0, 8.0], [1.0, 2.0, 8.0], [4.0, 24.0, 96.0]])
    free = known_counts(vectors, known_at(TRACE), submit, BUCKETS, TIMES, 600.0)
    np.testing.assert_array_equal(free, known_per_tick(TRACE, BUCKETS, TIMES, 600.0))
    # pinned: p3 (4 GPUs) to bucket 1 as the embedding does, p1 to bucket 1 too (a
    # nodeSelector): ticks 600 and 900 now count p1 in bucket 1 (1 GPU of 4: 1 node)
    pinned = known_counts(vectors, known_at(TRACE), submit, BUCKETS, TIMES, 600.0,
                          bucket_of=np.array([1, 1, 1]))
    assert pinned[:, 0].tolist() == [0] * 8
    assert pinned[:, 1].tolist() == [0, 0, 1, 1, 0, 1, 1, 0]
