"""Reading a trace file into a JobTable: detect its format, parse, round GPUs; and the
options that describe the file, which the generated synthetic workload refuses.

Must not: write files.
"""

from __future__ import annotations

from pathlib import Path

from common.errors import InputError
from jobtraces.csvfile import read_csv
from jobtraces.detect import detect_format, parser_for
from jobtraces.gpu_sharing import whole_gpus
from jobtraces.jobtable import JobTable


def load_trace(path: str | Path, format: str | None = None, *,
               gpu_sharing: bool = False) -> JobTable:
    """Read the trace at `path` in `format` (detected from the header when None).
    Without `gpu_sharing`, fractional GPU requests become whole GPUs
    (`jobtraces.gpu_sharing`)."""
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


def check_synthetic_options(format: str | None, gpu_sharing: bool,
                            source: str = "--synthetic") -> None:
    """InputError naming a trace-file option given where the synthetic workload runs
    (`source`: how it was asked for): it is generated, not read, so `--format` and
    `--gpu-sharing` would be ignored silently."""
    for option, given in (("--format", format), ("--gpu-sharing", gpu_sharing)):
        if given:
            raise InputError(f"{option} goes with --trace: {source} generates the workload, "
                             "there is no file to read")
