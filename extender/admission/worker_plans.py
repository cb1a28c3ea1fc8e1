"""Reads the overprovisioner's worker plans for the admitter (`locality.worker_plans`).

One GET of the ConfigMap `admission.elastic.worker_plans` names, at most every
`refresh_seconds`. Absent (404): no plans; elastic jobs are sized by KOD2's rules
alone. Forbidden (403: the Role in `manifests/base/extender-placeholders` not installed)
or any other fault: the plans of the last read are kept (each steers only until its own
`validUntil`, so a blip of the API never drops a plan for a round, and a fault that
lasts ends in KOD2's rules as the plans expire), said once per change in the log and in
/admission, never a crash. A value that does not parse is logged once per distinct
text and listed in /admission (`problems`); the others are used.

Must not: decide sizes (`locality.admission.resize` does), judge a plan's freshness (the
round does, at its own `now`), write anything.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from locality.admission.weight import WorkerPlansConfig
from locality.worker_plans import WorkerPlan, decode

log = logging.getLogger("headstart.extender.admitter")


class WorkerPlanReader:
    """The plans of the last read, what it found (`detail`), and what did not parse."""

    def __init__(self, core: Any, settings: WorkerPlansConfig) -> None:
        """core: a (throttled) CoreV1Api."""
        self._core = core
        self.settings = settings
        self.plans: dict[str, WorkerPlan] = {}
        self.detail = "not read"
        self.problems: tuple[str, ...] = ()
        self._read_at: float | None = None
        self._fault: str | None = None
        self._said: set[str] = set()

    @property
    def where(self) -> str:
        return f"{self.settings.namespace}/{self.settings.name}"

    async def refresh(self, now: float, settings: WorkerPlansConfig | None = None) -> bool:
        """Read when `refresh_seconds` have passed since the last read (now:
        time.monotonic()); whether the plans changed. settings: the admitter's current
        ones (default: as constructed)."""
        self.settings = settings or self.settings
        if self._read_at is not None and now - self._read_at < self.settings.refresh_seconds:
            return False
        self._read_at = now
        data, fault = await asyncio.to_thread(self._read)
        if fault is not None:  # keep what was read: each plan expires on its own
            plans, problems = dict(self.plans), list(self.problems)
        else:
            plans, problems = decode(data, self.where)
        if fault != self._fault:  # said once per change, not every read
            if fault is not None:
                log.warning("worker plans unreadable: elastic jobs are sized by KOD2's "
                            "rules alone", extra={"configmap": self.where, "error": fault})
            else:
                log.info("worker plans readable again", extra={"configmap": self.where})
            self._fault = fault
        for problem in problems:
            if problem not in self._said:
                self._said.add(problem)
                log.warning("a worker plan is not read", extra={"problem": problem})
        if fault is not None:
            self.detail = f"{len(plans)} plan(s) of the last read kept: {fault}"
        elif data is None:
            self.detail = f"no ConfigMap {self.where}: no plans (KOD2's rules alone)"
        else:
            self.detail = f"{len(plans)} plan(s) read from {self.where}" + (
                f"; {len(problems)} value(s) not read" if problems else "")
        self.problems = tuple(problems)
        changed = plans != self.plans
        self.plans = plans
        return changed

    def _read(self) -> tuple[Mapping[str, Any] | None, str | None]:
        """(the ConfigMap's data, None when absent or unreadable; why unreadable)."""
        try:
            raw = self._core.read_namespaced_config_map(
                self.settings.name, self.settings.namespace, _preload_content=False,
                _request_timeout=10)
            try:
                body = json.loads(raw.data)
            finally:
                raw.release_conn()
        except ApiException as error:
            if error.status == 404:
                return None, None
            return None, f"{self.where} unreadable (API status {error.status})"
        except Exception as error:  # noqa: BLE001 - transport faults: no plans until read
            return None, f"{self.where} unreadable ({type(error).__name__})"
        data = body.get("data") if isinstance(body, Mapping) else None
        return (data if isinstance(data, Mapping) else {}), None
