"""The canonical job table: one row per pod of a demand trace, whatever its source.

Decides: the column names, types and meaning every tool reads (tuner, predictor,
simulator), and how censoring is recorded. Loaders (`jobtraces`) and the
synthetic generator (`jobtraces.synthetic`) produce it; nothing else builds one.

Columns (all times in seconds from the trace's own origin):
  pod             unique pod name
  job_id          the job the pod belongs to ("" when the trace has no grouping)
  job_name        application / job name as the trace gives it
  role            "ps", "worker", "chief" or "" (loaders map their trace's roles onto
                  these; e.g. DLRM's CPU-node instances are "ps", GPU-node ones "worker")
  submit_s        when the pod was created (trace start when created before it)
  start_s         when it was scheduled; NaN = never scheduled within the trace
  end_s           when it ended; NaN = still running at the trace's end
  cpu_milli       requested CPU in millicores            (int64, >= 0)
  memory_bytes    requested memory in bytes             (int64, >= 0)
  gpus            requested whole GPUs (device count)    (int64, >= 0)
  gpu_milli       requested GPU in thousandths summed over devices, so a 46% share
                  of one GPU is 460 and 2 whole GPUs are 2000 (int64, >= 0)
  priority_class  the trace's QoS / priority class as a string ("" when unknown)
Optional column:
  known_at_s      when the pod's demand became known ahead (a queued Workload, a
                  suspended Job, a CronJob's next run), same clock as submit_s; NaN (blank
                  in CSV) = known only when the pod was created. Never after submit_s.
                  Read it with `known_at` (NaN for every row of a table without it).
  gpu_model       the GPU model a GPU pod must run on, in the catalogs' vocabulary
                  (`T4`, `V100`, `A100-40GB|A100-80GB` for either); "" = any model.
                  openb's `gpu_spec` becomes this (`jobtraces.gpu_spec`). Read it with
                  `gpu_model_requirements` ("" for every row of a table without it).

Must not: read files (that is `jobtraces`), or drop a row silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from common.errors import InputError

COLUMNS: dict[str, str] = {
    "pod": "object",
    "job_id": "object",
    "job_name": "object",
    "role": "object",
    "submit_s": "float64",
    "start_s": "float64",
    "end_s": "float64",
    "cpu_milli": "int64",
    "memory_bytes": "int64",
    "gpus": "int64",
    "gpu_milli": "int64",
    "priority_class": "object",
}
KNOWN_AT = "known_at_s"
GPU_MODEL = "gpu_model"
ANY_MODEL = ""
"""A `gpu_model` that accepts any model."""
MODEL_SEPARATOR = "|"
"""Joins the models a `gpu_model` accepts (`A100-40GB|A100-80GB`)."""


@dataclass(frozen=True)
class Censoring:
    """How many rows the trace cut off at either end, counted, never dropped.

    started_before_trace: created/scheduled before the trace began (time 0 or blank);
        their start is clamped to the trace start.
    running_at_end: no end time; they run until the trace's end.
    never_scheduled: no start time; they were pending for the whole rest of the trace.
    dropped: rows that could not be used at all, with the reason as key (e.g. an
        end before the start); the loader reports these to the user.
    """

    started_before_trace: int = 0
    running_at_end: int = 0
    never_scheduled: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        dropped = ", ".join(f"{n} {reason}" for reason, n in sorted(self.dropped.items()))
        return (
            f"{self.started_before_trace} pods started before the trace, "
            f"{self.running_at_end} still running at its end, "
            f"{self.never_scheduled} never scheduled"
            + (f"; dropped: {dropped}" if dropped else "")
        )


@dataclass(frozen=True)
class JobTable:
    """A validated job table plus where it came from and what was censored.

    trace_start_s / trace_end_s bound the observed window: the earliest submit and the
    latest event (submit, start or end) in the source.
    """

    frame: pd.DataFrame
    source: str
    trace_start_s: float
    trace_end_s: float
    censoring: Censoring = field(default_factory=Censoring)
    gpus_rounded: int = 0
    """Rows whose fractional GPU request was rounded up to whole GPUs
    (`jobtraces.gpu_sharing.whole_gpus`); 0 when the table is as the trace gives it."""

    def __post_init__(self) -> None:
        validate_frame(self.frame, self.source)

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def duration_s(self) -> float:
        return self.trace_end_s - self.trace_start_s


def require_gpu_pods(table: JobTable, why: str) -> None:
    """InputError naming the trace when no pod of it asks for a GPU (`why`: what the
    command cannot do then)."""
    if not (table.frame["gpu_milli"].to_numpy() > 0).any():
        raise InputError(f"{table.source}: no pod asks for a GPU; {why}")


JOB_COLUMNS_HELP = (
    "each pod's job (job_id; role ps or worker for elastic sizing): the headstart job-table "
    "CSV (columns job_id, role) and alibaba-dlrm (app_name, role) have it, alibaba-openb "
    "gives every pod a job of its own")
"""Which columns give a trace its jobs, and which formats have them."""


def require_jobs(table: JobTable, command: str) -> None:
    """InputError naming the trace when no job of it has two pods or more: `command`
    (what replays jobs as gangs) needs the job columns (`JOB_COLUMNS_HELP`)."""
    ids = table.frame["job_id"].astype(str)
    if not ids[ids != ""].duplicated().any():
        raise InputError(f"{table.source}: no job has more than one pod; {command} needs "
                         f"{JOB_COLUMNS_HELP}")


def validate_frame(frame: pd.DataFrame, source: str) -> None:
    """Raise InputError naming the source, column and first bad row of a non-canonical frame."""
    missing = [name for name in COLUMNS if name not in frame.columns]
    if missing:
        raise InputError(f"{source}: job table lacks column(s) {', '.join(missing)}")
    if frame.empty:
        raise InputError(f"{source}: the trace has no pods")
    for name in ("cpu_milli", "memory_bytes", "gpus", "gpu_milli"):
        values = frame[name].to_numpy()
        if values.dtype.kind not in "iu":
            raise InputError(f"{source}: column {name} must be integers, got {values.dtype}")
        negative = np.flatnonzero(values < 0)
        if negative.size:
            raise InputError(
                f"{source}: row {int(negative[0])}: {name} is negative ({values[negative[0]]})"
            )
    submit = frame["submit_s"].to_numpy(dtype=np.float64)
    if np.isnan(submit).any():
        row = int(np.flatnonzero(np.isnan(submit))[0])
        raise InputError(f"{source}: row {row}: submit_s is missing")
    start = frame["start_s"].to_numpy(dtype=np.float64)
    end = frame["end_s"].to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isnan(start) & ~np.isnan(end) & (end < start))
    if bad.size:
        raise InputError(f"{source}: row {int(bad[0])}: end_s {end[bad[0]]} is before start_s")
    if KNOWN_AT in frame.columns:
        known = frame[KNOWN_AT].to_numpy(dtype=np.float64)
        late = np.flatnonzero(known > submit)
        if late.size:
            row = int(late[0])
            raise InputError(f"{source}: row {row}: {KNOWN_AT} {known[row]} is after submit_s "
                             f"{submit[row]} (demand cannot become known after its pod exists)")
    if frame["pod"].duplicated().any():
        row = int(np.flatnonzero(frame["pod"].duplicated().to_numpy())[0])
        raise InputError(f"{source}: row {row}: pod name {frame['pod'].iloc[row]!r} is duplicated")


def known_at(table: JobTable) -> np.ndarray:
    """(N,) when each pod's demand became known (NaN = at creation), in frame order."""
    if KNOWN_AT in table.frame.columns:
        return table.frame[KNOWN_AT].to_numpy(dtype=np.float64)
    return np.full(len(table.frame), np.nan)


def gpu_model_requirements(table: JobTable) -> np.ndarray:
    """(N,) object: the GPU model each pod asks for ("" = any), in frame order."""
    if GPU_MODEL in table.frame.columns:
        return table.frame[GPU_MODEL].fillna("").astype(str).to_numpy(dtype=object)
    return np.full(len(table.frame), "", dtype=object)


