"""What the bucket-list tuner reports: each candidate list evaluated over the trace
(`Candidate`, with its per-type usage), the whole report (`TuneReport`), their JSON, and
the recommended list's per-tick series (`--series`).

Decides nothing: `bucketing.tune` fills these; the CLI prints, plots and writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class TypeUsage:
    """One instance type within a candidate: embedded and packed node-hours, packed cost."""

    name: str
    embed_node_hours: float
    node_hours: float
    cost_usd: float


@dataclass(frozen=True)
class Candidate:
    """One bucket list evaluated over the trace.

    label: "catalog" (every type; left out when base 0 is already every type) or
        "base N" (step N of base-instance selection; base 0 is the starting list).
    base_instances: the smallest GPU-less type and the smallest GPU type of the list.
    accepted: for base-instance steps, whether the walk kept the list (None: catalog).
    scale_usd: the embedded counts' cost, the scale base-instance selection compares.
    node_hours / cost_usd: the packed nodes (first-fit-decreasing) over the trace.
    *_waste_fraction: 1 - requested / allocated over the packed node-hours.
    scale_series: (T,) $/hour of the embedded counts per tick (what --plot draws).
    nodes_series: (T,) packed nodes per tick.
    bucket_counts: (T, B) embedded counts per tick and type (instance_types order).
    bucket_nodes: (T, B) packed nodes per tick and type.
    """

    label: str
    instance_types: tuple[str, ...]
    base_instances: tuple[str, ...]
    accepted: bool | None
    scale_usd: float
    embed_node_hours: float
    node_hours: float
    cost_usd: float
    gpu_waste_fraction: float
    cpu_waste_fraction: float
    memory_waste_fraction: float
    unbucketable_pods: int
    peak_nodes: int
    per_type: tuple[TypeUsage, ...]
    scale_series: np.ndarray = field(repr=False)
    nodes_series: np.ndarray = field(repr=False)
    bucket_counts: np.ndarray = field(repr=False)
    bucket_nodes: np.ndarray = field(repr=False)

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "instance_types": list(self.instance_types),
            "base_instances": list(self.base_instances),
            "accepted": self.accepted,
            "scale_usd": round(self.scale_usd, 2),
            "embed_node_hours": round(self.embed_node_hours, 2),
            "node_hours": round(self.node_hours, 2),
            "cost_usd": round(self.cost_usd, 2),
            "gpu_waste_fraction": round(self.gpu_waste_fraction, 4),
            "cpu_waste_fraction": round(self.cpu_waste_fraction, 4),
            "memory_waste_fraction": round(self.memory_waste_fraction, 4),
            "unbucketable_pods": self.unbucketable_pods,
            "peak_nodes": self.peak_nodes,
            "per_type": [
                {
                    "name": u.name,
                    "embed_node_hours": round(u.embed_node_hours, 2),
                    "node_hours": round(u.node_hours, 2),
                    "cost_usd": round(u.cost_usd, 2),
                }
                for u in self.per_type
                if u.node_hours or u.embed_node_hours
            ],
        }


@dataclass(frozen=True)
class TuneReport:
    """Everything `headstart buckets tune` prints, plots and writes.

    family_scales: the scale (embedded $ over the trace) and unbucketable pods of each
        GPU model's list, when the model was chosen automatically.
    max_types: the --max-types bound; trimmed: the types the trim dropped, in order.
    unbucketable_pods: the pods the trace ran (a start time) that the recommended list
        cannot hold: exactly the pods `headstart simulate` on that list does not replay
        as "fit no simulated instance type". unbucketable_gpu_hours: their GPU-hours
        within the trace (unbucketable_cpu_hours: their CPU-hours; GPU-less pods have
        none of the first). unbucketable_never_scheduled: pods that never ran in the trace
        and fit no type either (simulate counts them as never scheduled).
    unbucketable_examples: up to five pods the recommended list cannot hold, as
        (pod name, (GPUs, CPUs, GiB)).
    """

    source: str
    catalog: str
    gpu_model: str
    tick_s: float
    times: np.ndarray = field(repr=False)
    pods: int
    censoring: str
    candidates: tuple[Candidate, ...]
    recommended: tuple[str, ...]
    unbucketable_pods: int
    unbucketable_examples: tuple[tuple[str, tuple[float, float, float]], ...]
    family_scales: dict[str, tuple[float, int]]
    max_types: int | None = None
    trimmed: tuple[str, ...] = ()
    unbucketable_gpu_hours: float = 0.0
    unbucketable_never_scheduled: int = 0
    unbucketable_cpu_hours: float = 0.0

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "catalog": self.catalog,
            "gpu_model": self.gpu_model,
            "tick_s": self.tick_s,
            "ticks": len(self.times),
            "hours": round(len(self.times) * self.tick_s / 3600, 2),
            "pods": self.pods,
            "censoring": self.censoring,
            "recommended": list(self.recommended),
            "max_types": self.max_types,
            "trimmed": list(self.trimmed),
            "candidates": [c.to_json() for c in self.candidates],
            "unbucketable_pods": {
                "count": self.unbucketable_pods,
                "gpu_hours": round(self.unbucketable_gpu_hours, 2),
                "cpu_hours": round(self.unbucketable_cpu_hours, 2),
                "never_scheduled": self.unbucketable_never_scheduled,
                "examples": [
                    {"pod": pod, "gpus": v[0], "cpus": v[1], "memory_gib": round(v[2], 3)}
                    for pod, v in self.unbucketable_examples
                ],
            },
            "gpu_model_scales": {
                model: {"scale_usd": round(scale, 2), "unbucketable_pods": pods}
                for model, (scale, pods) in self.family_scales.items()
            },
        }


def recommended_series(report: TuneReport) -> pd.DataFrame:
    """Per tick (index `time_s`), the recommended list's embedded count (`<type>`) and
    packed nodes (`<type>_nodes`) of each type."""
    chosen = next(
        c for c in reversed(report.candidates) if c.instance_types == report.recommended
    )
    columns: dict[str, np.ndarray] = {}
    for b, name in enumerate(chosen.instance_types):
        columns[name] = chosen.bucket_counts[:, b]
    for b, name in enumerate(chosen.instance_types):
        columns[f"{name}_nodes"] = chosen.bucket_nodes[:, b]
    return pd.DataFrame(columns, index=pd.Index(report.times, name="time_s"))
