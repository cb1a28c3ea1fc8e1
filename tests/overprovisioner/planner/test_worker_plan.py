"""KALE's worker plan for one elastic job: what it opts into, its size now and over the
horizon, and the growth the placeholders are kept for."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.catalog import load_catalog
from common.errors import InputError
from overprovisioner.planner.known_plan import growth_nodes, with_growth
from overprovisioner.planner.worker_plan import (
    GLOBAL_BATCH,
    LAG_QUERY,
    MAX_LAG,
    SAMPLE_RATE_QUERY,
    THROUGHPUT_MODEL,
    THROUGHPUT_QUERY,
    THROUGHPUT_THETAS,
    PlanSettings,
    decide,
    growth,
    kale_job,
)
from predictor.models.throughput import ThroughputModel

PAPER_THETAS = "0.00035,2.5726,0.9824,0.02786"  # KALE (SoCC 2024), M = 16,384
NOW = 1_800_000_000.0


def job_object(size: int = 8, ready: int | None = None, **annotations: str) -> dict:
    base = {"headstart.io/min-size": "1", "headstart.io/max-size": "32",
            SAMPLE_RATE_QUERY: 'sum(rate(ingest_samples_total{job="stream"}[5m]))',
            THROUGHPUT_MODEL: "synchronous", GLOBAL_BATCH: "16384",
            THROUGHPUT_THETAS: PAPER_THETAS}
    base.update(annotations)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "stream", "namespace": "ml", "uid": "u-1",
                         "annotations": {k: v for k, v in base.items() if v is not None}},
            "spec": {"parallelism": size, "completions": size, "completionMode": "Indexed",
                     "template": {"spec": {"containers": [{"name": "w", "resources": {
                         "requests": {"cpu": "4", "memory": "16Gi",
                                      "nvidia.com/gpu": "1"}}}]}}},
            "status": {"ready": size if ready is None else ready}}


SETTINGS = PlanSettings(rho=1.0, tau_steps=0, valid_for_s=900.0)


@pytest.mark.parametrize("rate_now, forecast, size, planned", [
    # f(9) = 29,840 falls short of 30,000; f(10) = 30,005 does (the paper's example)
    (30_000, [30_000, 30_000], 10, 10),
    (29_500, [29_500], 9, 9),               # f(8) = 29,249 < 29,500 < f(9) = 29,840
    (20_000, [26_000, 29_500], 4, 9),       # f(4) = 20,070 now; the peak 29,500 needs 9
    (20_000, [], 4, 4),                     # no forecast (short history): the rate now
    (60_000, [60_000], 10, 10),             # no size keeps up: the fastest, 10
], ids=["paper", "nine", "rising", "no-forecast", "short"])
def test_a_plan_keeps_up_with_the_rate_now_and_over_the_horizon(rate_now, forecast, size,
                                                                 planned):
    job = kale_job(job_object(), "Job")
    plan = decide(job, [], rate_now, forecast, NOW, SETTINGS)
    assert (plan.size, plan.planned) == (size, planned)
    assert (plan.kind, plan.namespace, plan.name, plan.uid) == ("Job", "ml", "stream", "u-1")
    assert plan.valid_until_s == NOW + 900.0
    assert ("short" in plan.reason) == (rate_now == 60_000)


def test_a_model_fitted_from_the_jobs_own_sizes_gives_the_papers_answer():
    true = ThroughputModel("synchronous", (0.00035, 2.5726, 0.9824, 0.02786), 16_384)
    rng = np.random.default_rng(7)
    samples = [(w, float(true.rate(np.array([w]))[0]) * (1 + rng.normal(0, 0.002)))
               for w in (2, 4, 6, 8, 12, 16) for _ in range(3)]
    job = kale_job(job_object(**{THROUGHPUT_THETAS: None, THROUGHPUT_QUERY: "sum(x)"}), "Job")
    assert job.problem is None and job.thetas is None
    assert decide(job, samples, 30_000, [], NOW, SETTINGS).size == 10
    # too few sizes seen to tell the four terms apart: an error naming what is missing
    with pytest.raises(InputError, match="4 different worker counts, got 1"):
        decide(job, [(8, 29_000.0), (8, 29_100.0)], 30_000, [], NOW, SETTINGS)
    with pytest.raises(InputError, match="no throughput sample yet"):
        decide(job, [], 30_000, [], NOW, SETTINGS)


def test_stabilization_keeps_a_short_dip_from_scaling_the_job_in():
    job = kale_job(job_object(), "Job")
    # without tau, a dip to 20,000 now would size 4; two steps of tau hold 10 through a
    # one-step dip (the rule of predictor.models.stabilize)
    dip = decide(job, [], 20_000, [30_000, 30_000],
                 NOW, PlanSettings(rho=1.0, tau_steps=0, valid_for_s=900.0))
    assert dip.size == 4
    held = decide(job, [], 30_000, [20_000, 30_000],
                  NOW, PlanSettings(rho=1.0, tau_steps=2, valid_for_s=900.0))
    assert (held.size, held.planned) == (10, 10)


@pytest.mark.parametrize("rate_now, forecast, size", [
    (20_000, [30_000, 30_000], 10),  # a one-step dip now: f(4) would do, the job keeps 10
    (20_000, [20_000, 20_000], 4),   # a lasting drop: scaled in to 4 at once
    (30_000, [20_000, 20_000], 10),  # the drop to come is the plan's later, not now
], ids=["dip-now", "lasting-drop", "drop-later"])
def test_the_size_now_is_stabilized_from_the_size_the_job_runs_at(rate_now, forecast, size):
    # The job runs 10 workers (f(10) = 30,005 >= 30,000). tau = 2 steps: a lower size
    # lasting fewer than 2 steps is filled up to its neighbours, the first step too.
    job = kale_job(job_object(size=10), "Job")
    plan = decide(job, [], rate_now, forecast, NOW,
                  PlanSettings(rho=1.0, tau_steps=2, valid_for_s=900.0))
    assert plan.size == size


@pytest.mark.parametrize("annotations, kind, message", [
    ({"headstart.io/min-size": None, "headstart.io/max-size": None}, "Job",
     "needs an elastic job"),
    ({THROUGHPUT_MODEL: "sometimes"}, "Job", "throughput-model: expected one of"),
    ({GLOBAL_BATCH: None}, "Job", "global-batch: expected a number > 0"),
    ({THROUGHPUT_THETAS: "1,2,3"}, "Job", "takes 4 numbers"),
    ({THROUGHPUT_THETAS: "1,2,-3,4"}, "Job", "takes 4 numbers"),
    ({THROUGHPUT_THETAS: None}, "Job", "set headstart.io/throughput-thetas"),
    ({SAMPLE_RATE_QUERY: ""}, "Job", "sample-rate-query: expected a PromQL"),
    ({"headstart.io/min-size": "40"}, "Job", "min-size=40 is above"),
], ids=["not-elastic", "mode", "no-batch", "theta-count", "negative-theta", "no-model",
        "empty-query", "bounds"])
def test_a_bad_opt_in_is_a_problem_naming_the_annotation(annotations, kind, message):
    job = kale_job(job_object(**annotations), kind)
    assert job is not None and job.problem is not None
    assert message in job.problem and "Job ml/stream" in job.problem


def test_a_job_that_names_no_sample_rate_query_asks_for_nothing():
    assert kale_job(job_object(**{SAMPLE_RATE_QUERY: None}), "Job") is None


def test_growth_is_the_planned_workers_beyond_the_size_in_the_jobs_group():
    job = kale_job(job_object(size=8), "Job")
    plan = decide(job, [], 20_000, [26_000, 29_500], NOW, SETTINGS)  # size 4, planned 9
    extra = growth(job, plan, "pg-a")
    assert (extra.pods, extra.group, extra.now) == (1, "pg-a", False)  # 9 - 8, later
    assert extra.request.gpu_milli == 1000
    now = decide(job, [], 30_000, [30_000], NOW, SETTINGS)  # size 10 now
    assert growth(job, now, "pg-a").now
    assert growth(job, decide(job, [], 20_000, [], NOW, SETTINGS), "pg-a") is None


def test_growth_becomes_known_nodes_in_its_group():
    types = load_catalog("aws").subset(["p4d.24xlarge"]).instance_types  # 8 GPUs, 96 cores
    job = kale_job(job_object(size=2), "Job")
    plan = decide(job, [], 30_000, [30_000], NOW, SETTINGS)  # 10: 8 more 1-GPU workers
    nodes = growth_nodes([growth(job, plan, "pg-a")], types)
    assert nodes == {("p4d.24xlarge", "pg-a"): 1.0}  # 8 x (1 GPU, 4 cores, 16 GiB): one node
    total = with_growth({("p4d.24xlarge", ""): 2.0, ("p4d.24xlarge", "pg-a"): 1.0}, nodes)
    assert total == {("p4d.24xlarge", ""): 2.0, ("p4d.24xlarge", "pg-a"): 2.0}


@pytest.mark.parametrize("lag, size, planned, fallback", [
    (None, 4, 4, False),   # no lag read: the model alone (f(4) = 20,070 > 20,000)
    (30.0, 4, 4, False),   # under the 60 s bound
    (90.0, 9, 9, True),    # above it: one more than the 8 it runs, whatever the model says
], ids=["no-lag", "under-bound", "above-bound"])
def test_kales_fallback_adds_a_worker_while_the_lag_is_above_its_bound(lag, size, planned,
                                                                      fallback):
    job = kale_job(job_object(size=8, **{LAG_QUERY: "max(consumer_lag_seconds)",
                                         MAX_LAG: "60"}), "Job")
    assert job.problem is None and job.max_lag_s == 60.0
    plan = decide(job, [], 20_000, [], NOW, SETTINGS, lag)
    assert (plan.size, plan.planned) == (size, planned)
    assert ("fallback" in plan.reason) == fallback


def test_kales_fallback_never_passes_the_maximum_nor_shrinks_a_lagging_job():
    job = kale_job(job_object(size=8, **{"headstart.io/max-size": "8",
                                         LAG_QUERY: "max(lag)", MAX_LAG: "60"}), "Job")
    # the model alone says 4; lagging at its maximum, the job keeps its 8
    plan = decide(job, [], 20_000, [], NOW, SETTINGS, 600.0)
    assert plan.size == 8 and "fallback" in plan.reason


@pytest.mark.parametrize("annotations, message", [
    ({LAG_QUERY: "max(lag)"}, "needs both"),
    ({MAX_LAG: "60"}, "needs both"),
    ({LAG_QUERY: "max(lag)", MAX_LAG: "soon"}, "max-lag-seconds: expected a number > 0"),
], ids=["no-bound", "no-query", "bad-bound"])
def test_a_half_declared_fallback_is_a_problem(annotations, message):
    job = kale_job(job_object(**annotations), "Job")
    assert job.problem is not None and message in job.problem
