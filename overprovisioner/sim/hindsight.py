"""The best per-type static headroom a user could have configured, chosen in hindsight on
the replayed trace: the strongest peer a verdict compares with.

Why: a user who runs overprovisioning sizes each node group's headroom on its own. One
count for every type (`static:N`) overpays wherever a type has little demand, so beating
it proves little. This module finds, for each cut a judged run reached, the cheapest
count per type that reaches the same cut, and runs it.

How: the search reads the runs of `static:N` for the counts N the comparison ran (and
reactive as N = 0). Pods are pinned to one type, and cluster-autoscaler scales each node
group for its own pods, so a run's pending GPU-minutes and GPU-hours split by type
(`metrics.per_type`). A vector's totals are then close to the sums of each type's
figures at its own count. They are not exact: CA's new-pod rule and its scale-down
cooldown look at the whole cluster. The cheapest vector whose summed pending GPU-minutes
reach the target is found by exhaustive search up to `EXHAUSTIVE` combinations, else
greedily by cut per extra GPU-hour. Each vector is then run for real as a
`static:TYPE=N,...` policy, so the verdict quotes a measured run, not a sum.

`best_within` is the same search the other way round: the least pending within a
budget of GPU-hours (the gang replay's strongest peer at the whole system's cost,
`overprovisioner.sim.system.peers`).

Must not: print, read files.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from overprovisioner.policy_names import parse_policy_name, per_type_name
from overprovisioner.sim.metrics import Metrics, per_type
from overprovisioner.sim.result import RunResult

EXHAUSTIVE = 20_000
"""Most combinations searched one by one; above it, the greedy search."""

Curves = dict[int, tuple[np.ndarray, np.ndarray]]
"""count N -> (pending GPU-minutes, GPU-hours) per type of the run keeping N per type."""


def uniform_curves(results: Sequence[tuple[RunResult, Metrics]]) -> Curves:
    """The per-type figures of reactive (N = 0) and each `static:N` run in `results`."""
    curves: Curves = {}
    for result, metrics in results:
        spec = parse_policy_name(metrics.policy)
        if spec.kind == "reactive":
            curves[0] = per_type(result)
        elif spec.kind == "static":
            curves[spec.count] = per_type(result)
    return curves


def cheapest_vector(curves: Curves, target_pending: float) -> tuple[int, ...] | None:
    """Per type, the count (one of the curves' N) whose summed GPU-hours are least among
    the vectors whose summed pending GPU-minutes are at most `target_pending`; None when
    even the largest count everywhere does not reach it."""
    levels = sorted(curves)
    if not levels:
        return None
    pending = np.array([curves[n][0] for n in levels])  # (levels, types)
    hours = np.array([curves[n][1] for n in levels])
    types = pending.shape[1]
    if pending.min(axis=0).sum() > target_pending + 1e-9:
        return None
    if len(levels) ** types <= EXHAUSTIVE:
        # Every combination at once: rows = combinations, columns = types.
        choices = np.array(list(itertools.product(range(len(levels)), repeat=types)))
        columns = np.arange(types)
        reaching = pending[choices, columns].sum(axis=1) <= target_pending + 1e-9
        costs = np.where(reaching, hours[choices, columns].sum(axis=1), np.inf)
        return tuple(levels[i] for i in choices[int(np.argmin(costs))])
    return _greedy(levels, pending, hours, target_pending)


def best_within(curves: Curves, budget_hours: float) -> tuple[int, ...] | None:
    """Per type, the count (one of the curves' N) whose summed pending GPU-minutes are
    least among the vectors whose summed GPU-hours are at most `budget_hours` (the
    strongest headroom at a cost); None when even 0 everywhere costs more. The search is
    `cheapest_vector`'s turned round, exhaustive up to `EXHAUSTIVE` combinations, else
    greedy by cut per extra GPU-hour while the budget lasts."""
    levels = sorted(curves)
    if not levels:
        return None
    pending = np.array([curves[n][0] for n in levels])
    hours = np.array([curves[n][1] for n in levels])
    types = pending.shape[1]
    if hours.min(axis=0).sum() > budget_hours + 1e-9:
        return None
    if len(levels) ** types <= EXHAUSTIVE:
        choices = np.array(list(itertools.product(range(len(levels)), repeat=types)))
        columns = np.arange(types)
        within = hours[choices, columns].sum(axis=1) <= budget_hours + 1e-9
        waits = np.where(within, pending[choices, columns].sum(axis=1), np.inf)
        return tuple(levels[i] for i in choices[int(np.argmin(waits))])
    choice = [int(np.argmin(hours[:, t])) for t in range(types)]
    while True:
        spent = hours[choice, np.arange(types)].sum()
        best: tuple[float, int, int] | None = None
        for t, i in enumerate(choice):
            for j in range(len(levels)):
                cut = pending[i, t] - pending[j, t]
                extra = hours[j, t] - hours[i, t]
                if cut > 0 and spent + extra <= budget_hours + 1e-9:
                    rate = cut / max(extra, 1e-9)
                    if best is None or rate > best[0]:
                        best = (rate, t, j)
        if best is None:
            return tuple(levels[i] for i in choice)
        choice[best[1]] = best[2]


def _greedy(levels: list[int], pending: np.ndarray, hours: np.ndarray,
            target: float) -> tuple[int, ...]:
    """From 0 everywhere, raise the type whose next count cuts most pending GPU-minutes
    per extra GPU-hour until the target is reached."""
    choice = [0] * pending.shape[1]
    while pending[choice, np.arange(len(choice))].sum() > target + 1e-9:
        best: tuple[float, int, int] | None = None
        for t, i in enumerate(choice):
            for j in range(i + 1, len(levels)):
                cut = pending[i, t] - pending[j, t]
                cost = max(hours[j, t] - hours[i, t], 1e-9)
                if cut > 0 and (best is None or cut / cost > best[0]):
                    best = (cut / cost, t, j)
        if best is None:
            break
        choice[best[1]] = best[2]
    return tuple(levels[i] for i in choice)


def hindsight_policies(results: Sequence[tuple[RunResult, Metrics]],
                       type_names: Sequence[str]) -> list[str]:
    """`static:TYPE=N,...` names of the cheapest vectors reaching each predictive run's
    cut (deduplicated, in the order of the runs, leaving out those `results` holds
    already; none without static runs to search)."""
    curves = uniform_curves(results)
    if len(curves) < 2:
        return []
    ran = {metrics.policy for _, metrics in results}
    names: list[str] = []
    for _, metrics in results:
        if parse_policy_name(metrics.policy).kind != "predictive":
            continue
        vector = cheapest_vector(curves, metrics.pending_gpu_minutes)
        if vector is None:
            continue
        if len(set(vector)) == 1:
            continue  # one count for every type: that static:N run is there already
        name = per_type_name(dict(zip(type_names, vector, strict=True)))
        if name not in names and name not in ran:
            names.append(name)
    return names


def add_hindsight_runs(
    results: list[tuple[RunResult, Metrics]],
    run_policies: Callable[[Sequence[str]], list[tuple[RunResult, Metrics]]],
    type_names: Sequence[str],
) -> list[tuple[RunResult, Metrics]]:
    """`results` plus a run of each `hindsight_policies` vector (`run_policies(names)`,
    all at once: they are independent of each other)."""
    return results + run_policies(hindsight_policies(results, type_names))
