"""The arms of the whole-system replay: headstart's whole system, each of its parts
switched off in turn, and the Kueue-style FIFO peer under a headroom policy.

Decides what each arm runs, on the gang engine (`overprovisioner.sim.gangs.gang_engine`) with
the admitter's own round, the same jobs, cluster and seed:
- `headstart`: elastic sizing (the admitter's `admission.elastic`: KOD2's admission at a
  smaller size, scale-in and scale-out; a job's rate at each size linear or KALE's
  model, `gangs.jobs.speed`), the overprovisioner service's predictive tick
  (`overprovisioner.sim.predictive`, built by `sim.build.make_policy` as `headstart
  simulate` builds it) keeping placeholders for its forecast plus its known demand: the
  trace's known-ahead work, the pods the admitter's gate holds and the announced growth
  of elastic gangs;
- each part off (`PARTS`): the forecast (the plan for known demand alone), known-ahead
  work (every known-demand source off in the service's config: the trace's
  announcements and the gated pods), elastic sizing (every job at its trace size, and so
  no growth to announce), announced growth (the growth is not told), and every
  placeholder at once (the admitter with elastic sizing alone, no overprovisioner);
- a peer (`peer_arm`): what a user runs today, Kueue-style FIFO gang admission (the
  admitter's round with elastic sizing off: whole jobs, priority then age, the queue's
  head holding its room as Kueue's StrictFIFO does) with a headroom policy of `headstart
  simulate` (static, proportional, per-type counts), or none (`reactive`).

The admitter's domain ranking (fewest new nodes, then best fit) runs in every arm: the
peer's gangs need a domain too, and no other admitter is replayed, so it is not a part
switched off here.

Must not: read files, print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from bucketing.catalog import Catalog
from locality.admission.config import AdmissionConfig
from locality.admission.weight import ElasticConfig
from overprovisioner.sim.build import make_policy
from overprovisioner.sim.gangs.gang_engine import GangResult, GangRun, GangSimConfig
from overprovisioner.sim.gangs.jobs import ElasticRule, GangJob
from overprovisioner.sim.workload import Workload

WHOLE_NAME = "headstart"
FIFO = "FIFO"


@dataclass(frozen=True)
class SystemArm:
    """One arm. policy: a `headstart simulate` policy name, None for no placeholders;
    forecasting / known: predictive's forecast and known-demand sources; part: the part
    of headstart this arm switches off (None: the whole system, or a peer)."""

    name: str
    elastic: bool
    announce: bool
    policy: str | None
    forecasting: bool = True
    known: bool = True
    part: str | None = None

    @property
    def is_peer(self) -> bool:
        return self.name.startswith(FIFO)


WHOLE = SystemArm(WHOLE_NAME, True, True, "predictive")
PARTS = (
    SystemArm("without forecast", True, True, "predictive", forecasting=False,
              part="forecast placeholders"),
    SystemArm("without known-ahead", True, True, "predictive", known=False,
              part="known-ahead work"),
    SystemArm("without elastic", False, False, "predictive", part="elastic sizing"),
    SystemArm("without announced growth", True, False, "predictive", part="announced growth"),
    SystemArm("without placeholders", True, False, None,
              part="every placeholder (the overprovisioner)"),
)


def peer_arm(policy: str) -> SystemArm:
    """Kueue-style FIFO with `policy`'s headroom (`reactive`: none)."""
    return SystemArm(f"{FIFO} + {policy}", False, False,
                     None if policy == "reactive" else policy)


def without_known(config: GangSimConfig) -> GangSimConfig:
    """The config with every known-demand source of the service switched off."""
    service = config.sim.service
    sources = service.known_demand
    off = replace(sources, **{f.name: False for f in fields(sources)
                              if isinstance(getattr(sources, f.name), bool)})
    return replace(config, sim=replace(config.sim, service=replace(service, known_demand=off)))


def run_arm(arm: SystemArm, workload: Workload, jobs: Sequence[GangJob], catalog: Catalog,
            rule: ElasticRule, config: GangSimConfig,
            admission: AdmissionConfig | None = None) -> GangResult:
    """One arm on the gang engine; `admission`: the extender's settings (its defaults
    when None), elastic sizing switched per arm."""
    admission = admission or AdmissionConfig()
    settings = replace(admission, elastic=replace(admission.elastic, enabled=arm.elastic)
                       if admission.elastic else ElasticConfig(enabled=arm.elastic))
    if not arm.known:
        config = without_known(config)
    policy = None
    if arm.policy is not None:
        groups = {b: config.groups for b in range(len(workload.types))}
        policy = make_policy(arm.policy, workload, catalog, config.sim, groups,
                             forecasting=arm.forecasting)
    return GangRun(workload, jobs, workload.types, config, settings, rule.scaling,
                   arm.elastic, arm.announce, arm.name, policy).execute()
