"""The gang replay (overprovisioner.sim.gangs): trace jobs admitted whole by the extender's
own admission round on a simulated autoscaled cluster, fixed, elastic, and elastic with
the growth announced.

Every cluster here is one placement group of g4dn.12xlarge nodes (4 GPUs each) whose
node group may grow to a few nodes, so GPUs run out and elastic sizing has something to
change.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from common.errors import InputError
from overprovisioner.sim.gangs.gang_engine import GangSimConfig
from overprovisioner.sim.gangs.jobs import KALE_PEAK, ElasticRule, _kale, gang_jobs, speed
from overprovisioner.sim.gangs.table import ARMS, format_rows, run_arms, summaries
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.simbuild import pod, table, types

TYPES = types("m5.8xlarge", "g4dn.12xlarge")
HOUR = 3600.0


def job(name, workers, submit, duration, gpus=4, ps=True):
    """A PS/worker job: one CPU PS (unless not `ps`) and `workers` workers of `gpus`
    GPUs, each asking a little differently (as trace pods do)."""
    rows = [pod(f"{name}-ps", submit, duration, gpus=0, cpu=4, memory_gib=16, job=name,
                role="ps")] if ps else []
    rows += [pod(f"{name}-w{i}", submit, duration, gpus=gpus, cpu=8 + i, memory_gib=32,
                 job=name, role="worker") for i in range(workers)]
    return rows


RULE = ElasticRule()


def replay(rows, max_nodes, end=12 * HOUR, rule=RULE, arms=ARMS):
    workload = build_workload(table(rows, end=end), TYPES)
    jobs = gang_jobs(workload, rule)
    config = GangSimConfig(groups=("pg-a",), max_nodes=max_nodes)
    results = run_arms(workload, jobs, workload.types, rule, config, arms=arms)
    return {r.name: r for r in results}, jobs


def times(result, index):
    return (result.first_running[index] - result.submit[index],
            result.finished[index] - result.submit[index])


def test_the_rule_makes_multi_worker_jobs_of_one_gpu_shape_elastic_with_one_template():
    rows = job("a", 4, 0, HOUR) + job("b", 1, 0, HOUR) + \
        [pod("c-w0", 0, HOUR, gpus=4, job="c", role="worker"),
         pod("c-w1", 0, HOUR, gpus=1, job="c", role="worker")]
    workload = build_workload(table(rows), TYPES)
    jobs = {j.name: j for j in gang_jobs(workload, ElasticRule())}
    assert jobs["a"].bounds == (2, 4) and jobs["a"].workers == 4
    # The owner's template: each resource's largest request among its workers.
    assert jobs["a"].worker_request[1] == 11_000
    assert jobs["b"].bounds is None  # one worker
    assert jobs["c"].bounds is None  # workers asking for different GPU counts
    wider = {j.name: j for j in gang_jobs(workload, ElasticRule(min_fraction=0.25,
                                                                max_factor=2.0))}
    assert wider["a"].bounds == (1, 8)
    none = gang_jobs(workload, ElasticRule(share=0.0))
    assert all(j.bounds is None for j in none)


@pytest.mark.parametrize("rule, message", [
    (ElasticRule(share=1.5), "--elastic-share"),
    (ElasticRule(min_fraction=0), "--min-fraction"),
    (ElasticRule(max_factor=0.5), "--max-factor"),
    (ElasticRule(scaling="amdahl"), "--scaling"),
])
def test_a_bad_rule_is_refused_naming_the_option(rule, message):
    with pytest.raises(InputError, match=message):
        rule.validate()


def test_speed_linear_and_kale_worked_example():
    assert speed(2, 4, "linear") == 0.5
    assert speed(0, 4, "linear") == 0.0
    # KALE's worked example: M = 16,384 with the paper's thetas, f(10) about 30,000/s.
    assert 30_000 < _kale(10) < 30_100 and _kale(9) < 30_000
    assert speed(KALE_PEAK, KALE_PEAK, "kale") == 1.0
    # Past the synchronous model's peak a job is held at the peak, never slower.
    assert speed(16, 8, "kale") == pytest.approx(_kale(10) / _kale(8))
    assert speed(4, 8, "kale") < 1.0


def test_a_job_no_domain_could_hold_whole_runs_smaller_only_when_elastic():
    # 4 workers of 4 GPUs need 4 nodes; the group grows to 3.
    results, _ = replay(job("a", 4, 60, HOUR), max_nodes=3)
    fixed, elastic = results["fixed"], results["elastic"]
    assert np.isnan(fixed.finished).all()  # inadmissible at its size: never runs
    assert fixed.launches == 0
    assert elastic.resizes == {"admitted_smaller": 1}
    queued, took = times(elastic, 0)
    # Admitted at 3 of 4 workers at once: a node start-up (5 min +-20%), then a third
    # slower than the trace's hour (linear scaling).
    assert 4 * 60 <= queued <= 6.5 * 60
    assert took == pytest.approx(queued + HOUR * 4 / 3, rel=1e-6)
    rows = summaries(list(results.values()))
    assert rows[0]["unfinished"] == 1 and rows[1]["unfinished"] == 0
    assert rows[0]["measured"] == 0  # no job finished in every arm: no times compared
    assert (rows[0]["unfinished_all"], rows[1]["unfinished_all"]) == (1, 0)
    # Its work is missing from the fixed arm's GPU-hours: none at its trace size there.
    assert rows[0]["node_gpu_hours_by"]["pods_full_size"] == 0
    assert rows[1]["node_gpu_hours_by"]["pods_full_size"] == pytest.approx(16.0)  # 4 x 4 GPUs x 1 h


def test_scale_in_admits_a_starving_job_and_scale_out_grows_the_shrunk_one_back():
    # `a` (elastic, 2..4 workers) fills the group's 4 nodes for 6 h; `b` (one 4-GPU
    # pod, fixed) comes at 1 h. Fixed: b waits for a. Elastic: b is heavier in KOD2's
    # weight (sigmoid of minimum workers / request units: 1/16 against a's 2/38), so a
    # is scaled in for it at once; when b is done, a grows back.
    rows = job("a", 4, 60, 6 * HOUR, ps=False) + \
        [pod("b-0", HOUR, HOUR, gpus=4, cpu=8, memory_gib=32, job="b", role="worker")]
    results, jobs = replay(rows, max_nodes=4, end=24 * HOUR)
    order = [j.name for j in jobs if not j.initial]
    b = order.index("pod-b-0")  # a one-pod job: a gang of one
    fixed_wait, _ = times(results["fixed"], b)
    elastic_wait, _ = times(results["elastic"], b)
    assert fixed_wait > 5 * HOUR - 60  # until a ends
    assert elastic_wait <= 5  # a round or two: a's worker goes, b binds on its node
    assert results["elastic"].resizes == {"scale_in": 1, "scale_out": 1}
    a = order.index("a")
    # a ran at 3 of 4 workers for about b's hour: a quarter of that hour's work later.
    _, fixed_took = times(results["fixed"], a)
    _, elastic_took = times(results["elastic"], a)
    assert 10 * 60 < elastic_took - fixed_took < 25 * 60


def test_announced_growth_keeps_placeholders_where_the_shrunk_gang_runs():
    # `c` (fixed, 2 nodes) takes half the group; `a` (elastic, 4 workers) is admitted
    # at 2 beside it. Announced: a's growth of 2 workers is 2 placeholder nodes in pg-a,
    # pending while the group is full; when c ends its nodes take them, and a's
    # scale-out takes them back from the placeholders.
    rows = [pod(f"c-w{i}", 60, 2 * HOUR, gpus=4, cpu=8, memory_gib=32, job="c", role="ps")
            for i in range(2)] + job("a", 4, 90, 6 * HOUR, ps=False)
    results, _ = replay(rows, max_nodes=4, end=24 * HOUR)
    assert results["elastic"].placeholders == 0
    announced = results["elastic+announced"]
    assert announced.placeholders >= 2
    assert announced.resizes == {"admitted_smaller": 1, "scale_out": 1}
    assert math.isfinite(announced.finished.max())
    rows = summaries(list(results.values()))
    text = format_rows(rows)
    assert text.splitlines()[0].startswith("arm") and "elastic+announced / fixed" in text


def test_announced_growth_a_waiting_job_holds_back_is_given_back():
    # `a` (elastic, 2..4) runs at 2 beside `c` (2 nodes, 2 h) in a group of 4 nodes; at
    # 1 h `w` comes, 3 nodes, and waits: it could use the room a would grow into but not
    # fit it until a ends, so a does not grow. Its growth is then not likely to be used:
    # given back, its placeholders do not keep c's nodes once c ends.
    rows = [pod(f"c-w{i}", 60, 2 * HOUR, gpus=4, cpu=8, memory_gib=32, job="c", role="ps")
            for i in range(2)] + job("a", 4, 90, 6 * HOUR, ps=False) + \
        [pod(f"w-{i}", HOUR, HOUR, gpus=4, cpu=8, memory_gib=32, job="w", role="ps")
         for i in range(3)]
    results, _ = replay(rows, max_nodes=4, end=24 * HOUR, arms=ARMS[1:])
    elastic, announced = results["elastic"], results["elastic+announced"]
    assert announced.resizes == elastic.resizes == {"admitted_smaller": 1}
    assert announced.placeholders >= 2  # announced until w came
    # Kept, the placeholders held c's 2 nodes (8 GPUs) from 2 h until a ended (81 GPU-h);
    # given back, only seconds at the start, a placeholder on a node of a's before its
    # gang bound.
    assert announced.node_parts["growth_nodes"] < 0.1 * HOUR
    assert announced.node_gpu_s < elastic.node_gpu_s + 0.1 * HOUR


def test_the_report_says_where_node_gpu_hours_and_completion_time_go():
    # `a`: a 4-GPU PS and 2 workers of 4 GPUs; the group grows to 2 nodes, so elastic
    # admits it at 1 worker and it trains at half speed for 2 h instead of 1. Its
    # workers' GPU-hours are the same either way (4 GPUs x 2 h = 8 x 1 h); its PS holds
    # its 4 GPUs an hour longer: 4 GPU-h that smaller gangs running longer cost.
    rows = [pod("a-ps", 60, HOUR, gpus=4, cpu=4, memory_gib=16, job="a", role="ps")] + \
        job("a", 2, 60, HOUR, ps=False)
    results, _ = replay(rows, max_nodes=2, arms=(ARMS[1],))
    elastic = results["elastic"]
    parts = elastic.node_parts
    assert sum(parts.values()) == pytest.approx(elastic.node_gpu_s, rel=1e-9)
    assert parts["pods_full_size"] == pytest.approx(12 * HOUR, rel=1e-6)  # 12 GPUs x 1 h
    assert parts["pods_smaller"] == pytest.approx(4 * HOUR, rel=1e-6)
    assert parts["placeholders"] == parts["growth_nodes"] == 0  # nothing announced
    (row,) = summaries([elastic])
    by = row["jct_mean_by_h"]
    assert (by["work"], by["smaller"]) == (pytest.approx(1.0), pytest.approx(1.0))
    assert by["stalled"] == pytest.approx(0.0, abs=1e-6)
    assert sum(by.values()) == pytest.approx(row["jct_mean_h"], abs=1e-3)
    assert sum(row["node_gpu_hours_by"].values()) == pytest.approx(row["node_gpu_hours"],
                                                                   abs=0.5)
    assert "where node GPU-hours go" in format_rows([row])


def test_skipping_binds_scans_and_ticks_that_change_nothing_changes_no_result(monkeypatch):
    # Placeholders for announced growth stay pending while the group is full; the replay
    # skips the binds, scans and ticks that would find the same: the same results as
    # running every one, with fewer steps.
    from overprovisioner.sim.gangs.cluster import ClusterSide
    from overprovisioner.sim.gangs.gang_engine import GangRun

    rows = [pod(f"c-w{i}", 60, 2 * HOUR, gpus=4, cpu=8, memory_gib=32, job="c", role="ps")
            for i in range(2)] + job("a", 4, 90, 6 * HOUR, ps=False) + \
        job("b", 3, 2 * HOUR, 3 * HOUR, ps=True)
    skipped = []
    execute = GangRun.execute

    def counting(self):
        result = execute(self)
        skipped.append(self.skipped)
        return result

    monkeypatch.setattr(GangRun, "execute", counting)
    fast, _ = replay(rows, max_nodes=4, end=24 * HOUR)
    assert min(skipped) > 0
    monkeypatch.setattr(ClusterSide, "skip_unchanged", False)
    skipped.clear()
    slow, _ = replay(rows, max_nodes=4, end=24 * HOUR)
    assert skipped == [0, 0, 0]
    assert summaries(list(fast.values())) == summaries(list(slow.values()))
    for name in fast:
        for field in ("submit", "first_running", "finished"):
            np.testing.assert_array_equal(getattr(fast[name], field), getattr(slow[name], field))
        assert fast[name].placeholders == slow[name].placeholders
        assert fast[name].resizes == slow[name].resizes


def test_skipping_changes_nothing_on_the_synthetic_workload(monkeypatch, capsys):
    # Two days of the seeded synthetic workload (hundreds of jobs, scale-in and out,
    # placeholders): the command's JSON is the same byte for byte either way. In this
    # process (--jobs 1): the patch does not reach worker processes.
    from headstart.cli import main
    from overprovisioner.sim.gangs.cluster import ClusterSide

    argv = ["simulate-elastic", "--synthetic", "--days", "2", "--max-nodes", "6", "--json",
            "--jobs", "1"]
    assert main(argv) == 0
    skipping = capsys.readouterr().out
    monkeypatch.setattr(ClusterSide, "skip_unchanged", False)
    assert main(argv) == 0
    assert capsys.readouterr().out == skipping


@pytest.fixture
def jobs_file(tmp_path):
    from jobtraces.write import write_job_table

    # An elastic job the group can never hold whole (4 nodes of 4 GPUs, 3 allowed).
    return write_job_table(table(job("a", 4, 60, HOUR), end=12 * HOUR),
                           tmp_path / "jobs.csv")


def test_the_command_prints_the_table_and_json(jobs_file, capsys):
    from headstart.cli import main

    assert main(["simulate-elastic", "--trace", str(jobs_file), "--max-nodes", "3",
                 "--groups", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 jobs, 1 elastic" in out and "elastic / fixed" in out
    assert main(["simulate-elastic", "--trace", str(jobs_file), "--max-nodes", "3",
                 "--groups", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    arms = {row["arm"]: row for row in printed["arms"]}
    assert arms["fixed"]["unfinished"] == 1 and arms["elastic"]["unfinished"] == 0
    assert arms["elastic"]["resizes"] == {"admitted_smaller": 1}


@pytest.mark.parametrize("argv, message", [
    (["--max-nodes", "0"], "--max-nodes: expected 1 or more, got 0"),
    (["--groups", "0"], "--groups: expected 1 to 26, got 0"),
    (["--min-fraction", "2"], "--min-fraction: expected above 0 and at most 1, got 2"),
])
def test_bad_options_are_refused_in_one_line(jobs_file, capsys, argv, message):
    from headstart.cli import main

    assert main(["simulate-elastic", "--trace", str(jobs_file), *argv]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
