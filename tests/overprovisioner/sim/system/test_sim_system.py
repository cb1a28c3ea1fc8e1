"""The whole-system replay (overprovisioner.sim.system): headstart's whole system on the
gang engine, each part switched off, the Kueue-style FIFO peer under headroom, the
strongest peer and the verdict; and `headstart replay`.

Every cluster here is one placement group of g4dn.12xlarge nodes (4 GPUs each, 5 min
+-20% start-up) and m5.8xlarge nodes, a few of each at most.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from jobtraces.jobtable import COLUMNS, KNOWN_AT, JobTable
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.gangs.gang_engine import GangSimConfig
from overprovisioner.sim.gangs.jobs import ElasticRule, gang_jobs
from overprovisioner.sim.predictive import Predictive
from overprovisioner.sim.system.arms import PARTS, WHOLE, SystemArm, peer_arm, run_arm
from overprovisioner.sim.system.peers import choose
from overprovisioner.sim.system.repeats import FIGURES, over_seeds
from overprovisioner.sim.system.verdict import band, best_configuration, compare, verdict
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

TYPES = types("m5.8xlarge", "g4dn.12xlarge")
HOUR = 3600.0
RULE = ElasticRule()
ARMS = {arm.part: arm for arm in PARTS}


def job(name, workers, submit, duration, gpus=4):
    return [pod(f"{name}-w{i}", submit, duration, gpus=gpus, cpu=8 + i, memory_gib=32,
                job=name, role="worker") for i in range(workers)]


def known_table(rows, known, end):
    """The table of `rows` with `known_at_s` per pod name (others NaN)."""
    base = table(rows, end=end)
    frame = base.frame.copy()
    frame[KNOWN_AT] = [known.get(name, math.nan) for name in frame["pod"]]
    return JobTable(frame[[*COLUMNS, KNOWN_AT]], "test", 0.0, end)


def replay(tab, arm, max_nodes=4, seed=0):
    workload = build_workload(tab, TYPES)
    jobs = gang_jobs(workload, RULE)
    config = GangSimConfig(SimConfig(seed=seed), ("pg-a",), max_nodes)
    return run_arm(arm, workload, jobs, CATALOG, RULE, config), jobs


@pytest.fixture
def views(monkeypatch):
    """Every view the predictive policy is handed, and the plan it returned."""
    seen = []
    decide = Predictive.decide

    def spying(self, view):
        plan, forecast = decide(self, view)
        seen.append((self.forecasting, view, plan))
        return plan, forecast

    monkeypatch.setattr(Predictive, "decide", spying)
    return seen


def test_the_peer_keeps_its_headroom_and_never_resizes():
    # `a` (elastic, 4 workers) fills the group's 4 nodes for 2 h; `b` (elastic too)
    # comes at 1 h. FIFO: b waits for a, whole; no job is ever resized, in any headroom.
    rows = job("a", 4, 60, 2 * HOUR) + job("b", 2, HOUR, HOUR)
    for policy in ("reactive", "static:1", "proportional:2"):
        result, _ = replay(table(rows, end=6 * HOUR), peer_arm(policy))
        assert result.resizes == {}
        queued = result.first_running - result.submit
        assert queued[1] > HOUR - 60  # b waited for a's end
        assert (result.placeholders > 0) == (policy != "reactive")
    whole, _ = replay(table(rows, end=6 * HOUR), WHOLE)
    assert whole.resizes  # headstart scales a in for b


def test_a_static_placeholder_node_takes_a_gang_without_a_node_start_up():
    # One placeholder node per type from the start: `a` (1 worker, at 30 min) binds at
    # once, where without headroom it waits a node start-up (5 min +-20%).
    rows = job("a", 1, 1800, HOUR)
    reactive, _ = replay(table(rows, end=6 * HOUR), peer_arm("reactive"))
    static, _ = replay(table(rows, end=6 * HOUR), peer_arm("static:1"))
    assert 4 * 60 <= (reactive.first_running - reactive.submit)[0] <= 6.5 * 60
    assert (static.first_running - static.submit)[0] < 60
    # The placeholder node ran from the first tick to the end of the window (6 h, 4 GPUs
    # for the GPU type) but for the hour a took it.
    assert static.node_gpu_s > reactive.node_gpu_s + 4 * 4 * HOUR


def test_known_ahead_work_launches_nodes_before_its_pods_exist(views):
    # `a` (2 nodes) is known 30 min before its pods are created. The plan for known
    # demand alone (no forecast) launches its nodes ahead: it starts at once. With the
    # known-ahead sources off it waits a node start-up.
    rows = job("a", 2, 2 * HOUR, HOUR)
    tab = known_table(rows, {name["pod"]: 1.5 * HOUR for name in rows}, 6 * HOUR)
    known_only = SystemArm("known only", True, True, "predictive", forecasting=False)
    neither = SystemArm("neither", True, True, "predictive", forecasting=False, known=False)
    ahead, _ = replay(tab, known_only)
    before = [sum(b.known for b in plan.buckets) for _, view, plan in views
              if view.now < 2 * HOUR]
    assert max(before) == 2 and before[0] == 0  # known from 1.5 h: 2 nodes of 4 GPUs
    assert (ahead.first_running - ahead.submit)[0] < 60
    assert ahead.placeholders >= 2
    views.clear()
    late, _ = replay(tab, neither)
    assert not any(b.known for _, _, plan in views for b in plan.buckets)
    assert late.placeholders == 0
    assert 4 * 60 <= (late.first_running - late.submit)[0] <= 6.5 * 60


def test_without_forecast_only_known_demand_keeps_placeholders(views):
    # Nothing known ahead (and `a` admitted a second after it comes, between two service
    # ticks, so its gated pods are never counted either): the forecast's cold-start
    # ladder keeps placeholders in the whole system; without the forecast, none.
    rows = job("a", 2, HOUR + 100, HOUR)
    whole, _ = replay(table(rows, end=6 * HOUR), WHOLE)
    without, _ = replay(table(rows, end=6 * HOUR), ARMS["forecast placeholders"])
    assert whole.placeholders > 0
    assert without.placeholders == 0
    assert {forecasting for forecasting, _, _ in views} == {True, False}


def test_announced_growth_reaches_the_plan_as_known_demand_in_its_group(views):
    # `c` (2 nodes, 2 h) and elastic `a` (4 workers, admitted at 2 beside c in a group
    # of 4 nodes): a's growth of 2 workers is known demand in pg-a at every tick while
    # it is short, for the whole system; without announced growth, never; without
    # elastic sizing, a waits whole and nothing grows.
    rows = [pod(f"c-w{i}", 60, 2 * HOUR, gpus=4, cpu=8, memory_gib=32, job="c", role="ps")
            for i in range(2)] + job("a", 4, 90, 6 * HOUR)
    tab = table(rows, end=12 * HOUR)
    whole, _ = replay(tab, WHOLE)
    grown = [view.known.get((1, "pg-a"), 0) for _, view, _ in views]
    assert max(grown) == 2  # 2 workers of 4 GPUs: 2 nodes of g4dn.12xlarge
    assert whole.resizes.get("admitted_smaller") == 1
    views.clear()
    without, _ = replay(tab, ARMS["announced growth"])
    assert without.resizes.get("admitted_smaller") == 1
    assert not any(view.known.get((1, "pg-a")) for _, view, _ in views)
    fixed, _ = replay(tab, ARMS["elastic sizing"])
    assert fixed.resizes == {}
    queued = fixed.first_running - fixed.submit
    assert queued[1] > 2 * HOUR - 120  # a waited for c's end, whole


def test_no_placeholder_is_kept_past_the_window():
    # static:1 keeps a node per type until the window's end (2 h); `a` runs 6 h, so the
    # replay runs on, but without placeholder nodes: the GPU type's one ran 2 h at most.
    rows = job("a", 1, 60, 6 * HOUR)
    static, _ = replay(table(rows, end=2 * HOUR), peer_arm("static:1"))
    reactive, _ = replay(table(rows, end=2 * HOUR), peer_arm("reactive"))
    extra = (static.node_gpu_s - reactive.node_gpu_s) / HOUR
    assert 0 < extra <= 4 * 2 + 1  # 4 GPUs x 2 h, with the placeholder's start-up


@pytest.mark.parametrize("whole, peer, expected", [
    # queue, hours, jct of each; the peer's arm is "peer".
    ((10.0, 100.0, 3.0), (30.0, 98.0, 3.3), "headstart"),  # queues less, hours a tie
    ((29.7, 90.0, 3.0), (30.0, 98.0, 3.0), "headstart"),  # queueing a tie, cheaper
    ((30.0, 99.0, 3.0), (29.9, 98.0, 3.01), None),  # a tie on all three
    ((40.0, 100.0, 3.0), (30.0, 98.0, 3.0), "peer"),  # queues more
    ((10.0, 100.0, 3.5), (30.0, 98.0, 3.0), None),  # less queueing, later completions
], ids=["wins", "cheaper-at-a-tie", "tie", "loses", "trade-off"])
def test_the_verdict(whole, peer, expected):
    def row(arm, figures):
        queue, hours, jct = figures
        return {"arm": arm, "queue_mean_min": queue, "queue_p95_min": queue * 3,
                "jct_mean_h": jct, "jct_p95_h": jct * 2, "node_gpu_hours": hours,
                "dollars": hours * 1.2}

    got = verdict(row("headstart", whole), row("peer", peer), None)
    assert got.run == expected
    assert got.lines[0].startswith("Verdict: ")
    assert "No FIFO headroom tried reaches" in got.lines[1]
    assert "within 2%" in got.lines[-1]


def test_a_part_off_doing_better_is_the_configuration_the_verdict_names():
    def row(arm, queue, hours, jct=3.0):
        return {"arm": arm, "queue_mean_min": queue, "queue_p95_min": queue,
                "jct_mean_h": jct, "jct_p95_h": jct, "node_gpu_hours": hours,
                "dollars": hours}

    whole = row("headstart", 12.5, 14_842)
    parts = [row("without announced growth", 10.9, 14_861),  # less queueing, hours a tie
             row("without placeholders", 11.7, 14_347),  # less of both, but queues more
             row("without forecast", 10.0, 15_500),  # less queueing for 4% more hours
             row("without elastic", 33.5, 15_553)]
    chosen = best_configuration(whole, parts)
    assert chosen["arm"] == "without announced growth"
    assert best_configuration(whole, parts[2:]) is whole
    peer = row("FIFO + reactive", 37.5, 14_318, 3.4)
    got = verdict(chosen, peer, None, whole=whole)
    assert got.run == "without announced growth"
    assert got.lines[0].startswith("Verdict: run headstart without announced growth.")
    assert got.lines[1].startswith("On this trace headstart does better without announced "
                                   "growth than whole: mean queueing 10.9 min against 12.5")


def test_medians_over_seeds_and_their_spread():
    rows = [{"arm": "x", **dict.fromkeys(FIGURES, 1.0), "queue_mean_min": q}
            for q in (10.9, 12.6, 17.8)]
    row = over_seeds(rows, (0, 1, 2))
    assert row["queue_mean_min"] == 12.6  # the median
    assert row["spread"]["queue_mean_min"] == pytest.approx((17.8 - 10.9) / 12.6, abs=1e-4)
    assert row["spread"]["jct_mean_h"] == 0.0
    assert row["seeds"]["queue_mean_min"] == [10.9, 12.6, 17.8]


def test_the_spread_across_seeds_widens_the_tie():
    def row(arm, queue, hours, jct=3.0, spread=None):
        out = {"arm": arm, "queue_mean_min": queue, "queue_p95_min": queue,
               "jct_mean_h": jct, "jct_p95_h": jct, "node_gpu_hours": hours, "dollars": hours}
        if spread is not None:
            out["spread"] = {"queue_mean_min": spread}
        return out

    noisy = row("headstart", 12.5, 14_842, spread=0.64)
    part = row("without announced growth", 10.9, 14_861)
    assert band(noisy, part, "queue_mean_min") == 0.64 and band(noisy, part, "jct_mean_h") == 0.02
    # 0.87x the whole system's queueing, well within its 64% spread: not better.
    assert best_configuration(noisy, [part]) is noisy
    assert best_configuration(row("headstart", 12.5, 14_842), [part]) is part
    # Against a peer queueing 1.3x more, with 40% spread: a tie on queueing.
    got = verdict(noisy, row("FIFO + reactive", 16.3, 14_842, spread=0.4), None)
    assert got.run is None and got.lines[0].startswith("Verdict: a tie: either.")
    assert got.lines[-1] == ("(A tie: within 2% of the other figure, or within the spread "
                             "across seeds where larger: mean queueing 64%.)")


def test_compare_calls_two_percent_a_tie():
    assert compare(101.9, 100.0) == 0 and compare(98.1, 100.0) == 0
    assert compare(102.1, 100.0) == 1 and compare(97.9, 100.0) == -1


def test_choose_the_strongest_within_budget_and_the_cheapest_reaching():
    whole = {"arm": "headstart", "queue_mean_min": 10.0, "node_gpu_hours": 100.0}
    peers = [{"arm": "FIFO + reactive", "queue_mean_min": 40.0, "node_gpu_hours": 90.0},
             {"arm": "FIFO + static:1", "queue_mean_min": 30.0, "node_gpu_hours": 101.5},
             {"arm": "FIFO + static:4", "queue_mean_min": 10.1, "node_gpu_hours": 180.0},
             {"arm": "FIFO + static:8", "queue_mean_min": 9.0, "node_gpu_hours": 300.0}]
    strongest, reaching = choose(whole, peers, 0.02)
    assert strongest["arm"] == "FIFO + static:1"  # 101.5 is within 2% of 100
    assert reaching["arm"] == "FIFO + static:4"  # 10.1 is within 2% of 10
    assert choose(whole, peers[:2], 0.02)[1] is None


@pytest.fixture
def jobs_file(tmp_path):
    from jobtraces.write import write_job_table

    rows = job("a", 4, 60, 2 * HOUR) + job("b", 2, HOUR, HOUR) + job("c", 1, 3 * HOUR, HOUR)
    return write_job_table(table(rows, end=6 * HOUR), tmp_path / "jobs.csv")


def test_the_command_leads_with_the_verdict_and_is_deterministic(jobs_file, capsys,
                                                               monkeypatch):
    import common.parallel
    from headstart.cli import main

    monkeypatch.setattr(common.parallel, "available_cores", lambda: 2)
    argv = ["replay", "--trace", str(jobs_file), "--max-nodes", "4", "--groups", "1"]
    assert main([*argv, "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Verdict: ")
    assert "What each part contributes" in out
    for part in ("forecast placeholders", "known-ahead work", "elastic sizing",
                 "announced growth", "every placeholder (the overprovisioner)"):
        assert f"  {part}: mean queueing" in out
    assert main([*argv, "--json", "--jobs", "1"]) == 0
    first = capsys.readouterr().out
    # In two worker processes, batch by batch: the same bytes as one after another.
    assert main([*argv, "--json", "--jobs", "2"]) == 0
    assert capsys.readouterr().out == first
    printed = json.loads(first)
    roles = {row["arm"]: row["role"] for row in printed["arms"]}
    assert roles["headstart"] == "headstart" and roles["FIFO + reactive"] == "peer"
    assert all(not row["resizes"] for row in printed["arms"] if row["role"] == "peer")
    assert printed["verdict"][0].startswith("Verdict: ")
    assert printed["configuration"] in roles
    # headstart's configuration and the peers the verdict names, at 3 seeds each.
    repeated = {row["arm"]: row for row in printed["repeated"]}
    assert "headstart" in repeated and printed["strongest_peer"] in repeated
    assert all(row["seed_list"] == [0, 1, 2] for row in repeated.values())
    assert printed["contributions"]["elastic sizing"]["within_noise"].keys() >= {
        "queue_mean_min", "node_gpu_hours"}


def test_the_same_seed_gives_the_same_bytes_in_another_process(jobs_file):
    # Another process hashes strings differently: no order the replay decides by may
    # follow a set's.
    import os
    import subprocess
    import sys

    argv = [sys.executable, "-m", "headstart", "replay", "--trace", str(jobs_file),
            "--max-nodes", "4", "--groups", "2", "--json"]
    outputs = {subprocess.run(argv, capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2")}
    assert len(outputs) == 1 and json.loads(outputs.pop())["arms"]


def test_a_trace_without_jobs_is_refused_in_one_line(tmp_path, capsys):
    from headstart.cli import main
    from jobtraces.write import write_job_table

    rows = [pod(f"p{i}", 60 * i, HOUR, gpus=4) for i in range(3)]  # no job_id
    path = write_job_table(table(rows, end=6 * HOUR), tmp_path / "pods.csv")
    assert main(["replay", "--trace", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("headstart replay: error: ")
    for words in ("no job has more than one pod", "job_id", "alibaba-dlrm", "headstart",
                  "alibaba-openb"):
        assert words in err[0]


def test_the_seed_moves_start_ups_only():
    rows = job("a", 1, 1800, HOUR)
    one, _ = replay(table(rows, end=6 * HOUR), peer_arm("reactive"), seed=0)
    two, _ = replay(table(rows, end=6 * HOUR), peer_arm("reactive"), seed=1)
    again, _ = replay(table(rows, end=6 * HOUR), peer_arm("reactive"), seed=0)
    np.testing.assert_array_equal(one.first_running, again.first_running)
    assert one.first_running[0] != two.first_running[0]


@pytest.mark.parametrize("argv, message", [
    (["--repeats", "0"], "--repeats: expected 1 or more, got 0"),
    (["--max-nodes", "0"], "--max-nodes: expected 1 or more, got 0"),
    (["--min-fraction", "2"], "--min-fraction: expected above 0 and at most 1, got 2"),
])
def test_bad_options_are_refused_in_one_line(jobs_file, capsys, argv, message):
    from headstart.cli import main

    assert main(["replay", "--trace", str(jobs_file), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
