"""How the synthetic workload's jobs are announced ahead: CronJob retraining, a Kueue-style queue.

Decides, for jobs already drawn by `jobtraces.synthetic` (arrival times, GPUs, durations),
which way each one reaches the cluster and when its demand becomes known:
- *cron* (periodic retraining from CronJobs): the run starts on the hour (`0 * * * *`
  schedules: the arrival is moved back to the full hour before it) and is known
  `cron_lead_s` before it;
- *queued* (a Kueue-style queue with a GPU quota): the job is queued at its arrival and
  known from then; it is admitted, and its pods created, first come first served once
  the queue's running jobs leave room under the quota (a job larger than the quota is
  admitted alone); its pods start at admission;
- *unannounced*: the pods are the first anyone hears of it (known_at NaN).

Must not: use global random state (the caller passes a Generator), read files, or log.
"""

from __future__ import annotations

import heapq

import numpy as np

HOUR_S = 3_600.0
UNANNOUNCED, CRON, QUEUED = 0, 1, 2


def ways(rng: np.random.Generator, jobs: int, cron_share: float, queue_share: float
         ) -> np.ndarray:
    """(jobs,) how each job arrives: UNANNOUNCED, CRON or QUEUED, drawn with the shares."""
    draw = rng.uniform(0.0, 1.0, jobs)
    return np.where(draw < cron_share, CRON,
                    np.where(draw < cron_share + queue_share, QUEUED, UNANNOUNCED))


def cron_starts(arrivals: np.ndarray) -> np.ndarray:
    """The full hour at or before each arrival (a CronJob's run on the hour)."""
    return np.floor(arrivals / HOUR_S) * HOUR_S


def queue_admissions(arrivals: np.ndarray, gpus: np.ndarray, durations: np.ndarray,
                     quota_gpus: float) -> np.ndarray:
    """Admission time of each queued job (same order as given), first come first served
    under `quota_gpus`: a job waits for the queue's running jobs to leave room, and for
    every job queued before it (strict FIFO). A job that needs more than the quota on its
    own is admitted when the queue runs nothing."""
    order = np.argsort(arrivals, kind="stable")
    admitted = np.empty(len(arrivals))
    running: list[tuple[float, float]] = []  # (end, gpus) of admitted jobs, a heap
    used = 0.0
    clock = -np.inf
    for index in order:
        clock = max(clock, float(arrivals[index]))
        need = float(gpus[index])
        while running and (running[0][0] <= clock or used + need > quota_gpus):
            end, freed = heapq.heappop(running)
            clock = max(clock, end)
            used -= freed
        admitted[index] = clock
        heapq.heappush(running, (clock + float(durations[index]), need))
        used += need
    return admitted
