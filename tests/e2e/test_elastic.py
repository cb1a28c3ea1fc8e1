"""Elastic Indexed Jobs against the real components, as installed (issue 28).

The cluster: pg-a, 4 8-GPU kwok nodes; the shipped extender with
`admission.elastic.scale_out_after_seconds: 5`. "grow" is an elastic Indexed Job
(annotations headstart.io/min-size 1, max-size 4 on the Job) of 8-GPU pods asking 8
CPUs and 64 GiB each: light in KOD2's weight. It runs 4 pods, filling pg-a. "claim" is
a fixed 2-pod Indexed Job asking 1 CPU and 4 GiB per 8-GPU pod: heavier. The admitter
scales "grow" in to 2 (a patch of parallelism and completions; the REAL Job controller
removes indices 3 and 2), "claim" binds whole in pg-a, "grow" keeps its 2 pods running
where they were. Once "claim" is deleted and no job waits, "grow" is scaled out to 4
again after 5 s: the Job controller creates indices 2 and 3, which pass the gate into
pg-a and bind.

An elastic Indexed Job of 6 pods (minimum 2) submitted to the 4 free nodes is resized
to 4 before admission (the Job controller removes the gated indices 4 and 5) and then
admitted whole and bound at 4.

A worker plan (KALE) steers a running elastic job: the overprovisioner's worker planner,
run with its own ServiceAccount's token against the real API server and a stand-in
Prometheus (no Prometheus runs here), lists the Jobs, plans "stream" (the paper's
model, M = 16,384) at 3 workers for 15,000 samples/s (f(3) = 15,595) and writes the
ConfigMap; the extender's admitter reads it with its own token (the shipped Role in
headstart-placeholders) and scales the Job in from 4 to 3; at 19,000 samples/s the plan
says 4 (f(3) falls short, f(4) = 20,070) and the Job grows back.

DLRover-RM's warm start, as installed: a plain Indexed Job of 3 runs to completion (kwok
completes it; the real Job controller marks it Complete); the worker planner (the
overprovisioner's token) keeps its profile in a real history store; a suspended elastic
Job of 1 (min 1, max 4) that asks for a warm start gets a plan of 3 from it; once
resumed, the admitter resizes it to 3 before admission (rule 7b) and it binds whole at 3.

And the bound on the extender's new right (`patch` on Jobs): with its token, the
shipped ValidatingAdmissionPolicy `headstart-extender-job-edits` refuses a change of
"grow"'s suspension or pod template and any resize of a Job that did not opt in, and
accepts a resize within the bounds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import config as k8s_config

from tests.e2e import installed
from tests.e2e.headstart import extender_on
from tests.e2e.jobs import patch_job_as_extender
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, kwok_node
from tests.e2e.test_gang import gang, gang_state, run_job
from tests.e2e.test_gang_recovery import live, tolerant_job

LOGS = ["headstart-scheduler", "headstart-extender", "kube-controller-manager"]
NODES = {f"a-{i}": "pg-a" for i in range(4)}
BOUNDS = {"headstart.io/min-size": "1", "headstart.io/max-size": "4"}


@pytest.fixture(scope="module")
def elastic_cluster(e2e_clusters):
    admission = dict(installed.shipped_config("extender")["admission"])
    admission["elastic"] = {"scale_out_after_seconds": 5,
                            "worker_plans": {"refresh_seconds": 2}}
    cluster, extender, _ = extender_on(e2e_clusters, "elastic", [
        kwok_node(name, memory="768Gi", group=group) for name, group in NODES.items()],
        LOGS, settings={"admission": admission})
    yield cluster, extender
    cluster.stop()


def elastic_job(name: str, size: int) -> dict[str, Any]:
    """An Indexed Job that opted in to resizing; its pods declare no size (the owner's
    count is the job's size)."""
    job = tolerant_job(name, size, node_selector=None)
    job["metadata"]["annotations"] = dict(BOUNDS)
    job["spec"]["template"]["metadata"]["annotations"].pop("headstart.io/job-size")
    return job


def light_job(name: str, size: int) -> dict[str, Any]:
    job = tolerant_job(name, size, node_selector=None)
    for container in job["spec"]["template"]["spec"]["containers"]:
        container["resources"]["requests"].update(cpu="1", memory="4Gi")
    return job


def bound_pods(cluster, namespace: str, job: str, size: int):
    """{index: node} of the job's live pods once exactly `size` are bound."""
    pods = live(cluster, namespace, job)
    nodes = {p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]:
             bound_node(p) for p in pods}
    if len(pods) != size or not all(nodes.values()):
        return NotYet(f"{sum(map(bool, nodes.values()))} of {size} bound ({len(pods)} live)")
    return nodes


def job_size(cluster, namespace: str, name: str) -> tuple[int, int]:
    spec = cluster.kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")["spec"]
    return spec["parallelism"], spec["completions"]


def remove_job(cluster, namespace: str, name: str) -> None:
    """Delete the Job (its pods in the background) and wait until none is live."""
    cluster.kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}?"
                        "propagationPolicy=Background")
    cluster.wait(f"{name}'s pods gone", lambda: not live(cluster, namespace, name) or NotYet(
        "pods left"), 60, LOGS)


def overprovisioners_planner(cluster, name: str, store=None, prometheus_url=None):
    """The overprovisioner's worker planner, in this process, with the
    headstart-overprovisioner ServiceAccount's token and the shipped config."""
    import numpy as np

    from overprovisioner.config.parse import parse_config
    from overprovisioner.service.apply import KubeApi
    from overprovisioner.service.worker_planner import PrometheusReader, WorkerPlanner

    kubeconfig = cluster.token_kubeconfig("headstart", "headstart-overprovisioner", name)
    config = parse_config(installed.shipped_config("overprovisioner"), "shipped")
    return WorkerPlanner(config, KubeApi(k8s_config.new_client_from_config(
        config_file=str(kubeconfig)), 10.0), store,
        PrometheusReader(prometheus_url) if prometheus_url else None,
        np.random.default_rng(0), time.sleep)


def test_a_heavier_job_scales_an_elastic_job_in_and_it_grows_back(elastic_cluster, namespace,
                                                                  e2e_timings):
    cluster, _ = elastic_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, elastic_job("grow", 4))
    before = cluster.wait("grow bound whole", lambda: bound_pods(
        cluster, namespace, "grow", 4), 90, LOGS)
    cluster.wait("grow's Gang Running", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 30, LOGS)

    created = time.monotonic()
    run_job(cluster, namespace, light_job("claim", 2))
    claim = cluster.wait("claim bound whole", lambda: bound_pods(
        cluster, namespace, "claim", 2), 120, LOGS)
    claim_s = time.monotonic() - created
    assert job_size(cluster, namespace, "grow") == (2, 2)
    # grow kept indices 0 and 1, where they were; claim took the nodes 2 and 3 left.
    kept = cluster.wait("grow at 2", lambda: bound_pods(cluster, namespace, "grow", 2), 60,
                        LOGS)
    assert kept == {"0": before["0"], "1": before["1"]}
    assert set(claim.values()) == {before["2"], before["3"]}
    record = gang(cluster, namespace, "grow")
    assert record["spec"]["size"] == 2 and record["status"]["state"] in ("Running",
                                                                         "Recovering")
    events = [e for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
              if e["reason"] == "HeadstartResized"]
    assert any(e["involvedObject"]["name"] == "grow" and e["message"].startswith("4 -> 2")
               for e in events), events
    job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/grow")
    assert not job["status"].get("failed"), job["status"]

    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/claim?propagationPolicy=Background")
    freed = time.monotonic()
    grown = cluster.wait("grow scaled out to 4 and bound", lambda: bound_pods(
        cluster, namespace, "grow", 4), 120, LOGS)
    grow_s = time.monotonic() - freed
    assert job_size(cluster, namespace, "grow") == (4, 4)
    assert {grown["0"], grown["1"]} == {before["0"], before["1"]}
    assert set(grown.values()) <= set(NODES)
    cluster.wait("grow's Gang Running at 4", lambda: gang_state(
        cluster, namespace, "grow", "Running"), 60, LOGS)
    assert gang(cluster, namespace, "grow")["spec"]["size"] == 4
    e2e_timings.record("elastic: scale-in for a heavier job, then scale-out",
                       claim_bound_since_created=claim_s, grown_bound_since_freed=grow_s)
    remove_job(cluster, namespace, "grow")


def test_a_job_no_domain_holds_whole_is_admitted_at_the_size_one_holds(elastic_cluster,
                                                                        namespace, e2e_timings):
    cluster, _ = elastic_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    job = elastic_job("wide", 6)
    job["metadata"]["annotations"].update({"headstart.io/min-size": "2",
                                           "headstart.io/max-size": "6"})
    created = time.monotonic()
    run_job(cluster, namespace, job)
    bound = cluster.wait("wide bound whole at 4", lambda: bound_pods(
        cluster, namespace, "wide", 4), 120, LOGS)
    bound_s = time.monotonic() - created
    assert sorted(bound) == ["0", "1", "2", "3"] and set(bound.values()) == set(NODES)
    assert job_size(cluster, namespace, "wide") == (4, 4)
    record = gang(cluster, namespace, "wide")
    assert record["spec"]["size"] == 4, record
    e2e_timings.record("elastic: admitted at the size a domain holds", bound_since_created=bound_s)
    remove_job(cluster, namespace, "wide")


def test_a_worker_plan_written_by_the_overprovisioner_resizes_the_job(elastic_cluster,
                                                                      namespace, e2e_timings):
    from tests.fakeprometheus import FakePrometheus

    cluster, _ = elastic_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    query = f'sum(rate(samples_in{{namespace="{namespace}"}}[5m]))'
    job = elastic_job("stream", 4)
    job["metadata"]["annotations"].update({
        "headstart.io/sample-rate-query": query,
        "headstart.io/throughput-model": "synchronous", "headstart.io/global-batch": "16384",
        "headstart.io/throughput-thetas": "0.00035,2.5726,0.9824,0.02786"})
    run_job(cluster, namespace, job)
    before = cluster.wait("stream bound whole", lambda: bound_pods(
        cluster, namespace, "stream", 4), 90, LOGS)
    cluster.wait("stream's Gang Running", lambda: gang_state(
        cluster, namespace, "stream", "Running"), 30, LOGS)

    prometheus = FakePrometheus({query: 15_000.0})
    planner = overprovisioners_planner(cluster, "worker-planner",
                                       prometheus_url=prometheus.url)
    try:
        result = planner.step(time.time(), (), write=True)
        written = time.monotonic()
        assert result.written and result.problems == {}, result
        assert [(p.name, p.size) for p in result.plans if p.namespace == namespace] == [
            ("stream", 3)]
        kept = cluster.wait("stream scaled in to 3 by its plan", lambda: bound_pods(
            cluster, namespace, "stream", 3), 90, LOGS)
        shrunk_s = time.monotonic() - written
        assert job_size(cluster, namespace, "stream") == (3, 3)
        assert kept == {i: before[i] for i in ("0", "1", "2")}
        events = [e for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
                  if e["reason"] == "HeadstartResized"]
        assert any(e["involvedObject"]["name"] == "stream" and "worker plan" in e["message"]
                   for e in events), events

        prometheus.rates[query] = 19_000.0
        cluster.wait("stream's Gang Running at 3", lambda: gang_state(
            cluster, namespace, "stream", "Running"), 60, LOGS)
        result = planner.step(time.time(), (), write=True)
        rewritten = time.monotonic()
        assert [(p.name, p.size) for p in result.plans if p.namespace == namespace] == [
            ("stream", 4)]
        cluster.wait("stream grown to 4 by its plan", lambda: bound_pods(
            cluster, namespace, "stream", 4), 120, LOGS)
        grown_s = time.monotonic() - rewritten
        assert job_size(cluster, namespace, "stream") == (4, 4)
    finally:
        prometheus.stop()
    e2e_timings.record("elastic: a worker plan resizes the job",
                       shrunk_bound_since_written=shrunk_s, grown_bound_since_written=grown_s)
    remove_job(cluster, namespace, "stream")


def test_a_warm_started_job_is_admitted_at_the_size_its_similar_jobs_ended_with(
        elastic_cluster, namespace, e2e_timings, tmp_path):
    from predictor.live.store import HistoryStore
    from tests.e2e.test_gang import indexed_job

    cluster, extender = elastic_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    run_job(cluster, namespace, indexed_job("past", 3, node_selector=None))

    def complete():
        job = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/past")
        done = [c for c in job["status"].get("conditions") or []
                if c["type"] == "Complete" and c["status"] == "True"]
        return job if done else NotYet(job["status"])

    cluster.wait("past Complete", complete, 120, LOGS)
    store = HistoryStore(tmp_path / "history.sqlite", 300.0)  # the shipped 5m tick
    planner = overprovisioners_planner(cluster, "warm-start-planner", store)
    planner.step(time.time(), (), write=True)
    assert f"Job/{namespace}/past" in [p["name"] for p in store.job_profiles()]

    warm = elastic_job("warm", 1)
    warm["metadata"]["annotations"]["headstart.io/warm-start"] = "true"
    warm["spec"]["suspend"] = True
    run_job(cluster, namespace, warm)
    result = planner.step(time.time(), (), write=True)
    (plan,) = [p for p in result.plans if p.namespace == namespace]
    assert (plan.name, plan.size) == ("warm", 3), plan
    # this planner's write holds warm's plan alone; the admitter re-reads every 2 s
    cluster.wait("the admitter read the plan", lambda: (
        detail := extender.get("/admission").json().get("worker_plans", "")).startswith(
        "1 plan(s)") or NotYet(detail), 30, LOGS)
    resumed = time.monotonic()
    kube.patch(f"/apis/batch/v1/namespaces/{namespace}/jobs/warm", {"spec": {"suspend": False}})
    bound = cluster.wait("warm bound whole at 3", lambda: bound_pods(
        cluster, namespace, "warm", 3), 120, LOGS)
    bound_s = time.monotonic() - resumed
    assert sorted(bound) == ["0", "1", "2"] and set(bound.values()) <= set(NODES)
    assert job_size(cluster, namespace, "warm") == (3, 3)
    events = [e for e in kube.list(f"/api/v1/namespaces/{namespace}/events")
              if e["reason"] == "HeadstartResized" and e["involvedObject"]["name"] == "warm"]
    assert any("DLRover-RM warm start" in e["message"] for e in events), events
    e2e_timings.record("elastic: warm start", bound_at_3_since_resumed=bound_s)
    for name in ("warm", "past"):
        remove_job(cluster, namespace, name)


def test_the_extender_may_only_resize_jobs_that_opted_in(elastic_cluster, namespace):
    cluster, _ = elastic_cluster
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    opted = elastic_job("opted", 1)
    opted["spec"]["suspend"] = True  # nothing runs: only the API's answers matter here
    run_job(cluster, namespace, opted)
    plain = tolerant_job("plain", 1, node_selector=None)
    plain["spec"]["suspend"] = True
    run_job(cluster, namespace, plain)

    refused = {
        "suspension": ("opted", {"spec": {"suspend": False}}),
        "the pod template": ("opted", {"spec": {"template": {"metadata": {
            "labels": {"e2e": "forged"}}}}}),
        "above its max-size": ("opted", {"spec": {"parallelism": 5, "completions": 5}}),
        "a Job that did not opt in": ("plain", {"spec": {"parallelism": 2,
                                                         "completions": 2}}),
        "its annotations": ("opted", {"metadata": {"annotations": {
            "headstart.io/max-size": "100"}}}),
    }
    for what, (name, patch) in refused.items():
        code, err = patch_job_as_extender(cluster, namespace, name, patch)
        assert code in (403, 422) and "headstart-extender-job-edits" in err, (what, code, err)
    code, err = patch_job_as_extender(cluster, namespace, "opted",
                                      {"spec": {"parallelism": 3, "completions": 3}})
    assert code == 200, err
    assert job_size(cluster, namespace, "opted") == (3, 3)
    for name in ("opted", "plain"):
        kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}?"
                    "propagationPolicy=Background")
