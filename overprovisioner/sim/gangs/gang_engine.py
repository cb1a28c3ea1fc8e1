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
  maximum whose growth the admitter's last round did not hold back for a waiting job
  (`Plan.held_growth`: growth not likely to be used now, given back until it is not
  held) is growth the overprovisioner is told of, embedded into nodes per
  (type, placement group) by `overprovisioner.planner.known_plan.growth_nodes`, the
  code the service runs for worker plans; that many whole-node placeholders (priority
  -5, the type's `placeholder_request`) are kept there, so the autoscaler launches the
  nodes and the admitter's scale-out finds the room;
- a placeholder policy (`policy`, optional): every policy tick (the service's tick for
  predictive) the policy plans from what it sees of the cluster (`gangs.headroom`:
  demand as the service's recorder counts it, the gated pods and the announced growth
  as known demand) and its plan's placeholders replace the growth's own; a preempted
  one is recreated at once, and a policy that re-plans (the service) runs its tick
  again `wake_debounce` later, as `headstart simulate` replays it; no placeholder is
  kept past the trace's window.

The cluster's half (binding, cluster-autoscaler, placeholders) is `cluster.ClusterSide`;
this module is the owners' and the admitter's.

Bounds: nodes never fail; pods bind the moment they fit and end the moment their job
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
from kube.labels import JOB_LABEL, ROLE_LABEL
from locality.admission.config import AdmissionConfig, NodeGroup
from locality.admission.model import Plan, Resize, WaitCode
from locality.admission.record import GangRecord, GangState
from locality.admission.recovery import Eviction, Transition, recovery
from locality.admission.round import Inputs, RoundMemo, plan_round, wider_levels
from locality.constraints import PodConstraints
from locality.elastic import (
    KUBEFLOW_INDEX_LABEL,
    KUBEFLOW_TYPE_LABEL,
    PYTORCH_WORKER,
    Bounds,
    ElasticOwner,
)
from locality.model import JobKey, Pod
from overprovisioner.sim.gangs.cluster import (
    ARRIVE,
    EMPTY,
    FINISH,
    NAMESPACE,
    READY,
    REPLAN,
    ROUND,
    SCAN,
    TICK,
    ClusterSide,
    GangSimConfig,
    SimNode,
)
from overprovisioner.sim.gangs.headroom import PolicyHeadroom
from overprovisioner.sim.gangs.jobs import GangJob, speed
from overprovisioner.sim.gangs.ledger import Ledger
from overprovisioner.sim.gangs.pods import PodTable
from overprovisioner.sim.policies import Policy
from overprovisioner.sim.workload import Workload


@dataclass
class _Job:
    job: GangJob
    key: JobKey
    index: int  # its place in the run's job list (FINISH events name it)
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
    placeholders: int = 0
    """Placeholder pods created (announced growth; recreated after a preemption too)."""
    node_parts: dict[str, float] = field(default_factory=dict)
    """Node GPU-seconds by where they went (`ledger.NODE_PARTS`; they add up to
    node_gpu_s)."""
    work: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per job measured: its trace run (seconds at its trace size)."""
    trained: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Per job measured: the seconds it trained (its rate above zero)."""
    unfinished_all: int = 0
    """Jobs never finished among all, those running before the window too (their work
    is missing from the GPU-hours)."""
    node_gpu_s_by_type: tuple[float, ...] = ()
    """node_gpu_s per instance type, in the run's type order."""
    job_type: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per job measured: the type of its largest GPU request (its first pod's type
    for a job without GPUs)."""


class GangRun(ClusterSide):
    """One arm: `elastic` resizes the jobs that have bounds; `announce` tells the
    overprovisioner of their growth; `policy` keeps placeholders by its plan."""

    def __init__(self, workload: Workload, jobs: Sequence[GangJob], types: Sequence[InstanceType],
                 config: GangSimConfig, admission: AdmissionConfig, scaling: str,
                 elastic: bool, announce: bool, name: str, policy: Policy | None = None
                 ) -> None:
        self.w, self.types, self.config = workload, tuple(types), config
        self.admission, self.scaling, self.name = admission, scaling, name
        self.elastic, self.announce = elastic, announce
        self.locality = config.locality
        self.wider = wider_levels(self.locality)
        self.memo = RoundMemo()  # as the admitter keeps one: each round redoes what changed
        self.type_label = self.locality.instance_type_label
        self.group_label = self.locality.placement_group_labels[0]
        self.jobs = [_Job(job, JobKey(NAMESPACE, job.name), index,
                          job.workers if job.bounds else len(job.pods), job.work_s)
                     for index, job in enumerate(jobs)]
        self.by_name = {run.job.name: run for run in self.jobs}
        self.rng = np.random.default_rng([config.sim.seed, 1])
        self.pods = PodTable()
        self.cluster_version = 0  # ClusterSide.state: nodes, records, finishes
        self.idle: dict[str, tuple[int, int]] = {}  # ClusterSide.unchanged
        self.skipped = 0  # binds, scans and ticks skipped as unchanged
        self.job_pods: dict[str, dict[str, None]] = {}
        self.records: dict[JobKey, GangRecord] = {}
        self.nodes: dict[str, SimNode] = {}  # live ones (launched, not removed)
        self.node_list: list[SimNode] = []  # every node ever launched, by index
        self.where: dict[str, str] = {}  # bound pod -> node
        self.placeholders: dict[tuple[int, str], int] = {}  # wanted per (type, group)
        self.held_growth: frozenset[JobKey] = frozenset()  # the last round's
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.round_at = math.inf
        self.scan_at = math.inf
        self.last_scan = -math.inf
        self.last_scale_up = -math.inf
        self.launches = 0
        self.placeholder_pods = 0
        self.node_gpu_s = self.used_gpu_s = self.node_cost = 0.0
        self.node_gpu_s_by_type = [0.0] * len(self.types)
        self.used_gpu = 0  # milli-GPUs bound now
        self.clock = workload.start_s
        self.groups = [NodeGroup(f"{t.name}-{g}", t.name, g, config.max_nodes,
                                 allocatable=t.allocatable,
                                 labels={self.type_label: t.name, self.group_label: g})
                       for t in self.types for g in config.groups]
        self.admission = replace(admission, node_groups=tuple(self.groups))
        self.ledger = Ledger([sum(self._request(run.job, row)[0] for row in run.job.pods) / 1000
                              for run in self.jobs], workload.start_s)
        self.headroom: PolicyHeadroom | None = None
        self.replan_at = math.inf
        if policy is not None:
            mask = getattr(policy, "announced", None)
            announced = None if mask is None else frozenset(
                run.job.name for run in self.jobs if any(mask[row] for row in run.job.pods))
            self.headroom = PolicyHeadroom(policy, self.types, config.groups,
                                           (workload.start_s, workload.end_s), announced,
                                           lambda name: self.nodes[name].group)
            self.pods.listener = self.headroom.demand.change

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
        if self.announce or self.headroom is not None:
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
                if self.headroom is not None:
                    if time < self.w.end_s:  # a policy keeps placeholders up to the
                        # window's end, and none past it (`gangs.headroom`)
                        self.push(time + self.headroom.policy.tick_s, TICK)
                elif self.heap:  # else nothing is left to change: the replay is over
                    self.push(time + self.config.tick_s, TICK)
            elif kind == REPLAN:
                self.replan_at = math.inf
                self._tick(time, again=True)
            elif kind == ROUND and time >= self.round_at - 1e-9:
                self.round_at = math.inf
                self._round(time)
            self._bind(time)
        return self._result()

    def _advance(self, time: float) -> None:
        dt = time - self.clock
        if dt > 0:
            live = [(self.types[n.type_index], n) for n in self.nodes.values()]
            self.node_gpu_s += dt * sum(kind.gpus for kind, _ in live)
            for kind, node in live:
                self.node_gpu_s_by_type[node.type_index] += dt * kind.gpus
            self.node_cost += dt / 3600 * sum(kind.price_per_hour for kind, _ in live)
            self.used_gpu_s += dt * self.used_gpu / 1000
            self.ledger.advance(dt, ((kind.gpus, n.ready, n.real[0], n.held[0], bool(n.pods))
                                     for kind, n in live))
            self.clock = time

    def preempted(self, now: float) -> None:
        """A placeholder was preempted: a policy that re-plans (the service's pod watch
        wakes its loop) runs its tick again `wake_debounce` later (later preemptions join
        that re-plan), as `headstart simulate` replays it."""
        if self.headroom is None or not self.headroom.policy.replans:
            return
        latency = self.config.sim.service.placeholders.wake_debounce_s
        if latency > 0 and self.replan_at == math.inf and now < self.w.end_s:
            self.replan_at = now + latency
            self.push(self.replan_at, REPLAN)

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
        gpu, cpu, mem = self._request(job, row)
        labels = {JOB_LABEL: job.name, ROLE_LABEL: str(self.w.role[row])}
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

    def _request(self, job: GangJob, row: int) -> tuple[int, int, int]:
        """A pod's (GPU milli, CPU milli, bytes): its row's, a worker's the owner's one
        template."""
        if job.worker_request is not None and str(self.w.role[row]) == "worker":
            return job.worker_request
        gpu, cpu, mem = (int(v) for v in self.w.request[row])
        return gpu, cpu, mem

    def _owner(self, run: _Job) -> ElasticOwner:
        low, high = run.job.bounds or (run.size, run.size)
        return ElasticOwner("PyTorchJob", NAMESPACE, run.job.name, run.size, Bounds(low, high),
                            uid=f"uid-{run.job.name}", others=len(run.job.fixed))

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
        self.job_pods[pod.labels.get(JOB_LABEL, "")].pop(name, None)
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
        self.ledger.training(run.index, now, rate > 0)
        run.version += 1
        if rate > 0:
            self.push(now + max(run.work_left, 0.0) / rate, FINISH,
                      run.index * 1_000_000 + run.version % 1_000_000)

    def _finish(self, arg: int, now: float) -> None:
        run = self.jobs[arg // 1_000_000]
        if run.finished is not None or run.version % 1_000_000 != arg % 1_000_000:
            return
        run.work_left, run.rate, run.finished = 0.0, 0.0, now
        self.ledger.training(run.index, now, False)
        self.cluster_version += 1
        for name in list(self.job_pods[run.job.name]):
            self._delete(name)
        self.records.pop(run.key, None)
        self.want_round(now + self.config.interval_s)

    # ----- the admitter
    def _round(self, now: float) -> None:
        self.cluster_version += 1  # records, sizes and recovery change here
        gated = [pod for pod in self.pods.values() if self.admission.gate in pod.scheduling_gates]
        keys = {JobKey(NAMESPACE, pod.labels[JOB_LABEL]) for pod in gated}
        keys.update(self.records)
        by_job = {key: tuple(self.pods[name] for name in self.job_pods.get(key.name, ()))
                  for key in keys}
        inputs = Inputs(gated, dict(self.records), by_job, self._node_states(),
                        self._group_sizes())
        planned, gathered, rooms = plan_round(inputs, now, self.locality, self.admission,
                                              None, self.wider, self.memo)
        self.held_growth = frozenset(planned.held_growth)
        after = recovery(list(self.records.values()), inputs.pods_of_job, now,
                         self.admission, {state.node.name for state in inputs.nodes},
                         planned.waiting, rooms)
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
                    requeue_at=action.requeue_at,
                    evictions=record.evictions + action.counted)
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
                times.append(start)
                if self.admission.head_hold_seconds is not None:
                    times.append(start + self.admission.head_hold_seconds)
        later = [t + 1e-3 for t in times if t + 1e-3 > now]
        return min(later) if later else None

    def _result(self) -> GangResult:
        measured = [run for run in self.jobs if not run.job.initial]
        resizes: dict[str, int] = {}
        for run in self.jobs:
            for kind, count in run.resizes.items():
                resizes[kind] = resizes.get(kind, 0) + count
        nan = math.nan
        self.ledger.close(self.clock)
        done = [run.job.work_s - max(run.work_left - run.rate * (self.clock - run.since), 0.0)
                for run in self.jobs]
        return GangResult(
            self.name,
            np.array([run.job.submit_s for run in measured]),
            np.array([run.first_running if run.first_running is not None else nan
                      for run in measured]),
            np.array([run.finished if run.finished is not None else nan for run in measured]),
            np.array([run.job.bounds is not None for run in measured]),
            self.node_gpu_s, self.used_gpu_s, self.node_cost, resizes, self.launches,
            self.placeholder_pods, self.ledger.node_parts(done),
            np.array([run.job.work_s for run in measured]),
            np.array([self.ledger.trained_s(run.index) for run in measured]),
            sum(1 for run in self.jobs if run.finished is None),
            tuple(self.node_gpu_s_by_type),
            np.array([self._job_type(run.job) for run in measured], dtype=np.int64))

    def _job_type(self, job: GangJob) -> int:
        rows = sorted(job.pods, key=lambda row: -int(self.w.request[row][0]))
        return int(self.w.bucket[rows[0]])

