"""The discrete-event loop: a job table replayed on a simulated cluster under one policy.

Decides the order of events and what each does:
- arrival: the pod is scheduled at once if a ready node fits (scheduler), preempting a
  placeholder when that is the only way; otherwise it is pending;
- finish: the pod's node frees; pending pods of that type retry, then placeholders;
- node ready: pending pods retry, then pending placeholders of its group take it;
- CA scan (every scan_s, only while some type has a change CA has not seen): scale up
  for pending pods and pending placeholders (`autoscaler.scale_up`), except while
  every one of them is new (CA's `allPodsAreNew`: the oldest younger than 2 s, or the
  oldest asking for GPUs younger than 30 s; `_all_pods_new`); nodes empty for
  unneeded_s are removed (a placeholder's node is not empty: CA keeps it), but none
  within scale_down_delay_after_add_s of a scale-up (`--scale-down-delay-after-add`);
- policy tick (every `policy.tick_s`: the service's tick for predictive and the
  oracles, CPA's poll for proportional, peer_tick_s for the others): demand is
  recorded (for policies that forecast; the running and pending demand of the pods a
  policy's `announced` mask names is also summed apart), the policy plans, and the placeholder count
  of each (type, group) moves to the plan: new placeholders are pending until a node
  takes them, removed ones free their node;
- a preempted placeholder is recreated by its ReplicaSet at once (pending, so CA may
  launch a node for it at its next scan); for the service-driven policies
  (`policy.replans`) the service's pod watch wakes its loop, which runs the tick again
  the service config's `placeholders.wake_debounce` after the first preemption (later
  ones join that re-plan; 0 = no watch, the next tick only; the tick's own work is
  taken as instant): it re-records demand, re-forecasts, re-plans, which cancels the
  replacement when the plan no longer wants it. The peers' controllers do not react.
Events at one instant run finishes, then node-readies, then arrivals, then scans,
then policy ticks, so freed capacity is visible to what arrives at the same second.

Bounds, stated as a simulation should: pods are pinned to one instance type; a node
starts in the configured time spread uniformly by +-startup_spread (SimConfig) and
never fails. CA scales down empty nodes; a node still running pods only when they may
be drained (`SimConfig.drainable_pods`) and it is under CA's utilization threshold for
`unneeded_s` (GPU nodes by their GPU share) with every pod fitting on another node
(`sim.scale_down`, DRAIN_CHECK): the pods move there and the node goes. By default the
pods are the Kubeflow training operator's: a PyTorchJob, TFJob or MPIJob is a custom
controller, and `--skip-nodes-with-custom-controller-pods` (default true) keeps their
nodes (simulator/drainability/rules/replicated); pods owned by a batch Job (JobSet,
TrainJob, plain Jobs) are drainable unless they carry
`cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`. A node holding only a
placeholder is at 100% GPU utilisation, above `--scale-down-gpu-utilization-threshold`
(0.5), so CA keeps it. A
preempted placeholder frees its node at once (pause containers stop in a moment); the
scheduler is instantaneous, so every second a pod waits is waiting for capacity.
The run works on its own copies: the workload and catalog are never mutated.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from bucketing.catalog import Catalog
from overprovisioner.planner.plan import Plan
from overprovisioner.sim.autoscaler import all_pods_new, scale_up
from overprovisioner.sim.build import make_policy, placement_groups
from overprovisioner.sim.cluster import READY, REMOVED, Cluster
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.policies import Peer, TickView
from overprovisioner.sim.recording import Recording, add_request, embedded
from overprovisioner.sim.result import RunResult, collect
from overprovisioner.sim.scale_down import drain_targets, underused
from overprovisioner.sim.scheduler import (
    DefaultScorer,
    HeadstartScorer,
    JobBook,
    candidates_for,
    where_in_cluster,
)
from overprovisioner.sim.workload import Workload, bucket_vectors

FINISH, READY_EVENT, SCAN, TICK, EMPTY_CHECK, REPLAN, DRAIN_CHECK = 0, 1, 3, 4, 5, 6, 7
ARRIVAL_ORDER = 2  # arrivals run after finishes and readies at the same instant
SAMPLE_S = 60.0  # the timeline (plots) keeps at most one row per this many seconds


def run(workload: Workload, catalog: Catalog, policy_name: str,
        config: SimConfig | None = None) -> RunResult:
    """Replay `workload` under `policy_name`; see the module docstring for the rules."""
    config = (config or SimConfig()).validate()
    return _Run(workload, catalog, policy_name, config).execute()


class _Run:
    def __init__(self, workload: Workload, catalog: Catalog, policy_name: str,
                 config: SimConfig) -> None:
        self.w = workload
        self.config = config
        self.groups = placement_groups(workload, config)
        self.policy = make_policy(policy_name, workload, catalog, config, self.groups)
        self.rng = np.random.default_rng(config.seed)
        # Start-up times draw from their own stream: the spread changes no tie-break.
        self.startup_rng = np.random.default_rng([config.seed, 1])
        n_types = len(workload.types)
        self.requests = [tuple(int(v) for v in row) for row in workload.request]
        self.bucket = workload.bucket.tolist()
        smallest = []
        for b in range(n_types):
            mine = workload.request[workload.bucket == b]
            smallest.append(tuple(int(v) for v in mine.min(axis=0)) if len(mine) else (0, 0, 0))
        self.cluster = Cluster(workload.types, self.groups, smallest)
        self.fits_nowhere: dict[tuple[int, tuple[int, int, int]], int] = {}
        self.jobs = JobBook(workload.job.tolist(), workload.role.tolist(), self.requests,
                            workload.job_names, where_in_cluster(self.cluster))
        if config.scoring == "headstart":
            self.scorer = HeadstartScorer(self.cluster, self.jobs, self.bucket)
        else:
            self.scorer = DefaultScorer()
        self.startup = [config.gpu_startup_s if t.gpus > 0 else config.cpu_startup_s
                        for t in workload.types]
        self.vectors = bucket_vectors(workload.types) * np.array([1000.0, 1000.0, 1024.0**3])
        self.placed_at = np.full(len(workload), np.nan)
        self.node_of = [-1] * len(workload)
        self.pending: list[dict[int, None]] = [{} for _ in range(n_types)]
        self.pending_placeholders = {
            (b, g): 0 for b, names in self.groups.items() for g in names
        }
        # (type, group) -> since when it has had pending placeholders (`_pend_placeholders`).
        self.placeholders_since: dict[tuple[int, str], float] = {}
        self.last_scale_up = -math.inf
        # Ticks with a plan, and those where a limit held some bucket's plan back.
        self.planned_ticks = 0
        self.capped_ticks = {"max": 0, "cost_cap": 0}
        # Requests summed per type in integer units (Python ints: exact and fast here).
        self.running_sum = [[0, 0, 0] for _ in range(n_types)]
        self.pending_sum = [[0, 0, 0] for _ in range(n_types)]
        # The pods the policy calls announced (known demand that arrived: the service
        # keeps it out of the forecaster's history).
        mask = getattr(self.policy, "announced", None)
        self.announced = [bool(v) for v in mask] if mask is not None else [False] * len(workload)
        self.vector_list = [[float(v) for v in row] for row in self.vectors]
        self.dirty = [False] * n_types
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.scan_at = math.nan
        self.preemptions = 0
        self.evictions = 0
        self.ticks: list[float] = []
        self.demand_rows: list[np.ndarray] = []
        self.capacity_rows: list[list[int]] = []
        self.placeholder_rows: list[list[int]] = []
        self.forecast_rows: list[np.ndarray] = []
        self.tick_s = float(self.policy.tick_s)
        n_ticks = int(math.ceil((workload.end_s - workload.start_s) / self.tick_s)) + 1
        # The history the service's recorder would write, for the policies that read it.
        self.recording = (Recording(workload.types, self.groups, self.vectors, n_ticks,
                                    mask is not None)
                          if self.policy.needs_history else None)
        self.next_sample = -math.inf
        # Bumped on every change a policy could see; a tick with an unchanged version
        # reuses the previous tick's observation instead of recomputing it.
        self.version = 0
        self.replan_pending = False
        self.last_tick = 0
        self.seen_version = -1
        self.cached_view: tuple = ()

    # ----- event plumbing
    def push(self, time: float, kind: int, arg: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (time, kind, self.seq, kind, arg))

    def want_scan(self, now: float, type_index: int) -> None:
        self.dirty[type_index] = True
        if self.scan_at == self.scan_at:  # already scheduled
            return
        grid = self.config.scan_s
        offset = now - self.w.start_s
        self.scan_at = self.w.start_s + math.ceil(offset / grid - 1e-9) * grid
        if self.scan_at <= now - 1e-9:
            self.scan_at += grid
        self.push(self.scan_at, SCAN, 0)

    def check_empty(self, node, now: float) -> None:
        if node.status == READY and node.empty_since == now:
            self.push(self._on_scan_grid(now + self.config.unneeded_s), EMPTY_CHECK, node.index)

    def check_underused(self, node, now: float) -> None:
        """With drainable pods: a node with real pods under CA's utilization threshold
        is unneeded from now; CA drains it `unneeded_s` later if it still is
        (`sim.scale_down`)."""
        if (node.status == READY and node.real_pods and not node.placeholder
                and node.under_since != node.under_since and underused(node, self.config)):
            node.under_since = now
            self.push(self._on_scan_grid(now + self.config.unneeded_s), DRAIN_CHECK,
                      node.index)

    def _on_scan_grid(self, time: float) -> float:
        """The first CA loop at or after `time`."""
        grid = self.config.scan_s
        return self.w.start_s + math.ceil((time - self.w.start_s) / grid - 1e-9) * grid

    # ----- the loop
    def execute(self) -> RunResult:
        w = self.w
        end = w.end_s
        self._start_initial()
        self.push(w.start_s, TICK, 0)
        submit = w.submit_s
        initial = w.initial
        pointer = 0
        n = len(w)
        while pointer < n and initial[pointer]:
            pointer += 1
        heap = self.heap
        while True:
            next_arrival = submit[pointer] if pointer < n else math.inf
            if heap and (heap[0][0], heap[0][1]) <= (next_arrival, ARRIVAL_ORDER):
                time, _, _, kind, arg = heapq.heappop(heap)
                if time >= end:
                    break
                if kind == FINISH:
                    self._finish(arg, time)
                elif kind == READY_EVENT:
                    self._node_ready(arg, time)
                elif kind == SCAN:
                    self._scan(time)
                elif kind == TICK:
                    self._tick(arg, time)
                elif kind == EMPTY_CHECK:
                    self._empty_check(arg, time)
                elif kind == REPLAN:
                    self._replan(time)
                elif kind == DRAIN_CHECK:
                    self._drain_check(arg, time)
            else:
                if next_arrival >= end:
                    break
                self._arrive(pointer, next_arrival)
                pointer += 1
        return collect(self)

    def _start_initial(self) -> None:
        """Pods running before the trace start run at t0 on nodes that already exist."""
        w = self.w
        now = w.start_s
        for pod in np.flatnonzero(w.initial):
            pod = int(pod)
            self.jobs.submitted(pod)
            if not self._try_schedule(pod, now):
                b = self.bucket[pod]
                names = self.groups[b]
                group = names[int(self.rng.integers(len(names)))]
                node = self.cluster.add_node(b, group, now, initial=True)
                self._bind(pod, node, now)

    # ----- handlers
    def _arrive(self, pod: int, now: float) -> None:
        self.jobs.submitted(pod)
        if self._try_schedule(pod, now):
            return
        b = self.bucket[pod]
        self.version += 1
        self.pending[b][pod] = None
        add_request(self.pending_sum[b], self.requests[pod], 1)
        if self.recording is not None:
            self.recording.move(b, None, self.requests[pod], 1, self.announced[pod])
        self.want_scan(now, b)

    def _try_schedule(self, pod: int, now: float) -> bool:
        b = self.bucket[pod]
        request = self.requests[pod]
        job = self.jobs.job_of[pod]
        version = self.cluster.room_version[b]
        if self.fits_nowhere.get((b, request)) == version:
            return False  # no node of the type gained room since this shape fitted nowhere
        job_nodes = self.jobs.nodes_used.get(job, set()) if job >= 0 else set()
        candidates, preempt = candidates_for(self.cluster, b, request, job_nodes)
        if not candidates:
            self.fits_nowhere[(b, request)] = version
            return False
        node = candidates[0] if len(candidates) == 1 else self.scorer.choose(
            pod, candidates, request)
        if preempt:
            self.cluster.set_placeholder(node, False, now)
            # The ReplicaSet recreates the preempted placeholder at once (pending); the
            # service sees the preemption on its pod watch and re-plans shortly after.
            self._pend_placeholders((b, node.group), 1, now)
            self.preemptions += 1
            self.want_scan(now, b)
            latency = self.config.service.placeholders.wake_debounce_s
            if latency > 0 and self.policy.replans and not self.replan_pending:
                self.replan_pending = True
                self.push(now + latency, REPLAN, 0)
        self._bind(pod, node, now)
        return True

    def _bind(self, pod: int, node, now: float) -> None:
        self.version += 1
        gpu, cpu, mem = self.requests[pod]
        self.cluster.bind_real(node, pod, gpu, cpu, mem, now)
        if node.under_since == node.under_since and not underused(node, self.config):
            node.under_since = math.nan
        self.placed_at[pod] = now
        self.node_of[pod] = node.index
        self.jobs.bound(pod, node.index)
        add_request(self.running_sum[self.bucket[pod]], self.requests[pod], 1)
        if self.recording is not None:
            self.recording.move(self.bucket[pod], node.group, self.requests[pod], 1,
                                self.announced[pod])
        self.push(now + float(self.w.duration_s[pod]), FINISH, pod)

    def _finish(self, pod: int, now: float) -> None:
        self.version += 1
        node = self.cluster.nodes[self.node_of[pod]]
        gpu, cpu, mem = self.requests[pod]
        self.cluster.unbind_real(node, pod, gpu, cpu, mem, now)
        add_request(self.running_sum[self.bucket[pod]], self.requests[pod], -1)
        if self.recording is not None:
            self.recording.move(self.bucket[pod], node.group, self.requests[pod], -1,
                                self.announced[pod])
        self.jobs.finished(pod)
        self._retry(node.type_index, now)
        self.check_empty(node, now)
        if self.config.drainable_pods:
            self.check_underused(node, now)

    def _node_ready(self, index: int, now: float) -> None:
        node = self.cluster.nodes[index]
        if node.status == REMOVED:
            return
        self.version += 1
        self.cluster.node_ready(node, now)
        self._retry(node.type_index, now)
        self.check_empty(node, now)
        self.dirty[node.type_index] = True

    def _retry(self, b: int, now: float) -> None:
        """Pending pods of type b (oldest first), then pending placeholders, take free room."""
        queue = self.pending[b]
        open_count = self.cluster.open_count
        if queue and open_count[b]:
            failed_shapes: set[tuple[int, int, int]] = set()
            for pod in list(queue):
                if not open_count[b]:
                    break
                request = self.requests[pod]
                if request in failed_shapes:
                    continue
                if self._try_schedule(pod, now):
                    del queue[pod]
                    add_request(self.pending_sum[b], request, -1)
                    if self.recording is not None:
                        self.recording.move(b, None, request, -1, self.announced[pod])
                else:
                    failed_shapes.add(request)
        for group in self.groups[b]:
            key = (b, group)
            empty = self.cluster.empty[key]
            while self.pending_placeholders[key] > 0 and empty:
                node = self.cluster.nodes[min(empty)]
                self.cluster.set_placeholder(node, True, now)
                self._pend_placeholders(key, -1, now)

    def _pend_placeholders(self, key: tuple[int, str], change: int, now: float) -> None:
        """`change` more (or fewer) pending placeholders of (type, group); keeps since
        when the key has had some pending (their oldest's creation, FIFO)."""
        before = self.pending_placeholders[key]
        after = before + change
        self.pending_placeholders[key] = after
        if after <= 0:
            self.placeholders_since.pop(key, None)
        elif before <= 0:
            self.placeholders_since[key] = now

    def _startup(self, b: int) -> float:
        """Seconds from CA's request until a node of type b takes pods: the configured
        start-up, spread uniformly by +-startup_spread of it (`SimConfig`)."""
        spread = self.config.startup_spread
        base = self.startup[b]
        if spread <= 0:
            return base
        return base * (1.0 + spread * (2.0 * self.startup_rng.random() - 1.0))

    def _all_pods_new(self, now: float) -> bool:
        """CA's `allPodsAreNew` on this run's pending pods and placeholders
        (`autoscaler.all_pods_new`)."""
        oldest = oldest_gpu = math.inf
        submit = self.w.submit_s
        for b, queue in enumerate(self.pending):
            gpu_type = self.w.types[b].gpus > 0
            for pod in queue:  # arrival order: the first is the oldest
                created = float(submit[pod])
                oldest = min(oldest, created)
                if self.requests[pod][0] > 0:
                    oldest_gpu = min(oldest_gpu, created)
                    break
                if not gpu_type:
                    break
        for (b, _), since in self.placeholders_since.items():
            oldest = min(oldest, since)
            if self.w.types[b].gpus > 0:
                oldest_gpu = min(oldest_gpu, since)
        return all_pods_new(now, oldest, oldest_gpu, self.config.new_pod_delay_s,
                            self.config.new_gpu_pod_delay_s)

    def _scan(self, now: float) -> None:
        self.scan_at = math.nan
        if self._all_pods_new(now):
            # No scale-up this loop; the next loop looks again (the dirty marks stay).
            self.scan_at = now + self.config.scan_s
            self.push(self.scan_at, SCAN, 0)
            return
        for b in range(len(self.w.types)):
            if not self.dirty[b]:
                continue
            self.dirty[b] = False
            requests = [self.requests[p] for p in self.pending[b]]
            placeholders = {
                g: self.pending_placeholders[(b, g)] for g in self.groups[b]
                if self.pending_placeholders[(b, g)] > 0
            }
            if not requests and not placeholders:
                continue
            self.version += 1
            launch = scale_up(self.cluster, b, requests, placeholders, self.rng,
                              self.config.max_nodes_per_group)
            if launch:
                self.last_scale_up = now
            for group, count in launch.items():
                for _ in range(count):
                    node = self.cluster.add_node(b, group, now, initial=False)
                    self.push(now + self._startup(b), READY_EVENT, node.index)

    def _empty_check(self, index: int, now: float) -> None:
        node = self.cluster.nodes[index]
        if node.status != READY or node.empty_since != node.empty_since:
            return
        if now - node.empty_since < self.config.unneeded_s - 1e-6:
            return
        if self._in_cooldown(now, EMPTY_CHECK, index):
            return
        self.version += 1
        self.cluster.remove_node(node, now)

    def _in_cooldown(self, now: float, kind: int, index: int) -> bool:
        """CA's scale-down cooldown after a scale-up (`--scale-down-delay-after-add`,
        isScaleDownInCooldown): while it lasts, the node stays unneeded and its check
        (`kind`) runs again at the first loop after it."""
        resume = self.last_scale_up + self.config.scale_down_delay_after_add_s
        if now < resume - 1e-6:
            self.push(self._on_scan_grid(resume), kind, index)
            return True
        return False

    def _drain_check(self, index: int, now: float) -> None:
        """A node with drainable pods that has been under the threshold for `unneeded_s`:
        CA moves its pods to nodes that take them and removes it (`sim.scale_down`)."""
        node = self.cluster.nodes[index]
        since = node.under_since
        if node.status != READY or since != since or node.placeholder or not node.real_pods:
            return
        if now - since < self.config.unneeded_s - 1e-6:
            return  # a later mark's own check comes
        if not underused(node, self.config):
            node.under_since = math.nan
            return
        if self._in_cooldown(now, DRAIN_CHECK, index):
            return
        moves = drain_targets(self.cluster, node, self.requests)
        if moves is None:
            # Its pods fit nowhere else now: it is not unneeded; judged again later.
            node.under_since = now
            self.push(self._on_scan_grid(now + self.config.unneeded_s), DRAIN_CHECK, index)
            return
        self.version += 1
        for pod, target in moves:
            self._move(pod, node, target, now)
        self.cluster.remove_node(node, now)

    def _move(self, pod: int, node, target, now: float) -> None:
        """CA evicts `pod` from `node` and it runs on `target` until its end time."""
        gpu, cpu, mem = self.requests[pod]
        b = self.bucket[pod]
        self.cluster.unbind_real(node, pod, gpu, cpu, mem, now)
        self.cluster.bind_real(target, pod, gpu, cpu, mem, now)
        self.node_of[pod] = target.index
        self.jobs.finished(pod)
        self.jobs.bound(pod, target.index)
        if self.recording is not None:
            self.recording.move(b, node.group, self.requests[pod], -1, self.announced[pod])
            self.recording.move(b, target.group, self.requests[pod], 1, self.announced[pod])
        self.evictions += 1

    def _tick(self, tick: int, now: float, again: bool = False) -> None:
        """One policy tick; `again` = the service's tick run again after a preemption
        (same tick index: demand re-recorded, no timeline row, no next tick pushed)."""
        self.last_tick = tick
        if not again and self._peer_steady(now):
            # A peer whose count per type is what already runs would plan exactly what
            # runs (the planner keeps placeholders where they are): nothing to do.
            self._sample(now, None)
            self.push(now + self.tick_s, TICK, tick + 1)
            return
        if self.version != self.seen_version:
            self.cached_view = self._observe()
            self.seen_version = self.version
        in_use, pending, free, held, _, _ = self.cached_view
        if self.recording is not None:
            self.recording.record(tick)
        view = TickView(now, tick, in_use, pending, free, held,
                        tuple(self.cluster.ready_count), self.recording,
                        self.w.start_s + tick * self.tick_s)
        plan, forecast = self.policy.decide(view)
        if plan is not None:
            self._apply(plan, now)
            if not again:
                self.planned_ticks += 1
                for cap in {b.capped_by for b in plan.buckets} & {"max", "cost_cap"}:
                    self.capped_ticks[cap] += 1
        if again:
            return
        self._sample(now, forecast)
        self.push(now + self.tick_s, TICK, tick + 1)

    def _peer_steady(self, now: float) -> bool:
        """A peer policy wants, for every type, as many placeholders as exist (running or
        pending): its plan would change nothing."""
        if not isinstance(self.policy, Peer):
            return False
        wanted = self.policy.counts(now, tuple(self.cluster.ready_count))
        for b, count in enumerate(wanted):
            have = sum(len(self.cluster.with_placeholder[(b, g)])
                       + self.pending_placeholders[(b, g)] for g in self.groups[b])
            if have != count:
                return False
        return True

    def _sample(self, now: float, forecast: np.ndarray | None) -> None:
        """One timeline row, at most every SAMPLE_S seconds."""
        if now < self.next_sample:
            return
        if self.version != self.seen_version:
            self.cached_view = self._observe()
            self.seen_version = self.version
        in_use, pending, _, _, capacity, placeholders = self.cached_view
        self.next_sample = now + SAMPLE_S - 1e-6
        self.ticks.append(now)
        self.demand_rows.append(in_use + pending)
        self.capacity_rows.append(capacity)
        self.placeholder_rows.append(placeholders)
        self.forecast_rows.append(forecast)

    def _replan(self, now: float) -> None:
        """The service's tick again, on the current cluster (its pod watch woke it)."""
        self.replan_pending = False
        self._tick(self.last_tick, now, again=True)

    def _observe(self) -> tuple:
        n_types = len(self.w.types)
        in_use = self._embedded(self.running_sum)
        pending = self._embedded(self.pending_sum)
        free = {key: len(nodes) for key, nodes in self.cluster.empty.items()}
        held = {
            key: len(self.cluster.with_placeholder[key]) + self.pending_placeholders[key]
            for key in self.pending_placeholders
        }
        placeholders = [sum(held[(b, g)] for g in self.groups[b]) for b in range(n_types)]
        return in_use, pending, free, held, list(self.cluster.live_count), placeholders

    def _embedded(self, sums: list[list[int]]) -> np.ndarray:
        """Per type, the embedding's count (the recorder's rule, `recording.embedded`)."""
        return np.array(embedded(sums, self.vector_list), dtype=np.float64)

    def _apply(self, plan: Plan, now: float) -> None:
        for b, kind in enumerate(self.w.types):
            for group in self.groups[b]:
                key = (b, group)
                wanted = plan.wanted(kind.name, group)
                bound = self.cluster.with_placeholder[key]
                have = len(bound) + self.pending_placeholders[key]
                if wanted > have:
                    self.version += 1
                    self._pend_placeholders(key, wanted - have, now)
                    self._retry(b, now)
                    if self.pending_placeholders[key] > 0:
                        self.want_scan(now, b)
                elif wanted < have:
                    self.version += 1
                    surplus = have - wanted
                    cancel = min(surplus, self.pending_placeholders[key])
                    self._pend_placeholders(key, -cancel, now)
                    surplus -= cancel
                    # Newest nodes first: the oldest placeholders keep their nodes.
                    for index in sorted(bound, reverse=True)[:surplus]:
                        node = self.cluster.nodes[index]
                        self.cluster.set_placeholder(node, False, now)
                        self.check_empty(node, now)
