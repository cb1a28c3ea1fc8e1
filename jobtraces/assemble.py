"""Turning a format's parsed columns into a JobTable, dropping only what cannot be used.

Decides: which rows are unusable (events out of order) and how they are counted in
`Censoring.dropped`; the censoring counts of the rows kept; the trace's end (the
latest event, unless the format knows it). Each format module decides which rows
were created before the trace and hands that mask in.

Must not: read files or guess at a format's meaning.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from common.errors import InputError
from jobtraces.jobtable import COLUMNS, GPU_MODEL, KNOWN_AT, Censoring, JobTable


def out_of_order(submit: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per row, why its events cannot be used ("" when they can)."""
    reasons = np.full(len(submit), "", dtype=object)
    has_start = ~np.isnan(start)
    has_end = ~np.isnan(end)
    reasons[has_start & (start < submit)] = "scheduled before created"
    reasons[has_start & has_end & (end < start)] = "deleted before scheduled"
    reasons[~has_start & has_end & (end < submit)] = "deleted before created"
    return reasons


def assemble(
    path: Path,
    source: str,
    columns: dict[str, np.ndarray],
    trace_start_s: float,
    started_before: np.ndarray,
    trace_end_s: float | None = None,
    unusable: np.ndarray | None = None,
) -> JobTable:
    """A JobTable from canonical columns; rows whose events are out of order are dropped
    and counted by reason.

    started_before marks the rows the format found created before the trace (their
    submit already clamped to trace_start_s). Running-at-end (a start, no end) and
    never-scheduled (no start) are read off the NaNs of the rows kept. `unusable`
    holds a format's own reasons to drop a row ("" to keep it). `columns` may hold
    the optional `known_at_s` (NaN where unknown); absent, every row gets NaN; and the
    optional `gpu_model` ("" = any model); absent, the table has no such column.
    """
    frame = pd.DataFrame({name: columns[name] for name in COLUMNS})
    for name, dtype in COLUMNS.items():
        frame[name] = frame[name].astype(dtype)
    # Formats without lead information know each pod's demand when it is created.
    frame[KNOWN_AT] = np.asarray(columns.get(KNOWN_AT, np.full(len(frame), np.nan)),
                                 dtype=np.float64)
    if GPU_MODEL in columns:  # only formats that say which GPU model a pod needs
        frame[GPU_MODEL] = np.asarray(columns[GPU_MODEL], dtype=object)
    reasons = out_of_order(
        frame["submit_s"].to_numpy(), frame["start_s"].to_numpy(), frame["end_s"].to_numpy()
    )
    if unusable is not None:
        reasons = np.where(unusable != "", unusable, reasons)
    dropped = Counter(reason for reason in reasons if reason)
    keep = reasons == ""
    if not keep.any():
        raise InputError(f"{path}: the trace has no usable pods (dropped: {dict(dropped)})")
    if dropped:
        frame = frame.loc[keep].reset_index(drop=True)
    start = frame["start_s"].to_numpy()
    end = frame["end_s"].to_numpy()
    if trace_end_s is None:
        trace_end_s = float(np.nanmax(frame[["submit_s", "start_s", "end_s"]].to_numpy()))
    censoring = Censoring(
        started_before_trace=int(np.asarray(started_before, dtype=bool)[keep].sum()),
        running_at_end=int((~np.isnan(start) & np.isnan(end)).sum()),
        never_scheduled=int(np.isnan(start).sum()),
        dropped=dict(sorted(dropped.items())),
    )
    return JobTable(
        frame=frame,
        source=source,
        trace_start_s=float(trace_start_s),
        trace_end_s=float(trace_end_s),
        censoring=censoring,
    )
