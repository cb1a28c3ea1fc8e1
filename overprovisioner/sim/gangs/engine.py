"""A gang replay: training jobs admitted whole by the extender's own admission round on a
simulated autoscaled cluster, at fixed sizes or elastic.

Decides the order of events and what each does; every admission decision is
`locality.admission.round.plan_round` and `locality.admission.recovery.recovery`, the
functions the extender's admitter runs, on pods, gang records and node states built as
the admitter's cache would hold them:
- arrival: the job's owner creates its pods, each behind the gate, with the job labels,
  `headstart.io/placement-group: required` and a nodeSelector on its instance type; an
  elastic job's as a PyTorchJob's (workers indexed and resized, PS kept: its
  `ElasticOwner`), a fixed one's with `headstart.io/job-size`;
- admission round (`interval_s` after anything changed, and when a record's clock runs
  out: scale-out's wait, the bind timeout, a backoff, the head-of-queue hold): the plan
  is applied as the admitter applies it: records written (Admitted, Waiting, Running,
  Recovering, Evicted), gates lifted, owners resized (the owner's controller removes the
  highest-index workers or adds gated ones at once), gangs evicted whole (their owner
  recreates the pods, gated; the job keeps what it learnt: checkpointed);
- binding (kube-scheduler with Coscheduling): an admitted gang's pods bind all at once
  onto ready nodes of its domain and instance type, fullest node first
  (MostAllocated), evicting placeholders where that makes room, or none of them bind;
  a pod joining a gang already bound (growth, a replacement) binds alone;
- cluster-autoscaler scan (every `scan_s` while pods pend): pending pods that fit no
  ready node (placeholders' room counted as used: CA does not simulate preemption of
  pods above its expendable cutoff) are packed onto nodes still starting, then onto new
  nodes of their (type, placement group), up to `max_nodes` per group; a node is ready
  a start-up later (SimConfig's, spread as the simulator spreads it); a node empty for
  `unneeded_s` goes, none within `scale_down_delay_after_add_s` of a scale-up;
- training: a gang trains while its record is Running or Recovering, at the rate of
  its bound workers (`jobs.speed`); it finishes when its trace run's work is done, and
  its pods end (Succeeded) and are gone;
- announced growth (`announce`): every `tick_s`, each admitted elastic gang below its
  maximum is growth the overprovisioner is told of, embedded into nodes per
  (type, placement group) by `overprovisioner.planner.known_plan.growth_nodes`, the
  code the service runs for worker plans; that many whole-node placeholders (priority
  -5, the type's `placeholder_request`) are kept there, so the autoscaler launches the
  nodes and the admitter's scale-out finds the room.

Bounds: no forecast placeholders (the arms differ by sizing and announced growth
alone); nodes never fail; pods bind the moment they fit and end the moment their job
does; API writes never fail; the admitter leads throughout.

Must not: read files, log, mutate the workload or the jobs.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from bucketing.catalog import InstanceType
from bucketing.resources import Resources
from kube.autoscaler_status import GroupSize
from locality.admission.config import AdmissionConfig, NodeGroup
from locality.admission.model import Plan, Resize, WaitCode
from locality.admission.record import GangRecord, GangState
from locality.admission.recovery import Eviction, Transition, recovery
from locality.admission.round import Inputs, plan_round, wider_levels
from locality.config import LocalityConfig
from locality.constraints import PodConstraints
from locality.elastic import (
    KUBEFLOW_INDEX_LABEL,
    KUBEFLOW_TYPE_LABEL,
    PYTORCH_WORKER,
    Bounds,
    ElasticOwner,
)
from locality.model import JobKey, Node, Pod, node_state
from overprovisioner.planner.known_plan import growth_nodes
from overprovisioner.planner.worker_plan import Growth
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.gangs.jobs import GangJob, speed
from overprovisioner.sim.workload import Workload

NAMESPACE = "sim"
ARRIVE, READY, FINISH, EMPTY, SCAN, TICK, ROUND = range(7)


@dataclass(frozen=True)
class GangSimConfig:
    """One gang replay's settings (the cluster's; the admitter's are `admission`)."""

    sim: SimConfig = SimConfig()
    groups: tuple[str, ...] = ("pg-a", "pg-b")
    """Every instance type has a node group in each of these placement groups."""
    max_nodes: int = 64
    """Each node group's maximum size."""
    interval_s: float = 1.0
    """The admitter's round interval (`admission.interval_seconds`)."""
    tick_s: float = 60.0
    """The overprovisioner's tick (announced growth)."""
    locality: LocalityConfig = LocalityConfig()


@dataclass
class _Node:
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


@dataclass
class _Job:
    job: GangJob
    key: JobKey
    size: int  # the owner's worker count now (elastic), else its trace count
    work_left: float
    rate: float = 0.0
    since: float = 0.0
    version: int = 0
    first_running: float | None = None
    finished: float | None = None
    attempt: int = 0
    resizes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GangResult:
    """What one arm measured. jobs: (submit, first Running, finish) per job measured (not
    initial), NaN where not reached by the end; node_gpu_s: GPU-seconds of nodes from
    launch to removal; used_gpu_s: GPU-seconds held by bound real pods."""

    name: str
    submit: np.ndarray
    first_running: np.ndarray
    finished: np.ndarray
    elastic: np.ndarray
    node_gpu_s: float
    used_gpu_s: float
    node_cost: float
    resizes: dict[str, int]
    launches: int
    end_s: float
    placeholders: int = 0
    """Placeholder pods created (announced growth; recreated after a preemption too)."""


class GangRun:
    """One arm: `elastic` resizes the jobs that have bounds; `announce` tells the
    overprovisioner of their growth."""

    def __init__(self, workload: Workload, jobs: Sequence[GangJob], types: Sequence[InstanceType],
                 config: GangSimConfig, admission: AdmissionConfig, scaling: str,
                 elastic: bool, announce: bool, name: str) -> None:
        self.w, self.types, self.config = workload, tuple(types), config
        self.admission, self.scaling, self.name = admission, scaling, name
        self.elastic, self.announce = elastic, announce
        self.locality = config.locality
        self.wider = wider_levels(self.locality)
        self.type_label = self.locality.instance_type_label
        self.group_label = self.locality.placement_group_labels[0]
        self.jobs = [_Job(job, JobKey(NAMESPACE, job.name),
                          job.workers if job.bounds else len(job.pods), job.work_s)
                     for job in jobs]
        self.by_name = {run.job.name: run for run in self.jobs}
        self.rng = np.random.default_rng([config.sim.seed, 1])
        self.pods: dict[str, Pod] = {}
        self.job_pods: dict[str, dict[str, None]] = {}
        self.records: dict[JobKey, GangRecord] = {}
        self.nodes: dict[str, _Node] = {}  # live ones (launched, not removed)
        self.node_list: list[_Node] = []  # every node ever launched, by index
        self.where: dict[str, str] = {}  # bound pod -> node
        self.placeholders: dict[tuple[int, str], int] = {}  # wanted per (type, group)
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.round_at = math.inf
        self.scan_at = math.inf
        self.last_scan = -math.inf
        self.last_scale_up = -math.inf
        self.launches = 0
        self.placeholder_pods = 0
        self.node_gpu_s = self.used_gpu_s = self.node_cost = 0.0
        self.used_gpu = 0  # milli-GPUs bound now
        self.clock = workload.start_s
        self.groups = [NodeGroup(f"{t.name}-{g}", t.name, g, config.max_nodes,
                                 allocatable=t.allocatable,
                                 labels={self.type_label: t.name, self.group_label: g})
                       for t in self.types for g in config.groups]
        self.admission = replace(admission, node_groups=tuple(self.groups))

    # ----- events
    def push(self, time: float, kind: int, arg: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, kind, self.seq, arg))

    def want_round(self, time: float) -> None:
        if time < self.round_at - 1e-9:
            self.round_at = time
            self.push(time, ROUND)

    def want_scan(self, now: float) -> None:
        grid = self.config.sim.scan_s
        at = self.w.start_s + math.ceil((now - self.w.start_s) / grid - 1e-9) * grid
        if at <= self.last_scan + 1e-9:
            at = self.last_scan + grid  # one scan per CA loop
        if at < self.scan_at - 1e-9:
            self.scan_at = at
            self.push(at, SCAN)

    def execute(self) -> GangResult:
        for index, run in enumerate(self.jobs):
            self.push(max(run.job.submit_s, self.w.start_s), ARRIVE, index)
        if self.announce:
            self.push(self.w.start_s, TICK)
        while self.heap:
            time, kind, _, arg = heapq.heappop(self.heap)
            self._advance(time)
            if kind == ARRIVE:
                self._arrive(self.jobs[arg], time)
            elif kind == READY:
                self._ready(arg, time)
            elif kind == FINISH:
                self._finish(arg, time)
            elif kind == EMPTY:
                self._empty_check(arg, time)
            elif kind == SCAN:
                self.scan_at, self.last_scan = math.inf, time
                self._scan(time)
            elif kind == TICK:
                self._tick(time)
                if self.heap:  # else nothing is left to change: the replay is over
                    self.push(time + self.config.tick_s, TICK)
            elif kind == ROUND and time >= self.round_at - 1e-9:
                self.round_at = math.inf
                self._round(time)
            self._bind(time)
        return self._result()

    def _advance(self, time: float) -> None:
        dt = time - self.clock
        if dt > 0:
            live = list(self.nodes.values())
            self.node_gpu_s += dt * sum(self.types[n.type_index].gpus for n in live)
            self.node_cost += dt / 3600 * sum(self.types[n.type_index].price_per_hour
                                               for n in live)
            self.used_gpu_s += dt * self.used_gpu / 1000
            self.clock = time

    # ----- the owner: pods
    def _arrive(self, run: _Job, now: float) -> None:
        self.job_pods[run.job.name] = {}
        for position, row in enumerate(run.job.pods):
            if position < len(run.job.fixed) or not self.elastic or run.job.bounds is None:
                self._create(run, row, position, now)
        if self.elastic and run.job.bounds is not None:
            for index in range(run.size):
                self._create(run, run.job.pods[len(run.job.fixed)], index, now, worker=True)
        self._retime(run, now)
        self.want_round(now)

    def _create(self, run: _Job, row: int, index: int, now: float, worker: bool = False) -> None:
        job = run.job
        type_name = self.types[int(self.w.bucket[row])].name
        gpu, cpu, mem = (int(v) for v in self.w.request[row])
        if job.worker_request is not None and str(self.w.role[row]) == "worker":
            gpu, cpu, mem = job.worker_request  # the owner's one worker template
        labels = {"headstart.io/job": job.name, "headstart.io/role": str(self.w.role[row])}
        annotations = {self.locality.placement_group_annotation: "required"}
        elastic = None
        if worker:
            labels[KUBEFLOW_TYPE_LABEL] = PYTORCH_WORKER
            labels[KUBEFLOW_INDEX_LABEL] = str(index)
            name = f"{job.name}-worker-{index}-{run.attempt}"
            elastic = self._owner(run)
        elif self.elastic and job.bounds is not None:
            labels[KUBEFLOW_TYPE_LABEL] = "Master"
            name = f"{job.name}-{index}-{run.attempt}"
            elastic = self._owner(run)
        else:
            annotations[self.locality.job_size_annotation] = str(len(job.pods))
            name = f"{job.name}-{index}-{run.attempt}"
        pod = Pod(NAMESPACE, name, f"uid-{name}", labels, annotations,
                  Resources(gpu, cpu, mem), created_at=now,
                  scheduling_gates=(self.admission.gate,), elastic=elastic,
                  controller=("PyTorchJob" if elastic else "Job", job.name),
                  constraints=PodConstraints(node_selector=((self.type_label, type_name),)))
        self.pods[name] = pod
        self.job_pods[job.name][name] = None

    def _owner(self, run: _Job) -> ElasticOwner:
        low, high = run.job.bounds or (run.size, run.size)
        return ElasticOwner("PyTorchJob", NAMESPACE, run.job.name, run.size, Bounds(low, high),
                            uid=f"uid-{run.job.name}")

    def _resize(self, resize: Resize, now: float) -> None:
        run = self.by_name[resize.job.name]
        if run.finished is not None:
            return
        record = self.records.get(resize.job)
        holds = record is not None and record.state.holds_domain
        kind = ("scale_out" if resize.after > resize.before else "scale_in") if holds \
            else "admitted_smaller" if resize.after < resize.before else "admitted_larger"
        run.resizes[kind] = run.resizes.get(kind, 0) + 1
        run.size = resize.after
        owner = self._owner(run)
        row = run.job.pods[len(run.job.fixed)]
        indices = set()
        for name in list(self.job_pods[run.job.name]):
            pod = self.pods[name]
            if pod.elastic is None:
                continue
            index = pod.labels.get(KUBEFLOW_INDEX_LABEL)
            if index is not None and int(index) >= run.size:
                self._delete(name)  # the owner's controller removes it
                continue
            if index is not None:
                indices.add(int(index))
            self.pods[name] = replace(pod, elastic=owner)
        for index in range(run.size):
            if index not in indices:
                self._create(run, row, index, now, worker=True)
        if holds:
            assert record is not None
            self.records[resize.job] = replace(record, size=run.size)
        self._retime(run, now)

    def _delete(self, name: str) -> None:
        pod = self.pods.pop(name)
        self.job_pods[pod.labels.get("headstart.io/job", "")].pop(name, None)
        node_name = self.where.pop(name, None)
        if node_name is not None:
            self._unplace(self.nodes[node_name], pod)

    def _restart(self, run: _Job, now: float) -> None:
        """Its pods evicted whole; its owner recreates them, gated (a new attempt)."""
        for name in list(self.job_pods[run.job.name]):
            self._delete(name)
        run.attempt += 1
        self._arrive(run, now)

    # ----- training
    def _retime(self, run: _Job, now: float) -> None:
        """Charge the work done since the last change, then the rate from now."""
        run.work_left -= run.rate * (now - run.since)
        run.since = now
        record = self.records.get(run.key)
        running = record is not None and record.state in (GangState.RUNNING,
                                                          GangState.RECOVERING)
        if running and run.first_running is None:
            run.first_running = now
        rate = 0.0
        if running:
            if self.elastic and run.job.bounds is not None:
                bound = sum(1 for name in self.job_pods[run.job.name]
                            if name in self.where and self.pods[name].elastic is not None
                            and KUBEFLOW_INDEX_LABEL in self.pods[name].labels)
                rate = speed(bound, run.job.workers, self.scaling)
            else:
                rate = 1.0
        run.rate = rate
        run.version += 1
        if rate > 0:
            self.push(now + max(run.work_left, 0.0) / rate, FINISH,
                      self.jobs.index(run) * 1_000_000 + run.version % 1_000_000)

    def _finish(self, arg: int, now: float) -> None:
        run = self.jobs[arg // 1_000_000]
        if run.finished is not None or run.version % 1_000_000 != arg % 1_000_000:
            return
        run.work_left, run.rate, run.finished = 0.0, 0.0, now
        for name in list(self.job_pods[run.job.name]):
            self._delete(name)
        self.records.pop(run.key, None)
        self.want_round(now + self.config.interval_s)

    # ----- the admitter
    def _round(self, now: float) -> None:
        gated = [pod for pod in self.pods.values() if self.admission.gate in pod.scheduling_gates]
        keys = {JobKey(NAMESPACE, pod.labels["headstart.io/job"]) for pod in gated}
        keys.update(self.records)
        by_job = {key: tuple(self.pods[name] for name in self.job_pods.get(key.name, ()))
                  for key in keys}
        inputs = Inputs(gated, dict(self.records), by_job, self._node_states(),
                        self._group_sizes())
        planned, gathered, _ = plan_round(inputs, now, self.locality, self.admission,
                                          None, self.wider)
        after = recovery(list(self.records.values()), inputs.pods_of_job, now,
                         self.admission.bind_timeout_seconds,
                         self.admission.backoff_base_seconds,
                         self.admission.backoff_max_seconds)
        changed = self._apply(planned, gathered, now)
        for action in after:
            changed = True
            if isinstance(action, Resize):
                self._resize(action, now)
            elif isinstance(action, Transition):
                self._set(action.record.job, action.state, now)
            elif isinstance(action, Eviction):
                record = action.record
                self.records[record.job] = replace(
                    record, state=GangState.EVICTED, since=now, domain=None,
                    requeue_at=action.requeue_at, evictions=record.evictions + 1)
                self._restart(self.by_name[record.job.name], now)
        if changed:
            self.want_round(now + self.config.interval_s)
        wake = self._next_clock(now)
        if wake is not None:
            self.want_round(wake)

    def _apply(self, planned: Plan, gathered: dict, now: float) -> bool:
        changed = False
        for admission in planned.admissions:
            changed = True
            job = gathered.get(admission.job)
            size = job.size if job is not None else len(admission.pods)
            old = self.records.get(admission.job)
            self.records[admission.job] = GangRecord(
                admission.job, GangState.ADMITTED, admission.domain, admission.label_key,
                size, name=admission.job.name, since=now,
                evictions=old.evictions if old is not None else 0)
            for pod in admission.pods:
                self.pods[pod.name] = replace(self.pods[pod.name], scheduling_gates=())
        for release in planned.releases:
            changed = True
            self.pods[release.pod.name] = replace(self.pods[release.pod.name],
                                                  scheduling_gates=())
        for waiting in planned.waiting:
            record = self.records.get(waiting.job)
            if waiting.code is WaitCode.BACKOFF or (record is not None
                                                    and record.state.holds_domain):
                continue
            state = GangState.INADMISSIBLE if waiting.code is WaitCode.INADMISSIBLE \
                else GangState.WAITING
            if record is None or record.state is not state:
                self.records[waiting.job] = GangRecord(
                    waiting.job, state, name=waiting.job.name, since=now,
                    evictions=record.evictions if record is not None else 0)
        for preemption in planned.preemptions:
            for victim in preemption.victims:
                changed = True
                record = self.records[victim.job]
                self.records[victim.job] = replace(record, state=GangState.EVICTED,
                                                   since=now, domain=None, requeue_at=now)
                self._restart(self.by_name[victim.job.name], now)
        for resize in planned.resizes:
            changed = True
            self._resize(resize, now)
        return changed

    def _set(self, job: JobKey, state: GangState, now: float) -> None:
        self.records[job] = replace(self.records[job], state=state, since=now)
        self._retime(self.by_name[job.name], now)

    def _next_clock(self, now: float) -> float | None:
        """When a record's clock next changes a round's answer."""
        times = []
        after = self.admission.elastic.scale_out_after_seconds
        for key, record in self.records.items():
            if record.state in (GangState.ADMITTED, GangState.RECOVERING):
                times.append(record.since + self.admission.bind_timeout_seconds)
            elif record.state is GangState.RUNNING and self.elastic:
                run = self.by_name[key.name]
                if run.job.bounds is not None and run.size < run.job.bounds[1]:
                    times.append(record.since + after)
            elif record.state is GangState.EVICTED and record.requeue_at is not None:
                times.append(record.requeue_at)
            elif record.state is GangState.WAITING:
                start = self.admission.head_reserve_after_seconds + record.since
                times += [start, start + self.admission.head_hold_seconds]
        later = [t + 1e-3 for t in times if t + 1e-3 > now]
        return min(later) if later else None

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
        pending: dict[str, list[str]] = {}
        for name, pod in self.pods.items():
            if pod.scheduling_gates or name in self.where:
                continue
            job = pod.labels.get("headstart.io/job", "")
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
        for job in pending.get("", ()):
            self._place_placeholder(job)
        if any(name not in self.where for names in pending.values() for name in names):
            self.want_scan(now)  # pods still pending: cluster-autoscaler's next loop
        for run in changed:
            self.want_round(now + self.config.interval_s)
            self._retime(run, now)

    def _fits(self, node: _Node, request: Resources, count_held: bool) -> bool:
        alloc = self.types[node.type_index].allocatable
        used = [a + b for a, b in zip(node.real, node.held, strict=True)] if count_held \
            else node.real
        return (used[0] + request.gpu_milli <= alloc.gpu_milli
                and used[1] + request.cpu_milli <= alloc.cpu_milli
                and used[2] + request.memory_bytes <= alloc.memory_bytes)

    def _candidates(self, type_name: str, group: str | None) -> list[_Node]:
        nodes = [n for n in self.nodes.values() if n.ready
                 and self.types[n.type_index].name == type_name
                 and (group is None or n.group == group)]
        return sorted(nodes, key=lambda n: (-n.real[0], -n.real[1], n.name))

    def _place(self, pods: list[Pod], group: str | None, alone: bool, now: float) -> bool:
        """Bind `pods` (all, or with `alone` each on its own); True when any bound."""
        plan: list[tuple[Pod, _Node]] = []
        trial: dict[str, list[int]] = {}
        for pod in sorted(pods, key=lambda p: (-p.request.gpu_milli, p.name)):
            type_name = pod.constraints.node_selector[0][1]
            chosen = None
            for node in self._candidates(type_name, group):
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

    def _put(self, node: _Node, pod: Pod, now: float) -> None:
        if not pod.is_placeholder:
            while not self._fits(node, pod.request, True):  # preempt placeholders
                victim = next(n for n in node.pods if self.pods[n].is_placeholder)
                self._delete(victim)
                self._pending_placeholder(node.type_index, node.group)
                self.want_scan(now)
        self.pods[pod.name] = replace(pod, node_name=node.name)
        self.where[pod.name] = node.name
        node.pods[pod.name] = None
        vector = node.held if pod.is_placeholder else node.real
        vector[0] += pod.request.gpu_milli
        vector[1] += pod.request.cpu_milli
        vector[2] += pod.request.memory_bytes
        if not pod.is_placeholder:
            self.used_gpu += pod.request.gpu_milli
        node.empty_since = None

    def _unplace(self, node: _Node, pod: Pod) -> None:
        node.pods.pop(pod.name, None)
        vector = node.held if pod.is_placeholder else node.real
        vector[0] -= pod.request.gpu_milli
        vector[1] -= pod.request.cpu_milli
        vector[2] -= pod.request.memory_bytes
        if not pod.is_placeholder:
            self.used_gpu -= pod.request.gpu_milli
        if not node.pods and node.ready:
            node.empty_since = self.clock
            self.push(self.clock + self.config.sim.unneeded_s, EMPTY, node.index)
        self.want_round(self.clock + self.config.interval_s)

    # ----- placeholders (announced growth)
    def _tick(self, now: float) -> None:
        growths = []
        for run in self.jobs:
            record = self.records.get(run.key)
            if (run.finished is None and run.job.bounds is not None and record is not None
                    and record.state.holds_domain and record.domain is not None
                    and run.size < run.job.bounds[1]):
                assert run.job.worker_request is not None
                gpu, cpu, mem = run.job.worker_request
                growths.append(Growth(run.job.name, run.job.bounds[1] - run.size,
                                      Resources(gpu, cpu, mem), record.domain.value, True))
        wanted = growth_nodes(growths, self.types) if growths else {}
        index = {t.name: i for i, t in enumerate(self.types)}
        target = {(index[name], group): math.ceil(nodes - 1e-9)
                  for (name, group), nodes in wanted.items()}
        for key in set(target) | set(self.placeholders):
            self._keep_placeholders(key, target.get(key, 0), now)

    def _keep_placeholders(self, key: tuple[int, str], count: int, now: float) -> None:
        type_index, group = key
        mine = [name for name, pod in self.pods.items() if pod.is_placeholder
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
            NAMESPACE, name, f"uid-{name}", {"headstart.io/placeholder": "true"}, {},
            kind.placeholder_request, priority=-5, is_placeholder=True,
            placement_group=group,
            constraints=PodConstraints(node_selector=((self.type_label, kind.name),)))
        self.job_pods.setdefault("", {})[name] = None

    def _place_placeholder(self, name: str) -> None:
        pod = self.pods[name]
        for node in self._candidates(pod.constraints.node_selector[0][1], pod.placement_group):
            if self._fits(node, pod.request, True):
                self._put(node, pod, self.clock)
                return

    # ----- cluster-autoscaler
    def _scan(self, now: float) -> None:
        pending = [pod for name, pod in self.pods.items()
                   if not pod.scheduling_gates and name not in self.where]
        if not pending:
            return
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
            here = [n for n in self.nodes.values()
                    if n.type_index == type_index and n.group == group]
            bins = [[a + b for a, b in zip(n.real, n.held, strict=True)] for n in here]
            opened = 0
            for pod in sorted(pods, key=lambda p: (-p.request.gpu_milli, -p.request.cpu_milli)):
                need = (pod.request.gpu_milli, pod.request.cpu_milli, pod.request.memory_bytes)
                alloc = (kind.allocatable.gpu_milli, kind.allocatable.cpu_milli,
                         kind.allocatable.memory_bytes)
                slot = next((b for b in bins if all(u + r <= a for u, r, a in
                                                     zip(b, need, alloc, strict=True))), None)
                if slot is None:
                    if len(bins) >= self.config.max_nodes or any(r > a for r, a in
                                                                  zip(need, alloc, strict=True)):
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
        self.want_scan(now + self.config.sim.scan_s)

    def _group_of(self, pod: Pod) -> str | None:
        record = self.records.get(JobKey(NAMESPACE, pod.labels.get("headstart.io/job", "")))
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
        self.node_list.append(_Node(name, index, type_index, group, node, now, now + startup))
        self.nodes[name] = self.node_list[-1]
        self.launches += 1
        self.push(now + startup, READY, index)

    def _ready(self, index: int, now: float) -> None:
        node = self.node_list[index]
        node.ready = True
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
        self.want_round(now + self.config.interval_s)

    def _result(self) -> GangResult:
        measured = [run for run in self.jobs if not run.job.initial]
        resizes: dict[str, int] = {}
        for run in self.jobs:
            for kind, count in run.resizes.items():
                resizes[kind] = resizes.get(kind, 0) + count
        nan = math.nan
        return GangResult(
            self.name,
            np.array([run.job.submit_s for run in measured]),
            np.array([run.first_running if run.first_running is not None else nan
                      for run in measured]),
            np.array([run.finished if run.finished is not None else nan for run in measured]),
            np.array([run.job.bounds is not None for run in measured]),
            self.node_gpu_s, self.used_gpu_s, self.node_cost, resizes, self.launches,
            self.clock, self.placeholder_pods)

