"""Small builders for simulator tests: a job table from a few pod tuples."""

from __future__ import annotations

import math

import pandas as pd

from bucketing.catalog import load_catalog
from jobtraces.jobtable import COLUMNS, JobTable

CATALOG = load_catalog("aws")
GIB = 1024**3


def pod(name, submit, duration, gpus=1, cpu=2, memory_gib=8, job="", role="", start=None,
        end="auto"):
    """One row: by default started at submit and ending after `duration` seconds."""
    start = submit if start is None else start
    if end == "auto":
        end = math.nan if duration is None else start + duration
    return {
        "pod": name, "job_id": job, "job_name": job, "role": role, "submit_s": float(submit),
        "start_s": float(start), "end_s": float(end), "cpu_milli": int(cpu * 1000),
        "memory_bytes": int(memory_gib * GIB), "gpus": int(math.ceil(gpus)),
        "gpu_milli": int(gpus * 1000), "priority_class": "",
    }


def table(rows, start=0.0, end=7200.0) -> JobTable:
    frame = pd.DataFrame(rows)
    for name, dtype in COLUMNS.items():
        frame[name] = frame[name].astype(dtype)
    return JobTable(frame[list(COLUMNS)], "test", start, end)


def types(*names):
    return tuple(CATALOG.get(n) for n in names)
