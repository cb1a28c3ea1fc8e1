"""The summary table of a simulation comparison, as text rows (the CLI prints them, the HTML
report puts them in a <table>).

Decides which columns mean something for these runs: `scoring` only when runs used
different scorers (the opt-in scoring comparison), nodes/job and groups/job only when
the trace has multi-pod jobs; the cut and the extra GPU-hours and dollars are against
the `reactive` run (blank without one). Yardsticks (oracle, rate-oracle) are named as
such.

Must not: print or read files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from overprovisioner.sim.metrics import Metrics
from overprovisioner.sim.verdict import display_name


@dataclass(frozen=True)
class Column:
    """title: the header; cell: the text of one run's cell, given the reactive run (or
    None); shown: whether the column means anything for these runs."""

    title: str
    cell: Callable[[Metrics, Metrics | None], str]
    shown: Callable[[Sequence[Metrics]], bool] = lambda runs: True


def _against(reactive: Metrics | None, text: Callable[[Metrics], str]) -> str:
    return "" if reactive is None else text(reactive)


def _cut(m: Metrics, reactive: Metrics | None) -> str:
    def text(base: Metrics) -> str:
        if base.pending_gpu_minutes <= 0:
            return "-"
        return f"{1 - m.pending_gpu_minutes / base.pending_gpu_minutes:.0%}"
    return _against(reactive, text)


def _multi_pod(runs: Sequence[Metrics]) -> bool:
    return any(m.multi_pod_jobs > 0 for m in runs)


COLUMNS: tuple[Column, ...] = (
    Column("policy", lambda m, r: display_name(m.policy)),
    Column("scoring", lambda m, r: m.scoring,
           lambda runs: len({m.scoring for m in runs}) > 1),
    Column("pods", lambda m, r: f"{m.pods_submitted_in_window}"),
    Column("wait mean s", lambda m, r: f"{m.pending_seconds_mean:.1f}"),
    Column("wait p95 s", lambda m, r: f"{m.pending_seconds_p95:.0f}"),
    Column(">60s", lambda m, r: f"{m.share_pending_over_60s:.1%}"),
    Column("waited", lambda m, r: f"{m.waited_pods}"),
    Column("their wait p50/p95 s", lambda m, r: f"{m.waited_p50_s:.0f}/{m.waited_p95_s:.0f}"),
    Column("pending GPU-min", lambda m, r: f"{m.pending_gpu_minutes:,.0f}"),
    Column("cut", _cut),
    Column("GPU-h", lambda m, r: f"{m.gpu_hours:,.0f}"),
    Column("extra GPU-h", lambda m, r: _against(r, lambda b: f"{m.gpu_hours - b.gpu_hours:+,.0f}")),
    Column("idle GPU-h", lambda m, r: f"{m.idle_gpu_hours:,.0f}"),
    Column("cost $", lambda m, r: f"{m.cost_usd:,.0f}"),
    Column("extra $", lambda m, r: _against(r, lambda b: f"{m.cost_usd - b.cost_usd:+,.0f}")),
    Column("launches", lambda m, r: f"{m.node_launches}"),
    Column("hits", lambda m, r: f"{m.placeholder_preemptions}"),
    Column("nodes/job", lambda m, r: f"{m.mean_nodes_per_job:.2f}", _multi_pod),
    Column("groups/job", lambda m, r: f"{m.mean_groups_per_job:.2f}", _multi_pod),
)

LEGEND = (
    "wait: from submit to placement, all of it for missing capacity (the simulated "
    "scheduler is instantaneous); waited: pods that waited at all, their wait p50/p95: "
    "the median and 95th percentile of those waits; pending GPU-min: waits x GPUs; cut: "
    "less pending "
    "GPU-minutes than reactive (cluster-autoscaler alone); GPU-h and cost: every node from "
    "cluster-autoscaler's launch request to its removal; extra: above reactive; hits: "
    "placeholders preempted by real pods; yardstick: knows the future, cannot be deployed"
)


def shown_columns(metrics: Sequence[Metrics]) -> tuple[Column, ...]:
    return tuple(c for c in COLUMNS if c.shown(metrics))


def _reactive_of(metrics: Sequence[Metrics], scoring: str) -> Metrics | None:
    return next((m for m in metrics if m.policy == "reactive" and m.scoring == scoring), None)


def table_header(metrics: Sequence[Metrics]) -> list[str]:
    return [c.title for c in shown_columns(metrics)]


def table_rows(metrics: Sequence[Metrics]) -> list[list[str]]:
    """One row per run; a run's cut and extras are against the reactive run of the main
    scoring (the first run's)."""
    columns = shown_columns(metrics)
    reactive = _reactive_of(metrics, metrics[0].scoring) if metrics else None
    return [[c.cell(m, reactive) for c in columns] for m in metrics]


def format_table(metrics: Sequence[Metrics]) -> str:
    header = table_header(metrics)
    rows = table_rows(metrics)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))) for row in [header, *rows]]
    return "\n".join(lines)
