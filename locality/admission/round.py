"""One admission round from what was observed: the same function for the extender's
admitter and the simulator (`overprovisioner.sim.gangs`).

Decides nothing itself: it joins the pure parts in the order the admitter runs them:
`gather` (gated jobs, reservations), the node groups the autoscaler can grow
(configured, from CA's status, from Karpenter's NodePools), the elastic gangs a resize may
change, each topology level's room (`snapshot`), then `assign.plan`.

Must not: read the clock (`now` is passed), log, talk to the API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bucketing.resources import Resources
from kube.autoscaler_status import GroupSize
from locality.admission.assign import plan
from locality.admission.config import AdmissionConfig
from locality.admission.gang_preemption import candidates, leaving
from locality.admission.gather import JobMemo, gather
from locality.admission.model import GatedJob, Plan
from locality.admission.node_groups import resolve
from locality.admission.nodepools import nodepool_groups
from locality.admission.record import GangRecord
from locality.admission.resize import elastic_gangs, shrinking
from locality.admission.snapshot import CLUSTER_LEVEL, LevelRoom, level_room
from locality.admission.trials import TrialMemo
from locality.config import PLACEMENT_GROUP_LEVEL, LocalityConfig
from locality.model import JobKey, Locality, NodeState, Pod
from locality.suspension import JobName, JobSuspension
from locality.worker_plans import WorkerPlan


@dataclass(frozen=True, slots=True)
class Inputs:
    """A round's view of the cluster (the extender takes it from its cache on the event
    loop: `extender.admission.admitter.Admitter.snapshot`)."""

    gated: list[Pod]
    records: dict[JobKey, GangRecord]
    pods_by_job: dict[JobKey, tuple[Pod, ...]]
    """Every pod, in any phase, of each job with a gated pod or a record."""
    nodes: list[NodeState]
    group_sizes: Mapping[str, GroupSize] | None
    nodepools: tuple[Mapping[str, Any], ...] = ()
    status_unread: str | None = None
    """Why CA's status ConfigMap, which exists, gave no node group sizes (None: it did,
    or there is none)."""
    worker_plans: Mapping[str, WorkerPlan] = field(default_factory=dict)
    """The overprovisioner's worker plans of the last read, by key (stale ones too: the
    round reads them at its `now`)."""
    batch_jobs: Mapping[JobName, JobSuspension] = field(default_factory=dict)
    """Every batch/v1 Job seen, as headstart may suspend it (`locality.suspension`)."""
    undisruptable: frozenset[JobKey] = frozenset()
    """Gangs whose eviction PodDisruptionBudgets refused lately: no preemption victims."""

    def pods_of_job(self, job: JobKey) -> tuple[Pod, ...]:
        """The job's pods as observed."""
        return self.pods_by_job.get(job, ())


@dataclass
class RoundMemo:
    """What one caller's rounds reuse from the round before: the packing trials
    (`trials.TrialMemo`) and the jobs gathered from unchanged pods (`gather.JobMemo`).
    Answers are recomputed for anything that changed; never shared between callers
    with different configurations."""

    trials: TrialMemo = field(default_factory=TrialMemo)
    jobs: JobMemo = field(default_factory=JobMemo)


def wider_levels(locality: LocalityConfig) -> dict[str, tuple[str, ...]]:
    """Per topology level, the wider ones, nearest first (a `preferred` job's widening)."""
    names = [level.name for level in locality.topology_levels]  # widest first
    return {name: tuple(reversed(names[:index])) for index, name in enumerate(names)}


def plan_round(inputs: Inputs, now: float, locality: LocalityConfig, config: AdmissionConfig,
               shapes: Mapping[str, Resources] | None = None,
               wider: Mapping[str, Sequence[str]] | None = None,
               memo: RoundMemo | None = None,
               ) -> tuple[Plan, dict[JobKey, GatedJob], dict[str, LevelRoom]]:
    """The round's decisions from `inputs` alone: (plan, the gated jobs by key, the rooms
    per level). shapes: one node's allocatable per instance type, for node groups of a
    type no node has yet. wider: `wider_levels(locality)` (computed when not given).
    memo: what the caller's earlier rounds worked out (`RoundMemo`), so a round redoes
    only what changed since; the same memo must not serve two rounds at once."""
    memo = memo if memo is not None else RoundMemo()
    wider = wider if wider is not None else wider_levels(locality)
    pods_of_job = inputs.pods_of_job
    gathered = gather(inputs.gated, inputs.records, pods_of_job, locality, config, memo.jobs)
    discovered = nodepool_groups(inputs.nodepools, (state.node for state in inputs.nodes),
                                 locality, shapes)
    groups = resolve(config.node_groups, inputs.group_sizes, discovered.groups)
    unknown = tuple(f"cluster-autoscaler node group {name}" for name in groups.unaccounted)
    unknown += discovered.unknown
    if inputs.status_unread is not None and not config.node_groups:
        unknown += (f"cluster-autoscaler's node groups ({inputs.status_unread})",)
    records = list(inputs.records.values())
    gangs = elastic_gangs(records, pods_of_job, locality, config.elastic.weight,
                          inputs.worker_plans, now) if config.elastic.enabled else {}
    levels = {job.level for job in gathered.jobs} | {PLACEMENT_GROUP_LEVEL, CLUSTER_LEVEL}
    levels |= {domain.level for domain in gangs}
    levels |= {level for job in gathered.jobs
               if job.policy.placement_group is Locality.PREFERRED
               for level in wider.get(job.level, ())}
    rooms = {level: level_room(inputs.nodes, level, locality, groups.groups,
                               inputs.group_sizes, shapes)
             for level in levels}
    planned = plan(gathered.jobs, rooms, gathered.reservations, now, config,
                   gathered.releases, candidates(records, pods_of_job, inputs.undisruptable),
                   leaving(records, pods_of_job), unknown, wider, gangs,
                   shrinking(records, pods_of_job),
                   inputs.worker_plans if config.elastic.enabled else None, memo.trials)
    return planned, {job.key: job for job in gathered.jobs}, rooms
