"""A seeded synthetic demand trace of distributed training jobs: headstart's embedded default.

Decides: how jobs arrive (a Poisson process whose rate follows a daily cycle and a
weekly trend, plus bursts of jobs submitted together), what a job is (one or more
parameter-server pods with no GPU and 1-8 workers with 0-8 GPUs each, all sharing
a job_id), how big each pod is (CPU and memory scaled to its GPU count, so every
pod fits a real instance type), and how long it runs (log-normal).

Jobs reach the cluster three ways (`jobtraces.synthetic_lead`): periodic retraining
from CronJobs (on the hour, known `cron_lead_s` ahead), a Kueue-style queue with a GPU
quota (known when queued, pods created at admission), and unannounced submissions;
`known_at_s` says when each pod's demand became known (NaN = at creation).

The table is a trace of *demand*: every pod starts when submitted (start_s =
submit_s); waits for nodes are for the simulator to decide. A warm-up before time 0 means the
trace does not begin from an empty cluster: jobs still running at 0 are kept with
their start clamped to 0 (counted as started before the trace); jobs still running
at the end have no end_s (counted as running at the end).

Must not: use global random state (only `np.random.default_rng(config.seed)`), read
files, or read the clock. The same config always gives the same table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Real

import numpy as np
import pandas as pd

from common.errors import ConfigError
from jobtraces.jobtable import COLUMNS, KNOWN_AT, Censoring, JobTable
from jobtraces.synthetic_lead import CRON, QUEUED, cron_starts, queue_admissions, ways

DAY_S = 86_400.0
WEEK_S = 7 * DAY_S
HOUR_S = 3_600.0
GIB = 2**30
# Far above any useful trace (the default is ~800 jobs); beyond it numpy's Poisson
# draw fails and the table would not fit in memory.
MAX_EXPECTED_JOBS = 5_000_000


@dataclass(frozen=True)
class SyntheticWorkload:
    """Knobs of the synthetic workload; the defaults average ~35 and peak at ~140-210 running
    GPUs over 14 days (seed 0: mean 34, peak 143 at 5-minute ticks)."""

    days: float = 14.0
    """Length of the trace in days (time 0 to days x 86,400 s)."""

    seed: int = 0
    """Seed of the one random generator; the same seed gives the identical table."""

    jobs_per_day: float = 45.0
    """Mean job arrivals per day before seasonality, trend and bursts."""

    ps_counts: tuple[int, ...] = (0, 1, 2, 4)
    """Possible numbers of parameter-server pods per job (0 = all-reduce job)."""

    ps_count_weights: tuple[float, ...] = (0.35, 0.4, 0.2, 0.05)
    """Relative probability of each entry of ps_counts."""

    worker_counts: tuple[int, ...] = (1, 2, 4, 8)
    """Possible numbers of worker pods per job."""

    worker_count_weights: tuple[float, ...] = (0.45, 0.3, 0.17, 0.08)
    """Relative probability of each entry of worker_counts."""

    gpus_per_worker: tuple[int, ...] = (0, 1, 2, 4, 8)
    """Possible GPUs per worker (one value per job, 0-8); 0 makes a CPU-only job."""

    gpus_per_worker_weights: tuple[float, ...] = (0.1, 0.45, 0.2, 0.17, 0.08)
    """Relative probability of each entry of gpus_per_worker."""

    worker_cpus_per_gpu: tuple[float, float] = (3.0, 10.0)
    """Range (uniform) of CPU cores per GPU for a GPU worker, rounded to whole cores."""

    cpu_only_worker_cpus: tuple[float, float] = (2.0, 16.0)
    """Range (uniform) of CPU cores of a worker in a CPU-only job."""

    ps_cpus: tuple[float, float] = (4.0, 16.0)
    """Range (uniform) of CPU cores of a parameter-server pod (which has no GPU)."""

    memory_gib_per_cpu: tuple[float, float] = (3.5, 7.5)
    """Range (uniform) of memory GiB per CPU core, rounded to whole GiB."""

    daily_amplitude: float = 0.6
    """Arrival rate swings between (1 - a) and (1 + a) times the mean over a day (0-1)."""

    peak_hour: float = 14.0
    """Hour of the day (0-24, trace time) at which arrivals peak."""

    weekly_trend_pct: float = 5.0
    """Growth of the arrival rate per week, in percent (negative shrinks)."""

    bursts_per_day: float = 1.0
    """Mean number of bursts per day (Poisson), e.g. a sweep or a team's batch."""

    burst_jobs_mean: float = 6.0
    """Mean number of extra jobs in one burst (Poisson)."""

    burst_spread_s: float = 600.0
    """A burst's jobs arrive uniformly within this many seconds."""

    duration_median_h: float = 2.0
    """Median job duration in hours (log-normal)."""

    duration_sigma: float = 0.8
    """Log-normal sigma of the job duration (spread; 1.0 gives a long tail)."""

    duration_min_h: float = 5 / 60
    """Shortest job duration in hours (draws are clipped)."""

    duration_max_h: float = 72.0
    """Longest job duration in hours (draws are clipped)."""

    warmup_h: float = 72.0
    """Hours simulated before time 0 so the trace starts with jobs already running."""

    cron_share: float = 0.15
    """Share of jobs that are periodic retraining runs of CronJobs: they start on the hour
    and are known `cron_lead_s` before."""

    cron_lead_s: float = 3600.0
    """How long before its run a CronJob's job is known (its schedule is public)."""

    queue_share: float = 0.25
    """Share of jobs submitted through a Kueue-style queue: known when queued, admitted
    (pods created) when the queue's quota has room."""

    queue_quota_gpus: float = 48.0
    """GPU quota of that queue; its jobs wait while running queued jobs hold it."""

    def __post_init__(self) -> None:
        _validate(self)


def _fail(field_name: str, message: str) -> None:
    raise ConfigError(f"synthetic workload: {field_name}: {message}")


def _validate(config: SyntheticWorkload) -> None:
    for spec in fields(config):
        value = getattr(config, spec.name)
        numbers = value if isinstance(value, tuple) else (value,)
        for number in numbers:
            if isinstance(number, bool) or not isinstance(number, Real):
                _fail(spec.name, f"{number!r} is not a number")
            if not np.isfinite(number):
                _fail(spec.name, f"{number!r} is not finite")
    if config.days <= 0:
        _fail("days", f"must be positive, got {config.days}")
    for name in ("jobs_per_day", "bursts_per_day", "burst_jobs_mean", "burst_spread_s",
                 "warmup_h"):
        if getattr(config, name) < 0:
            _fail(name, f"must not be negative, got {getattr(config, name)}")
    for name in ("cron_share", "queue_share"):
        if not 0 <= getattr(config, name) <= 1:
            _fail(name, f"must be within 0-1, got {getattr(config, name)}")
    if config.cron_share + config.queue_share > 1:
        _fail("queue_share", "cron_share + queue_share must not exceed 1")
    if config.cron_lead_s < 0:
        _fail("cron_lead_s", f"must not be negative, got {config.cron_lead_s}")
    if config.queue_quota_gpus <= 0:
        _fail("queue_quota_gpus", f"must be positive, got {config.queue_quota_gpus}")
    if not 0 <= config.daily_amplitude <= 1:
        _fail("daily_amplitude", f"must be within 0-1, got {config.daily_amplitude}")
    if config.weekly_trend_pct <= -100:
        _fail("weekly_trend_pct", f"must be above -100, got {config.weekly_trend_pct}")
    for values, weights in (
        ("ps_counts", "ps_count_weights"),
        ("worker_counts", "worker_count_weights"),
        ("gpus_per_worker", "gpus_per_worker_weights"),
    ):
        choices, probabilities = getattr(config, values), getattr(config, weights)
        if not choices or len(choices) != len(probabilities):
            _fail(weights, f"needs one weight per entry of {values} ({len(choices)})")
        if any(int(c) != c or c < 0 for c in choices):
            _fail(values, f"entries must be whole numbers >= 0, got {choices}")
        if any(w < 0 for w in probabilities) or sum(probabilities) <= 0:
            _fail(weights, f"weights must be >= 0 with a positive sum, got {probabilities}")
    if min(config.worker_counts) < 1:
        _fail("worker_counts", "every job needs at least one worker")
    if max(config.gpus_per_worker) > 8:
        _fail("gpus_per_worker", "at most 8 GPUs per pod (the largest GPU nodes)")
    for name in ("worker_cpus_per_gpu", "cpu_only_worker_cpus", "ps_cpus", "memory_gib_per_cpu"):
        low, high = getattr(config, name)
        if not 0 < low <= high:
            _fail(name, f"needs 0 < low <= high, got ({low}, {high})")
    if not 0 < config.duration_min_h <= config.duration_max_h:
        _fail("duration_min_h", "needs 0 < duration_min_h <= duration_max_h")
    if config.duration_median_h <= 0 or config.duration_sigma < 0:
        _fail("duration_median_h", "median must be positive and sigma >= 0")
    span_days = config.days + config.warmup_h / 24.0
    # The trend's largest factor, in logs so that a long trace cannot overflow here.
    log_growth = max(0.0, math.log1p(config.weekly_trend_pct / 100.0)) * config.days / 7.0
    expected = span_days * (
        config.bursts_per_day * config.burst_jobs_mean
        + config.jobs_per_day * (1.0 + config.daily_amplitude)
        * math.exp(min(log_growth, math.log(MAX_EXPECTED_JOBS) + 1.0))
    )
    if expected > MAX_EXPECTED_JOBS:
        _fail(
            "days",
            f"with jobs_per_day, warmup_h, weekly_trend_pct and bursts, about {expected:.3g} "
            f"jobs would arrive (at most {MAX_EXPECTED_JOBS:,})",
        )


def arrival_rate_per_s(config: SyntheticWorkload, t: np.ndarray) -> np.ndarray:
    """Job arrivals per second at trace time t (seconds), bursts excluded."""
    hour = (t % DAY_S) / HOUR_S
    daily = 1.0 + config.daily_amplitude * np.cos(2 * np.pi * (hour - config.peak_hour) / 24)
    return config.jobs_per_day / DAY_S * daily * _trend(config, t)


def _trend(config: SyntheticWorkload, t: np.ndarray) -> np.ndarray:
    """The weekly trend's factor at trace time t (1 at time 0, monotonic in t)."""
    return (1.0 + config.weekly_trend_pct / 100.0) ** (t / WEEK_S)


def _arrivals(config: SyntheticWorkload, rng: np.random.Generator) -> np.ndarray:
    """Sorted job submit times over [-warmup, end): thinned Poisson plus bursts."""
    begin, end = -config.warmup_h * HOUR_S, config.days * DAY_S
    grid = np.linspace(begin, end, 1024)
    # Thinning needs peak >= the rate everywhere. The grid finds it on short traces; on
    # long ones its points can fall between daily peaks, so never go below the bound
    # (1 + amplitude) x the trend at either end (the trend is monotonic).
    bound = (
        config.jobs_per_day / DAY_S * (1.0 + config.daily_amplitude)
        * float(_trend(config, np.array([begin, end])).max())
    )
    peak = max(float(arrival_rate_per_s(config, grid).max()) * 1.01, bound)
    candidates = rng.uniform(begin, end, rng.poisson(peak * (end - begin)))
    accept = rng.uniform(0.0, peak, candidates.size) < arrival_rate_per_s(config, candidates)
    burst_count = rng.poisson(config.bursts_per_day * (end - begin) / DAY_S)
    burst_times = rng.uniform(begin, end, burst_count)
    burst_sizes = rng.poisson(config.burst_jobs_mean, burst_times.size)
    burst_jobs = np.repeat(burst_times, burst_sizes) + rng.uniform(
        0.0, config.burst_spread_s, int(burst_sizes.sum())
    )
    times = np.concatenate([candidates[accept], burst_jobs])
    return np.sort(times[times < end])


def _choice(rng: np.random.Generator, values: tuple, weights: tuple, size: int) -> np.ndarray:
    probabilities = np.asarray(weights, dtype=np.float64)
    probabilities /= probabilities.sum()
    return rng.choice(np.asarray(values, dtype=np.int64), size=size, p=probabilities)


def generate(config: SyntheticWorkload | None = None) -> JobTable:
    """The synthetic job table for `config` (the defaults when None)."""
    config = config or SyntheticWorkload()
    rng = np.random.default_rng(config.seed)
    end_of_trace = config.days * DAY_S

    submit = _arrivals(config, rng)
    jobs = submit.size
    ps_count = _choice(rng, config.ps_counts, config.ps_count_weights, jobs)
    worker_count = _choice(rng, config.worker_counts, config.worker_count_weights, jobs)
    gpus = _choice(rng, config.gpus_per_worker, config.gpus_per_worker_weights, jobs)
    duration_h = rng.lognormal(np.log(config.duration_median_h), config.duration_sigma, jobs)
    duration_s = np.clip(duration_h, config.duration_min_h, config.duration_max_h) * HOUR_S

    # How each job is announced, from a stream of its own: the draws above, and so the
    # jobs' sizes and arrivals, do not depend on the shares.
    way = ways(np.random.default_rng([config.seed, 1]), jobs, config.cron_share,
               config.queue_share)
    known = np.full(jobs, np.nan)
    cron = way == CRON
    submit = submit.copy()
    submit[cron] = cron_starts(submit[cron])
    known[cron] = submit[cron] - config.cron_lead_s
    queued = np.flatnonzero(way == QUEUED)
    known[queued] = submit[queued]
    submit[queued] = queue_admissions(submit[queued], (gpus * worker_count)[queued],
                                      duration_s[queued], config.queue_quota_gpus)
    finish = submit + duration_s

    # Jobs over before the trace starts are not part of it (they are the warm-up); jobs
    # a queue holds past its end never reach it.
    in_trace = (finish > 0) & (submit < end_of_trace)
    job_numbers = np.flatnonzero(in_trace)
    pods_per_job = (ps_count + worker_count)[in_trace]
    job_of_pod = np.repeat(job_numbers, pods_per_job)
    rank = np.arange(job_of_pod.size) - np.repeat(np.cumsum(pods_per_job) - pods_per_job,
                                                  pods_per_job)
    is_ps = rank < ps_count[job_of_pod]
    replica = np.where(is_ps, rank, rank - ps_count[job_of_pod])
    pod_gpus = np.where(is_ps, 0, gpus[job_of_pod])

    pods = job_of_pod.size
    per_gpu = rng.uniform(*config.worker_cpus_per_gpu, pods)
    cpu_only = rng.uniform(*config.cpu_only_worker_cpus, pods)
    ps_cpu = rng.uniform(*config.ps_cpus, pods)
    cpus = np.where(is_ps, ps_cpu, np.where(pod_gpus > 0, pod_gpus * per_gpu, cpu_only))
    cpus = np.maximum(1, np.round(cpus))
    memory_gib = np.maximum(1, np.round(cpus * rng.uniform(*config.memory_gib_per_cpu, pods)))

    pod_submit = submit[job_of_pod]
    pod_known = known[job_of_pod]
    started_before = pod_submit < 0
    pod_submit = np.maximum(pod_submit, 0.0)
    pod_end = finish[job_of_pod]
    pod_end = np.where(pod_end >= end_of_trace, np.nan, pod_end)
    job_ids = np.array([f"synth-{number:05d}" for number in range(job_numbers.size)], dtype=object)
    job_id_of_pod = np.repeat(job_ids, pods_per_job)
    roles = np.where(is_ps, "ps", "worker").astype(object)
    names = job_id_of_pod + "-" + roles + "-" + replica.astype(str).astype(object)

    frame = pd.DataFrame(
        {
            "pod": names,
            "job_id": job_id_of_pod,
            "job_name": job_id_of_pod,
            "role": roles,
            "submit_s": pod_submit,
            "start_s": pod_submit,
            "end_s": pod_end,
            "cpu_milli": (cpus * 1000).astype(np.int64),
            "memory_bytes": (memory_gib * GIB).astype(np.int64),
            "gpus": pod_gpus.astype(np.int64),
            "gpu_milli": (pod_gpus * 1000).astype(np.int64),
            "priority_class": np.full(pods, "", dtype=object),
            KNOWN_AT: pod_known,
        }
    ).astype({**COLUMNS, KNOWN_AT: "float64"})
    return JobTable(
        frame=frame,
        source=f"synthetic(seed={config.seed}, days={config.days:g})",
        trace_start_s=0.0,
        trace_end_s=end_of_trace,
        censoring=Censoring(
            started_before_trace=int(started_before.sum()),
            running_at_end=int(np.isnan(pod_end).sum()),
            never_scheduled=0,
        ),
    )
