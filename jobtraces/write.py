"""Writing a JobTable as headstart's own CSV (gzip when the name ends in .gz).

Decides: the file layout `jobtraces.headstart_csv` reads back (one metadata
line, then the canonical columns and `known_at_s`, blank for NaN, and `gpu_model` when
some pod requires a GPU model), so a table survives
a round trip.

Must not: change the table.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from common.errors import InputError
from jobtraces.headstart_csv import format_preamble
from jobtraces.jobtable import (
    COLUMNS,
    GPU_MODEL,
    KNOWN_AT,
    JobTable,
    gpu_model_requirements,
    known_at,
)


def write_job_table(table: JobTable, path: str | Path) -> Path:
    """Write `table` to `path` (.csv, or .csv.gz compressed); returns the path."""
    path = Path(path)
    preamble = format_preamble(
        table.trace_start_s, table.trace_end_s, table.censoring.started_before_trace
    )
    frame = table.frame[list(COLUMNS)].assign(**{KNOWN_AT: known_at(table)})
    models = gpu_model_requirements(table)
    if (models != "").any():  # files of tables without requirements stay as they were
        frame = frame.assign(**{GPU_MODEL: models})
    body = frame.to_csv(index=False, na_rep="", lineterminator="\n")
    text = preamble + "\n" + body
    try:
        if path.name.endswith(".gz"):
            # mtime=0 so the same table gives the same bytes.
            with open(path, "wb") as raw, gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, mtime=0
            ) as handle:
                handle.write(text.encode("utf-8"))
        else:
            path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InputError(f"{path}: cannot write ({error.strerror or error})") from None
    return path
