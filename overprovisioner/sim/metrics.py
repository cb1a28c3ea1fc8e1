"""What a simulation run measured: pending time caused by missing capacity, what the nodes
cost, and how compactly multi-pod jobs were placed.

Decides the definitions:
- pending time: from a pod's submit to its placement, for pods submitted inside the
  window (pods already running at t0 are not counted); the simulated scheduler is
  instantaneous, so all of it is waiting for capacity. A pod still pending at the end
  counts the wait until the end (censored; `pods_pending_at_end` says how many).
- pending GPU-minutes: the sum over pods of wait x GPUs requested.
- GPU-hours provisioned: per node, GPUs x (removal or window end - launch request),
  since a cloud bills a node from its launch; idle = provisioned - requested by real pods.
- cost: the same node-hours at catalog on-demand prices.
- known share: of the pods submitted inside the window, those whose demand was known
  before their creation (the job table's `known_at_s`, or a what-if's), whatever the
  policy reads of it (only predictive does).
- locality, over jobs with more than one pod: distinct nodes and distinct placement
  groups (nodes without a group, e.g. GPU-less types, count none) that ever held one of
  the job's pods, averaged over jobs.

Must not: run the simulation or mutate the result.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from overprovisioner.sim.result import RunResult


@dataclass(frozen=True)
class Metrics:
    policy: str
    scoring: str
    pods: int
    pods_submitted_in_window: int
    pods_pending_at_end: int
    pending_seconds_mean: float
    pending_seconds_p95: float
    share_pending_over_60s: float
    pending_gpu_minutes: float
    gpu_hours: float
    used_gpu_hours: float
    idle_gpu_hours: float
    node_hours: float
    cost_usd: float
    node_launches: int
    placeholder_preemptions: int
    multi_pod_jobs: int
    mean_nodes_per_job: float
    mean_groups_per_job: float
    known_share: float = 0.0
    waited_pods: int = 0
    waited_p50_s: float = 0.0
    waited_p95_s: float = 0.0
    """The pods that waited for capacity at all (a wait over 0 s) and the median and
    95th percentile of their waits: what a user feels, where `pending_seconds_*` average
    over every pod, most of which found room at once."""
    planned_ticks: int = 0
    ticks_capped_by_max: int = 0
    ticks_capped_by_cost_cap: int = 0
    """Ticks the policy planned at, and of those the ticks where the per-type max or the
    cost cap held some bucket's plan back (headstart's limits; peers have none)."""

    def as_dict(self) -> dict[str, object]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _waits(result: RunResult) -> tuple[np.ndarray, np.ndarray]:
    """(the pods counted: submitted in the window; each pod's wait for a node, seconds,
    to the window's end for a pod never placed)."""
    w = result.workload
    placed = result.placed_at
    wait_end = np.where(np.isnan(placed), w.end_s, placed)
    return ~w.initial, wait_end - w.submit_s


def _node_hours(result: RunResult) -> np.ndarray:
    """Per node: hours from cluster-autoscaler's request to its removal (or the window's
    end)."""
    end = result.workload.end_s
    stop = np.where(np.isnan(result.node_removed), end, np.minimum(result.node_removed, end))
    return np.clip(stop - result.node_launched, 0, None) / 3600.0


def per_type(result: RunResult) -> tuple[np.ndarray, np.ndarray]:
    """(pending GPU-minutes, GPU-hours) per instance type: the run's totals split by the
    type a pod is pinned to and a node is of (they sum to `measure`'s)."""
    w = result.workload
    types = len(w.types)
    counted, waits = _waits(result)
    gpus = w.request[:, 0].astype(np.float64) / 1000.0
    pending = np.bincount(w.bucket[counted], weights=(waits * gpus)[counted] / 60.0,
                          minlength=types)
    node_gpus = np.array([t.gpus for t in w.types], dtype=np.float64)
    hours = _node_hours(result)
    gpu_hours = np.bincount(result.node_type.astype(np.int64),
                            weights=hours * node_gpus[result.node_type], minlength=types)
    return pending, gpu_hours


def measure(result: RunResult) -> Metrics:
    w = result.workload
    end = w.end_s
    placed = result.placed_at
    counted, all_waits = _waits(result)
    waits = all_waits[counted]
    gpus = w.request[:, 0].astype(np.float64)[counted] / 1000.0
    if len(waits):
        mean = float(waits.mean())
        p95 = float(np.percentile(waits, 95))
        over = float((waits > 60.0).mean())
    else:
        mean = p95 = over = 0.0
    waited = waits[waits > 0]
    waited_p50, waited_p95 = (float(np.percentile(waited, q)) for q in (50, 95)) if len(
        waited) else (0.0, 0.0)

    prices = np.array([t.price_per_hour for t in w.types])
    node_gpus = np.array([t.gpus for t in w.types], dtype=np.float64)
    hours = _node_hours(result)
    gpu_hours = float((hours * node_gpus[result.node_type]).sum()) if len(hours) else 0.0
    cost = float((hours * prices[result.node_type]).sum()) if len(hours) else 0.0

    ran = ~np.isnan(placed)
    run_end = np.minimum(placed + w.duration_s, end)
    run_hours = np.where(ran, np.clip(run_end - placed, 0, None), 0.0) / 3600.0
    used = float((run_hours * w.request[:, 0] / 1000.0).sum())

    groups_of_node = result.node_group
    many = _multi_pod_jobs(result)
    spans = [
        (len(nodes), len({groups_of_node[n] for n in nodes} - {""}))
        for job, nodes in result.job_nodes.items()
        if job in many and nodes
    ]
    return Metrics(
        policy=result.policy,
        scoring=result.scoring,
        pods=len(w),
        pods_submitted_in_window=int(counted.sum()),
        pods_pending_at_end=int(np.isnan(placed).sum()),
        pending_seconds_mean=mean,
        pending_seconds_p95=p95,
        share_pending_over_60s=over,
        pending_gpu_minutes=float((waits * gpus).sum() / 60.0),
        gpu_hours=gpu_hours,
        used_gpu_hours=used,
        idle_gpu_hours=gpu_hours - used,
        node_hours=float(hours.sum()),
        cost_usd=cost,
        node_launches=int((~result.node_initial).sum()),
        placeholder_preemptions=result.preemptions,
        multi_pod_jobs=len(spans),
        mean_nodes_per_job=float(np.mean([s[0] for s in spans])) if spans else 0.0,
        mean_groups_per_job=float(np.mean([s[1] for s in spans])) if spans else 0.0,
        known_share=float(w.known_ahead[counted].mean()) if counted.any() else 0.0,
        planned_ticks=int(result.notes.get("planned_ticks", 0)),
        ticks_capped_by_max=int(result.notes.get("capped_ticks", {}).get("max", 0)),
        ticks_capped_by_cost_cap=int(result.notes.get("capped_ticks", {}).get("cost_cap", 0)),
        waited_pods=int(len(waited)),
        waited_p50_s=waited_p50,
        waited_p95_s=waited_p95,
    )


def _multi_pod_jobs(result: RunResult) -> set[int]:
    jobs = result.workload.job
    ids, counts = np.unique(jobs[jobs >= 0], return_counts=True)
    return {int(j) for j, c in zip(ids, counts, strict=True) if c > 1}
