"""Which trace format a file is in, from its header columns.

Decides: the format names users pass to `--format`, and the detection rule: a format
matches when every one of its signature columns is in the header. Exactly one
format must match. When none does but a format's required columns are mostly there,
the user is told which of them are missing; a header of a `time` column and counts (a
demand series, not a job table) is pointed to `headstart backtest --series`; otherwise
the columns seen and to pass --format.

Must not: parse rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from common.errors import InputError
from jobtraces import alibaba_dlrm, alibaba_openb, headstart_csv
from jobtraces.csvfile import CsvFile, header_columns
from jobtraces.jobtable import JobTable

# An aggregate series (the Helios and Philly files, `backtest --series`) has this column
# and counts per tick; no job-table format has it (predictor.live.series_io reads such files).
SERIES_TIME_COLUMN = "time"

# name -> module with SIGNATURE, REQUIRED and parse; the order is the order errors list.
FORMATS = {
    module.FORMAT: module for module in (alibaba_openb, alibaba_dlrm, headstart_csv)
}


# The columns of Alibaba GPU 2023's node list (openb_node_list_gpu_node.csv), which sits
# beside its pod lists and is easily given as the trace.
OPENB_NODE_LIST = frozenset({"sn", "cpu_milli", "memory_mib", "gpu", "model"})


def detect_format(path: Path) -> str:
    """The one format whose signature columns are all in the file's header."""
    columns = set(header_columns(path))
    matches = [name for name, module in FORMATS.items() if set(module.SIGNATURE) <= columns]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        share, name = max(
            (len(columns & set(module.REQUIRED)) / len(module.REQUIRED), name)
            for name, module in FORMATS.items()
        )
        if share >= 0.5:
            missing = [c for c in FORMATS[name].REQUIRED if c not in columns]
            raise InputError(
                f"{path}:1: missing column(s) {', '.join(missing)} for format {name}"
            )
    if not matches and SERIES_TIME_COLUMN in columns:
        values = sorted(columns - {SERIES_TIME_COLUMN})
        raise InputError(
            f"{path}:1: a demand series ({SERIES_TIME_COLUMN!r} column, then "
            f"{', '.join(values) or 'no values'} per tick), not a job table of pods; "
            f"forecast it with `headstart backtest --series {path}"
            + (f" --column {values[0]}`" if values else "`")
        )
    if not matches and OPENB_NODE_LIST <= columns:
        raise InputError(
            f"{path}:1: the openb node list (one row per node: {', '.join(sorted(columns))}), "
            "not a trace of pods; give its pod list (openb_pod_list_*.csv) as the trace")
    shown = ", ".join(sorted(columns))
    if len(shown) > 120:
        shown = shown[:117] + "..."
    reason = "matches several formats" if matches else "is not a known trace format"
    return _raise(
        f"{path}:1: header ({shown}) {reason}; pass --format "
        f"({'|'.join(FORMATS)})"
    )


def parser_for(format_name: str) -> Callable[[CsvFile], JobTable]:
    if format_name not in FORMATS:
        raise InputError(
            f"unknown trace format {format_name!r} (known: {', '.join(FORMATS)})"
        )
    return FORMATS[format_name].parse


def _raise(message: str) -> str:
    raise InputError(message)
