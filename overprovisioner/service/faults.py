"""What is wrong with the cluster or the service's rights, one line per fault.

Decides: which of a tick's failures are *faults* a human must fix (they do not heal by
retrying), their names and their one-line reasons: a missing or cluster-scoped
CapacityBuffer CRD, a 403 on any call (the Role lacks a verb), a 404 on a write (a
CRD gone), an object in the way that headstart does not own, cluster-autoscaler's
status ConfigMap unreadable. The loop logs a fault once when it appears and once when
it clears, serves them in /plan (`faults`) and sets `headstart_overprovisioner_fault`.
The placeholders stay bounded meanwhile (overprovisioner.service.expiry).

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from common.errors import HeadstartError
from overprovisioner.service.errors import NotOwnedError

FAULTS = ("capacitybuffer_unusable", "forbidden", "not_found", "not_owned",
          "autoscaler_status_unreadable")


def fault_of(error: HeadstartError) -> str | None:
    """The fault an error stands for, or None (temporary, or not a fault of the setup)."""
    if isinstance(error, NotOwnedError):
        return "not_owned"
    if str(getattr(error, "what", "")).startswith("backend capacitybuffer"):
        return "capacitybuffer_unusable"  # forced backend, CRD absent or cluster-scoped
    status = getattr(error, "status", None)
    if status == 403:
        return "forbidden"
    if status == 404:
        return "not_found"
    return None


def collect_faults(errors: Iterable[HeadstartError], capacity_buffer_problem: str = "",
                   autoscaler_detail: str = "") -> dict[str, str]:
    """Fault name -> one-line reason (the first error of each fault)."""
    faults: dict[str, str] = {}
    if capacity_buffer_problem:
        faults["capacitybuffer_unusable"] = capacity_buffer_problem
    for error in errors:
        name = fault_of(error)
        if name is not None:
            faults.setdefault(name, " ".join(str(error).split()))
    if autoscaler_detail.startswith("unreadable"):
        faults["autoscaler_status_unreadable"] = (
            f"cluster-autoscaler's status ConfigMap is {autoscaler_detail} "
            "(placeholders.autoscaler_status)")
    return faults
