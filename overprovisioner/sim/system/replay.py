"""The whole-system replay: headstart's whole system, each part switched off, and the
Kueue-style FIFO peer under every headroom tried, on one workload, and the verdict.

Decides the order of the runs (`arms.WHOLE`, `arms.PARTS`, the peer grid, then the
per-type counts chosen in hindsight against the whole system's figures:
`peers.hindsight_policies`), the jobs every figure is taken over (those every arm
finished: `gangs.table.summaries`), and the report: the rows, what each part
contributes (the part's arm less the whole system), the strongest peer, the cheapest
peer reaching the whole system's queueing and the verdict (`verdict.verdict`).

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
from overprovisioner.sim.system.verdict import TIE, Verdict, verdict
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
    policies = list(peers if peers is not None else grid(workload))
    peer_runs = [(policy, one(peer_arm(policy))) for policy in policies]
    added = hindsight_policies(peer_runs, whole, [t.name for t in workload.types])
    peer_runs += [(policy, one(peer_arm(policy))) for policy in added]
    rows = summaries([whole, *part_results, *(result for _, result in peer_runs)])
    rows[0]["role"], rows[0]["part"] = "headstart", None
    for row, arm in zip(rows[1:1 + len(parts)], parts, strict=True):
        row["role"], row["part"] = "part", arm.part
    for row in rows[1 + len(parts):]:
        row["role"], row["part"] = "peer", None
    peer_rows = rows[1 + len(parts):]
    strongest, reaching = choose(rows[0], peer_rows, tie)
    contributions = {row["part"]: {key: _less(row[key], rows[0][key])
                                   for key in CONTRIBUTION_KEYS}
                     for row in rows[1:1 + len(parts)]}
    return SystemReport(tuple(rows), contributions, strongest, reaching, tuple(added),
                        verdict(rows[0], strongest, reaching, tie), tie)


def _less(value: float | None, base: float | None) -> float | None:
    if value is None or base is None:
        return None
    return round(value - base, 3) + 0.0
