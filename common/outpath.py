"""Checking an output path before any work, so a typo costs a second, not a run.

Decides: whether a command can write the file or folder an option names, by asking the
file system (an adapter: it creates and removes an empty file to be sure). Errors are
one line naming the option and the path.
"""

from __future__ import annotations

from pathlib import Path

from common.errors import InputError


def check_output_file(path: str | Path, option: str) -> None:
    """InputError unless `path` can be written as a file: its folder exists, it is not a
    folder, and a file can be created (or appended to) there."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{option} {path}: is a folder; name a file")
    folder = target.parent
    if not folder.is_dir():
        raise InputError(f"{option} {path}: the folder {folder} does not exist")
    existed = target.exists()
    try:
        with open(target, "a"):
            pass
    except OSError as error:
        raise InputError(f"{option} {path}: cannot write ({error.strerror})") from None
    if not existed:
        target.unlink(missing_ok=True)


def check_output_folder(path: str | Path, option: str) -> None:
    """InputError unless `path` is a folder a file can be written in, or can be made one
    (mkdir -p): it must not be a file. Asks the file system: it makes the missing
    folders and an empty file, then removes what it made (permission bits alone do not
    say, e.g. for root or under /proc)."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise InputError(f"{option} {path}: is a file; name a folder")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{option} {path}: {existing} is a file, not a folder")
    made = [p for p in (target, *target.parents) if not p.exists()]
    probe = target / ".headstart-write-check"
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe.touch()
    except OSError as error:
        raise InputError(f"{option} {path}: cannot write there ({error.strerror})") from None
    finally:
        probe.unlink(missing_ok=True)
        for folder in made:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break
