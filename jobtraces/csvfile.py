"""Reading a trace CSV (plain or gzip) into string columns, and parsing its numbers.

Decides: how a file is opened (gzip by its magic bytes, whatever its name), and how
a bad cell becomes an InputError naming the file, the line (1-based, as an editor
shows it, header = line 1 unless a preamble line comes first) and the column.

Must not: know any trace format's meaning (that is each format's module).
"""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from common.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
# Larger than any real request or trace time, small enough that a column scaled to
# the job table's integer units (x 1000, or MiB x 2**20 under the per-column limits
# the formats pass) stays far inside int64. A larger cell is corrupt data; cast
# as is it would wrap to a negative integer and be reported as "negative".
LARGEST = 1e15


def is_gzip(path: Path) -> bool:
    """True when the file starts with the gzip magic bytes."""
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None


def read_text(path: Path) -> str:
    """The whole file as text, decompressing gzip; InputError on any read fault."""
    try:
        if is_gzip(path):
            with gzip.open(path, "rb") as handle:
                raw = handle.read()
        else:
            raw = Path(path).read_bytes()
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(f"{path}: cannot read ({error})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text (byte {error.start})") from None


@dataclass(frozen=True)
class CsvFile:
    """A CSV read as strings. line_of_row(i) is the file line of data row i."""

    path: Path
    frame: pd.DataFrame
    header_line: int
    preamble: str

    def line_of_row(self, row: int) -> int:
        return self.header_line + 1 + row

    @property
    def columns(self) -> list[str]:
        return list(self.frame.columns)


def split_preamble(text: str) -> tuple[str, str, int]:
    """A leading '#' comment line (the headstart format's metadata) apart from the CSV."""
    if text.startswith("#"):
        first, _, rest = text.partition("\n")
        return first.rstrip("\r"), rest, 2
    return "", text, 1


def header_columns(path: Path) -> list[str]:
    """The column names on the header line (after an optional '#' preamble)."""
    _, body, _ = split_preamble(read_text(path))
    header = body.split("\n", 1)[0].strip()
    if not header:
        raise InputError(f"{path}: the file is empty")
    return [name.strip() for name in header.split(",")]


def read_csv(path: Path) -> CsvFile:
    """All cells as stripped strings ("" for blank); InputError for empty or malformed CSV."""
    preamble, body, header_line = split_preamble(read_text(path))
    if not body.strip():
        raise InputError(f"{path}: the file is empty")
    try:
        frame = pd.read_csv(
            io.StringIO(body), dtype=str, keep_default_na=False, skipinitialspace=True
        )
    except (pd.errors.ParserError, ValueError) as error:
        message = " ".join(str(error).split())
        raise InputError(f"{path}: malformed CSV ({message})") from None
    frame.columns = [str(name).strip() for name in frame.columns]
    # Short rows leave NaN in the missing cells; treat them as blank like an empty cell.
    frame = frame.fillna("")
    if frame.empty:
        raise InputError(f"{path}: the trace has no rows")
    return CsvFile(Path(path), frame, header_line, preamble)


def require_columns(csv: CsvFile, required: tuple[str, ...], format_name: str) -> None:
    missing = [name for name in required if name not in csv.frame.columns]
    if missing:
        raise InputError(
            f"{csv.path}:{csv.header_line}: missing column(s) {', '.join(missing)} "
            f"for format {format_name}"
        )


def numbers(
    csv: CsvFile,
    column: str,
    *,
    blank_ok: bool = False,
    negative_ok: bool = False,
    largest: float = LARGEST,
) -> np.ndarray:
    """Column `column` as float64; blank -> NaN when blank_ok, else InputError at its line.

    Values above `largest` (in the column's own unit) are InputErrors too."""
    raw = csv.frame[column].str.strip()
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    blank = (raw == "").to_numpy()
    # "nan", "inf" and overflowing literals ("1e400") parse as floats; a resource or a
    # time written that way is still bad input.
    bad_text = ~np.isfinite(values) & ~blank
    if bad_text.any():
        row = int(np.flatnonzero(bad_text)[0])
        raise InputError(
            f"{csv.path}:{csv.line_of_row(row)}: column {column}: "
            f"{raw.iloc[row]!r} is not a number"
        )
    if blank.any() and not blank_ok:
        row = int(np.flatnonzero(blank)[0])
        raise InputError(f"{csv.path}:{csv.line_of_row(row)}: column {column}: value is blank")
    too_large = np.flatnonzero(np.abs(values) > largest)
    if too_large.size:
        row = int(too_large[0])
        raise InputError(
            f"{csv.path}:{csv.line_of_row(row)}: column {column}: "
            f"{raw.iloc[row]} is implausibly large (more than {largest:g})"
        )
    if not negative_ok:
        negative = np.flatnonzero(values < 0)
        if negative.size:
            row = int(negative[0])
            raise InputError(
                f"{csv.path}:{csv.line_of_row(row)}: column {column}: "
                f"{raw.iloc[row]} is negative"
            )
    return values


def whole_numbers(csv: CsvFile, column: str, values: np.ndarray) -> np.ndarray:
    """`values` (column `column`, already parsed) as int64; InputError at the first
    fractional one."""
    fractional = np.flatnonzero(values != np.round(values))
    if fractional.size:
        row = int(fractional[0])
        raise InputError(
            f"{csv.path}:{csv.line_of_row(row)}: column {column}: "
            f"{values[row]:g} is not a whole number"
        )
    return values.astype(np.int64)


def strings(csv: CsvFile, column: str, *, blank_ok: bool = True) -> np.ndarray:
    """Column `column` as an object array of stripped strings."""
    values = csv.frame[column].str.strip()
    if not blank_ok:
        blank = np.flatnonzero((values == "").to_numpy())
        if blank.size:
            row = int(blank[0])
            raise InputError(
                f"{csv.path}:{csv.line_of_row(row)}: column {column}: value is blank"
            )
    return values.to_numpy(dtype=object)


def unique_names(csv: CsvFile, column: str) -> None:
    """InputError at the second occurrence of a repeated pod name."""
    duplicated = csv.frame[column].duplicated().to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        raise InputError(
            f"{csv.path}:{csv.line_of_row(row)}: column {column}: "
            f"{csv.frame[column].iloc[row]!r} appears twice"
        )
