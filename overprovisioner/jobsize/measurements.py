"""A job's measured throughput for KALE's fit: (workers, samples/s) pairs, from
`--sample WORKERS:RATE` flags or a CSV file.

The file: a header naming the columns `workers` and `samples_per_s` (others are
ignored), then one measurement a row; blank lines and lines starting with `#` are
skipped. A value that does not parse, workers below 1 and a rate that is not above 0
are errors naming the flag or the file and line; whether the pairs can be fitted is
the fit's rule (`predictor.models.throughput.fit`).

Must not: fit, or print.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from common.errors import InputError
from overprovisioner.jobsize.flags import number, whole

COLUMNS = ("workers", "samples_per_s")
Pairs = list[tuple[int, float]]


def from_flags(samples: Iterable[str]) -> Pairs:
    """`--sample 4:14500` values as pairs."""
    pairs = []
    for text in samples:
        workers, colon, rate = str(text).partition(":")
        if not colon:
            raise InputError(f"--sample: expected WORKERS:SAMPLES_PER_S, like 4:14500, got "
                             f"{text!r}")
        pairs.append((whole(workers, f"--sample {text}: workers", 1),
                      number(rate, f"--sample {text}: samples/s", 0, above=True)))
    return pairs


def from_file(path: str) -> Pairs:
    """The pairs in a CSV file (the module docstring's format)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{path}: no such measurements file")
    try:
        lines = file.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read it as text ({error})") from None
    numbered = [(n, line) for n, line in enumerate(lines, 1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise InputError(f"{path}: no header; expected the columns {', '.join(COLUMNS)}")
    rows = csv.reader(line for _, line in numbered)
    header = [name.strip() for name in next(rows)]
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        raise InputError(f"{path}:{numbered[0][0]}: header lacks {', '.join(missing)}; "
                         f"expected the columns {', '.join(COLUMNS)}, got {header}")
    workers_at, rate_at = (header.index(name) for name in COLUMNS)
    pairs = []
    for (line, _), row in zip(numbered[1:], rows, strict=True):
        where = f"{path}:{line}"
        if len(row) != len(header):
            raise InputError(f"{where}: expected {len(header)} values, got {len(row)}")
        pairs.append((whole(row[workers_at], f"{where}: workers", 1),
                      number(row[rate_at], f"{where}: samples_per_s", 0, above=True)))
    return pairs
