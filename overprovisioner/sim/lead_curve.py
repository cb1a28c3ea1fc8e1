"""The lead curve: what predictive buys as announced work is known earlier.

Decides how `headstart simulate --lead-curve` runs and judges: the policies that read no
known demand (reactive, the peers, the oracle, which knows the future already) run once
on the trace as it is; each judged policy (`predictive*`) runs once per lead, on the
trace with the what-if's share of jobs known that long before creation (the same jobs
at every lead: one seed). Each of those runs is judged like any predictive run
(`assess.assess`): its reduction of pending GPU-minutes against reactive, its extra
GPU-hours, what the cheapest peer family needs for the same reduction, and the oracle.
The peers include, for each lead's cut, the cheapest count per type that reaches it
chosen in hindsight (`sim.hindsight`), run on the trace as it is like every peer.

Must not: read files or print (the CLI does); runs work on their own state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bucketing.catalog import Catalog
from jobtraces.jobtable import JobTable
from overprovisioner.policy_names import parse_policy_name
from overprovisioner.sim.assess import Assessment, assess
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.engine import run
from overprovisioner.sim.hindsight import hindsight_policies
from overprovisioner.sim.metrics import Metrics, measure
from overprovisioner.sim.result import RunResult
from overprovisioner.sim.what_if import WhatIf
from overprovisioner.sim.workload import Workload


@dataclass(frozen=True)
class LeadPoint:
    """One judged run at one lead: `known_share` of the window's pods known ahead."""

    policy: str
    lead_s: float
    known_share: float
    metrics: Metrics
    assessment: Assessment


@dataclass(frozen=True)
class LeadCurve:
    """The curve of every judged policy (points in lead order per policy) and the runs
    it is judged against."""

    share: float
    points: tuple[LeadPoint, ...]
    baseline: tuple[Metrics, ...]

    def of(self, policy: str) -> tuple[LeadPoint, ...]:
        return tuple(p for p in self.points if p.policy == policy)

    @property
    def policies(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.policy for p in self.points))


def judged(policies: Sequence[str]) -> tuple[str, ...]:
    """The policies that read known demand: predictive and its variants."""
    return tuple(p for p in policies if parse_policy_name(p).kind == "predictive")


def run_lead_curve(
    table: JobTable,
    build: Callable[[JobTable], Workload],
    catalog: Catalog,
    policies: Sequence[str],
    config: SimConfig,
    what_if: WhatIf,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[tuple[RunResult, Metrics, float | None]], LeadCurve]:
    """Every run (result, metrics, lead: None for runs on the trace as it is) and the
    curve. `build` turns a job table into the workload (window and types)."""
    for name in policies:
        parse_policy_name(name)
    names = judged(policies)
    if not names:
        raise ValueError("a lead curve needs a predictive policy")
    runs: list[tuple[RunResult, Metrics, float | None]] = []
    base = build(table)
    for name in policies:
        if name in names:
            continue
        if progress:
            progress(name)
        result = run(base, catalog, name, config)
        runs.append((result, measure(result), None))
    peers = [(r, m) for r, m, _ in runs]  # grows with the per-type runs searched
    type_names = [t.name for t in base.types]
    judged_runs = []
    for lead in what_if.leads:
        workload = build(what_if.apply(table, lead))
        for name in names:
            if progress:
                progress(f"{name} at lead {lead:g} s")
            result = run(workload, catalog, name, config)
            metrics = measure(result)
            runs.append((result, metrics, lead))
            judged_runs.append((name, lead, metrics))
            # The per-type count chosen in hindsight for this cut: a peer reads no known
            # demand, so it runs on the trace as it is, like the other peers.
            for vector in hindsight_policies([*peers, (result, metrics)], type_names):
                if progress:
                    progress(vector)
                peer = run(base, catalog, vector, config)
                peers.append((peer, measure(peer)))
                runs.append((*peers[-1], None))
    baseline = tuple(m for _, m, lead in runs if lead is None)
    points = [LeadPoint(name, lead, metrics.known_share, metrics,
                        assess([*baseline, metrics], name))
              for name, lead, metrics in judged_runs]
    points.sort(key=lambda p: (names.index(p.policy), p.lead_s))
    return runs, LeadCurve(what_if.share, tuple(points), baseline)
