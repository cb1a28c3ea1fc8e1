"""Trace loaders: public cluster traces and headstart's own CSV into one JobTable.

    from bucketing.traces import load_trace, write_job_table
    table = load_trace("openb_pod_list_default.csv.gz")          # detected
    table = load_trace("trace.csv", format="alibaba-dlrm")        # forced

Formats: alibaba-openb (Alibaba GPU 2023 `openb_pod_list_*.csv`), alibaba-dlrm
(Alibaba GPU 2025 `disaggregated_DLRM_trace.csv`), headstart (`write_job_table`).
Gzip is recognised by its magic bytes. Bad input raises InputError naming the file,
line and column; censored rows are kept and counted in `table.censoring`.
"""

from __future__ import annotations

from pathlib import Path

from bucketing.gpu_sharing import whole_gpus
from bucketing.jobtable import JobTable
from bucketing.traces.csvfile import read_csv
from bucketing.traces.detect import detect_format, format_names, parser_for
from bucketing.traces.write import write_job_table
from common.errors import InputError

__all__ = ["load_trace", "write_job_table", "detect_format", "format_names"]


def load_trace(path: str | Path, format: str | None = None, *,
               gpu_sharing: bool = False) -> JobTable:
    """Read the trace at `path` in `format` (detected from the header when None).
    Without `gpu_sharing`, fractional GPU requests become whole GPUs
    (`bucketing.gpu_sharing`)."""
    path = Path(path)
    if format is not None:
        parse = parser_for(format)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; name a trace file")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if format is None:
        parse = parser_for(detect_format(path))
    table = parse(read_csv(path))
    return table if gpu_sharing else whole_gpus(table)
