"""A worker plan's growth gets its nodes first (issue 28), against the real components:
cluster-autoscaler (kwok provider), the REAL batch Job controller, kube-scheduler with
the shipped headstart-scheduler profile, the extender and the overprovisioner, each
with its own ServiceAccount's token.

pg-a holds 2 p4d.24xlarge nodes of CA's p4d group; "stream" is an elastic Indexed Job (min 1,
max 3) of 8-GPU pods running 2, one per node, that names a sample-rate query and
KALE's model (the paper's thetas, M = 16,384: f(2) = 10,318, f(3) = 15,595 samples/s).
A stand-in Prometheus (no Prometheus is built here) serves the rate:

1. alternating 14,000 and 9,000 samples/s, the last step 9,000: 2 workers keep up now,
   but the last-value forecast's 0.9 quantile is 9,000 + 5,000 = 14,000, which needs
   3. The overprovisioner writes the plan (size 2, planned 3) and keeps one p4d
   placeholder in pg-a for the growth; cluster-autoscaler launches a p4d node in pg-a
   for it. The admitter does not grow the job (its plan's size is 2).
2. 14,000 samples/s steadily: the plan's size becomes 3; the admitter scales the Job
   out; its new pod passes the gate into pg-a, preempts the placeholder and binds on
   the node that was launched for it, with no node start-up to wait for.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from locality.worker_plans import decode
from tests.e2e import installed
from tests.e2e.headstart import Extender, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node, phase
from tests.e2e.placeholders import LADDER_CONFIG, NAMESPACE, placeholder_pods
from tests.e2e.test_elastic import bound_pods, elastic_job, job_size
from tests.e2e.test_gang import gang_state, run_job
from tests.fakeprometheus import FakePrometheus

LOGS = ["headstart-scheduler", "headstart-extender", "headstart-overprovisioner",
        "cluster-autoscaler", "kube-controller-manager"]
GPU_TYPE = "p4d.24xlarge"
STATIC = ("static-0", "static-1")
QUERY = 'sum(rate(samples_in{stream="clicks"}[5m]))'
LOW, HIGH = 9_000.0, 14_000.0  # 2 workers keep up with LOW (10,318), 3 with HIGH (15,595)


def alternating(times: np.ndarray) -> np.ndarray:
    """HIGH, LOW, HIGH, ..., LOW: the last step is always LOW."""
    from_last = len(times) - 1 - np.arange(len(times))
    return np.where(from_last % 2 == 0, LOW, HIGH)


@pytest.fixture(scope="module")
def growth_cluster(e2e_clusters):
    spec, port = headstart_cluster(autoscaler=True)
    cluster = e2e_clusters.start(spec, "worker-plan-growth")
    for name in STATIC:
        node = kwok_node(name, group="pg-a", labels={
            "node.kubernetes.io/instance-type": GPU_TYPE,
            "k8s.amazonaws.com/accelerator": "nvidia-a100"})
        # Nodes of CA's p4d group (its kwok provider counts every node with the type's
        # label in the group's size, and one without its provider ID as never registered,
        # which makes the group unhealthy and never scaled up).
        node["spec"]["providerID"] = f"kwok:{name}"
        cluster.kube.create("/api/v1/nodes", node)
    admission = dict(installed.shipped_config("extender")["admission"])
    admission["elastic"] = {"scale_out_after_seconds": 5, "worker_plans": {"refresh_seconds": 2}}
    extender = Extender(cluster, port=port, settings={"admission": admission}).start()
    extender.wait_ready()
    cluster.kube.ensure_namespace(NAMESPACE)
    prometheus = FakePrometheus({QUERY: alternating})
    yield cluster, prometheus
    prometheus.stop()
    cluster.stop()


def plan_of(cluster, namespace: str):
    configmap = cluster.kube.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps/"
                                 "headstart-worker-plans")
    plans, problems = decode(configmap.get("data"))
    assert problems == [], problems
    plan = plans.get(f"Job.{namespace}.stream")
    return plan if plan is not None else NotYet(f"no plan for stream yet: {sorted(plans)}")


def test_the_nodes_for_a_planned_scale_out_come_before_it(growth_cluster, namespace,
                                                          e2e_timings):
    cluster, prometheus = growth_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    job = elastic_job("stream", 2)
    job["metadata"]["annotations"].update({
        "headstart.io/max-size": "3",
        "headstart.io/sample-rate-query": QUERY,
        "headstart.io/throughput-model": "synchronous", "headstart.io/global-batch": "16384",
        "headstart.io/throughput-thetas": "0.00035,2.5726,0.9824,0.02786"})
    run_job(cluster, namespace, job)
    before = cluster.wait("stream bound whole at 2", lambda: bound_pods(
        cluster, namespace, "stream", 2), 90, LOGS)
    assert set(before.values()) == set(STATIC)
    cluster.wait("stream's Gang Running", lambda: gang_state(
        cluster, namespace, "stream", "Running"), 30, LOGS)

    settings = {**LADDER_CONFIG, "instance_types": [GPU_TYPE],
                "forecast": {"model": "last_adaptive", "cold_start_placeholders": 0,
                             "prometheus_url": prometheus.url, "backfill": "1h"},
                "worker_plans": {"history": "20m", "stabilize_tau": "0s"}}
    overprovisioner = Overprovisioner(cluster, settings)
    started = time.monotonic()
    overprovisioner.start().wait_ready()

    plan = cluster.wait("stream's worker plan", lambda: plan_of(cluster, namespace), 60, LOGS)
    assert (plan.size, plan.planned) == (2, 3), plan

    def placeholder_running():
        pods = [p for p in placeholder_pods(kube, GPU_TYPE) if phase(p) == "Running"]
        return pods[0] if pods else NotYet(f"{len(placeholder_pods(kube, GPU_TYPE))} "
                                           "placeholder pods, none running")

    placeholder = cluster.wait("a p4d placeholder running in pg-a", placeholder_running,
                               240, LOGS)
    ready_s = time.monotonic() - started
    launched = bound_node(placeholder)
    assert launched not in STATIC
    node = kube.get(f"/api/v1/nodes/{launched}")
    assert node["metadata"]["labels"]["headstart.io/placement-group"] == "pg-a"
    assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == GPU_TYPE
    # the plan's size is still 2: the job was not grown meanwhile
    assert job_size(cluster, namespace, "stream") == (2, 2)

    prometheus.rates[QUERY] = HIGH
    switched = time.monotonic()
    grown = cluster.wait("stream grown to 3 by its plan", lambda: bound_pods(
        cluster, namespace, "stream", 3), 120, LOGS)
    grown_s = time.monotonic() - switched
    assert job_size(cluster, namespace, "stream") == (3, 3)
    assert {grown["0"], grown["1"]} == {before["0"], before["1"]}
    assert grown["2"] == launched, (grown, launched)
    e2e_timings.record("worker plan: nodes before the scale-out",
                       placeholder_running_since_overprovisioner_start=ready_s,
                       third_worker_bound_since_rate_rose=grown_s)
    overprovisioner.stop()
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/stream?propagationPolicy=Background")
