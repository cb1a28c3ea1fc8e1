"""Job table from kube-state-metrics answers (predictor.live.trace_export): the pure conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.live.prometheus import PrometheusConfig, grid
from predictor.live.trace_export import ENDED_BEFORE, export_queries, job_table_from_results

STEP = 60.0
T0 = 1_700_000_040.0  # a whole minute, so the grid starts exactly at the window start
SINCE, UNTIL = T0, T0 + 10 * STEP  # ticks 0..10
GIB = 2**30
CONFIG = PrometheusConfig(url="http://prom.test")


def at(tick: float) -> float:
    return T0 + tick * STEP


def pod_metric(pod, ns="team", uid=None, **labels):
    return {"namespace": ns, "pod": pod, "uid": uid or f"uid-{pod}", **labels}


def stamp(pod, value, ticks, ns="team", uid=None):
    """A timestamp metric (value = Unix seconds) present at `ticks`."""
    return {"metric": pod_metric(pod, ns, uid),
            "values": [[at(t), f"{value:.3f}"] for t in ticks]}


def phase(pod, name, ticks, ns="team"):
    return {"metric": pod_metric(pod, ns, phase=name), "values": [[at(t), "1"] for t in ticks]}


def request(pod, resource, value, ticks, ns="team"):
    # requests are summed by (namespace, pod, resource): no uid label
    return {"metric": {"namespace": ns, "pod": pod, "resource": resource},
            "values": [[at(t), str(value)] for t in ticks]}


def owner(pod, kind, name, controller="true", ns="team"):
    return {"metric": pod_metric(pod, ns, owner_kind=kind, owner_name=name,
                                 owner_is_controller=controller),
            "values": [[at(0), "1"]]}


ALL = range(11)
RESULTS = {
    "created": [
        stamp("finished", at(0.5), range(1, 7)),       # lingers as Succeeded until tick 6
        stamp("running", at(2), range(2, 11)),          # present at the last tick
        stamp("before", at(-60), range(0, 5)),          # created an hour before the window
        stamp("init", at(1), range(1, 4)),
        stamp("gpu", at(3), range(3, 9)),
        stamp("placeholder", at(0), ALL, ns="headstart"),
        stamp("worker-0", at(4), range(4, 11)),
        stamp("pending", at(5), range(5, 11)),          # never scheduled
        stamp("no-sched-time", at(2), range(2, 7)),     # scheduled time missing: phase used
        stamp("ended-before", at(-30), range(0, 3)),    # completed before the window
        stamp("lone", at(6), range(6, 8)),              # deleted while pending
    ],
    "scheduled": [
        stamp("finished", at(1.5), range(2, 7)),
        stamp("running", at(2.5), range(3, 11)),
        stamp("before", at(-59), range(0, 5)),
        stamp("init", at(1), range(1, 4)),
        stamp("gpu", at(3.25), range(4, 9)),
        stamp("placeholder", at(0), ALL, ns="headstart"),
        stamp("worker-0", at(4), range(4, 11)),
        stamp("ended-before", at(-29), range(0, 3)),
    ],
    "completed": [
        stamp("finished", at(5), range(5, 7)),
        stamp("ended-before", at(-10), range(0, 3)),
    ],
    "phase": [
        phase("finished", "Running", range(2, 5)),
        phase("finished", "Succeeded", range(5, 7)),
        phase("no-sched-time", "Running", range(3, 5)),
        phase("no-sched-time", "Failed", range(5, 7)),
    ],
    "owner": [
        owner("worker-0", "PyTorchJob", "resnet", controller="true"),
        owner("worker-0", "ConfigMap", "cfg", controller="false"),
        owner("finished", "<none>", "<none>", controller="<none>"),
    ],
    "info": [
        {"metric": pod_metric("gpu", priority_class="high"), "values": [[at(3), "1"]]},
    ],
    "requests": [
        request("finished", "cpu", 2, range(1, 7)),
        request("finished", "memory", 4 * GIB, range(1, 7)),
        request("running", "cpu", 0.5, range(2, 11)),
        request("before", "cpu", 1, range(0, 5)),
        request("init", "cpu", 1, range(1, 4)),
        request("init", "memory", GIB, range(1, 4)),
        request("gpu", "nvidia_com_gpu", 2, range(3, 9)),
        request("gpu", "cpu", 8, range(3, 9)),
        request("placeholder", "nvidia_com_gpu", 8, ALL, ns="headstart"),
        request("worker-0", "cpu", 4, range(4, 11)),
        request("pending", "cpu", 1, range(5, 11)),
        request("no-sched-time", "cpu", 1, range(2, 7)),
        request("ended-before", "cpu", 1, range(0, 3)),
    ],
    "init_requests": [
        request("init", "cpu", 3, range(1, 4)),
        request("init", "memory", GIB // 2, range(1, 4)),
    ],
}


@pytest.fixture(scope="module")
def exported():
    times = grid(SINCE, UNTIL, STEP)
    return job_table_from_results(RESULTS, times, STEP, SINCE, UNTIL, CONFIG)


def row(table, pod):
    frame = table.frame.set_index("pod")
    return frame.loc[pod]


NAN = math.nan


@pytest.mark.parametrize(
    "pod, submit, start, end",
    [
        # completion time wins over the Succeeded tick (5) and the last present tick (6)
        ("team/finished", at(0.5), at(1.5), at(5)),
        # present at the last tick (10) with no completion: still running at the window end
        ("team/running", at(2), at(2.5), NAN),
        # created and scheduled before the window: both clamped to its start; gone after tick 4
        ("team/before", SINCE, SINCE, at(4)),
        ("team/gpu", at(3), at(3.25), at(8)),
        # no scheduled time: first Running tick (3); no completion: first Failed tick (5)
        ("team/no-sched-time", at(2), at(3), at(5)),
        # never scheduled, still pending at the end
        ("team/pending", at(5), NAN, NAN),
        # never scheduled, deleted while pending after tick 7
        ("team/lone", at(6), NAN, at(7)),
    ],
    ids=["finished", "running", "created-before-window", "gpu", "phase-fallbacks",
         "pending-at-end", "deleted-while-pending"],
)
def test_times(exported, pod, submit, start, end):
    table, _ = exported
    got = row(table, pod)
    assert got["submit_s"] == submit
    np.testing.assert_equal([got["start_s"], got["end_s"]], [start, end])


@pytest.mark.parametrize(
    "pod, cpu_milli, memory_bytes, gpus, gpu_milli",
    [
        ("team/finished", 2000, 4 * GIB, 0, 0),
        # containers: 1 core, 1 GiB; init: 3 cores, 0.5 GiB -> max per resource
        ("team/init", 3000, GIB, 0, 0),
        # 2 whole GPUs -> 2 devices, 2 x 1000 thousandths
        ("team/gpu", 8000, 0, 2, 2000),
        # 0.5 core -> 500 millicores
        ("team/running", 500, 0, 0, 0),
    ],
    ids=["finished", "init-container-dominated", "gpu", "fractional-cpu"],
)
def test_requests(exported, pod, cpu_milli, memory_bytes, gpus, gpu_milli):
    table, _ = exported
    got = row(table, pod)
    assert (got["cpu_milli"], got["memory_bytes"], got["gpus"], got["gpu_milli"]) == (
        cpu_milli, memory_bytes, gpus, gpu_milli)


@pytest.mark.parametrize(
    "pod, job_id, job_name, priority_class",
    [
        # the controlling owner wins over the non-controller ConfigMap
        ("team/worker-0", "team/PyTorchJob/resnet", "resnet", ""),
        # "<none>" owner: the pod is its own job
        ("team/finished", "team/finished", "finished", ""),
        ("team/gpu", "team/gpu", "gpu", "high"),
    ],
    ids=["owner-job", "no-owner", "priority-class"],
)
def test_jobs(exported, pod, job_id, job_name, priority_class):
    table, _ = exported
    got = row(table, pod)
    assert (got["job_id"], got["job_name"], got["role"], got["priority_class"]) == (
        job_id, job_name, "", priority_class)


def test_excluded_namespace_and_censoring(exported):
    table, stats = exported
    pods = set(table.frame["pod"])
    assert not any(p.startswith("headstart/") for p in pods)
    assert stats.excluded_pods == 1
    # 11 created series - 1 excluded - 1 ended before the window = 9 rows
    assert len(table) == 9
    assert table.censoring.dropped == {ENDED_BEFORE: 1}
    assert table.censoring.started_before_trace == 1
    assert table.censoring.running_at_end == 2  # running, worker-0
    assert table.censoring.never_scheduled == 2  # pending, lone
    assert stats.pods_without_requests == 1  # lone
    assert (table.trace_start_s, table.trace_end_s) == (SINCE, UNTIL)
    # the headstart CSV marks its first `started_before_trace` rows: they must come first
    assert table.frame["pod"].iloc[0] == "team/before"


def test_recreated_pod_becomes_two_rows():
    # a StatefulSet pod deleted at tick 3 and recreated under the same name at tick 5
    results = {
        "created": [stamp("db-0", at(0), range(0, 4), uid="aaaaaaaa-1"),
                    stamp("db-0", at(5), range(5, 11), uid="bbbbbbbb-2")],
        "requests": [request("db-0", "cpu", 1, range(0, 4)), request("db-0", "cpu", 2,
                                                                     range(5, 11))],
    }
    table, _ = job_table_from_results(results, grid(SINCE, UNTIL, STEP), STEP, SINCE, UNTIL,
                                      CONFIG)
    frame = table.frame.set_index("pod")
    assert list(frame.index) == ["team/db-0@aaaaaaaa", "team/db-0@bbbbbbbb"]
    # each incarnation takes the requests seen while it existed
    assert frame["cpu_milli"].tolist() == [1000, 2000]
    np.testing.assert_equal(frame["end_s"].tolist(), [at(3), NAN])


def test_queries_exclude_namespaces_and_use_the_gpu_resource():
    texts = export_queries(PrometheusConfig(gpu_resource="amd_com_gpu",
                                            exclude_namespaces=("headstart", "infra")))
    assert set(texts) == {"created", "scheduled", "completed", "phase", "owner", "info",
                          "requests", "init_requests", "job_created", "job_owner", "cron_next"}
    assert all('namespace!~"headstart|infra"' in q for q in texts.values())
    assert 'resource=~"amd_com_gpu|cpu|memory"' in texts["requests"]
    assert texts["created"] == 'max by (namespace, pod, uid) (kube_pod_created{namespace!~' \
                               '"headstart|infra"})'
    bare = export_queries(PrometheusConfig(exclude_namespaces=()))
    assert bare["created"] == "max by (namespace, pod, uid) (kube_pod_created)"


def test_data_stopping_before_the_window_end_is_not_a_mass_deletion():
    # Prometheus saw nothing after tick 6: "a" (ticks 2-6) was still running then, "b"
    # (ticks 1-3) really was deleted after tick 3.
    results = {
        "created": [stamp("a", at(2), range(2, 7)), stamp("b", at(1), range(1, 4))],
        "scheduled": [stamp("a", at(2), range(2, 7)), stamp("b", at(1), range(1, 4))],
        "requests": [request("a", "cpu", 1, range(2, 7)), request("b", "cpu", 1, range(1, 4))],
    }
    table, _ = job_table_from_results(results, grid(SINCE, UNTIL, STEP), STEP, SINCE, UNTIL,
                                      CONFIG)
    ends = table.frame.set_index("pod")["end_s"]
    np.testing.assert_equal([ends["team/a"], ends["team/b"]], [NAN, at(3)])
    assert table.censoring.running_at_end == 1


def job_series(ns, job, values_by_tick, **labels):
    return {"metric": {"namespace": ns, "job_name": job, **labels},
            "values": [[at(t), f"{v:.3f}"] for t, v in values_by_tick]}


def test_known_at_from_job_and_cronjob_metrics():
    # nightly-<minutes>: the CronJob's run scheduled at tick 6 (T0 is a whole minute)
    scheduled = at(6)
    run_job = f"nightly-{int(scheduled // 60)}"
    results = {
        "created": [stamp("run-0", at(6), range(6, 11)), stamp("held-0", at(5), range(5, 11)),
                    stamp("plain-0", at(2), range(2, 11))],
        "requests": [request(p, "cpu", 1, ALL) for p in ("run-0", "held-0", "plain-0")],
        "owner": [owner("run-0", "Job", run_job), owner("held-0", "Job", "held"),
                  owner("plain-0", "Job", "plain")],
        "job_created": [job_series("team", run_job, [(6, at(6))]),
                        job_series("team", "held", [(t, at(1)) for t in range(1, 11)]),
                        job_series("team", "plain", [(t, at(2)) for t in range(2, 11)])],
        "job_owner": [job_series("team", run_job, [(6, 1)], owner_kind="CronJob",
                                 owner_name="nightly")],
        # the next schedule was the tick-4 run until it ran, then the tick-6 run from tick 4
        "cron_next": [{"metric": {"namespace": "team", "cronjob": "nightly"},
                       "values": [[at(t), f"{(at(4) if t < 4 else scheduled):.3f}"]
                                  for t in range(0, 11)]}],
    }
    times = grid(SINCE, UNTIL, STEP)
    table, _ = job_table_from_results(results, times, STEP, SINCE, UNTIL, CONFIG)
    known = dict(zip(table.frame["pod"], table.frame["known_at_s"], strict=True))
    # the run was known from tick 4, when next_schedule_time became its scheduled time;
    # "held" existed 4 steps before its pod (suspended or queued); "plain" did not
    assert known["team/run-0"] == at(4)
    assert known["team/held-0"] == at(1)
    assert math.isnan(known["team/plain-0"])
    assert set(export_queries(CONFIG)) >= {"job_created", "job_owner", "cron_next"}
