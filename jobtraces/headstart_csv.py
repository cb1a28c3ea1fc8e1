"""Loader for headstart's own job-table CSV (what `write_job_table` and `headstart trace
synth` write).

The file is the canonical columns (see `jobtraces.jobtable`) as CSV, blank for NaN,
plus the optional `known_at_s` (files written before it existed have none: blank) and
`gpu_model` (the GPU model a pod requires, blank = any; written only when some pod asks),
optionally preceded by one metadata line:
  # headstart-job-table trace_start_s=0.0 trace_end_s=1209600.0 started_before_trace=0
which carries the trace window and the censoring that the rows alone cannot show.
Without it the trace starts at the earliest submit and ends at the latest event.
pandas reads the file with `pd.read_csv(path, comment="#")`.

Must not: drop a row without counting it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from common.errors import InputError
from jobtraces.assemble import assemble
from jobtraces.csvfile import (
    CsvFile,
    numbers,
    require_columns,
    strings,
    unique_names,
    whole_numbers,
)
from jobtraces.jobtable import COLUMNS, GPU_MODEL, KNOWN_AT, JobTable

FORMAT = "headstart"
REQUIRED = tuple(COLUMNS)
SIGNATURE = ("pod", "submit_s", "start_s", "end_s")
MAGIC = "# headstart-job-table"
METADATA_KEYS = ("trace_start_s", "trace_end_s", "started_before_trace")
INTEGER_COLUMNS = ("cpu_milli", "memory_bytes", "gpus", "gpu_milli")


def format_preamble(trace_start_s: float, trace_end_s: float, started_before: int) -> str:
    return (
        f"{MAGIC} trace_start_s={trace_start_s!r} trace_end_s={trace_end_s!r} "
        f"started_before_trace={started_before}"
    )


def parse_preamble(path: Path, line: str) -> dict[str, float]:
    """The metadata line's values; InputError naming line 1 when it is not ours."""
    if not line.startswith(MAGIC):
        raise InputError(f"{path}:1: unexpected comment line (expected {MAGIC!r} or none)")
    values: dict[str, float] = {}
    for item in line[len(MAGIC) :].split():
        key, sep, text = item.partition("=")
        if not sep or key not in METADATA_KEYS:
            raise InputError(f"{path}:1: unknown metadata item {item!r}")
        try:
            values[key] = float(text)
        except ValueError:
            raise InputError(f"{path}:1: {key}: {text!r} is not a number") from None
        if not math.isfinite(values[key]):
            raise InputError(f"{path}:1: {key}: {text!r} is not a finite number")
    return values


def parse(csv: CsvFile) -> JobTable:
    """The job table of a headstart CSV already read as strings."""
    require_columns(csv, REQUIRED, FORMAT)
    unique_names(csv, "pod")
    metadata = parse_preamble(csv.path, csv.preamble) if csv.preamble else {}
    columns: dict[str, np.ndarray] = {}
    for name in ("pod", "job_id", "job_name", "role", "priority_class"):
        columns[name] = strings(csv, name, blank_ok=name != "pod")
    columns["submit_s"] = numbers(csv, "submit_s", negative_ok=True)
    for name in ("start_s", "end_s"):
        columns[name] = numbers(csv, name, blank_ok=True, negative_ok=True)
    for name in INTEGER_COLUMNS:
        columns[name] = whole_numbers(csv, name, numbers(csv, name))
    if KNOWN_AT in csv.frame.columns:
        columns[KNOWN_AT] = numbers(csv, KNOWN_AT, blank_ok=True, negative_ok=True)
        late = np.flatnonzero(columns[KNOWN_AT] > columns["submit_s"])
        if late.size:
            row = int(late[0])
            raise InputError(f"{csv.path}:{csv.line_of_row(row)}: column {KNOWN_AT}: "
                             f"{columns[KNOWN_AT][row]:g} is after submit_s "
                             f"{columns['submit_s'][row]:g}")

    if GPU_MODEL in csv.frame.columns:
        columns[GPU_MODEL] = strings(csv, GPU_MODEL)

    trace_start = metadata.get("trace_start_s", float(np.min(columns["submit_s"])))
    started_before = np.zeros(len(columns["pod"]), dtype=bool)
    count_before = int(metadata.get("started_before_trace", 0))
    # The rows cannot say which pods were created before the trace; the count can.
    started_before[:count_before] = True
    return assemble(
        csv.path,
        f"{Path(csv.path).name} ({FORMAT})",
        columns,
        trace_start,
        started_before,
        trace_end_s=metadata.get("trace_end_s"),
    )
