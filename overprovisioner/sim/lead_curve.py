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
The runs go to `common.parallel.Workers` in three batches, each waiting for the one
before: the runs on the trace as it is, the judged runs at every lead, the per-type
counts their cuts call for; the list of runs is in the same order however they ran.

Must not: read files or print (the CLI does); runs work on their own state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bucketing.catalog import Catalog
from common.parallel import Workers
from jobtraces.jobtable import JobTable
from overprovisioner.policy_names import parse_policy_name
from overprovisioner.sim.assess import Assessment, assess
from overprovisioner.sim.compare import PolicyRun, run_measured
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.hindsight import hindsight_policies
from overprovisioner.sim.metrics import Metrics
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
    workers: Workers | None = None,
) -> tuple[list[tuple[RunResult, Metrics, float | None]], LeadCurve]:
    """Every run (result, metrics, lead: None for runs on the trace as it is) and the
    curve. `build` turns a job table into the workload (window and types); `workers`:
    where the runs go (default: this process); `progress(name)` as each finishes. The
    runs are listed as the baseline, then each judged run followed by the per-type
    counts its cut added."""
    for name in policies:
        parse_policy_name(name)
    names = judged(policies)
    if not names:
        raise ValueError("a lead curve needs a predictive policy")
    workers = workers or Workers(1)
    base = build(table)

    def run_all(tasks: list[PolicyRun], labels: list[str]
                ) -> list[tuple[RunResult, Metrics]]:
        return workers.map(run_measured, tasks, labels, progress)

    others = [name for name in policies if name not in names]
    baseline_runs = run_all([PolicyRun(base, catalog, name, config) for name in others],
                            others)
    at_lead = [(lead, name) for lead in what_if.leads for name in names]
    workloads = {lead: build(what_if.apply(table, lead)) for lead in what_if.leads}
    judged_results = run_all(
        [PolicyRun(workloads[lead], catalog, name, config) for lead, name in at_lead],
        [f"{name} at lead {lead:g} s" for lead, name in at_lead])
    # The per-type count chosen in hindsight for each cut: a peer reads no known demand,
    # so it runs on the trace as it is, like the other peers. The search reads only the
    # reactive and static:N runs, so each judged run's vectors are known before any runs.
    type_names = [t.name for t in base.types]
    vectors: list[list[str]] = []
    chosen: list[str] = []
    for judged_run in judged_results:
        added = [v for v in hindsight_policies([*baseline_runs, judged_run], type_names)
                 if v not in chosen]
        vectors.append(added)
        chosen += added
    peer_runs = dict(zip(chosen, run_all([PolicyRun(base, catalog, v, config)
                                          for v in chosen], chosen), strict=True))
    runs: list[tuple[RunResult, Metrics, float | None]] = [
        (result, metrics, None) for result, metrics in baseline_runs]
    judged_runs = []
    for (lead, name), (result, metrics), added in zip(at_lead, judged_results, vectors,
                                                      strict=True):
        runs.append((result, metrics, lead))
        judged_runs.append((name, lead, metrics))
        runs += [(*peer_runs[v], None) for v in added]
    baseline = tuple(m for _, m, lead in runs if lead is None)
    points = [LeadPoint(name, lead, metrics.known_share, metrics,
                        assess([*baseline, metrics], name))
              for name, lead, metrics in judged_runs]
    points.sort(key=lambda p: (names.index(p.policy), p.lead_s))
    return runs, LeadCurve(what_if.share, tuple(points), baseline)
