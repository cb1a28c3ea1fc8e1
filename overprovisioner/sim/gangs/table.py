"""The elastic table: one workload replayed as gangs at fixed sizes, elastic, and elastic
with the growth announced, side by side, and what each measured.

Decides: the three arms (`ARMS`: the admitter's `admission.elastic.enabled` off, on,
and on with the overprovisioner told of each shrunk gang's growth), run on the same
jobs, cluster and seed; the figures per arm (`summarize`): job completion time (submit
to finish) and queueing delay (submit to its gang first Running) over the jobs that did
not start before the window and that every arm finished (a job no domain can ever hold
never finishes; it is counted apart, `unfinished`), GPU-hours of the nodes (launch to
removal: what is billed) and of the pods, dollars at the catalog's prices, resizes by
kind, node launches; and where they go (`engine.ledger`): the node GPU-hours by part
(pods at their work's trace size, the more smaller gangs held by running longer, pods
bound while not training, placeholders, nodes held only for growth, free room, empty and
starting nodes), and the mean completion time as queueing, the trace run, the time
smaller sizes added and the time stalled after the start. The arms are independent runs:
they go to `common.parallel.Workers` together and come back in `ARMS` order.

Must not: read files, print.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from bucketing.catalog import InstanceType
from common.parallel import Workers
from locality.admission.config import AdmissionConfig
from locality.admission.weight import ElasticConfig
from overprovisioner.sim.gangs.gang_engine import GangResult, GangRun, GangSimConfig
from overprovisioner.sim.gangs.jobs import ElasticRule, GangJob
from overprovisioner.sim.gangs.ledger import NODE_PARTS
from overprovisioner.sim.workload import Workload


@dataclass(frozen=True)
class Arm:
    name: str
    elastic: bool
    announce: bool


ARMS = (Arm("fixed", False, False), Arm("elastic", True, False),
        Arm("elastic+announced", True, True))


@dataclass(frozen=True)
class ArmRun:
    """One arm to run, whole: what a worker process receives."""

    workload: Workload
    jobs: tuple[GangJob, ...]
    types: tuple[InstanceType, ...]
    config: GangSimConfig
    admission: AdmissionConfig
    scaling: str
    arm: Arm


def run_arm(task: ArmRun) -> GangResult:
    """The arm `task` names, run to the end."""
    arm, admission = task.arm, task.admission
    settings = replace(admission, elastic=replace(admission.elastic, enabled=arm.elastic)
                       if admission.elastic else ElasticConfig(enabled=arm.elastic))
    return GangRun(task.workload, task.jobs, task.types, task.config, settings, task.scaling,
                   arm.elastic, arm.announce, arm.name).execute()


def run_arms(workload: Workload, jobs: Sequence[GangJob], types: Sequence[InstanceType],
             rule: ElasticRule, config: GangSimConfig,
             admission: AdmissionConfig | None = None,
             arms: Sequence[Arm] = ARMS, workers: Workers | None = None,
             done: Callable[[str], None] | None = None) -> list[GangResult]:
    """Each arm on the same jobs and cluster, in `arms` order; `admission`: the
    extender's settings (its defaults when None), with elastic resizing switched per
    arm. `workers`: where the arms run (default: this process, one after another);
    `done(arm name)` as each finishes."""
    admission = admission or AdmissionConfig()
    tasks = [ArmRun(workload, tuple(jobs), tuple(types), config, admission, rule.scaling, arm)
             for arm in arms]
    return (workers or Workers(1)).map(run_arm, tasks, [arm.name for arm in arms], done)


def summaries(results: Sequence[GangResult]) -> list[dict]:
    """Each arm's figures (`summarize`), times over the jobs every arm finished."""
    common = np.logical_and.reduce([~np.isnan(r.finished) for r in results])
    return [summarize(result, common) for result in results]


def summarize(result: GangResult, measured: np.ndarray) -> dict:
    """One arm's figures: completion and queueing times over the `measured` jobs (hours,
    minutes; None when there is none), GPU-hours and dollars over the whole run."""
    jct = ((result.finished - result.submit) / 3600)[measured]
    queue = ((result.first_running - result.submit) / 60)[measured]
    work = (result.work / 3600)[measured]
    trained = (result.trained / 3600)[measured]
    jct_parts = {"queueing": queue / 60, "work": work, "smaller": trained - work,
                 "stalled": jct - queue / 60 - trained}
    return {
        "arm": result.name,
        "jobs": int(len(result.submit)),
        "elastic_jobs": int(result.elastic.sum()),
        "measured": int(measured.sum()),
        "unfinished": int(np.isnan(result.finished).sum()),
        "unfinished_all": result.unfinished_all,
        "jct_mean_h": _stat(np.mean, jct),
        "jct_p50_h": _stat(np.median, jct),
        "jct_p95_h": _stat(lambda v: np.percentile(v, 95), jct),
        "queue_mean_min": _stat(np.mean, queue),
        "queue_p95_min": _stat(lambda v: np.percentile(v, 95), queue),
        "node_gpu_hours": round(result.node_gpu_s / 3600, 1),
        "pod_gpu_hours": round(result.used_gpu_s / 3600, 1),
        "dollars": round(result.node_cost, 0),
        "resizes": dict(sorted(result.resizes.items())),
        "launches": result.launches,
        "node_gpu_hours_by": {part: round(result.node_parts.get(part, 0.0) / 3600, 1) + 0.0
                              for part in NODE_PARTS},
        "jct_mean_by_h": {part: _stat(np.mean, values) for part, values in jct_parts.items()},
    }


def _stat(function, values: np.ndarray) -> float | None:
    if len(values) == 0:
        return None
    value = float(function(values))
    return round(value, 3) + 0.0 if math.isfinite(value) else None  # + 0.0: never -0.0


def format_rows(rows: Sequence[dict]) -> str:
    """The arms as a fixed-width table, with each figure's ratio to the first arm."""
    header = (f"{'arm':<18} {'JCT mean h':>10} {'p95 h':>7} {'queue mean min':>14} "
              f"{'p95 min':>8} {'node GPU-h':>10} {'$':>8} {'resizes':>8} {'unfinished':>10}")
    lines = [header]
    base = rows[0]
    for row in rows:
        resizes = sum(row["resizes"].values())
        lines.append(
            f"{row['arm']:<18} {_num(row['jct_mean_h']):>10} {_num(row['jct_p95_h']):>7} "
            f"{_num(row['queue_mean_min']):>14} {_num(row['queue_p95_min']):>8} "
            f"{row['node_gpu_hours']:>10,.0f} {row['dollars']:>8,.0f} {resizes:>8} "
            f"{row['unfinished']:>10}")
    for row in rows[1:]:
        lines.append(f"{row['arm']} / {base['arm']}: JCT mean {_ratio(row, base, 'jct_mean_h')}, "
                     f"queue mean {_ratio(row, base, 'queue_mean_min')}, node GPU-hours "
                     f"{_ratio(row, base, 'node_gpu_hours')}")
    lines.append("jobs never finished, those running before the window too (their work is "
                 "missing from the GPU-hours): " + ", ".join(
                     f"{row['arm']} {row['unfinished_all']}" for row in rows))
    lines.append("")
    lines.append("where node GPU-hours go: " + ", ".join(PART_NAMES[p] for p in NODE_PARTS))
    for row in rows:
        parts = row["node_gpu_hours_by"]
        lines.append(f"{row['arm']:<18} " + " ".join(f"{parts[p]:>9,.0f}" for p in NODE_PARTS))
    lines.append("where mean JCT goes (h): queueing, trace run at its size, added by smaller "
                 "sizes, stalled after its start")
    for row in rows:
        lines.append(f"{row['arm']:<18} " + " ".join(f"{_num(v):>9}" for v in
                                                     row["jct_mean_by_h"].values()))
    return "\n".join(lines)


PART_NAMES = {
    "pods_full_size": "pods at trace size",
    "pods_smaller": "more held by smaller gangs running longer",
    "pods_idle": "pods bound not training",
    "placeholders": "placeholders beside pods",
    "growth_nodes": "nodes held only for growth",
    "free": "free beside pods",
    "empty": "empty nodes",
    "starting": "starting nodes",
}
"""How the report names each part of `ledger.NODE_PARTS`."""


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(row: dict, base: dict, key: str) -> str:
    if row[key] is None or not base[key]:
        return "-"
    return f"{row[key] / base[key]:.2f}x"
