"""The cluster side of a gang replay: nodes, kube-scheduler with Coscheduling,
cluster-autoscaler and the overprovisioner's placeholders for announced growth.

Decides (the rules are the engine's docstring's, `overprovisioner.sim.gangs.gang_engine`):
where a pod binds (its gang all at once onto ready nodes of its domain and type, fullest
first, placeholders evicted where that makes room; a pod joining a bound gang alone),
when cluster-autoscaler launches and removes nodes, and how many placeholders each
(type, placement group) keeps: for the growth of shrunk elastic gangs, or, with a
placeholder policy, what its plan wants (`gangs.headroom`).

`ClusterSide` is the half of `engine.GangRun` that is the cluster: it reads the
engine's pods, records and jobs and asks it for rounds (`want_round`); the engine is
the admitter's and the owners' half.

Must not: decide admissions (the admitter's round does), read files, log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from bucketing.resources import Resources
from kube.autoscaler_status import GroupSize
from kube.labels import JOB_LABEL, PLACEHOLDER_LABEL
from locality.admission.record import GangState
from locality.config import LocalityConfig
from locality.constraints import PodConstraints
from locality.model import JobKey, Node, Pod, node_state
from overprovisioner.planner.known_plan import growth_nodes
from overprovisioner.planner.worker_plan import Growth
from overprovisioner.sim.config import SimConfig

NAMESPACE = "sim"
ARRIVE, READY, FINISH, EMPTY, SCAN, TICK, ROUND, REPLAN = range(8)


@dataclass(frozen=True)
class GangSimConfig:
    """One gang replay's settings (the cluster's; the admitter's are `admission`)."""

    sim: SimConfig = SimConfig()
    groups: tuple[str, ...] = ("pg-a", "pg-b")
    """Every instance type has a node group in each of these placement groups."""
    max_nodes: int = 8
    """Each node group's maximum size."""
    interval_s: float = 1.0
    """The admitter's round interval (`admission.interval_seconds`)."""
    tick_s: float = 60.0
    """The overprovisioner's tick (announced growth)."""
    locality: LocalityConfig = LocalityConfig()


@dataclass
class SimNode:
    name: str
    index: int
    type_index: int
    group: str
    node: Node
    launched_at: float
    ready_at: float
    ready: bool = False
    removed_at: float | None = None
    pods: dict[str, None] = field(default_factory=dict)
    real: list[int] = field(default_factory=lambda: [0, 0, 0])
    held: list[int] = field(default_factory=lambda: [0, 0, 0])  # placeholders
    empty_since: float | None = None


def largest_first(pod: Pod) -> tuple:
    """The order the binder and the autoscaler place pods in: largest first (GPUs, CPU,
    memory), as the admitter's packer does, so that room the admitter counted is room
    they find."""
    request = pod.request
    return (-request.gpu_milli, -request.cpu_milli, -request.memory_bytes, pod.name)


class ClusterSide:
    """The cluster's half of a replay (see the module docstring)."""

    # ----- skipping work that cannot change anything
    skip_unchanged = True
    """Skip a bind, scan or tick that would change nothing (False: run every one; the
    tests compare both)."""

    def state(self) -> tuple[int, int]:
        """A stamp of everything binding, scanning and ticking read: the pods (and so
        the nodes' usage, which only binding and deleting pods change), the nodes and
        the admitter's records (`cluster_version`, bumped by node launches, readiness
        and removals, rounds and finishes)."""
        return (self.pods.version, self.cluster_version)

    def unchanged(self, step: str) -> bool:
        """Whether `step` ("bind", "scan", "tick") last ran at this very state and
        changed nothing: it would do nothing again. A replay that holds placeholders
        the node groups cannot fit otherwise bound, scanned and ticked every few seconds
        over months of simulated time to the same end."""
        if self.skip_unchanged and self.idle.get(step) == self.state():
            self.skipped += 1
            return True
        return False

    def _ran(self, step: str, before: tuple[int, int]) -> None:
        """Remember `before` for `step` when running it changed nothing."""
        if self.state() == before:
            self.idle[step] = before

    def _node_states(self) -> list:
        out = []
        for node in self.nodes.values():
            if node.ready:
                out.append(node_state(node.node, [self.pods[name] for name in node.pods]))
        return out

    def _group_sizes(self) -> dict[str, GroupSize]:
        counts: dict[str, list[int]] = {group.name: [0, 0] for group in self.groups}
        for node in self.nodes.values():
            entry = counts[f"{self.types[node.type_index].name}-{node.group}"]
            entry[1] += 1
            entry[0] += node.ready
        return {name: GroupSize(name, 0, self.config.max_nodes, ready, target)
                for name, (ready, target) in counts.items()}

    # ----- kube-scheduler with Coscheduling
    def _bind(self, now: float) -> None:
        if self.unchanged("bind"):
            if self.pods.has_pending():
                self.want_scan(now)  # pods still pending: cluster-autoscaler's next loop
            return
        before = self.state()
        pending: dict[str, list[str]] = {}
        for name in self.pods.pending():
            job = self.pods[name].labels.get(JOB_LABEL, "")
            pending.setdefault(job, []).append(name)
        changed = []
        for job, names in pending.items():
            if job == "":
                continue
            run = self.by_name[job]
            record = self.records.get(run.key)
            group = record.domain.value if record is not None and record.domain else None
            alone = record is not None and record.state in (GangState.RUNNING,
                                                            GangState.RECOVERING)
            if self._place([self.pods[n] for n in names], group, alone, now):
                changed.append(run)
        full: set[tuple[str, str | None]] = set()  # (type, group) no placeholder fits now
        for job in pending.get("", ()):
            pod = self.pods[job]
            key = (pod.constraints.node_selector[0][1], pod.placement_group)
            if key not in full and not self._place_placeholder(job):
                # Placeholders of one type and group ask the same: the next one fits
                # nowhere either, as nothing changed on those nodes since.
                full.add(key)
        if self.pods.has_pending():
            self.want_scan(now)  # pods still pending: cluster-autoscaler's next loop
        for run in changed:
            self.want_round(now + self.config.interval_s)
            self._retime(run, now)
        self._ran("bind", before)

    def _fits(self, node: SimNode, request: Resources, count_held: bool) -> bool:
        alloc = self.types[node.type_index].allocatable
        used = [a + b for a, b in zip(node.real, node.held, strict=True)] if count_held \
            else node.real
        return (used[0] + request.gpu_milli <= alloc.gpu_milli
                and used[1] + request.cpu_milli <= alloc.cpu_milli
                and used[2] + request.memory_bytes <= alloc.memory_bytes)

    def _candidates(self, type_name: str, group: str | None) -> list[SimNode]:
        nodes = [n for n in self.nodes.values() if n.ready
                 and self.types[n.type_index].name == type_name
                 and (group is None or n.group == group)]
        return sorted(nodes, key=lambda n: (-n.real[0], -n.real[1], n.name))

    def _place(self, pods: list[Pod], group: str | None, alone: bool, now: float) -> bool:
        """Bind `pods` (all, or with `alone` each on its own); True when any bound."""
        plan: list[tuple[Pod, SimNode]] = []
        trial: dict[str, list[int]] = {}
        candidates: dict[str, list[SimNode]] = {}  # their order reads node.real: fixed here
        for pod in sorted(pods, key=largest_first):
            type_name = pod.constraints.node_selector[0][1]
            chosen = None
            if type_name not in candidates:
                candidates[type_name] = self._candidates(type_name, group)
            for node in candidates[type_name]:
                saved = node.real
                node.real = trial.get(node.name, node.real)
                if self._fits(node, pod.request, False):
                    chosen = node
                node.real = saved
                if chosen is not None:
                    break
            if chosen is None:
                if alone:
                    continue
                return False
            real = list(trial.get(chosen.name, chosen.real))
            real = [real[0] + pod.request.gpu_milli, real[1] + pod.request.cpu_milli,
                    real[2] + pod.request.memory_bytes]
            trial[chosen.name] = real
            plan.append((pod, chosen))
        for pod, node in plan:
            self._put(node, pod, now)
        return bool(plan)

    def _put(self, node: SimNode, pod: Pod, now: float) -> None:
        if not pod.is_placeholder:
            while not self._fits(node, pod.request, True):  # preempt placeholders
                victim = next(n for n in node.pods if self.pods[n].is_placeholder)
                self._delete(victim)
                self._pending_placeholder(node.type_index, node.group)
                self.want_scan(now)
                self.preempted(now)
        # Ready once bound: the replay models no image pull or probe.
        self.pods[pod.name] = replace(pod, node_name=node.name, ready=True)
        self.where[pod.name] = node.name
        node.pods[pod.name] = None
        vector = node.held if pod.is_placeholder else node.real
        vector[0] += pod.request.gpu_milli
        vector[1] += pod.request.cpu_milli
        vector[2] += pod.request.memory_bytes
        if not pod.is_placeholder:
            self.used_gpu += pod.request.gpu_milli
            self.ledger.pod(self._index_of(pod), now, pod.request.gpu_milli)
        node.empty_since = None

    def _unplace(self, node: SimNode, pod: Pod) -> None:
        node.pods.pop(pod.name, None)
        vector = node.held if pod.is_placeholder else node.real
        vector[0] -= pod.request.gpu_milli
        vector[1] -= pod.request.cpu_milli
        vector[2] -= pod.request.memory_bytes
        if not pod.is_placeholder:
            self.used_gpu -= pod.request.gpu_milli
            self.ledger.pod(self._index_of(pod), self.clock, -pod.request.gpu_milli)
        if not node.pods and node.ready:
            node.empty_since = self.clock
            self.push(self.clock + self.config.sim.unneeded_s, EMPTY, node.index)
        self.want_round(self.clock + self.config.interval_s)

    def _index_of(self, pod: Pod) -> int:
        return self.by_name[pod.labels[JOB_LABEL]].index

    # ----- placeholders (announced growth; a policy's)
    def _tick(self, now: float, again: bool = False) -> None:
        """Keep the placeholders wanted now: with a policy (`headroom`), its plan's, the
        growth announced to it as known demand; else one per node the announced
        growth needs. `again`: a policy's re-plan after a preemption."""
        skippable = self.headroom is None or (self.headroom.steady and not again
                                              and now < self.w.end_s)
        if skippable and self.unchanged("tick"):
            return
        before = self.state()
        growths = self._growths() if self.announce else []
        if self.headroom is not None:
            held: dict[tuple[int, str], int] = {}
            index = {t.name: i for i, t in enumerate(self.types)}
            for name in self.job_pods.get("", ()):
                pod = self.pods[name]
                key = (index[pod.constraints.node_selector[0][1]], pod.placement_group or "")
                held[key] = held.get(key, 0) + 1
            nodes = [(n.type_index, n.group, n.ready, not n.pods) for n in self.nodes.values()]
            target = self.headroom.targets(now, nodes, held, growths, again)
        else:
            wanted = growth_nodes(growths, self.types) if growths else {}
            index = {t.name: i for i, t in enumerate(self.types)}
            target = {(index[name], group): math.ceil(nodes - 1e-9)
                      for (name, group), nodes in wanted.items()}
        for key in sorted(set(target) | set(self.placeholders)):  # not hash order: a
            # placeholder's name, and so which one goes first, must not depend on it
            self._keep_placeholders(key, target.get(key, 0), now)
        self._ran("tick", before)

    def _growths(self) -> list[Growth]:
        """The growth of each admitted elastic gang below its maximum whose growth the
        admitter's last round did not hold back."""
        growths = []
        for run in self.jobs:
            record = self.records.get(run.key)
            if (run.finished is None and run.job.bounds is not None and record is not None
                    and record.state.holds_domain and record.domain is not None
                    and run.size < run.job.bounds[1] and run.key not in self.held_growth):
                assert run.job.worker_request is not None
                gpu, cpu, mem = run.job.worker_request
                growths.append(Growth(run.job.name, run.job.bounds[1] - run.size,
                                      Resources(gpu, cpu, mem), record.domain.value, True))
        return growths

    def _keep_placeholders(self, key: tuple[int, str], count: int, now: float) -> None:
        type_index, group = key
        placeholders = (self.pods[name] for name in self.job_pods.get("", ()))
        mine = [pod.name for pod in placeholders if pod.is_placeholder
                and pod.placement_group == group
                and pod.constraints.node_selector[0][1] == self.types[type_index].name]
        for name in sorted(mine, key=lambda n: (n in self.where, n))[:max(len(mine) - count, 0)]:
            self._delete(name)  # pending ones first
        for _ in range(count - len(mine)):
            self._pending_placeholder(type_index, group)
            self.want_scan(now)
        self.placeholders[key] = count

    def _pending_placeholder(self, type_index: int, group: str) -> None:
        kind = self.types[type_index]
        self.seq += 1
        self.placeholder_pods += 1
        name = f"placeholder-{kind.name}-{group}-{self.seq}"
        self.pods[name] = Pod(
            NAMESPACE, name, f"uid-{name}", {PLACEHOLDER_LABEL: "true"}, {},
            kind.placeholder_request, priority=-5, is_placeholder=True,
            placement_group=group,
            constraints=PodConstraints(node_selector=((self.type_label, kind.name),)))
        self.job_pods.setdefault("", {})[name] = None

    def _place_placeholder(self, name: str) -> bool:
        """Bind a pending placeholder to the fullest node it fits; False: none."""
        pod = self.pods[name]
        for node in self._candidates(pod.constraints.node_selector[0][1], pod.placement_group):
            if self._fits(node, pod.request, True):
                self._put(node, pod, self.clock)
                return True
        return False

    # ----- cluster-autoscaler
    def _scan(self, now: float) -> None:
        if not self.pods.has_pending():
            return
        if self.unchanged("scan"):
            self.want_scan(now + self.config.sim.scan_s)
            return
        before = self.state()
        pending = [self.pods[name] for name in self.pods.pending()]
        launched = False
        by_group: dict[tuple[str, str], list[Pod]] = {}
        for pod in pending:
            group = pod.placement_group if pod.is_placeholder else self._group_of(pod)
            if group is None:
                continue
            by_group.setdefault((pod.constraints.node_selector[0][1], group), []).append(pod)
        for (type_name, group), pods in sorted(by_group.items()):
            type_index = next(i for i, t in enumerate(self.types) if t.name == type_name)
            kind = self.types[type_index]
            # Ready and starting nodes, fullest first as the binder tries them, with
            # placeholders' room counted as used (CA does not preempt them).
            here = sorted((n for n in self.nodes.values()
                           if n.type_index == type_index and n.group == group),
                          key=lambda n: (-n.real[0], -n.real[1], n.name))
            bins = [[a + b for a, b in zip(n.real, n.held, strict=True)] for n in here]
            opened = 0
            alloc = (kind.allocatable.gpu_milli, kind.allocatable.cpu_milli,
                     kind.allocatable.memory_bytes)
            unplaceable: set[tuple[int, int, int]] = set()
            for pod in sorted(pods, key=largest_first):
                need = (pod.request.gpu_milli, pod.request.cpu_milli, pod.request.memory_bytes)
                if need in unplaceable:
                    continue
                slot = next((b for b in bins if all(u + r <= a for u, r, a in
                                                     zip(b, need, alloc, strict=True))), None)
                if slot is None:
                    if len(bins) >= self.config.max_nodes or any(r > a for r, a in
                                                                  zip(need, alloc, strict=True)):
                        # Bins only fill and no more open: it never fits this scan.
                        unplaceable.add(need)
                        continue
                    slot = [0, 0, 0]
                    bins.append(slot)
                    opened += 1
                for i in range(3):
                    slot[i] += need[i]
            for _ in range(opened):
                self._launch(type_index, group, now)
                launched = True
        if launched:
            self.last_scale_up = now
        self._ran("scan", before)
        self.want_scan(now + self.config.sim.scan_s)

    def _group_of(self, pod: Pod) -> str | None:
        record = self.records.get(JobKey(NAMESPACE, pod.labels.get(JOB_LABEL, "")))
        return record.domain.value if record is not None and record.domain else None

    def _launch(self, type_index: int, group: str, now: float) -> None:
        kind = self.types[type_index]
        sim = self.config.sim
        base = sim.gpu_startup_s if kind.gpus > 0 else sim.cpu_startup_s
        startup = base * (1 + sim.startup_spread * (2 * self.rng.random() - 1))
        index = len(self.node_list)
        name = f"{kind.name}-{group}-{index}"
        node = Node(name, {self.type_label: kind.name, self.group_label: group},
                    kind.allocatable, group, kind.name)
        self.node_list.append(SimNode(name, index, type_index, group, node, now, now + startup))
        self.nodes[name] = self.node_list[-1]
        self.launches += 1
        self.cluster_version += 1
        self.push(now + startup, READY, index)

    def _ready(self, index: int, now: float) -> None:
        node = self.node_list[index]
        node.ready = True
        self.cluster_version += 1
        node.empty_since = now
        self.push(now + self.config.sim.unneeded_s, EMPTY, index)
        self.want_round(now)

    def _empty_check(self, index: int, now: float) -> None:
        node = self.node_list[index]
        if node.removed_at is not None or node.pods or node.empty_since is None:
            return
        if now - node.empty_since < self.config.sim.unneeded_s - 1e-6:
            return
        delay = self.last_scale_up + self.config.sim.scale_down_delay_after_add_s
        if now < delay:
            self.push(delay, EMPTY, index)
            return
        node.removed_at = now
        del self.nodes[node.name]
        self.cluster_version += 1
        self.want_round(now + self.config.interval_s)

