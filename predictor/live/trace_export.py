"""A job table from kube-state-metrics history: one row per pod seen in Prometheus.

Decides: which PromQL `headstart trace export` asks, and how the decoded `query_range`
answers become the canonical job table (`jobtraces.jobtable`) that `headstart simulate`
and `headstart buckets tune` read. The HTTP side is `predictor.live.trace_export_fetch`.

Metrics read (kube-state-metrics v2, docs/metrics/workload/pod-metrics.md; every one
carries the labels `namespace`, `pod`, `uid`):
  kube_pod_created                (STABLE, "Unix creation timestamp")       -> submit_s
  kube_pod_status_scheduled_time  (STABLE, "Unix timestamp when pod moved into scheduled
                                   status")                                 -> start_s
  kube_pod_completion_time        (STABLE, "Completion time in unix timestamp for a pod")
                                                                            -> end_s
  kube_pod_status_phase           (STABLE, label `phase`)   first Running = start when no
                                   scheduled time; first Succeeded/Failed = end when no
                                   completion time
  kube_pod_owner                  (STABLE, labels `owner_kind`, `owner_name`,
                                   `owner_is_controller`; "<none>" when the pod has no
                                   owner)                                   -> job_id, job_name
  kube_pod_info                   (STABLE, label `priority_class`)          -> priority_class
  kube_pod_container_resource_requests, kube_pod_init_container_resource_requests
                                  (label `resource`)  -> requests, by the same rules as
                                   `predictor.live.prometheus` (`request_samples`: containers
                                   summed, the largest init container as a floor; pod
                                   overhead and sidecar init containers are not visible)

Per pod incarnation (namespace, pod, uid: a StatefulSet pod recreated under the same name
is a new row, named `namespace/pod@<uid prefix>`; otherwise the row is `namespace/pod`):
  submit_s  kube_pod_created; created before the window -> the window start, counted in
            `started_before_trace` (as the other loaders do; such rows come first, which
            is how the headstart CSV's metadata count finds them again)
  start_s   kube_pod_status_scheduled_time, else the first tick the phase was Running,
            clamped into [submit_s, ...]; blank = never scheduled in the window
  end_s     kube_pod_completion_time, else the first tick the phase was Succeeded or
            Failed, else the last tick the pod's kube_pod_created series was present
            (the pod was deleted within one step after it); blank = still there at the
            last tick any pod was seen (the window end, unless the data stops early).
            A pod that ended before the window is dropped and counted
            (`censoring.dropped["ended before the trace"]`)
  requests  the per-dimension largest request seen while the incarnation existed
  job       the controlling owner (`namespace/Kind/name`, job_name = owner name, e.g. the
            Job, ReplicaSet or PyTorchJob); a pod without an owner is its own job
  role      "" (roles would need pod labels, which kube-state-metrics only exports on an
            allow-list; not read)
  known_at_s  when the pod's demand was known ahead, where the metrics show it (job
            metrics docs/metrics/workload/job-metrics.md, cronjob-metrics.md):
            - a pod of a Job run by a CronJob (`kube_job_owner` owner_kind="CronJob"): the
              first tick at which the CronJob's `kube_cronjob_next_schedule_time` was the
              run's scheduled time (the Job's name ends in it, in Unix minutes: the
              CronJob controller's `getJobName`); blank when the window holds no such tick;
            - a pod of any other Job created at least one step after its Job
              (`kube_job_created`): the Job's creation (a suspended or queued Job);
            - anything else (Kueue Workloads, JobSets, Kubeflow jobs, PodGroups are not
              exported by kube-state-metrics): blank, known at creation
Times are Unix seconds, so time of day and weekday stay real. Pods in the excluded
namespaces (default `headstart` and `headstart-placeholders`) are left out of the queries and again
here. Resolution: a time taken from a tick is good to one step plus one scrape interval.

Must not: do I/O, read the clock, or log; `now` is the caller's `until_s`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jobtraces.assemble import assemble
from jobtraces.jobtable import JobTable
from predictor.live.prometheus import (
    PrometheusConfig,
    namespace_matcher,
    queries,
    request_resources,
    request_samples,
    samples,
)

NO_OWNER = "<none>"
ENDED_BEFORE = "ended before the trace"
# Roles whose answer must not be empty: without them there is no pod or no request.
REQUIRED_ROLES = ("created", "requests")


@dataclass(frozen=True)
class ExportStats:
    """What the export left out or could not fill, for the command's summary line."""

    excluded_pods: int = 0
    """Pod incarnations in an excluded namespace (not demand, not in the table)."""

    pods_without_requests: int = 0
    """Rows with no request sample at all (written with zero requests)."""


def export_queries(config: PrometheusConfig) -> dict[str, str]:
    """The PromQL expressions `headstart trace export` asks, by role."""
    exclude = namespace_matcher(config)

    def select(metric: str) -> str:
        return f"{metric}{{{exclude.lstrip(',')}}}" if exclude else metric

    pod = "namespace, pod, uid"
    shared = queries(config)
    return {
        "created": f"max by ({pod}) ({select('kube_pod_created')})",
        "scheduled": f"max by ({pod}) ({select('kube_pod_status_scheduled_time')})",
        "completed": f"max by ({pod}) ({select('kube_pod_completion_time')})",
        "phase": f"max by ({pod}, phase) "
        f'(kube_pod_status_phase{{phase=~"Running|Succeeded|Failed"{exclude}}} == 1)',
        "owner": f"max by ({pod}, owner_kind, owner_name, owner_is_controller) "
        f"({select('kube_pod_owner')})",
        "info": f"max by ({pod}, priority_class) ({select('kube_pod_info')})",
        "requests": shared["requests"],
        "init_requests": shared["init_requests"],
        # Lead information (optional: empty answers leave known_at_s blank).
        "job_created": f"max by (namespace, job_name) ({select('kube_job_created')})",
        "job_owner": f"max by (namespace, job_name, owner_kind, owner_name) "
        f"({select('kube_job_owner')})",
        "cron_next": f"max by (namespace, cronjob) "
        f"({select('kube_cronjob_next_schedule_time')})",
    }


PodId = tuple[str, str, str]  # namespace, pod, uid


def _pod_id(series: Mapping[str, Any]) -> PodId:
    metric = series.get("metric") or {}
    return (str(metric.get("namespace", "")), str(metric.get("pod", "")),
            str(metric.get("uid", "")))


def _last_values(results: Sequence[Mapping[str, Any]], times: np.ndarray, tick_s: float,
                 role: str) -> dict[PodId, float]:
    """Per pod, the latest value of a timestamp metric seen in the window."""
    values: dict[PodId, float] = {}
    for series in results:
        ticks, numbers = samples(series, times, tick_s, role)
        if len(ticks):
            values[_pod_id(series)] = float(numbers[np.argmax(ticks)])
    return values


def _first_phase_ticks(results: Sequence[Mapping[str, Any]], times: np.ndarray,
                       tick_s: float) -> tuple[dict[PodId, int], dict[PodId, int]]:
    """Per pod, the first tick it was Running and the first it was Succeeded or Failed."""
    running: dict[PodId, int] = {}
    finished: dict[PodId, int] = {}
    for series in results:
        ticks, numbers = samples(series, times, tick_s, "phase")
        ticks = ticks[numbers > 0]
        if not len(ticks):
            continue
        phase = (series.get("metric") or {}).get("phase")
        target = running if phase == "Running" else finished
        pod = _pod_id(series)
        target[pod] = min(int(ticks.min()), target.get(pod, len(times)))
    return running, finished


def _owners(results: Sequence[Mapping[str, Any]]) -> dict[PodId, tuple[str, str]]:
    """Per pod, (kind, name) of its owner; the controlling owner wins over any other."""
    owners: dict[PodId, tuple[str, str]] = {}
    controlling: set[PodId] = set()
    for series in results:
        metric = series.get("metric") or {}
        kind, name = str(metric.get("owner_kind", "")), str(metric.get("owner_name", ""))
        if not name or name == NO_OWNER:
            continue
        pod = _pod_id(series)
        is_controller = metric.get("owner_is_controller") == "true"
        if pod not in owners or (is_controller and pod not in controlling):
            owners[pod] = (kind, name)
        if is_controller:
            controlling.add(pod)
    return owners


def _priority_classes(results: Sequence[Mapping[str, Any]]) -> dict[PodId, str]:
    return {_pod_id(series): str((series.get("metric") or {}).get("priority_class", ""))
            for series in results}


def _peak_requests(results: Mapping[str, Sequence[Mapping[str, Any]]], times: np.ndarray,
                   tick_s: float, gpu_resource: str
                   ) -> dict[str, list[tuple[int, np.ndarray, np.ndarray]]]:
    """Per "namespace/pod", its request samples as (dimension, ticks, values)."""
    by_pod: dict[str, list[tuple[int, np.ndarray, np.ndarray]]] = defaultdict(list)
    for key, dim, ticks, values in request_samples(results, times, tick_s, gpu_resource):
        by_pod[key].append((dim, ticks, values))
    return by_pod


def _by_labels(results: Sequence[Mapping[str, Any]], labels: tuple[str, str], times: np.ndarray,
               tick_s: float, role: str) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Per (label values), the (ticks, values) of a series."""
    found = {}
    for series in results:
        metric = series.get("metric") or {}
        found[(str(metric.get(labels[0], "")), str(metric.get(labels[1], "")))] = samples(
            series, times, tick_s, role)
    return found


def _known_at(results: Mapping[str, Sequence[Mapping[str, Any]]], times: np.ndarray,
              tick_s: float) -> Callable[[str, tuple[str, str] | None, float], float]:
    """known_at_s of a pod from its namespace, owner (kind, name) and creation time."""
    job_created = {key: float(values[np.argmax(ticks)]) for key, (ticks, values) in
                   _by_labels(results.get("job_created", ()), ("namespace", "job_name"), times,
                              tick_s, "job_created").items() if len(ticks)}
    cron_of_job = {}
    for series in results.get("job_owner", ()):
        metric = series.get("metric") or {}
        if metric.get("owner_kind") == "CronJob":
            cron_of_job[(str(metric.get("namespace", "")), str(metric.get("job_name", "")))] = (
                str(metric.get("owner_name", "")))
    cron_next = _by_labels(results.get("cron_next", ()), ("namespace", "cronjob"), times,
                           tick_s, "cron_next")

    def known(namespace: str, owner: tuple[str, str] | None, submit: float) -> float:
        if owner is None or owner[0] != "Job":
            return math.nan
        cron = cron_of_job.get((namespace, owner[1]))
        if cron is not None:
            suffix = owner[1][len(cron) + 1:]
            ticks, values = cron_next.get((namespace, cron), (np.zeros(0, int), np.zeros(0)))
            if not suffix.isdigit() or not len(ticks):
                return math.nan
            matching = ticks[values == int(suffix) * 60]
            return min(float(times[matching.min()]), submit) if len(matching) else math.nan
        created = job_created.get((namespace, owner[1]))
        if created is not None and created <= submit - tick_s:
            return created
        return math.nan

    return known


def job_table_from_results(
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    times: np.ndarray,
    tick_s: float,
    since_s: float,
    until_s: float,
    config: PrometheusConfig,
) -> tuple[JobTable, ExportStats]:
    """The job table of the pods in `results` (decoded `query_range` answers by role, as
    `export_queries` names them) over the window [since_s, until_s] sampled at `times`."""
    excluded = set(config.exclude_namespaces)
    created = _last_values(results.get("created", ()), times, tick_s, "created")
    present: dict[PodId, tuple[int, int]] = {}
    for series in results.get("created", ()):
        ticks, _ = samples(series, times, tick_s, "created")
        if len(ticks):
            present[_pod_id(series)] = (int(ticks.min()), int(ticks.max()))
    scheduled = _last_values(results.get("scheduled", ()), times, tick_s, "scheduled")
    completed = _last_values(results.get("completed", ()), times, tick_s, "completed")
    first_running, first_finished = _first_phase_ticks(results.get("phase", ()), times, tick_s)
    owners = _owners(results.get("owner", ()))
    priorities = _priority_classes(results.get("info", ()))
    requests = _peak_requests(results, times, tick_s, config.gpu_resource)
    known_at = _known_at(results, times, tick_s)

    pods = [pod for pod in created if pod in present]
    excluded_count = sum(1 for pod in pods if pod[0] in excluded)
    pods = [pod for pod in pods if pod[0] not in excluded]
    incarnations: dict[tuple[str, str], int] = defaultdict(int)
    for namespace, name, _ in pods:
        incarnations[(namespace, name)] += 1

    rows: list[dict[str, Any]] = []
    without_requests = 0
    # The last tick with any pod: when Prometheus or kube-state-metrics stopped before
    # --until, the pods still listed then were running, not all deleted at once.
    last_tick = max((present[pod][1] for pod in pods), default=len(times) - 1)
    for pod in pods:
        namespace, name, uid = pod
        first, last = present[pod]
        row_name = f"{namespace}/{name}"
        if incarnations[(namespace, name)] > 1:
            row_name += f"@{uid[:8]}"
        submit = created[pod]
        before = submit < since_s
        submit = max(submit, since_s)
        start_from_tick = pod not in scheduled and pod in first_running
        start = scheduled.get(pod, float(times[first_running[pod]]) if start_from_tick
                              else math.nan)
        start = max(start, submit) if not math.isnan(start) else start
        if pod in completed:
            end = completed[pod]
        elif pod in first_finished:
            end = float(times[first_finished[pod]])
        elif last < last_tick:
            end = float(times[last])
        else:
            end = math.nan
        if end > until_s:
            end = math.nan
        if start_from_tick and not math.isnan(end) and end < start:
            # The Running tick lags the true start by up to a step; the end is exact.
            start = max(end, submit)
        peak = np.zeros(3)
        seen = False
        for dim, ticks, values in requests.get(f"{namespace}/{name}", []):
            alive = values[(ticks >= first) & (ticks <= last)]
            if len(alive):
                peak[dim] = max(peak[dim], float(alive.max()))
                seen = True
        without_requests += not seen
        request = request_resources(peak)
        owner = owners.get(pod)
        rows.append({
            "pod": row_name,
            "job_id": f"{namespace}/{owner[0]}/{owner[1]}" if owner else row_name,
            "job_name": owner[1] if owner else name,
            "role": "",
            "submit_s": submit,
            "start_s": start,
            "end_s": end,
            "cpu_milli": request.cpu_milli,
            "memory_bytes": request.memory_bytes,
            "gpus": math.ceil(request.gpu_milli / 1000),
            "gpu_milli": request.gpu_milli,
            "priority_class": priorities.get(pod, ""),
            "known_at_s": min(known_at(namespace, owner, created[pod]), submit),
            "_before": before,
            "_ended_before": not math.isnan(end) and end < since_s,
        })
    # Pods created before the window first: the CSV's metadata count marks the first rows.
    rows.sort(key=lambda r: (not r["_before"], r["submit_s"], r["pod"]))
    columns = {name: np.array([r[name] for r in rows], dtype=object)
               for name in ("pod", "job_id", "job_name", "role", "priority_class")}
    for name in ("submit_s", "start_s", "end_s", "known_at_s"):
        columns[name] = np.array([r[name] for r in rows], dtype=np.float64)
    for name in ("cpu_milli", "memory_bytes", "gpus", "gpu_milli"):
        columns[name] = np.array([r[name] for r in rows], dtype=np.int64)
    started_before = np.array([r["_before"] for r in rows], dtype=bool)
    unusable = np.array([ENDED_BEFORE if r["_ended_before"] else "" for r in rows],
                        dtype=object)
    table = assemble(
        config.url,  # only named in the error when no pod is usable
        f"{config.url} (kube-state-metrics)",
        columns,
        since_s,
        started_before,
        trace_end_s=until_s,
        unusable=unusable,
    )
    return table, ExportStats(excluded_count, without_requests)
