"""Which trace format a file is in, from its header columns.

Decides: the format names users pass to `--format`, and the detection rule: a format
matches when every one of its signature columns is in the header. Exactly one
format must match; otherwise the user is told the columns seen and to pass --format.

Must not: parse rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bucketing.errors import InputError
from bucketing.jobtable import JobTable
from bucketing.traces import alibaba_dlrm, alibaba_openb, headstart_csv
from bucketing.traces.csvfile import CsvFile, header_columns

# name -> (signature columns, parser); the order is the order errors list them in.
FORMATS: dict[str, tuple[tuple[str, ...], Callable[[CsvFile], JobTable]]] = {
    alibaba_openb.FORMAT: (alibaba_openb.SIGNATURE, alibaba_openb.parse),
    alibaba_dlrm.FORMAT: (alibaba_dlrm.SIGNATURE, alibaba_dlrm.parse),
    headstart_csv.FORMAT: (headstart_csv.SIGNATURE, headstart_csv.parse),
}


def format_names() -> list[str]:
    return list(FORMATS)


def detect_format(path: Path) -> str:
    """The one format whose signature columns are all in the file's header."""
    columns = set(header_columns(path))
    matches = [
        name for name, (signature, _) in FORMATS.items() if set(signature) <= columns
    ]
    if len(matches) == 1:
        return matches[0]
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
    return FORMATS[format_name][1]


def _raise(message: str) -> str:
    raise InputError(message)
