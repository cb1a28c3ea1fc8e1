"""The strongest peer of the whole-system replay: Kueue-style FIFO gang admission with the
best headroom a user could have configured, chosen in hindsight on the replayed trace.

Decides:
- the headrooms the peer runs (`grid`): none, `static:1/2/4/8` (that many placeholder
  nodes per instance type) and the three `proportional:R` ratios `headstart simulate`
  sizes to the trace (`compare.proportional_policies`);
- the per-type counts added in hindsight, as `sim.hindsight` adds them for pods: per
  type, the queueing minutes of the jobs whose largest GPU request is of that type and
  the node GPU-hours of that type, read from the `static:N` runs and the run without
  headroom (gangs are pinned to a type and cluster-autoscaler scales each node group for
  its own pods, so the totals of a vector are close to the sums, not exact: the
  admitter's round and CA's cooldown see the whole cluster); the cheapest vector whose
  summed queueing reaches the whole system's (`hindsight.cheapest_vector`) and the one
  with the least queueing within the whole system's node GPU-hours
  (`hindsight.best_within`), each then run for real as `static:TYPE=N,...`;
- from the measured runs (`choose`): the strongest peer, the least mean queueing among
  the peers whose node GPU-hours are within the tie band of headstart's
  configuration's (the whole system, or a part-off one doing better:
  `verdict.best_configuration`), and the cheapest peer reaching its mean queueing
  (within the tie band).

A job that never started adds no queueing minutes to its type's sum.

Must not: run replays (the caller does), read files, print.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from overprovisioner.policy_names import parse_policy_name, per_type_name
from overprovisioner.sim.compare import proportional_policies
from overprovisioner.sim.gangs.gang_engine import GangResult
from overprovisioner.sim.hindsight import Curves, best_within, cheapest_vector
from overprovisioner.sim.system.verdict import band
from overprovisioner.sim.workload import Workload

STATIC_COUNTS = (1, 2, 4, 8)


def grid(workload: Workload) -> tuple[str, ...]:
    """The headroom policies the peer runs before the hindsight ones."""
    return ("reactive", *(f"static:{n}" for n in STATIC_COUNTS),
            *proportional_policies(workload))


def per_type(result: GangResult, types: int) -> tuple[np.ndarray, np.ndarray]:
    """(queueing minutes, node GPU-hours) per type of one run."""
    queue = (result.first_running - result.submit) / 60
    minutes = np.array([float(np.nansum(queue[result.job_type == b])) for b in range(types)])
    return minutes, np.array(result.node_gpu_s_by_type) / 3600


def curves(runs: Sequence[tuple[str, GangResult]], types: int) -> Curves:
    """The per-type figures of the peer runs without headroom (N = 0) and `static:N`."""
    out: Curves = {}
    for policy, result in runs:
        spec = parse_policy_name(policy)
        if spec.kind == "reactive":
            out[0] = per_type(result, types)
        elif spec.kind == "static":  # one count for every type (per-type is its own kind)
            out[spec.count] = per_type(result, types)
    return out


def hindsight_policies(runs: Sequence[tuple[str, GangResult]], whole: GangResult,
                       type_names: Sequence[str]) -> list[str]:
    """`static:TYPE=N,...` names of the cheapest vector reaching the queueing of `whole`
    (headstart's configuration) and of the least-queueing vector within its node
    GPU-hours (without those `runs` holds, or that one count for every type already
    ran)."""
    found = curves(runs, len(type_names))
    if len(found) < 2:
        return []
    target = float(np.nansum((whole.first_running - whole.submit) / 60))
    budget = whole.node_gpu_s / 3600
    ran = {policy for policy, _ in runs}
    names: list[str] = []
    for vector in (cheapest_vector(found, target), best_within(found, budget)):
        if vector is None or len(set(vector)) == 1:
            continue
        name = per_type_name(dict(zip(type_names, vector, strict=True)))
        if name not in names and name not in ran:
            names.append(name)
    return names


def within(value: float | None, limit: float | None, tie: float) -> bool:
    """`value` at most `limit`, or above it by no more than the tie margin."""
    return value is not None and limit is not None and value <= limit * (1 + tie) + 1e-9


def choose(best: dict, peers: Sequence[dict], tie: float) -> tuple[dict | None, dict | None]:
    """(strongest, cheapest reaching) among the peer rows (`gangs.table.summarize`):
    the least mean queueing within the node GPU-hours of `best` (headstart's
    configuration), and the least node GPU-hours at its mean queueing or less, each
    within the tie band (`verdict.band`: 2%, or `best`'s spread across seeds where
    larger); None where no peer qualifies. Ties go to the lower other figure, then the
    name."""
    def fits(row: dict, key: str) -> bool:
        return within(row[key], best[key], band(row, best, key, tie))

    affordable = [row for row in peers
                  if fits(row, "node_gpu_hours") and row["queue_mean_min"] is not None]
    strongest = min(affordable, key=lambda r: (r["queue_mean_min"], r["node_gpu_hours"],
                                               r["arm"]), default=None)
    reaching = [row for row in peers if fits(row, "queue_mean_min")]
    cheapest = min(reaching, key=lambda r: (r["node_gpu_hours"], r["queue_mean_min"],
                                            r["arm"]), default=None)
    return strongest, cheapest
