"""A placeholder policy over a gang replay: what it sees of the gang cluster at its tick,
and the placeholders it keeps.

Decides what a policy of `headstart simulate` (`overprovisioner.sim.build.make_policy`: a
peer's headroom, the service's predictive tick) reads when it runs over a gang replay,
as the service's recorder and known-demand sources would read that cluster:
- demand (`GangDemand`, told of every pod change by `PodTable.listener`): a pod held by
  the admitter's gate is not demand (cluster-autoscaler ignores gated pods,
  `predictor.history.snapshot`) but known demand due now (`predictor.known.gated`) in
  its type's own column; an ungated pod not bound is pending, in its type's column; a
  bound pod runs in its type@group column; placeholders are neither. The history the
  predictive policy reads (`sim.recording.Recording`) is written from these at each
  tick, as the service's recorder writes its store;
- the tick's view (`PolicyHeadroom.view`): in use and pending per type (embedded), whole
  empty ready nodes and placeholders per (type, group), ready nodes per type, and the
  known demand the cluster's own objects give: the gated pods (when the service's
  `gated` source is on) and the planned growth of elastic gangs in their placement
  group (the service adds worker plans' growth to its known demand,
  `known_plan.with_growth`; `growth_nodes` embeds it);
- the placeholders kept per (type, group): the plan's count for each group; none once
  the trace's window is over (nothing arrives after it that a policy could be right
  about, and every arm is charged alike for the tail its last jobs take to finish).

Must not: touch the cluster (the engine keeps the counts), read files, log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from bucketing.catalog import InstanceType
from kube.labels import JOB_LABEL
from locality.model import Pod
from overprovisioner.planner.known_plan import growth_nodes
from overprovisioner.planner.worker_plan import Growth
from overprovisioner.sim.policies import Headroom, Policy, TickView
from overprovisioner.sim.predictive import Predictive
from overprovisioner.sim.recording import Recording, add_request, embedded
from overprovisioner.sim.workload import bucket_vectors

UNITS = np.array([1000.0, 1000.0, 1024.0**3])  # (GPUs, CPUs, GiB) -> request units
GATED = "@gated"  # the column of a pod the admitter's gate holds
PENDING = ""  # the column of an ungated pod not bound (a bound one: its group's name)


class GangDemand:
    """The demand of a gang replay's pods per type, kept as they change (`change`)."""

    def __init__(self, types: Sequence[InstanceType], groups: tuple[str, ...], ticks: int,
                 announced_jobs: frozenset[str] | None,
                 node_group: Callable[[str], str]) -> None:
        self.index = {kind.name: b for b, kind in enumerate(types)}
        vectors = bucket_vectors(types) * UNITS
        self.vectors = [[float(v) for v in row] for row in vectors]
        self.recording = Recording(types, {b: groups for b in range(len(types))}, vectors,
                                   ticks, announced_jobs is not None)
        self.announced_jobs = announced_jobs or frozenset()
        self.node_group = node_group
        self.running = [[0, 0, 0] for _ in types]
        self.pending = [[0, 0, 0] for _ in types]
        self.gated = [[0, 0, 0] for _ in types]

    def _column(self, pod: Pod | None) -> str | None:
        if pod is None or pod.is_placeholder:
            return None
        if pod.node_name is not None:
            return self.node_group(pod.node_name)
        return GATED if pod.scheduling_gates else PENDING

    def change(self, old: Pod | None, new: Pod | None) -> None:
        """A pod went from `old` to `new` (None: it did not exist / is gone)."""
        before, after = self._column(old), self._column(new)
        if before == after:
            return
        if before is not None and old is not None:
            self._move(old, before, -1)
        if after is not None and new is not None:
            self._move(new, after, 1)

    def _move(self, pod: Pod, column: str, sign: int) -> None:
        b = self.index[pod.constraints.node_selector[0][1]]
        request = (pod.request.gpu_milli, pod.request.cpu_milli, pod.request.memory_bytes)
        if column == GATED:
            add_request(self.gated[b], request, sign)
            return
        add_request(self.pending[b] if column == PENDING else self.running[b], request, sign)
        announced = pod.labels.get(JOB_LABEL, "") in self.announced_jobs
        self.recording.move(b, column or None, request, sign, announced)


class PolicyHeadroom:
    """One policy's placeholders in a gang replay (module docstring)."""

    def __init__(self, policy: Policy, types: Sequence[InstanceType], groups: tuple[str, ...],
                 window: tuple[float, float], announced_jobs: frozenset[str] | None,
                 node_group: Callable[[str], str]) -> None:
        self.policy, self.types, self.groups = policy, tuple(types), groups
        self.start, self.end = window
        ticks = int(np.ceil((self.end - self.start) / policy.tick_s)) + 1  # as sim.engine
        self.demand = GangDemand(types, groups, ticks, announced_jobs, node_group)
        self.gated_known = (isinstance(policy, Predictive)
                            and policy.service.known_demand.gated)
        self.last_tick = 0
        # A headroom without a schedule plans from the cluster alone: a tick at the
        # state of one that changed nothing would change nothing (`ClusterSide.unchanged`).
        self.steady = isinstance(policy, Headroom) and not any(
            spec is not None and (spec.kind == "scheduled" or spec.hours)
            for spec in (policy.spec, *policy.specs))

    def targets(self, now: float, nodes: Sequence[tuple[int, str, bool, bool]],
                placeholders: dict[tuple[int, str], int], growths: Sequence[Growth],
                again: bool = False) -> dict[tuple[int, str], int]:
        """Placeholders per (type, group) at `now`. nodes: each live node's (type, group,
        ready, holds no pod); placeholders: those that exist (bound or pending); growths:
        the planned growth of admitted elastic gangs; again: the tick run once more (a
        re-plan after a preemption: the same tick, recorded again)."""
        if now >= self.end - 1e-9:
            return {}
        tick = self.last_tick if again else int(round((now - self.start) / self.policy.tick_s))
        self.last_tick = tick
        if self.policy.needs_history:
            self.demand.recording.record(tick)
        plan, _ = self.policy.decide(self.view(now, tick, nodes, placeholders, growths))
        if plan is None:
            return {}
        return {(b, group): plan.wanted(kind.name, group)
                for b, kind in enumerate(self.types) for group in self.groups}

    def view(self, now: float, tick: int, nodes: Sequence[tuple[int, str, bool, bool]],
             placeholders: dict[tuple[int, str], int], growths: Sequence[Growth]) -> TickView:
        free: dict[tuple[int, str], int] = {}
        ready = [0] * len(self.types)
        for b, group, is_ready, empty in nodes:
            if is_ready:
                ready[b] += 1
                if empty:
                    free[(b, group)] = free.get((b, group), 0) + 1
        known: dict[tuple[int, str], float] = {}
        if self.gated_known:
            for b, count in enumerate(embedded(self.demand.gated, self.demand.vectors)):
                if count:
                    known[(b, "")] = count
        index = {kind.name: b for b, kind in enumerate(self.types)}
        for (name, group), count in (growth_nodes(growths, self.types) if growths
                                     else {}).items():
            known[(index[name], group)] = known.get((index[name], group), 0.0) + count
        demand = self.demand
        return TickView(now, tick, np.array(embedded(demand.running, demand.vectors)),
                        np.array(embedded(demand.pending, demand.vectors)), free,
                        dict(placeholders), tuple(ready),
                        demand.recording if self.policy.needs_history else None,
                        self.start + tick * self.policy.tick_s, known)
