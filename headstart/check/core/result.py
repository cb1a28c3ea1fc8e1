"""What one check concludes, and what a list of conclusions means for the exit status.

Decides: the four outcomes (ok; warn: works, but worth a look; fail: something that makes
jobs or placeholders wait; skip: not applicable, or not observable with these rights or
libraries), that every warn and fail carries a fix, and the exit status of the command
(1 when any check failed, else 0; bad input and an unreachable cluster are 2, raised
before any check runs).

Must not: format output (report.py) or decide any check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True)
class Result:
    name: str
    """The check, as the output names it (`podgroup-crd`, `rights/headstart-extender`)."""
    status: Status
    message: str
    """What was found, in one line."""
    fix: str = ""
    """What to do about it, in one line; set on every warn and fail."""

    def __post_init__(self) -> None:
        if self.status in (Status.WARN, Status.FAIL) and not self.fix:
            raise ValueError(f"check {self.name}: a {self.status} needs a fix")


def ok(name: str, message: str) -> Result:
    return Result(name, Status.OK, message)


def warn(name: str, message: str, fix: str) -> Result:
    return Result(name, Status.WARN, message, fix)


def fail(name: str, message: str, fix: str) -> Result:
    return Result(name, Status.FAIL, message, fix)


def skip(name: str, message: str) -> Result:
    return Result(name, Status.SKIP, message)


def exit_status(results: Iterable[Result]) -> int:
    """1 when any check failed, else 0 (warnings and skips pass)."""
    return 1 if any(r.status is Status.FAIL for r in results) else 0


def counts(results: Iterable[Result]) -> dict[str, int]:
    """Results per status, every status named (0 included), in the order of `Status`."""
    tally = dict.fromkeys((s.value for s in Status), 0)
    for result in results:
        tally[result.status.value] += 1
    return tally
