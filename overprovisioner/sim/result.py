"""What one simulated run measured (`RunResult`), assembled from the finished run.

The engine (`pod_engine.py`) decides what happens; this file only turns its bookkeeping
(nodes, timeline rows, the policy's own counters) into arrays for the metrics, the
report and the plots. Must not: change the run it reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.predictive import Predictive
from overprovisioner.sim.workload import Workload


@dataclass
class RunResult:
    """Everything one run measured, for metrics, the report and the plots.

    placed_at: (N,) when each pod got a node (NaN = still pending at the end).
    node_*: per node launched (initial nodes included, flagged), times in trace seconds.
    times / demand / capacity / placeholders / forecast: per policy tick (at most one a
        minute), per type.
    """

    policy: str
    scoring: str
    workload: Workload
    config: SimConfig
    placed_at: np.ndarray
    node_type: np.ndarray
    node_group: np.ndarray
    node_launched: np.ndarray
    node_ready: np.ndarray
    node_removed: np.ndarray
    node_initial: np.ndarray
    node_served: np.ndarray
    times: np.ndarray
    demand: np.ndarray
    capacity: np.ndarray
    placeholders: np.ndarray
    forecast: np.ndarray
    preemptions: int
    job_nodes: dict[int, set[int]] = field(default_factory=dict)
    notes: dict[str, object] = field(default_factory=dict)


def collect(run) -> RunResult:
    """The result of a finished `engine._Run`."""
    nodes = run.cluster.nodes
    rows = len(run.ticks)
    n_types = len(run.w.types)
    return RunResult(
        policy=getattr(run.policy, "name", "?"),
        scoring=run.config.scoring,
        workload=run.w,
        config=run.config,
        placed_at=run.placed_at,
        node_type=np.array([n.type_index for n in nodes], dtype=np.int64),
        node_group=np.array([n.group for n in nodes], dtype=object),
        node_launched=np.array([n.launched_at for n in nodes]),
        node_ready=np.array([n.ready_at for n in nodes]),
        node_removed=np.array([n.removed_at for n in nodes]),
        node_initial=np.array([n.initial for n in nodes], dtype=bool),
        node_served=np.array([n.served for n in nodes], dtype=bool),
        times=np.array(run.ticks),
        demand=np.array(run.demand_rows).reshape(rows, -1),
        capacity=np.array(run.capacity_rows).reshape(rows, -1),
        placeholders=np.array(run.placeholder_rows).reshape(rows, -1),
        forecast=np.array([
            row if row is not None else np.full(n_types, np.nan)
            for row in run.forecast_rows
        ]).reshape(rows, -1),
        preemptions=run.preemptions,
        job_nodes={j: set(s) for j, s in run.jobs.nodes_used.items()},
        notes=_notes(run),
    )


def _notes(run) -> dict[str, object]:
    notes: dict[str, object] = {"planned_ticks": run.planned_ticks,
                                "capped_ticks": dict(run.capped_ticks)}
    if run.config.drainable_pods:
        notes["evictions"] = run.evictions  # pods CA moved to drain a node
    policy = run.policy
    if isinstance(policy, Predictive):
        notes["model"] = policy.model_name
        notes["tick_s"] = policy.tick_s
        notes["fits"] = policy.fits
        notes["cold_start_ticks"] = policy.cold_ticks
        notes["fallback_ticks"] = policy.fallback_ticks
    return notes
