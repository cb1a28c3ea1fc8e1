"""Admission rounds planned in a process of their own (`extender.admission.planning_process`):
the process's replica, fed the cache's journal, plans what the extender's own cache
would give, with the extender's own pod and node objects in the plan; a lost process
leaves rounds to a worker thread; the production order (planner before the watches)
admits a job against the fake API server."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import replace

import pytest

from common.errors import ConfigError
from extender.admission import planning_process as planner_module
from extender.admission.admitter import Admitter
from extender.admission.planning_process import PlanningProcess, RoundAsk, decide, snapshot_of
from extender.cache import CHANGES, ClusterCache
from extender.sync import ClusterSync
from locality.admission.config import GATE, AdmissionConfig
from locality.admission.model import Domain
from locality.admission.record import GangRecord, GangState
from locality.admission.recovery import Eviction
from locality.admission.round import RoundMemo, wider_levels
from locality.config import LocalityConfig
from locality.model import JobKey
from locality.parse import parse_node, parse_pod
from tests.extender.admission.test_admitter import ADMISSION, gated_pod, pod_of
from tests.extender.builders import make_node
from tests.extender.test_sync import FAST, eventually

LOCALITY = LocalityConfig()
CONFIG = AdmissionConfig()


def node(name, group, gpus=8):
    return parse_node(make_node(name, gpus=gpus, group=group), LOCALITY)


def pod(name, job, size, **changes):
    raw = gated_pod(name, job, size)
    raw["metadata"]["creationTimestamp"] = "2026-11-29T00:00:00Z"
    return parse_pod(raw, LOCALITY)


def in_thread(cache, now):
    """What the worker thread would decide from the cache now (a memo of its own)."""
    return decide(snapshot_of(cache, CONFIG.gate, RoundAsk(now)), now, LOCALITY, CONFIG, {},
                  wider_levels(LOCALITY), RoundMemo())


def same(one, other):
    """The same decisions: a job's pods come in the order of a set of their keys, which
    differs between two processes (string hashes are seeded per process)."""
    def pods_sorted(action):
        if not isinstance(action, Eviction):
            return action
        return replace(action, pods=tuple(sorted(action.pods, key=lambda p: p.name)),
                       kept=tuple(sorted(action.kept, key=lambda p: p.name)))
    return replace(one, after=[pods_sorted(a) for a in one.after]) == replace(
        other, after=[pods_sorted(a) for a in other.after])


@pytest.fixture
def planner():
    cache = ClusterCache(LOCALITY)
    process = PlanningProcess(cache, LOCALITY, CONFIG, {}, wider_levels(LOCALITY))
    yield cache, process
    process.close()


async def test_the_process_plans_what_the_cache_would_and_hands_back_its_own_objects(planner):
    cache, process = planner
    cache.replace_nodes([node(f"a-{i}", "pg-a") for i in range(3)]
                        + [node(f"b-{i}", "pg-b") for i in range(2)])
    cache.replace_pods([pod(f"j1-{i}", "j1", 3) for i in range(3)]
                       + [pod(f"j2-{i}", "j2", 2) for i in range(2)])
    cache.replace_topologies([])
    now = time.time()
    decided = await process.plan(RoundAsk(now))
    assert decided == in_thread(cache, now)
    planned = decided.plan
    assert {str(a.job) for a in planned.admissions} == {"team/j1", "team/j2"}
    for admission in planned.admissions:  # the extender's objects, not copies
        assert all(cache.pod(p.namespace, p.name) is p for p in admission.pods)
    # Changes between rounds reach the replica in order: a node gone, a job grown
    # beyond any group, another job, a pod deleted, records: j1 admitted an hour ago
    # and still unbound (its pods, which a Job owns, evicted whole), and one of a job
    # with no pod left (short of members, and an orphan).
    cache.delete_node("a-2")
    cache.apply_pod(pod("j3-0", "j3", 4))
    for i in range(4):
        cache.apply_pod(pod(f"j4-{i}", "j4", 4))
    cache.delete_pod(cache.pod("team", "j2-1"))
    cache.apply_node(node("b-2", "pg-b"))
    for i in range(3):
        cache.apply_pod(replace(cache.pod("team", f"j1-{i}"), controller=("Job", "j1")))
    pg_a = Domain("placement-group", "pg-a")
    cache.apply_gang(GangRecord(JobKey("team", "j1"), GangState.ADMITTED, pg_a, size=3,
                                since=now - 3600, name="j1"))
    cache.apply_gang(GangRecord(JobKey("team", "gone"), GangState.RUNNING, pg_a, size=1,
                                since=now - 3600, name="gone"))
    now += 1
    decided = await process.plan(RoundAsk(now))
    assert same(decided, in_thread(cache, now))
    [eviction] = [action for action in decided.after if isinstance(action, Eviction)]
    assert eviction.record.name == "j1" and len(eviction.pods) == 3
    assert all(cache.pod(p.namespace, p.name) is p for p in eviction.pods + eviction.kept)
    assert [record.name for record in decided.orphans] == ["gone"]
    assert cache.journal == []  # taken by the round


async def test_a_signal_to_the_extenders_process_group_leaves_the_planner_running(planner):
    """Ctrl-C reaches every process of the terminal's group: the extender shuts down and
    closes the pipe; the planner must not die (and print a traceback) first."""
    cache, process = planner
    cache.replace_nodes([node("a-0", "pg-a")])
    cache.replace_pods([pod("j1-0", "j1", 1)])
    await process.plan(RoundAsk(time.time()))  # serving: past its start
    for signum in (signal.SIGINT, signal.SIGTERM):
        os.kill(process.pid, signum)
    cache.apply_pod(pod("j2-0", "j2", 1))
    decided = await process.plan(RoundAsk(time.time()))
    assert [str(a.job) for a in decided.plan.admissions] == ["team/j1"]
    # Waited for as long as it takes: a niced process on a loaded machine may need
    # seconds to run its exit, and only that it exits, not how fast, is in question.
    process.close(exit_wait_seconds=planner_module.ANSWER_TIMEOUT_SECONDS)
    assert process._process.returncode == 0  # it left when the pipe closed


async def test_a_planning_process_that_stops_answering_is_killed_and_replaced():
    """A stopped (or stuck) process would otherwise leave every later round waiting.
    The short timeout is the stopped process's alone, set after its first answer: a
    process that is slow to start on a loaded machine is not what this is about."""
    cache = ClusterCache(LOCALITY)
    admitter = Admitter(cache, LOCALITY, CONFIG, None, lambda: False)
    admitter.start_planning_process()
    cache.replace_nodes([node("a-0", "pg-a")])
    cache.replace_pods([pod("j1-0", "j1", 1)])
    await admitter.round(time.time())
    assert admitter.planner_failures_total == 0
    stuck = admitter.planner
    stuck.answer_timeout_seconds = 0.5
    os.kill(stuck.pid, signal.SIGSTOP)
    started = time.monotonic()
    await admitter.round(time.time())  # planned in the thread once 0.5 s have passed
    # Far below the 120 s a stuck process would be waited for by default.
    assert time.monotonic() - started < planner_module.ANSWER_TIMEOUT_SECONDS / 2
    assert admitter.planner_failures_total == 1 and admitter.planner is not stuck
    assert stuck._process.returncode == -signal.SIGKILL  # killed, and reaped
    assert [str(a.job) for a in admitter.last_plan.admissions] == ["team/j1"]
    admitter.close()


def test_every_change_of_the_cache_is_journaled():
    """A method that changes the cache without a journal entry would leave the replica
    behind for good."""
    mutators = {name for name in vars(ClusterCache)
                if name.startswith(("apply_", "replace_", "delete_", "set_"))}
    assert mutators - {"set_assumed"} == set(CHANGES)
    assert all(hasattr(getattr(ClusterCache, name), "__wrapped__") for name in CHANGES)
    # A list given as a generator (as the watches may) is journaled, and listed, once.
    cache = ClusterCache(LOCALITY)
    cache.journal = []
    cache.replace_nodes(node(f"a-{i}", "pg-a") for i in range(2))
    [(name, (nodes,))] = cache.journal
    assert name == "replace_nodes" and [n.name for n in nodes] == ["a-0", "a-1"]
    assert sorted(cache.nodes) == ["a-0", "a-1"]


async def test_a_process_started_on_a_filled_cache_starts_from_it():
    """As a lost process's replacement does: its replica starts from what the cache
    holds, and plans what the thread would, with the cache's own objects."""
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([node("a-0", "pg-a"), node("b-0", "pg-b")])
    cache.replace_pods([pod("j1-0", "j1", 1)])
    cache.apply_gang(GangRecord(JobKey("team", "gone"), GangState.RUNNING,
                                Domain("placement-group", "pg-a"), size=1, name="gone"))
    cache.replace_topologies([])
    process = PlanningProcess(cache, LOCALITY, CONFIG, {}, wider_levels(LOCALITY))
    try:
        cache.apply_pod(pod("j2-0", "j2", 1))
        now = time.time()
        decided = await process.plan(RoundAsk(now))
        assert same(decided, in_thread(cache, now))
        assert {str(a.job) for a in decided.plan.admissions} == {"team/j1", "team/j2"}
        assert [record.name for record in decided.orphans] == ["gone"]
        for admission in decided.plan.admissions:
            assert all(cache.pod(p.namespace, p.name) is p for p in admission.pods)
    finally:
        process.close()


async def test_a_lost_process_is_replaced_and_after_three_in_a_row_a_thread_plans():
    cache = ClusterCache(LOCALITY)
    admitter = Admitter(cache, LOCALITY, CONFIG, None, lambda: False)
    admitter.start_planning_process()
    cache.replace_nodes([node("a-0", "pg-a"), node("a-1", "pg-a")])
    cache.replace_pods([pod("j1-0", "j1", 1)])
    await admitter.round(time.time())
    assert [str(a.job) for a in admitter.last_plan.admissions] == ["team/j1"]
    first = admitter.planner.pid
    os.kill(first, signal.SIGKILL)
    cache.apply_pod(pod("j2-0", "j2", 1))
    await admitter.round(time.time())  # planned in the thread; a new process started
    assert admitter.planner_failures_total == 1
    assert admitter.planner is not None and admitter.planner.pid != first
    assert {str(a.job) for a in admitter.last_plan.admissions} == {"team/j1", "team/j2"}
    cache.apply_pod(pod("j3-0", "j3", 1))
    await admitter.round(time.time())  # the new process, from the cache as it was
    assert admitter.loop_seconds > 0 and admitter.planner is not None
    assert [str(w.job) for w in admitter.last_plan.waiting] == ["team/j3"]  # 2 nodes
    for lost in (2, 3, 4):  # three in a row, none answering in between
        assert admitter.planner is not None
        os.kill(admitter.planner.pid, signal.SIGKILL)
        await admitter.round(time.time())
        assert admitter.planner_failures_total == lost
    assert admitter.planner is None and cache.journal is None  # a thread plans for good
    assert [str(w.job) for w in admitter.last_plan.waiting] == ["team/j3"]
    admitter.close()


async def test_as_started_by_the_extender_a_job_is_admitted(fake_kube):
    """The planner starts before the watches fill the cache (extender/commands.py)."""
    fake_kube.create(make_node("a-0", group="pg-a"))
    fake_kube.create(make_node("a-1", group="pg-a"))
    for i in range(2):
        fake_kube.create(gated_pod(f"w{i}", "train", 2))
    api = fake_kube.api_client()
    cache = ClusterCache(LOCALITY)
    sync = ClusterSync(api, cache, LOCALITY, FAST, watch_topology=False, watch_dra=False,
                       watch_pod_groups=False)
    admitter = Admitter(cache, LOCALITY, ADMISSION, api, lambda: True,
                        batch_jobs=sync.resolver.batch_jobs)
    admitter.start_planning_process()
    sync.start(asyncio.get_running_loop())
    try:
        await eventually(lambda: cache.ready())
        for _ in range(50):
            await admitter.round(time.time())
            if all(GATE not in str(pod_of(fake_kube, f"w{i}")["spec"].get("schedulingGates"))
                   for i in range(2)):
                break
            await asyncio.sleep(0.1)
        for i in range(2):
            assert not pod_of(fake_kube, f"w{i}")["spec"].get("schedulingGates")
        assert admitter.planner is not None and admitter.planner_failures_total == 0
    finally:
        admitter.close()
        await sync.stop(timeout=5)


def test_planning_is_a_process_or_a_thread():
    assert AdmissionConfig().planning == "process"  # thread for a tight memory budget
    assert AdmissionConfig.from_mapping({"planning": "process"}, "x").planning == "process"
    with pytest.raises(ConfigError, match="x: planning: expected one of process, thread"):
        AdmissionConfig.from_mapping({"planning": "fork"}, "x")
