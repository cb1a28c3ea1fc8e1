"""The whole-system replay: headstart's whole system, each part switched off, and the
Kueue-style FIFO peer under every headroom tried, on one workload, and the verdict.

Decides the runs and what is read from them:
1. at the first seed, the whole system and each part switched off (`arms.WHOLE`,
   `arms.PARTS`); the whole system again at every other seed, so its spread across
   node start-up draws (`repeats.over_seeds`) sets the tie band;
2. headstart's configuration (`verdict.best_configuration`: the whole system, or a
   part-off one doing better beyond that band), repeated at the other seeds too;
3. at the first seed, the peer grid (`peers.grid`) and the per-type counts chosen in
   hindsight against headstart's configuration (`peers.hindsight_policies`); the
   strongest peer and the cheapest reaching its queueing (`peers.choose`, against the
   configuration's medians), each repeated at the other seeds;
4. the report: the first seed's rows, every arm's figures over the jobs every arm
   finished (`gangs.table.summaries`); the repeated arms' medians and spreads; what
   each part contributes (its arm less the whole system, at the first seed, and
   whether that is within the tie band); the verdict on the medians
   (`verdict.verdict`).

The runs that do not wait on another's result go out together, in three batches (1 with
3's peer grid, 2 with the hindsight peers, 3's repeats), to `common.parallel.Workers`.

Must not: read files, print (progress goes to the `progress` callback).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bucketing.catalog import Catalog
from common.parallel import Workers
from locality.admission.config import AdmissionConfig
from overprovisioner.sim.gangs.gang_engine import GangResult, GangSimConfig
from overprovisioner.sim.gangs.jobs import ElasticRule, GangJob
from overprovisioner.sim.gangs.table import summaries
from overprovisioner.sim.system.arms import PARTS, WHOLE, SystemArm, peer_arm, run_arm
from overprovisioner.sim.system.peers import choose, grid, hindsight_policies
from overprovisioner.sim.system.repeats import FIGURES, over_seeds
from overprovisioner.sim.system.verdict import (
    TIE,
    Verdict,
    band,
    best_configuration,
    verdict,
)
from overprovisioner.sim.workload import Workload


@dataclass(frozen=True)
class SystemReport:
    """rows: one summary per arm at the first seed (whole system, parts, peers), each
    with `role` ("headstart", "part", "peer") and `part` (the part it switches off, or
    None); repeated: the median rows over `seeds` of the whole system, headstart's
    configuration (`chosen`), the strongest peer and the cheapest peer reaching its
    queueing (each once); contributions: per part, what switching it off changes (its
    row less the whole system's, per `repeats.FIGURES`) and `within_noise`, per figure,
    whether that is within the whole system's tie band; strongest, reaching: their
    median rows (None: no peer qualified); hindsight: the per-type peers added."""

    rows: tuple[dict, ...]
    repeated: tuple[dict, ...]
    chosen: dict
    contributions: dict[str, dict]
    strongest: dict | None
    reaching: dict | None
    hindsight: tuple[str, ...]
    verdict: Verdict
    tie: float
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class ArmSeed:
    """One replay: an arm at a seed, everything it needs sent to a worker process."""

    arm: SystemArm
    seed: int
    workload: Workload
    jobs: Sequence[GangJob]
    catalog: Catalog
    rule: ElasticRule
    config: GangSimConfig
    admission: AdmissionConfig | None


def run_arm_seed(task: ArmSeed) -> GangResult:
    seeded = replace(task.config, sim=replace(task.config.sim, seed=task.seed))
    return run_arm(task.arm, task.workload, task.jobs, task.catalog, task.rule, seeded,
                   task.admission)


def run_system(workload: Workload, jobs: Sequence[GangJob], catalog: Catalog,
               rule: ElasticRule, config: GangSimConfig,
               admission: AdmissionConfig | None = None,
               progress: Callable[[str], None] | None = None,
               peers: Sequence[str] | None = None, parts: Sequence[SystemArm] = PARTS,
               tie: float = TIE, repeats: int = 3, workers: Workers | None = None
               ) -> SystemReport:
    """Every arm on the same jobs and cluster (module docstring); `peers`: the peer's
    headroom policies (default `peers.grid`), to which the hindsight ones are added;
    `parts`: the parts switched off (default all); `repeats`: the seeds, from
    `config.sim.seed` on (1: no repeats, the tie is `tie`); `workers`: where the runs of
    one batch go (default: one after another here), the report the same either way."""
    seeds = tuple(config.sim.seed + i for i in range(max(1, repeats)))
    done: dict[tuple[str, int], GangResult] = {}

    def run(wanted: Sequence[tuple[SystemArm, int]]) -> None:
        """Every (arm, seed) not run yet, as one batch over `workers` (independent runs)."""
        todo = [(arm, seed) for arm, seed in dict.fromkeys(wanted)
                if (arm.name, seed) not in done]
        tasks = [ArmSeed(arm, seed, workload, jobs, catalog, rule, config, admission)
                 for arm, seed in todo]
        labels = [arm.name if seed == seeds[0] else f"{arm.name} (seed {seed})"
                  for arm, seed in todo]
        results = (workers or Workers(1)).map(run_arm_seed, tasks, labels, progress)
        done.update({(arm.name, seed): result
                     for (arm, seed), result in zip(todo, results, strict=True)})

    def one(arm: SystemArm, seed: int = seeds[0]) -> GangResult:
        run([(arm, seed)])
        return done[(arm.name, seed)]

    def repeated(arm: SystemArm, first: GangResult) -> dict:
        run([(arm, seed) for seed in seeds[1:]])
        rows = [summaries([first])[0]] + [summaries([done[(arm.name, seed)]])[0]
                                          for seed in seeds[1:]]
        return over_seeds(rows, seeds)

    policies = list(peers if peers is not None else grid(workload))
    # What does not depend on another run's result goes in the first batch.
    run([(WHOLE, seeds[0]), *((arm, seeds[0]) for arm in parts),
         *((WHOLE, seed) for seed in seeds[1:]),
         *((peer_arm(policy), seeds[0]) for policy in policies)])
    own = [one(WHOLE), *(one(arm) for arm in parts)]
    whole = repeated(WHOLE, own[0])
    first = summaries(own)
    noisy = {**first[0], "spread": whole["spread"]}
    chosen_row = best_configuration(noisy, first[1:], tie)
    index = 0 if chosen_row is noisy else first.index(chosen_row)
    arms = (WHOLE, *parts)
    chosen = whole if index == 0 else repeated(arms[index], own[index])

    peer_runs = [(policy, one(peer_arm(policy))) for policy in policies]
    added = hindsight_policies(peer_runs, own[index], [t.name for t in workload.types])
    run([(peer_arm(policy), seeds[0]) for policy in added])
    peer_runs += [(policy, one(peer_arm(policy))) for policy in added]
    rows = summaries([*own, *(result for _, result in peer_runs)])
    for row, arm in zip(rows, arms, strict=False):
        row["role"], row["part"] = ("headstart" if arm is WHOLE else "part"), arm.part
    for row in rows[len(own):]:
        row["role"], row["part"] = "peer", None
    results = {row["arm"]: result for row, result in
               zip(rows[len(own):], (result for _, result in peer_runs), strict=True)}
    strongest, reaching = choose(chosen, rows[len(own):], tie)
    medians = {}
    run([(peer_arm(row["arm"].split(" + ", 1)[1]), seed) for row in (strongest, reaching)
         if row is not None for seed in seeds[1:]])
    for row in (strongest, reaching):
        if row is not None and row["arm"] not in medians:
            policy = row["arm"].split(" + ", 1)[1]
            medians[row["arm"]] = repeated(peer_arm(policy), results[row["arm"]])
    strongest = medians[strongest["arm"]] if strongest else None
    reaching = medians[reaching["arm"]] if reaching else None
    contributions = {row["part"]: _contribution(row, rows[0], whole, tie)
                     for row in rows[1:len(own)]}
    kept = [whole] + ([chosen] if chosen is not whole else []) + list(medians.values())
    return SystemReport(tuple(rows), tuple(kept), chosen, contributions, strongest,
                        reaching, tuple(added), verdict(chosen, strongest, reaching, tie,
                                                        whole), tie, seeds)


def _contribution(row: dict, base: dict, noisy: dict, tie: float) -> dict:
    """The part's row less the whole system's, per figure, and per figure whether that
    is within the whole system's tie band (`noisy`: its row with its spread)."""
    change: dict = {}
    quiet = {}
    for key in FIGURES:
        if row[key] is None or base[key] is None:
            change[key], quiet[key] = None, None
            continue
        change[key] = round(row[key] - base[key], 3) + 0.0
        quiet[key] = abs(change[key]) <= band(noisy, noisy, key, tie) * abs(base[key]) + 1e-9
    change["within_noise"] = quiet
    return change
