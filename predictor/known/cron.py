"""Known demand of CronJobs: the next run's pods, known a lead before it is due.

Decides, per CronJob (`batch/v1`): the next schedule time after now, from
`spec.schedule` in `spec.timeZone` (an IANA name; unset = UTC, which is the
kube-controller-manager's zone on managed clusters), parsed with croniter (standard
five fields and the @hourly/@daily/@weekly/@monthly/@yearly descriptors, day-of-month
and day-of-week OR-ed as Vixie cron and Kubernetes' robfig/cron do; `@every` is not
supported and the CronJob is left out). Then whether that run adds demand:
- headstart's own CronJob (`model.headstart_own`: the placeholder-expiry job, a small
  CPU pod every 5 minutes): not demand, never counted;
- `spec.suspend: true`: no run;
- `spec.concurrencyPolicy: Forbid` with a run active (`status.active`): the run is
  skipped if the active one is still going, which is the likelier case: not counted;
- `Replace` with a run active: the new run's pods replace the active run's, no net
  new nodes: not counted;
- otherwise (`Allow`, or nothing active): min(parallelism, completions) pods of
  `spec.jobTemplate.spec.template` (`batch.job_spec_pods`).
The run is *known* from `lead_s` before it is due (config `cronjob_lead`, default the
forecast horizon): earlier than that the item is not produced.

Key: the Job the controller will create, `<cronjob name>-<scheduled time in Unix
minutes>` (kubernetes pkg/controller/cronjob/utils.go `getJobName`,
`getTimeHashInMinutes`), so its pods are recognised as announced.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from croniter import CroniterBadDateError, croniter

from bucketing.resources import Resources
from common.errors import InputError
from kube.replicas import job_spec_pods
from predictor.known.model import (
    KnownItem,
    Meta,
    headstart_own,
    mapping,
    open_object,
    template_request,
)


@dataclass(frozen=True)
class CronJob:
    """A batch/v1 CronJob, as far as its next run's demand goes."""

    meta: Meta
    schedule: str
    zone: tzinfo
    suspended: bool
    concurrency_policy: str
    active: int
    pods: int
    request: Resources


def parse_zone(name: Any, where: str) -> tzinfo:
    if name in (None, ""):
        return UTC
    if not isinstance(name, str):
        raise InputError(f"{where}: expected an IANA time zone name, got {name!r}")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise InputError(f"{where}: {name!r} is not a known time zone") from None


def parse_cronjob(obj: Mapping[str, Any], gpu_resource: str) -> CronJob:
    meta, where, spec, status = open_object(obj, "cronjob")
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or not croniter.is_valid(schedule) or (
        not schedule.startswith("@") and len(schedule.split()) != 5
    ):
        raise InputError(f"{where}.spec.schedule: {schedule!r} is not a schedule headstart "
                         "can read (five fields or @hourly/@daily/@weekly/@monthly/@yearly)")
    job_template = mapping(spec.get("jobTemplate"), f"{where}.spec.jobTemplate")
    job_spec = mapping(job_template.get("spec"), f"{where}.spec.jobTemplate.spec")
    policy = spec.get("concurrencyPolicy") or "Allow"
    return CronJob(
        meta=meta,
        schedule=schedule,
        zone=parse_zone(spec.get("timeZone"), f"{where}.spec.timeZone"),
        suspended=spec.get("suspend") is True,
        concurrency_policy=str(policy),
        active=len(status.get("active") or []),
        pods=job_spec_pods(job_spec, 0, f"{where}.spec.jobTemplate.spec"),
        request=template_request(job_spec.get("template"), gpu_resource,
                                 f"{where}.spec.jobTemplate.spec.template"),
    )


def next_run_s(cron: CronJob, now_s: float) -> float | None:
    """The first scheduled time strictly after now_s (Unix seconds), None if never."""
    start = datetime.fromtimestamp(now_s, cron.zone)
    try:
        return croniter(cron.schedule, start).get_next(datetime).timestamp()
    except CroniterBadDateError:  # e.g. "0 0 31 2 *": February never has a 31st
        return None


def cron_items(crons: Iterable[CronJob], now_s: float, lead_s: float) -> list[KnownItem]:
    """One item per CronJob whose next run is due within lead_s and adds demand."""
    items = []
    for cron in crons:
        if cron.suspended or cron.pods == 0 or headstart_own(cron.meta):
            continue
        if cron.active and cron.concurrency_policy in ("Forbid", "Replace"):
            continue
        due = next_run_s(cron, now_s)
        if due is None or due - now_s > lead_s:
            continue
        job_name = f"{cron.meta.name}-{int(due // 60)}"
        key = f"batch/Job/{cron.meta.namespace}/{job_name}"
        when = datetime.fromtimestamp(due, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        items.append(KnownItem("cronjobs", "CronJob", cron.meta.namespace, cron.meta.name, key,
                               cron.pods, cron.request, due, f"next run {when} ({job_name})"))
    return items
