"""The worker planner as the service runs it: owners listed from the (fake) API server,
the sample rate read over real HTTP from a stand-in Prometheus, throughput recorded in a
real SQLite store, the plans written to the ConfigMap the extender reads."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.resources import ZERO
from locality.worker_plans import decode
from overprovisioner.config.parse import parse_config
from overprovisioner.planner.sizing import NodeRoom
from overprovisioner.planner.worker_plan import (
    GLOBAL_BATCH,
    SAMPLE_RATE_QUERY,
    THROUGHPUT_MODEL,
    THROUGHPUT_QUERY,
    THROUGHPUT_THETAS,
)
from overprovisioner.service.apply import KubeApi
from overprovisioner.service.worker_planner import PrometheusReader, WorkerPlanner
from predictor.live.store import HistoryStore
from tests.fakeprometheus import FakePrometheus

NOW = 1_800_000_000.0
RATE_QUERY = 'sum(rate(ingest_samples_total{job="stream"}[5m]))'


@pytest.fixture
def prometheus():
    server = FakePrometheus({RATE_QUERY: 30_000.0, "sum(processed)": 29_000.0,
                             "sum(low)": 9_000.0, "max(lag)": 120.0})
    yield server
    server.stop()


def elastic_job(name: str, size: int, **annotations) -> dict:
    base = {"headstart.io/min-size": "1", "headstart.io/max-size": "16",
            SAMPLE_RATE_QUERY: RATE_QUERY, THROUGHPUT_MODEL: "synchronous",
            GLOBAL_BATCH: "16384", THROUGHPUT_THETAS: "0.00035,2.5726,0.9824,0.02786"}
    base.update(annotations)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ml",
                         "annotations": {k: v for k, v in base.items() if v is not None}},
            "spec": {"parallelism": size, "completions": size, "completionMode": "Indexed",
                     "template": {"spec": {"containers": [{"name": "w", "image": "x",
                                                           "resources": {"requests": {
                                                               "cpu": "4", "memory": "16Gi",
                                                               "nvidia.com/gpu": "1"}}}]}}},
            "status": {"ready": size}}


def worker_pod(job: str, index: int, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{job}-{index}", "namespace": "ml",
                         "labels": {"batch.kubernetes.io/job-name": job}},
            "spec": {"nodeName": node, "containers": [{"name": "w", "image": "x"}]}}


def planner(fake_kube, tmp_path, prometheus_url: str | None, **worker_plans):
    config = parse_config({
        "instance_types": ["p4d.24xlarge"], "tick": "5m", "horizon": "6m30s",
        "placeholders": {"namespace": "headstart-placeholders"},
        "worker_plans": {"stabilize_tau": "0s", **worker_plans},
        "api": {"max_attempts": 2, "backoff_base": "10ms", "backoff_max": "20ms"}},
        "test.yaml")
    store = HistoryStore(tmp_path / "history.sqlite", config.tick_s)
    return WorkerPlanner(
        config, KubeApi(fake_kube.api_client(), 5.0), store,
        PrometheusReader(prometheus_url) if prometheus_url else None,
        np.random.default_rng(0), lambda s: None), store


ROOMS = [NodeRoom(f"gpu-{i}", "p4d.24xlarge", "pg-a", ZERO, ZERO, True, None, True)
         for i in range(2)]


def test_plans_are_written_for_the_jobs_that_ask_and_their_growth_is_in_their_group(
        fake_kube, tmp_path, prometheus):
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": "headstart-placeholders"}})
    fake_kube.create(elastic_job("stream", 4))
    fake_kube.create(elastic_job("broken", 4, **{THROUGHPUT_MODEL: "sometimes"}))
    fake_kube.create(elastic_job("plain", 4, **{SAMPLE_RATE_QUERY: None}))
    for index in range(4):
        fake_kube.create(worker_pod("stream", index, f"gpu-{index % 2}"))
    worker_planner, _ = planner(fake_kube, tmp_path, prometheus.url)
    result = worker_planner.step(NOW, ROOMS, write=True)
    # 30,000 samples/s: 10 workers (f(9) = 29,840 falls short; the paper's example)
    assert [(p.name, p.size, p.planned) for p in result.plans] == [("stream", 10, 10)]
    assert [(g.key, g.pods, g.group, g.now) for g in result.growths] == [
        ("Job.ml.stream", 6, "pg-a", True)]
    assert "throughput-model" in result.problems["Job.ml.broken"]
    assert "Job.ml.plain" not in result.problems
    configmap = fake_kube.get("v1", "ConfigMap", "headstart-worker-plans",
                              "headstart-placeholders")
    plans, problems = decode(configmap["data"])
    assert problems == [] and plans["Job.ml.stream"].size == 10
    assert configmap["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "headstart"
    # the job stops asking: its plan is cleared once, then nothing more is written
    fake_kube.delete("batch/v1", "Job", "stream", "ml")
    assert worker_planner.step(NOW + 300, ROOMS, write=True).written
    assert fake_kube.get("v1", "ConfigMap", "headstart-worker-plans",
                         "headstart-placeholders").get("data", {}) == {}
    assert not worker_planner.step(NOW + 600, ROOMS, write=True).written


def test_a_follower_plans_but_never_writes(fake_kube, tmp_path, prometheus):
    fake_kube.create(elastic_job("stream", 4))
    worker_planner, _ = planner(fake_kube, tmp_path, prometheus.url)
    assert worker_planner.step(NOW, ROOMS, write=False).plans
    assert fake_kube.get("v1", "ConfigMap", "headstart-worker-plans",
                         "headstart-placeholders") is None


def test_throughput_is_recorded_while_every_worker_is_ready(fake_kube, tmp_path, prometheus):
    job = elastic_job("stream", 4, **{THROUGHPUT_THETAS: None,
                                      THROUGHPUT_QUERY: "sum(processed)"})
    job["metadata"]["uid"] = "u-1"
    fake_kube.create(job)
    worker_planner, store = planner(fake_kube, tmp_path, prometheus.url)
    result = worker_planner.step(NOW, ROOMS, write=True)
    uid = fake_kube.get("batch/v1", "Job", "stream", "ml")["metadata"]["uid"]
    assert store.read_throughput("Job.ml.stream", uid) == [(4, 29_000.0)]
    # one size seen: no model yet, and the problem says what is missing
    assert "4 different worker counts, got 1" in result.problems["Job.ml.stream"]
    assert result.plans == []


def test_without_prometheus_a_job_that_asks_gets_a_problem_not_a_guess(fake_kube, tmp_path):
    fake_kube.create(elastic_job("stream", 4))
    worker_planner, _ = planner(fake_kube, tmp_path, None)
    result = worker_planner.step(NOW, ROOMS, write=True)
    assert "forecast.prometheus_url" in result.problems["Job.ml.stream"]
    assert not result.written


def test_a_query_that_returns_no_series_is_that_jobs_problem(fake_kube, tmp_path, prometheus):
    fake_kube.create(elastic_job("stream", 4, **{SAMPLE_RATE_QUERY: "sum(nothing)"}))
    worker_planner, _ = planner(fake_kube, tmp_path, prometheus.url)
    result = worker_planner.step(NOW, ROOMS, write=True)
    assert "sum(nothing): expected one series, got 0" in result.problems["Job.ml.stream"]


def test_switched_off_nothing_is_listed(fake_kube, tmp_path, prometheus):
    fake_kube.create(elastic_job("stream", 4))
    worker_planner, _ = planner(fake_kube, tmp_path, prometheus.url, enabled=False)
    before = len(fake_kube.requests)
    assert worker_planner.step(NOW, ROOMS, write=True).plans == []
    assert len(fake_kube.requests) == before and prometheus.queries == []


def test_a_lagging_job_gets_a_worker_more_than_its_model_says(fake_kube, tmp_path, prometheus):
    # 9,000 samples/s needs 2 workers (f(2) = 10,318); 120 s of lag above a 60 s bound
    # keeps the job at one more than the 4 it runs (KALE's fallback)
    fake_kube.create(elastic_job("stream", 4, **{
        SAMPLE_RATE_QUERY: "sum(low)", "headstart.io/lag-query": "max(lag)",
        "headstart.io/max-lag-seconds": "60"}))
    worker_planner, _ = planner(fake_kube, tmp_path, prometheus.url)
    plan, = worker_planner.step(NOW, ROOMS, write=True).plans
    assert (plan.size, plan.planned) == (5, 5) and "fallback" in plan.reason
    assert "max(lag)" in prometheus.queries


def finished(job: dict, when: str) -> dict:
    job = {**job, "status": {"conditions": [{"type": "Complete", "status": "True",
                                             "lastTransitionTime": when}]}}
    return job


def test_finished_jobs_are_remembered_and_a_new_job_that_asks_starts_from_them(
        fake_kube, tmp_path, prometheus):
    for i, size in enumerate((8, 12)):
        fake_kube.create(finished(elastic_job(f"past-{i}", size, **{
            SAMPLE_RATE_QUERY: None}), f"2026-11-2{i}T10:00:00Z"))
    new = elastic_job("new", 2, **{SAMPLE_RATE_QUERY: None, "headstart.io/warm-start": "true"})
    new["status"] = {}
    fake_kube.create(new)
    worker_planner, store = planner(fake_kube, tmp_path, None)
    result = worker_planner.step(NOW, ROOMS, write=True)
    assert sorted(p["name"] for p in store.job_profiles()) == ["Job/ml/past-0", "Job/ml/past-1"]
    # 8 then (the more recent) 12, smoothed: 0.5 * 12 + 0.5 * 8 = 10
    (plan,) = result.plans
    assert (plan.name, plan.size) == ("new", 10) and "warm start" in plan.reason
    assert result.written
    # Its 8 workers beyond the 2 it asks for now are growth the plan is told of (no
    # placement group yet: it is not admitted), of its worker template's shape.
    (extra,) = result.growths
    assert (extra.key, extra.pods, extra.group, extra.now) == ("Job.ml.new", 8, "", True)
    assert extra.request.gpu_milli > 0
    # kept once: a second tick adds nothing; the job, once running, gets no new plan
    worker_planner.step(NOW + 300, ROOMS, write=True)
    assert len(store.job_profiles()) == 2
    fake_kube.delete("batch/v1", "Job", "new", "ml")
    new["status"] = {"ready": 10}
    fake_kube.create(new)
    assert worker_planner.step(NOW + 600, ROOMS, write=True).plans == []


def test_a_job_with_a_kale_plan_keeps_it_and_one_alone_in_the_history_says_why(
        fake_kube, tmp_path, prometheus):
    both = elastic_job("both", 4, **{"headstart.io/warm-start": "true"})
    both["status"] = {}
    fake_kube.create(both)
    lone = elastic_job("lone", 2, **{SAMPLE_RATE_QUERY: None, "headstart.io/warm-start": "true"})
    lone["status"] = {}
    fake_kube.create(lone)
    worker_planner, _ = planner(fake_kube, tmp_path, prometheus.url)
    result = worker_planner.step(NOW, ROOMS, write=True)
    assert [(p.name, p.size) for p in result.plans] == [("both", 10)]  # KALE's 30,000/s
    assert "warm start: no past job is at least 0.5 alike among 0" in \
        result.problems["Job.ml.lone"]
