"""Admission rounds planned in a process of their own, off the interpreter that answers
kube-scheduler (`admission.planning: process`, the default; `thread` plans in a worker
thread of the extender instead).

Why: a round plans in Python for a large part of a second with many jobs waiting. In
a worker thread it holds the interpreter while it packs, and kube-scheduler's filter
waits behind it (bench/bench_admission_rounds.py); a process has an interpreter of its
own. Sending it each round's whole snapshot costs several times the planning
(bench/bench_round_transfer.py), so the process keeps a replica of the extender's
cache instead: the cache journals every change (`ClusterCache.journal`), each round
sends the changes since the last one with the few inputs the cache does not hold, and
the replica replays them in order, so it is the cache as it was when the round was
sent. The process snapshots and plans there (`locality.admission.round.plan_round`,
its memo kept between rounds, as the thread keeps its own) and sends the plan back
with the pods and node states it shares with the replica sent by their names only;
they are read back from a copy of the cache's own dicts made when the round was sent
(pods and node states are immutable), so the plan holds the very objects the thread
would have given.

The journal starts with what the cache holds when the process starts (the extender
starts it before any list, so nothing): a process that dies is replaced by a new one
whose replica starts from the cache as it is then, as a restarted extender's would
(`deciding.RoundDecider` gives up after `PLANNER_STARTS` losses in a row and plans in a
thread).

Must not: decide admissions (the core does), read the cache off the event loop, talk
to the API.
"""

from __future__ import annotations

import asyncio
import io
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from extender.cache import Change, ClusterCache, pod_key
from locality.admission.config import AdmissionConfig
from locality.admission.model import GatedJob, Plan, Resize
from locality.admission.record import GangRecord, orphaned
from locality.admission.recovery import Eviction, Transition, recovery
from locality.admission.round import Inputs, RoundMemo, plan_round
from locality.admission.snapshot import CLUSTER_LEVEL, LevelRoom
from locality.config import LocalityConfig
from locality.model import JobKey, Node, NodeState, Pod, Resources
from locality.suspension import JobName, JobSuspension
from locality.worker_plans import WorkerPlan

PICKLE_PROTOCOL = 5
ANSWER_TIMEOUT_SECONDS = 120.0
"""The longest a round waits for the planning process's answer before taking it for
lost (stopped, or stuck in a loop): some 400 times a round at 20,000 nodes on 2 shared
cores (0.3 s: bench/bench_admission_rounds.py), so only a process that will not answer
reaches it; without it, a stuck process would end admissions silently."""
NICENESS = 10
"""Added to the planning process's nice value: where the extender's CPUs are short,
the process answering kube-scheduler runs first (raising it needs no privilege)."""


@dataclass(frozen=True)
class RoundAsk:
    """What a round plans from besides the cache: read by the admitter, not watched."""

    now: float
    groups: Any = None
    """The node groups' sizes from cluster-autoscaler's status (None: not read)."""
    nodepools: tuple[Mapping[str, Any], ...] = ()
    status_unread: str | None = None
    worker_plans: Mapping[str, WorkerPlan] = field(default_factory=dict)
    batch_jobs: Mapping[JobName, JobSuspension] = field(default_factory=dict)
    undisruptable: frozenset[JobKey] = frozenset()


def snapshot_of(cache: ClusterCache, gate: str, ask: RoundAsk) -> Inputs:
    """What a round plans from, read from `cache` (its owner's thread only): references
    to immutable pods and node states, copied containers. Cost: O(pods of the jobs
    with gated pods or records + nodes)."""
    gated = [pod for pod in cache.gated_pods() if gate in pod.scheduling_gates]
    records = dict(cache.gangs)
    # The cache's index of jobs by their waiting pods: no job_key_of per gated pod.
    jobs = {job for job in cache.jobs_with_waiting_pods()
            if any(gate in pod.scheduling_gates for pod in cache.waiting_pods_of_job(job))}
    jobs.update(records)
    return Inputs(gated, records, {job: tuple(cache.pods_of_job(job)) for job in jobs},
                  list(cache.nodes.values()), ask.groups, ask.nodepools, ask.status_unread,
                  ask.worker_plans, ask.batch_jobs, ask.undisruptable)


@dataclass(frozen=True, slots=True)
class JobFacts:
    """What the admitter keeps of a round's gated job for its writes (its record and
    PodGroup): the rest, its pods above all, stays with the plan."""

    size: int | None
    level: str
    policy: str
    """Its placement-group policy (`Locality` value)."""
    live_size: int | None = None
    """Its size less its members that finished (`GatedJob.live_size`): its PodGroup's
    minMember."""


def facts_of(jobs: Mapping[JobKey, GatedJob]) -> dict[JobKey, JobFacts]:
    return {key: JobFacts(job.size, job.level, job.policy.placement_group.value,
                          job.live_size)
            for key, job in jobs.items()}


def headroom_of(rooms: Mapping[str, LevelRoom]) -> list[dict[str, Any]]:
    """The nodes to come per domain of a round's rooms, below the whole cluster, as
    `/admission` lists them: all a round's rooms are kept for (the rest, each node's
    room, is large and read by nothing after the round)."""
    return [{"domain": f"{level}={value}", "node_group": new.group, "nodes": new.count,
             "source": new.source}
            for level, room in sorted(rooms.items()) if level != CLUSTER_LEVEL
            for value, domain in room.domains.items()
            for new in domain.new_nodes if new.count]


@dataclass(frozen=True)
class Decided:
    """A round's decisions, wherever planned: the plan, what the admitter keeps of its
    gated jobs and of its rooms, and what the admitted gangs' state calls for."""

    plan: Plan
    jobs: dict[JobKey, JobFacts]
    headroom: list[dict[str, Any]]
    after: list[Transition | Eviction | Resize]
    """Recovery's actions (`locality.admission.recovery`)."""
    orphans: list[GangRecord]
    """Records whose job has no pod left (`locality.admission.record.orphaned`)."""


def decide(inputs: Inputs, now: float, locality: LocalityConfig, config: AdmissionConfig,
           shapes: Mapping[str, Resources], wider: Mapping[str, Sequence[str]],
           memo: RoundMemo) -> Decided:
    """Everything a round works out from `inputs` (a worker thread or the planning
    process: the event loop only takes the snapshot and acts on the answer)."""
    planned, jobs, rooms = plan_round(inputs, now, locality, config, shapes, wider, memo)
    records = list(inputs.records.values())
    after = recovery(records, inputs.pods_of_job, now, config,
                     {state.node.name for state in inputs.nodes}, planned.waiting, rooms)
    return Decided(planned, facts_of(jobs), headroom_of(rooms), after,
                   orphaned(records, inputs.pods_of_job, now))


class PlannerGone(Exception):
    """The planning process stopped answering (it died, or its pipe broke)."""


class PlanningProcess:
    """A process that plans the admitter's rounds from a replica of `cache`. Its
    journal starts with what the cache holds now (nothing, when started before the
    watches, as the extender does), so its first round ships that whole."""

    def __init__(self, cache: ClusterCache, locality: LocalityConfig, config: AdmissionConfig,
                 shapes: Mapping[str, Resources], wider: Mapping[str, Sequence[str]]) -> None:
        self.cache = cache
        cache.journal = cache.as_changes() if cache.version else []
        # A plain child process (`python -m`), not multiprocessing's spawn, which would
        # import the extender's main module again; it talks over a socket of its own
        # (its stdout stays free for logs) and inherits stderr.
        ours, theirs = socket.socketpair()
        with theirs:
            self._process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        self._conn = Connection(ours.detach())
        self.loop_seconds = 0.0
        """What the last round held the event loop for (taking the journal, reading the
        answer)."""
        self.answer_timeout_seconds = ANSWER_TIMEOUT_SECONDS
        """How long a round waits for this process's answer before taking it for lost."""
        self._conn.send_bytes(pickle.dumps((locality, config, dict(shapes), dict(wider)),
                                           protocol=PICKLE_PROTOCOL))

    @property
    def pid(self) -> int:
        return self._process.pid

    async def plan(self, ask: RoundAsk) -> Decided:
        """The round's decisions for the cache as it is now (event loop: the journal is
        taken and the cache's pods and nodes copied here). The journal is pickled and the
        answer awaited in a worker thread; the answer is read here, on the loop, in one
        go: milliseconds (bench/bench_admission_rounds.py), and a short block delays one
        of kube-scheduler's requests, where a worker thread taking turns with the loop
        would delay every request it overlaps. `loop_seconds`: what this round held the
        loop for."""
        started = time.perf_counter()
        changes, self.cache.journal = self.cache.journal or [], []
        shared = self.cache.shared_objects()
        self.loop_seconds = time.perf_counter() - started
        answer = await asyncio.to_thread(self._exchange, changes, ask)
        started = time.perf_counter()
        unpickler = pickle.Unpickler(io.BytesIO(answer))
        unpickler.persistent_load = shared.__getitem__  # type: ignore[method-assign]
        reply = unpickler.load()
        self.loop_seconds += time.perf_counter() - started
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _exchange(self, changes: list[Change], ask: RoundAsk) -> bytes:
        try:
            self._conn.send_bytes(pickle.dumps((changes, ask), protocol=PICKLE_PROTOCOL))
            if not self._conn.poll(self.answer_timeout_seconds):
                raise PlannerGone(f"the planning process (pid {self.pid}) did not answer "
                                  f"within {self.answer_timeout_seconds:g} s")
            return self._conn.recv_bytes()
        except (EOFError, OSError) as error:
            raise PlannerGone(f"the planning process (pid {self.pid}) stopped answering: "
                              f"{type(error).__name__}") from None

    def close(self, lost: bool = False, exit_wait_seconds: float = 5.0) -> None:
        """Stop the process: at the admitter's shutdown it sees the pipe close and
        returns (killed if it has not within `exit_wait_seconds`: it holds nothing, and
        the extender's shutdown must fit the pod's grace period); a `lost` one (it may be
        stuck) is killed at once. The cache keeps no journal."""
        self.cache.journal = None
        self._conn.close()
        if lost:
            self._process.kill()
        try:
            self._process.wait(timeout=exit_wait_seconds)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=5)


# ---- the process -------------------------------------------------------------------


def main() -> None:
    """`python -m extender.admission.planning_process FD`: serve rounds on the socket FD, its
    first message the settings (locality, admission config, shapes, wider levels)."""
    conn = Connection(int(sys.argv[1]))
    os.nice(NICENESS)
    # The extender ends this process by closing the pipe. A signal sent to its whole
    # process group (Ctrl-C in a terminal) is the extender's to act on: it shuts down,
    # then closes the pipe, without a dead planner and a traceback in between.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        settings = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return
    _serve(conn, *settings)


def _serve(conn: Any, locality: LocalityConfig, config: AdmissionConfig,
           shapes: Mapping[str, Resources], wider: Mapping[str, Sequence[str]]) -> None:
    """The planning process: replay, snapshot, plan, answer, until the pipe closes. A
    planning error is sent back (the admitter raises it); the replica stands."""
    replica = ClusterCache(locality)
    memo = RoundMemo()
    while True:
        try:
            changes, ask = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return  # the extender closed the pipe, or exited
        for name, args in changes:
            getattr(replica, name)(*args)
        try:
            reply: Any = decide(snapshot_of(replica, config.gate, ask), ask.now, locality,
                                config, shapes, wider, memo)
        except Exception as error:  # noqa: BLE001 - sent back: the admitter logs it
            reply = error
        buffer = io.BytesIO()
        _Sender(buffer, replica).dump(reply)
        try:
            conn.send_bytes(buffer.getvalue())
        except OSError:
            return  # the extender is gone


class _Sender(pickle.Pickler):
    """Pickles a plan with the replica's own pods, node states and nodes as their names:
    a pod's as its key (most of a plan's names), the others as (kind, name)."""

    def __init__(self, file: io.BytesIO, replica: ClusterCache) -> None:
        super().__init__(file, protocol=PICKLE_PROTOCOL)
        self._replica = replica

    def persistent_id(self, obj: Any) -> str | tuple[str, str] | None:
        # Only the replica's own objects: a plan's derived copies travel whole.
        if isinstance(obj, Pod):
            key = pod_key(obj.namespace, obj.name)
            return key if self._replica.pod(obj.namespace, obj.name) is obj else None
        if isinstance(obj, NodeState) and self._replica.nodes.get(obj.node.name) is obj:
            return ("state", obj.node.name)
        if isinstance(obj, Node) and self._replica.node_object(obj.name) is obj:
            return ("node", obj.name)
        return None


if __name__ == "__main__":
    # Run as the importable module, not `__main__`: what it pickles back must name
    # classes the extender can find (`extender.admission.planning_process.JobFacts`).
    from extender.admission.planning_process import main as serve

    serve()
