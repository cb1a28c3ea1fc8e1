"""The synthetic workload: deterministic, well-formed PS/worker jobs, seasonal, sized right."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from common.errors import ConfigError
from jobtraces.demand import snapshots, totals
from jobtraces.synthetic import DAY_S, HOUR_S, SyntheticWorkload, generate

SHORT = SyntheticWorkload(days=7)


@pytest.fixture(scope="module")
def week():
    return generate(SHORT)


def test_same_seed_same_table(week):
    assert generate(SHORT).frame.equals(week.frame)


def test_other_seed_other_table(week):
    assert not generate(replace(SHORT, seed=1)).frame.equals(week.frame)


def test_jobs_have_ps_and_worker_roles(week):
    frame = week.frame
    assert set(frame["role"]) == {"ps", "worker"}
    per_job = frame.groupby("job_id")
    # every job has at least one worker, and a job's pods share one submit time
    assert (per_job["role"].apply(lambda roles: (roles == "worker").sum()) >= 1).all()
    assert (per_job["submit_s"].nunique() == 1).all()
    assert (frame["start_s"] == frame["submit_s"]).all()  # a demand trace: no waits
    assert (frame["priority_class"] == "").all()


def test_gpus_per_pod(week):
    frame = week.frame
    assert frame["gpus"].between(0, 8).all()
    assert (frame.loc[frame["role"] == "ps", "gpus"] == 0).all()
    assert (frame["gpu_milli"] == frame["gpus"] * 1000).all()
    workers = frame[frame["role"] == "worker"]
    assert (workers["gpus"] == 0).any()  # some CPU-only jobs
    assert (workers["gpus"] == 8).any()
    # CPUs scale with GPUs: an 8-GPU worker asks for at least 8 x 3 = 24 cores
    assert (workers.loc[workers["gpus"] == 8, "cpu_milli"] >= 24_000).all()


def test_window_and_censoring(week):
    frame = week.frame
    assert (week.trace_start_s, week.trace_end_s) == (0.0, 7 * DAY_S)
    assert frame["submit_s"].between(0, 7 * DAY_S, inclusive="left").all()
    assert week.censoring.started_before_trace == int((frame["submit_s"] == 0).sum())
    assert week.censoring.running_at_end == int(frame["end_s"].isna().sum())
    assert (frame["end_s"].dropna() > frame["start_s"][frame["end_s"].notna()]).all()


def test_daily_seasonality_is_visible():
    # no bursts, no trend: the peak hour gets more arrivals than the trough 12 h later
    config = SyntheticWorkload(days=14, bursts_per_day=0, weekly_trend_pct=0, peak_hour=14)
    jobs = generate(config).frame.drop_duplicates("job_id")
    hour = (jobs["submit_s"] % DAY_S) // HOUR_S
    peak = int(hour.between(12, 15).sum())  # 12:00-16:00 around the 14:00 peak
    trough = int(hour.between(0, 3).sum())  # 00:00-04:00 around 02:00
    # rate ratio (1 + 0.6 cos ~0) / (1 - 0.6) is about 4, so 2x is a safe bar
    assert peak > 2 * trough


def test_flat_config_has_no_seasonality():
    config = SyntheticWorkload(days=14, bursts_per_day=0, weekly_trend_pct=0, daily_amplitude=0)
    jobs = generate(config).frame.drop_duplicates("job_id")
    hour = (jobs["submit_s"] % DAY_S) // HOUR_S
    peak, trough = int(hour.between(12, 15).sum()), int(hour.between(0, 3).sum())
    assert 0.6 < peak / trough < 1.6


def test_trend_grows_arrivals():
    config = SyntheticWorkload(days=28, bursts_per_day=0, weekly_trend_pct=50)
    jobs = generate(config).frame.drop_duplicates("job_id")
    week_of = jobs["submit_s"] // (7 * DAY_S)
    # 1.5 per week: week 4 has about 1.5**3 = 3.4x the arrivals of week 1
    assert (week_of == 3).sum() > 2 * (week_of == 0).sum()


def test_default_peak_demand_is_in_range():
    demand = totals(table := generate(), snapshots(table, 300))
    assert 50 <= demand["gpus_running"].max() <= 250
    assert demand["gpus_running"].mean() > 10


BAD_CONFIGS = [
    ({"days": 0}, "days", "days-zero"),
    ({"daily_amplitude": 1.5}, "daily_amplitude", "amplitude"),
    ({"gpus_per_worker": (1, 16), "gpus_per_worker_weights": (1, 1)}, "gpus_per_worker", "gpus"),
    ({"worker_count_weights": (1.0,)}, "worker_count_weights", "weights-length"),
    ({"worker_counts": (0, 1, 2, 4)}, "worker_counts", "zero-workers"),
    ({"ps_cpus": (8.0, 4.0)}, "ps_cpus", "range-reversed"),
    ({"jobs_per_day": float("nan")}, "jobs_per_day", "nan"),
    # 1e9 days x 45 jobs/day: numpy's Poisson draw used to fail with a traceback.
    ({"days": 1e9}, "days", "days-too-long"),
    # 1e6 jobs/day x (14 + 3 warm-up days) x 1.6 daily peak > 5,000,000 jobs.
    ({"jobs_per_day": 1e6}, "days", "too-many-jobs"),
    # 1000 %/week over 3 years: 11**156 overflows a float; checked in logs.
    ({"days": 1000, "weekly_trend_pct": 1000}, "days", "trend-explodes"),
    ({"cron_share": 1.5}, "cron_share", "cron-share"),
    ({"cron_share": 0.6, "queue_share": 0.6}, "queue_share", "shares-over-one"),
    ({"queue_quota_gpus": 0}, "queue_quota_gpus", "quota-zero"),
    ({"cron_lead_s": -1}, "cron_lead_s", "negative-lead"),
]


@pytest.mark.parametrize(
    "changes, field_name", [b[:2] for b in BAD_CONFIGS], ids=[b[2] for b in BAD_CONFIGS]
)
def test_bad_config_names_the_field(changes, field_name):
    with pytest.raises(ConfigError, match=f"synthetic workload: {field_name}:"):
        SyntheticWorkload(**changes)


def test_uses_its_own_generator_only():
    np.random.seed(1)
    first = generate(SHORT).frame
    np.random.seed(2)
    assert generate(SHORT).frame.equals(first)


def test_known_at_follows_the_way_each_job_arrives(week):
    from jobtraces.jobtable import known_at

    frame = week.frame.assign(known=known_at(week))
    lead = frame["submit_s"] - frame["known"]
    cron = frame[lead == 3600.0]
    # CronJob runs start on the hour, known an hour before (started-before-trace ones are
    # clamped to 0, which is on the hour too)
    assert len(cron) and (cron["submit_s"] % 3600 == 0).all()
    assert (frame["known"].dropna() <= frame.loc[frame["known"].notna(), "submit_s"]).all()
    # about 15% cron and 25% queued jobs, 60% unannounced (784 jobs in a week: +-5 points)
    jobs = frame.drop_duplicates("job_id")
    unannounced = jobs["known"].isna().mean()
    assert 0.55 <= unannounced <= 0.65
    assert (frame.groupby("job_id")["known"].nunique(dropna=False) == 1).all()  # whole jobs


def test_shares_of_zero_announce_nothing_and_keep_the_jobs():
    plain = generate(replace(SHORT, cron_share=0, queue_share=0))
    from jobtraces.jobtable import known_at

    assert np.isnan(known_at(plain)).all()
    # the lead stream is separate: same jobs, same sizes, with or without announcements
    default = generate(SHORT)
    assert len(plain) == len(default)
    assert (plain.frame["gpus"].to_numpy() == default.frame["gpus"].to_numpy()).all()


QUEUE = [
    # quota 4: a (2 GPUs, 0-100) and b (2, from 10) run together; c (2, at 20) waits for
    # a to end at 100
    ([0, 10, 20], [2, 2, 2], [100, 100, 100], 4.0, [0, 10, 100], "waits-for-room"),
    # strict FIFO: d (4 GPUs at 5) waits for a (ends 50); e (1 GPU at 6) waits behind d
    ([0, 5, 6], [2, 4, 1], [50, 10, 10], 4.0, [0, 50, 60], "fifo"),
    # larger than the quota: admitted when the queue runs nothing
    ([0, 1], [1, 9], [30, 10], 4.0, [0, 30], "oversized"),
]


@pytest.mark.parametrize("arrivals, gpus, durations, quota, expected",
                         [q[:5] for q in QUEUE], ids=[q[5] for q in QUEUE])
def test_queue_admissions(arrivals, gpus, durations, quota, expected):
    from jobtraces.synthetic_lead import queue_admissions

    admitted = queue_admissions(np.array(arrivals, float), np.array(gpus, float),
                                np.array(durations, float), quota)
    assert admitted.tolist() == expected
