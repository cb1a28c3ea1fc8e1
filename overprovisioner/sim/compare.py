"""Running several policies on one workload: which ones by default, the runs themselves,
and the runs added for the verdict (hindsight headroom, the recommended run lifted).

Decides the default policy list per workload, and which runs wait for which: the listed
policies (and the scoring comparison) are independent, so they go to the workers
(`common.parallel.Workers`) together; the runs chosen from their results follow, again
together. How runs are judged is `overprovisioner.sim.assess`.

Must not: read files or print (the CLI does); runs work on their own state, so where one
runs (this process or a worker) changes nothing in it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bucketing.catalog import Catalog
from common.parallel import Workers
from overprovisioner.policy_names import (
    parse_policy_name,
    schedule_name,
    unlimited_name,
)
from overprovisioner.sim.assess import assess_all
from overprovisioner.sim.build import check_schedule_matches
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.hindsight import add_hindsight_runs
from overprovisioner.sim.metrics import Metrics, measure
from overprovisioner.sim.pod_engine import run
from overprovisioner.sim.result import RunResult
from overprovisioner.sim.verdict import recommend
from overprovisioner.sim.workload import Workload, busy_hours, true_demand

DEFAULT_POLICIES = ("reactive", "static:1", "static:2", "static:4", "static:8", "predictive",
                    "oracle")
# Schedules kept during the workload's busy hours / outside them (`scheduled_policies`).
SCHEDULES = ((1, 0), (2, 0), (4, 1))
# Placeholders `proportional_policies` aims at, on average, for the busiest type.
PROPORTIONAL_TARGETS = (1, 2, 4)
# The demo also draws predictive's own trade-off curve, at higher quantiles.
DEMO_EXTRA = ("predictive:0.97", "predictive:0.99")


def scheduled_policies(workload: Workload) -> tuple[str, ...]:
    """`scheduled` peers following the workload's own busy hours (`busy_hours`: chosen
    in hindsight on the trace they are judged on, which flatters them)."""
    hours = busy_hours(workload)
    names = (schedule_name(hours, busy, otherwise) for busy, otherwise in SCHEDULES)
    return tuple(name for name in names if name)


def proportional_policies(workload: Workload) -> tuple[str, ...]:
    """`proportional:R` peers sized to the workload as a user sizes nodesPerReplica to the
    cluster: R = the busiest type's mean node count (true demand every 5 minutes over
    the window) divided by 1, 2 and 4, so each keeps about that many placeholders on
    average (R >= 1; equal ratios once)."""
    demand = true_demand(workload, 300.0)[:-1]  # the last row is the window's end
    mean_nodes = float(demand.mean(axis=0).max()) if demand.size else 0.0
    ratios = dict.fromkeys(max(1, round(mean_nodes / target))
                           for target in PROPORTIONAL_TARGETS)
    return tuple(f"proportional:{ratio}" for ratio in ratios)


def default_policies(workload: Workload, demo: bool = False) -> tuple[str, ...]:
    """What `simulate` runs without --policy (the demo adds predictive's higher quantiles):
    reactive, every peer family, predictive, the oracle."""
    head, tail = DEFAULT_POLICIES[:-2], DEFAULT_POLICIES[-2:]
    return (head + proportional_policies(workload) + scheduled_policies(workload) + tail
            + (DEMO_EXTRA if demo else ()))


@dataclass(frozen=True)
class PolicyRun:
    """One run to do, whole: what a worker process receives."""

    workload: Workload
    catalog: Catalog
    policy: str
    config: SimConfig


def run_measured(task: PolicyRun) -> tuple[RunResult, Metrics]:
    """The run `task` names and what it measured."""
    result = run(task.workload, task.catalog, task.policy, task.config)
    return result, measure(result)


def run_policies(
    workload: Workload,
    catalog: Catalog,
    policies: Sequence[str],
    config: SimConfig,
    compare_scoring: bool = False,
    progress: Callable[[str], None] | None = None,
    hindsight: bool = True,
    lifted: bool = True,
    workers: Workers | None = None,
) -> list[tuple[RunResult, Metrics]]:
    """One run per policy (headstart scoring as configured); with `hindsight` and static
    runs to search, one more run per predictive run's cut: the cheapest count per type
    reaching it, chosen in hindsight (`overprovisioner.sim.hindsight`); with `lifted`,
    when a limit held back the run the verdict recommends, that run once more with the
    limits lifted (`predictive:unlimited`: what the limits cost in waiting, which the
    verdict reports), and the per-type peer for its cut; with
    compare_scoring (opt-in: it is one more run) and multi-pod jobs in the workload, one
    more run of the locality-relevant policy (the predictive one if listed, else the
    first) with the other scorer. `workers`: where the runs go (default: this process,
    one after another); `progress(name)` as each run finishes. The list is in that order
    (the listed policies, the hindsight runs, the lifted run, the scoring comparison)
    however many workers ran it."""
    workers = workers or Workers(1)
    for name in policies:  # fail before the first run, not after it
        spec = parse_policy_name(name)
        if spec.kind == "scheduled":
            check_schedule_matches(spec, workload)

    def many(names: Sequence[str]) -> list[tuple[RunResult, Metrics]]:
        return workers.map(run_measured, [PolicyRun(workload, catalog, name, config)
                                          for name in names], list(names), progress)

    tasks = [PolicyRun(workload, catalog, name, config) for name in policies]
    labels = list(policies)
    if compare_scoring and (workload.job >= 0).any() and policies:
        # Independent of every other run: it goes with the first batch, and stays last.
        chosen = next((p for p in policies if parse_policy_name(p).kind == "predictive"),
                      policies[0])
        other = "default" if config.scoring == "headstart" else "headstart"
        tasks.append(PolicyRun(workload, catalog, chosen, _with_scoring(config, other)))
        labels.append(f"{chosen} ({other} scoring)")
    # Predictive runs fit a forecaster every tick, several times any other run's work:
    # started first, none is left running alone at the end of the batch.
    slowest_first = sorted(range(len(tasks)), key=lambda i: parse_policy_name(
        tasks[i].policy).kind != "predictive")
    first = workers.map(run_measured, tasks, labels, progress, start_order=slowest_first)
    results, scoring_run = first[:len(policies)], first[len(policies):]
    type_names = [t.name for t in workload.types]
    if hindsight:
        results = add_hindsight_runs(results, many, type_names)
    if lifted:
        chosen_run = recommend(assess_all([m for _, m in results]))
        added = lifted_runs(results, lambda name: many([name])[0],
                            chosen_run.policy if chosen_run else None)
        results += added
        if hindsight and added:  # the per-type peer for the lifted run's cut too
            results = add_hindsight_runs(results, many, type_names)
    return results + scoring_run


def lifted_runs(results: Sequence[tuple[RunResult, Metrics]],
                one: Callable[[str], tuple[RunResult, Metrics]], policy: str | None
                ) -> list[tuple[RunResult, Metrics]]:
    """`predictive:unlimited` (`predictive:Q,unlimited`) of `policy` when a limit (cost
    cap or per-type max) held its plan back at some tick, unless it already ran."""
    names = {m.policy for _, m in results}
    for _, metrics in results:
        if metrics.policy != policy:
            continue
        spec = parse_policy_name(metrics.policy)
        if spec.kind != "predictive" or spec.unlimited:
            return []
        if not (metrics.ticks_capped_by_max or metrics.ticks_capped_by_cost_cap):
            return []
        name = unlimited_name(metrics.policy)
        return [] if name in names else [one(name)]
    return []


def _with_scoring(config: SimConfig, scoring: str) -> SimConfig:
    from dataclasses import replace

    return replace(config, scoring=scoring)


