"""The whole-system replay: headstart's whole system, each part switched off, and the
Kueue-style FIFO peer under every headroom tried, on one workload, and the verdict.

Decides the order of the runs (`arms.WHOLE`, `arms.PARTS`, the peer grid, then the
per-type counts chosen in hindsight against headstart's configuration:
`peers.hindsight_policies`), the jobs every figure is taken over (those every arm
finished: `gangs.table.summaries`), and the report: the rows, what each part
contributes (the part's arm less the whole system), headstart's configuration (the
whole system, or a part-off one doing better: `verdict.best_configuration`, chosen
once on headstart's arms for the hindsight search and again on the final rows), the
strongest peer and the cheapest peer reaching its queueing (`peers.choose`) and the
verdict (`verdict.verdict`).

Must not: read files, print (progress goes to the `progress` callback).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bucketing.catalog import Catalog
from locality.admission.config import AdmissionConfig
from overprovisioner.sim.gangs.engine import GangResult, GangSimConfig
from overprovisioner.sim.gangs.jobs import ElasticRule, GangJob
from overprovisioner.sim.gangs.table import summaries
from overprovisioner.sim.system.arms import PARTS, WHOLE, SystemArm, peer_arm, run_arm
from overprovisioner.sim.system.peers import choose, grid, hindsight_policies
from overprovisioner.sim.system.verdict import TIE, Verdict, best_configuration, verdict
from overprovisioner.sim.workload import Workload

CONTRIBUTION_KEYS = ("queue_mean_min", "queue_p95_min", "jct_mean_h", "jct_p95_h",
                     "node_gpu_hours", "dollars")


@dataclass(frozen=True)
class SystemReport:
    """rows: one summary per arm (whole system, parts, peers), each with `role`
    ("headstart", "part", "peer") and `part` (the part it switches off, or None);
    contributions: per part, what switching it off changes (the part's arm less the
    whole system, per `CONTRIBUTION_KEYS`); strongest, reaching: the peer rows
    `peers.choose` picked (None: none qualified); hindsight: the per-type peers added."""

    rows: tuple[dict, ...]
    chosen: dict
    contributions: dict[str, dict[str, float | None]]
    strongest: dict | None
    reaching: dict | None
    hindsight: tuple[str, ...]
    verdict: Verdict
    tie: float


def run_system(workload: Workload, jobs: Sequence[GangJob], catalog: Catalog,
               rule: ElasticRule, config: GangSimConfig,
               admission: AdmissionConfig | None = None,
               progress: Callable[[str], None] | None = None,
               peers: Sequence[str] | None = None, parts: Sequence[SystemArm] = PARTS,
               tie: float = TIE) -> SystemReport:
    """Every arm on the same jobs and cluster; `peers`: the peer's headroom policies
    (default `peers.grid`), to which the hindsight ones are added; `parts`: the parts
    switched off (default all)."""
    def one(arm: SystemArm) -> GangResult:
        result = run_arm(arm, workload, jobs, catalog, rule, config, admission)
        if progress:
            progress(arm.name)
        return result

    whole = one(WHOLE)
    part_results = [one(arm) for arm in parts]
    own = [whole, *part_results]
    first = summaries(own)
    chosen = own[first.index(best_configuration(first[0], first[1:], tie))]
    policies = list(peers if peers is not None else grid(workload))
    peer_runs = [(policy, one(peer_arm(policy))) for policy in policies]
    added = hindsight_policies(peer_runs, chosen, [t.name for t in workload.types])
    peer_runs += [(policy, one(peer_arm(policy))) for policy in added]
    rows = summaries([*own, *(result for _, result in peer_runs)])
    rows[0]["role"], rows[0]["part"] = "headstart", None
    for row, arm in zip(rows[1:len(own)], parts, strict=True):
        row["role"], row["part"] = "part", arm.part
    for row in rows[len(own):]:
        row["role"], row["part"] = "peer", None
    best = best_configuration(rows[0], rows[1:len(own)], tie)
    strongest, reaching = choose(best, rows[len(own):], tie)
    contributions = {row["part"]: {key: _less(row[key], rows[0][key])
                                   for key in CONTRIBUTION_KEYS}
                     for row in rows[1:len(own)]}
    return SystemReport(tuple(rows), best, contributions, strongest, reaching, tuple(added),
                        verdict(best, strongest, reaching, tie, rows[0]), tie)


def _less(value: float | None, base: float | None) -> float | None:
    if value is None or base is None:
        return None
    return round(value - base, 3) + 0.0
