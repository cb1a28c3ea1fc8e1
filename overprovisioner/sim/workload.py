"""The workload a simulation replays: the job table turned into plain arrays, censoring counted.

Decides: which rows of a job table are replayed and how censored rows are treated,
which bucket (instance type) each pod is pinned to, and the "true" demand series
(pods wanting capacity from submit until submit + duration, as if nothing waited)
that the oracle reads.

Censored rows:
- started before the trace (start at or before the trace start): they run from t0
  on nodes that already exist at t0 (not launches, no pending time);
- still running at the trace's end (NaN end): they run until the trace's end time
  (their duration is trace_end - start);
- never scheduled (NaN start, e.g. openb pods deleted while pending): excluded and
  counted, since the trace gives no run time for them;
- fitting no bucket type: excluded and counted (no node group could ever run them).

Bounds: a pod is pinned to the type `bucketing.fit.pin_buckets` chooses (the rule the
tuner counts unbucketable pods with: GPU pods on GPU types of the model they ask for,
GPU-less pods on GPU-less types when the list has any), as a workload's nodeSelector
would pin it; scheduling it onto a larger type is not modelled.

Must not: read files, log, mutate the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bucketing.catalog import Catalog, InstanceType
from bucketing.fit import bucket_vectors, pin_buckets
from common.errors import InputError
from jobtraces.jobtable import JobTable, gpu_model_requirements, known_at

__all__ = ["Workload", "bucket_vectors", "build_workload", "busy_hours", "default_types",
           "pin_buckets", "true_demand"]


@dataclass(frozen=True)
class Workload:
    """Arrays of the replayed pods (all of length N, sorted by submit time).

    request: (N, 3) int64 (gpu_milli, cpu_milli, memory_bytes).
    bucket: (N,) index into `types`.
    submit_s, duration_s: (N,) float64, trace seconds.
    initial: (N,) bool: running at t0 on capacity that already exists.
    job: (N,) int64 job index (-1 = single-pod job); role: (N,) "ps"/"worker"/... strings.
    excluded: reason -> count of table rows not replayed.
    known_at_s: (N,) float64, when each pod's demand became known (the job table's
        `known_at_s`; NaN = at creation); None = known at creation, all of them.
    """

    types: tuple[InstanceType, ...]
    pod_names: np.ndarray
    request: np.ndarray
    bucket: np.ndarray
    submit_s: np.ndarray
    duration_s: np.ndarray
    initial: np.ndarray
    job: np.ndarray
    job_names: tuple[str, ...]
    role: np.ndarray
    start_s: float
    end_s: float
    excluded: dict[str, int] = field(default_factory=dict)
    known_at_s: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.submit_s)

    @property
    def known_ahead(self) -> np.ndarray:
        """(N,) bool: the pod was known before its creation (not counted for initial
        pods, which were running before the window)."""
        if self.known_at_s is None:
            return np.zeros(len(self), dtype=bool)
        return ~self.initial & (self.known_at_s < self.submit_s)


def build_workload(
    table: JobTable,
    types: tuple[InstanceType, ...],
    days: float | None = None,
    from_day: float = 0.0,
) -> Workload:
    """The replayable pods of `table` on node `types`, in the window that starts `from_day`
    days after the trace start and lasts `days` days (default: to the trace's end).

    Pods running at the window's start (started before it, ending after it) are initial:
    they run from the window start for their remaining time, on nodes that exist then.
    """
    if not types:
        raise InputError("simulate: no instance types to simulate")
    if not from_day >= 0:
        raise InputError(f"simulate: --from-day must not be negative, got {from_day}")
    frame = table.frame
    start = float(table.trace_start_s) + from_day * 86_400.0
    end = float(table.trace_end_s)
    if start >= end:
        raise InputError(f"simulate: --from-day {from_day} is past the trace's end "
                         f"({table.duration_s / 86_400:.1f} days)")
    if days is not None:
        if not days > 0:
            raise InputError(f"simulate: --days must be positive, got {days}")
        end = min(end, start + days * 86_400.0)
    submit = frame["submit_s"].to_numpy(dtype=np.float64)
    begin = frame["start_s"].to_numpy(dtype=np.float64)
    finish = frame["end_s"].to_numpy(dtype=np.float64)
    excluded: dict[str, int] = {}

    never = np.isnan(begin)
    excluded["never scheduled in the trace"] = int(never.sum())
    late = ~never & (submit >= end)
    excluded["submitted after the simulated window"] = int(late.sum())
    stop = np.where(np.isnan(finish), float(table.trace_end_s), finish)
    done = ~never & ~late & (stop <= start) & (submit < start)
    excluded["ended before the simulated window"] = int(done.sum())
    keep = ~never & ~late & ~done
    initial = keep & (begin <= start) & (submit <= start)
    # An initial pod runs for what was left of it at the window start.
    duration = np.where(initial, stop - start, stop - begin)
    duration = np.maximum(duration, 0.0)
    # A pod submitted before the window but started inside it arrives at the window start.
    request = np.stack(
        [
            frame["gpu_milli"].to_numpy(dtype=np.int64),
            frame["cpu_milli"].to_numpy(dtype=np.int64),
            frame["memory_bytes"].to_numpy(dtype=np.int64),
        ],
        axis=1,
    )
    vectors = request.astype(np.float64) / np.array([1000.0, 1000.0, 1024.0**3])
    bucket = pin_buckets(vectors, types, gpu_model_requirements(table))
    unfit = keep & (bucket < 0)
    excluded["fit no simulated instance type"] = int(unfit.sum())
    keep &= bucket >= 0

    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(np.where(initial[rows], start, np.maximum(submit[rows], start)),
                           kind="stable")]
    job_ids = frame["job_id"].to_numpy(dtype=object)[rows]
    names, job_index, sizes = np.unique(job_ids.astype(str), return_inverse=True,
                                        return_counts=True)
    job = np.where((sizes[job_index] > 1) & (names[job_index] != ""), job_index, -1)
    return Workload(
        types=types,
        pod_names=frame["pod"].to_numpy(dtype=object)[rows],
        request=request[rows],
        bucket=bucket[rows].astype(np.int64),
        submit_s=np.where(initial[rows], start, np.maximum(submit[rows], start)),
        duration_s=duration[rows],
        initial=initial[rows],
        job=job.astype(np.int64),
        job_names=tuple(str(n) for n in names),
        role=frame["role"].to_numpy(dtype=object)[rows].astype(str),
        start_s=start,
        end_s=end,
        excluded={k: v for k, v in excluded.items() if v},
        known_at_s=known_at(table)[rows],
    )


def true_demand(workload: Workload, tick_s: float) -> np.ndarray:
    """(T, B) embedded node counts of the pods wanting capacity at each tick, if nothing waited.

    A pod wants capacity over [submit, submit + duration). The count of bucket b is the
    largest ratio over dimensions of the summed requests to the bucket vector, rounded
    up (the embedding's count). T = ceil((end - start) / tick_s) + 1.
    """
    count = int(np.ceil((workload.end_s - workload.start_s) / tick_s)) + 1
    first = np.ceil((workload.submit_s - workload.start_s) / tick_s).astype(np.int64)
    after = np.ceil(
        (workload.submit_s + workload.duration_s - workload.start_s) / tick_s
    ).astype(np.int64)
    first = np.clip(first, 0, count)
    after = np.clip(np.maximum(after, first), 0, count)
    offered = bucket_vectors(workload.types) * np.array([1000.0, 1000.0, 1024.0**3])
    counts = np.zeros((count, len(workload.types)))
    for b in range(len(workload.types)):
        mine = workload.bucket == b
        if not mine.any():
            continue
        sums = np.zeros((count + 1, 3))
        np.add.at(sums, first[mine], workload.request[mine])
        np.add.at(sums, after[mine], -workload.request[mine])
        running = np.cumsum(sums[:-1], axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(offered[b] > 0, running / np.where(offered[b] > 0, offered[b], 1), 0)
        counts[:, b] = np.ceil(ratios.max(axis=1) - 1e-9).clip(min=0)
    return counts


def default_types(table: JobTable, catalog: Catalog) -> tuple[InstanceType, ...]:
    """A small node-group list for `table`: per GPU count the trace asks for (0, 1, 2, ...),
    the cheapest type of one GPU model's family (GPU-less types for CPU pods) that holds
    the class's 90th-percentile pod, else the class's largest type. The GPU model is the
    one whose list leaves the fewest pods without a type, then the cheapest.
    Pods bigger than their class's type go to a larger listed type or are excluded."""
    frame = table.frame
    gpus = frame["gpus"].to_numpy()
    vectors = np.stack([
        frame["gpu_milli"].to_numpy(dtype=np.float64) / 1000.0,
        frame["cpu_milli"].to_numpy(dtype=np.float64) / 1000.0,
        frame["memory_bytes"].to_numpy(dtype=np.float64) / 1024.0**3,
    ], axis=1)
    models = sorted({t.gpu_model for t in catalog.instance_types if t.gpus > 0 and t.gpu_model})
    requirements = gpu_model_requirements(table)
    cpu_types = [t for t in catalog.instance_types if t.gpus == 0]
    best: tuple[int, float, tuple[InstanceType, ...]] | None = None
    for model in models or [None]:
        family = [t for t in catalog.instance_types if t.gpus > 0 and t.gpu_model == model]
        chosen: list[InstanceType] = []
        for count in np.unique(gpus):
            pool = cpu_types if count == 0 else [t for t in family if t.gpus >= count]
            if not pool:
                continue
            mine = vectors[gpus == count]
            target = np.percentile(mine, 90, axis=0)
            fitting = [t for t in pool
                       if np.all(target <= t.placeholder_request.as_vector() + 1e-9)]
            pick = (min(fitting, key=lambda t: t.price_per_hour) if fitting
                    else max(pool, key=lambda t: (t.placeholder_request.as_vector()[0],
                                                  t.price_per_hour)))
            if pick not in chosen:
                chosen.append(pick)
        if not chosen:
            continue
        chosen.sort(key=lambda t: tuple(t.placeholder_request.as_vector()))
        unfit = int((pin_buckets(vectors, tuple(chosen), requirements) < 0).sum())
        cost = sum(t.price_per_hour for t in chosen)
        # A family that leaves at most 2% of pods out competes on price alone.
        score = int(unfit // max(1.0, 0.02 * len(vectors)))
        if best is None or (score, cost) < best[:2]:
            best = (score, cost, tuple(chosen))
    if best is None:
        raise InputError("simulate: the catalog has no instance type for this trace")
    return best[2]


def busy_hours(workload: Workload) -> tuple[int, ...]:
    """The hours of the day (trace clock, 0-23) whose GPU demand arriving in the window
    (GPUs of the pods submitted in that hour, summed over the days, averaged with the
    hours on either side so the schedule comes out in a few ranges a user would type)
    is above the hourly mean: where a schedule would keep more headroom. Chosen from
    the very trace it is then judged on, which flatters a `scheduled` peer built from
    it. Empty when no GPU pod arrives."""
    arriving = ~workload.initial & (workload.request[:, 0] > 0)
    hours = ((workload.submit_s[arriving] % 86_400) // 3600).astype(np.int64)
    gpus = np.bincount(hours, weights=workload.request[arriving, 0] / 1000.0, minlength=24)
    if gpus.sum() <= 0:
        return ()
    smooth = (np.roll(gpus, 1) + gpus + np.roll(gpus, -1)) / 3.0
    return tuple(int(h) for h in np.flatnonzero(smooth > smooth.mean()))
