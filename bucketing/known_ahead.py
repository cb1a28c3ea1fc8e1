"""Known-ahead demand in a job table, per tick, and a what-if that announces more of it.

Decides, for replaying a trace (the simulator's policies read this):
- `known_per_tick`: at each tick t, the pods already known (known_at_s <= t) but not
  yet created (t < submit_s) whose creation falls within the horizon
  (t < submit_s <= t + horizon), embedded into buckets like any demand snapshot
  (`bucketing.embed`). This is what the live service's known demand at t would be had
  the trace's announcements been visible: pods known only at creation never count.
  `known_counts` is the same rule on plain arrays, for a caller that pins pods to
  buckets itself (the simulator).
- `announced`: the pods counted as known at some tick at least a start-up before their
  creation: the service's *announced* demand (docs/known-demand.md, rule 4), which its forecaster
  does not learn from.
- `with_lead`: a seeded what-if marking a share of *whole jobs* (all pods of a job_id;
  a pod without a job is its own job) as known `lead_s` before their creation (an
  earlier known_at_s is kept).

Must not: read files, log, use global random state, or mutate the table.
"""

from __future__ import annotations

import numpy as np

from bucketing.embed import embed_series, round_up
from common.errors import InputError
from jobtraces.demand import interval_ticks, intervals_csr, resource_matrix
from jobtraces.jobtable import KNOWN_AT, JobTable, known_at


def known_per_tick(table: JobTable, buckets: np.ndarray, times: np.ndarray,
                   horizon_s: float) -> np.ndarray:
    """(T, B) bucket counts (rounded up) of the known demand due within the horizon at
    each tick of `times` (ascending, the trace's clock); `buckets` is (B, 3) in the
    embedding's (GPUs, CPUs, GiB) order."""
    if not horizon_s > 0:
        raise InputError(f"{table.source}: horizon must be positive, got {horizon_s}")
    submit = table.frame["submit_s"].to_numpy(dtype=np.float64)
    return known_counts(resource_matrix(table), known_at(table), submit, buckets, times,
                        horizon_s)


def known_counts(vectors: np.ndarray, known: np.ndarray, submit: np.ndarray,
                 buckets: np.ndarray, times: np.ndarray, horizon_s: float,
                 bucket_of: np.ndarray | None = None) -> np.ndarray:
    """`known_per_tick` on arrays: (N, 3) pod vectors, (N,) known_at (NaN = at creation)
    and creation times; `bucket_of` pins pods to buckets (default: the embedding's)."""
    if not horizon_s > 0:
        raise InputError(f"known demand: horizon must be positive, got {horizon_s}")
    times = np.asarray(times, dtype=np.float64)
    first, after = interval_ticks(times, _counted_from(known, submit, horizon_s), submit)
    offsets, rows = intervals_csr(first, after, len(times))
    per_tick = [rows[offsets[i]:offsets[i + 1]] for i in range(len(times))]
    return round_up(embed_series(vectors, buckets, per_tick, bucket_of))


def announced(known: np.ndarray, submit: np.ndarray, times: np.ndarray,
              horizon_s: float, startup_s: float = 0.0) -> np.ndarray:
    """(N,) bool: the pod was first counted as known at a tick of `times` (ascending)
    at least `startup_s` before its creation (sooner, no node could be ready for it:
    the service leaves such pods in the forecaster's history)."""
    begin = _counted_from(known, submit, horizon_s)
    times = np.asarray(times, dtype=np.float64)
    first = np.searchsorted(times, np.where(np.isnan(begin), np.inf, begin), side="left")
    reached = first < len(times)
    tick = times[np.minimum(first, len(times) - 1)] if len(times) else np.zeros(len(first))
    return reached & ~np.isnan(begin) & (tick < submit) & (tick <= submit - startup_s)


def _counted_from(known: np.ndarray, submit: np.ndarray, horizon_s: float) -> np.ndarray:
    """When each pod starts to count: a tick t counts it when max(known_at, submit -
    horizon) <= t < submit (NaN = never)."""
    known = np.asarray(known, dtype=np.float64)
    return np.where(np.isnan(known), np.nan, np.fmax(known, np.asarray(submit) - horizon_s))


def with_lead(table: JobTable, share: float, lead_s: float, rng: np.random.Generator
              ) -> JobTable:
    """A copy of `table` where a random `share` of jobs is known `lead_s` before creation."""
    if not 0 <= share <= 1:
        raise InputError(f"with_lead: share must be within 0-1, got {share}")
    if lead_s < 0:
        raise InputError(f"with_lead: lead must not be negative, got {lead_s}")
    frame = table.frame
    jobs = np.where(frame["job_id"].to_numpy(dtype=object) == "",
                    frame["pod"].to_numpy(dtype=object), frame["job_id"].to_numpy(dtype=object))
    names, job_of_pod = np.unique(jobs.astype(str), return_inverse=True)
    chosen = rng.uniform(0.0, 1.0, len(names)) < share
    submit = frame["submit_s"].to_numpy(dtype=np.float64)
    known = known_at(table)
    lead = np.where(chosen[job_of_pod], submit - lead_s, np.nan)
    updated = np.fmin(known, lead)  # fmin keeps whichever is known; NaN only if both are
    return JobTable(frame.assign(**{KNOWN_AT: updated}), table.source, table.trace_start_s,
                    table.trace_end_s, table.censoring)
