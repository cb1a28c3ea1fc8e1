"""The known-demand reader and recorder against the fake API server, over real HTTP."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

import numpy as np
import pytest

from bucketing.catalog import load_catalog
from predictor.known.combine import counted
from predictor.known.config import KnownDemandConfig
from predictor.known.pods import live_pod
from predictor.live.known_reader import WATCHED, make_known_reader
from predictor.live.known_recording import make_known_recorder
from predictor.live.recorder import RecorderConfig, make_recorder
from predictor.live.store import StoreConfig
from tests.predictor.known.known_builders import NOW, condition, job, meta, pod, stamp, template
from tests.predictor.live.test_recorder import wait_for

CATALOG = load_catalog("aws").subset(["g5.xlarge", "g5.12xlarge"])
TICK = 300.0
HORIZON = 600.0
CRD_GROUPS = ("kueue.x-k8s.io/v1beta2", "jobset.x-k8s.io/v1alpha2", "kubeflow.org/v1",
              "trainer.kubeflow.org/v1alpha1", "scheduling.x-k8s.io/v1alpha1",
              "scheduling.volcano.sh/v1beta1", "ray.io/v1")


def recorder_config(tmp_path) -> RecorderConfig:
    return RecorderConfig(tick_s=TICK, store=StoreConfig(path=str(tmp_path / "h.sqlite")),
                          watch_timeout_s=1, backoff_initial_s=0.05, backoff_max_s=0.2)


def watching(tmp_path):
    """What the known-demand reader takes of the recorder: its watch settings and staleness."""
    config = recorder_config(tmp_path)
    return config.watch_settings(), config.max_stale_s


@pytest.fixture
def running():
    """Start a reader's informers; stop them at the end."""
    stop = threading.Event()
    threads: list = []

    def start(reader):
        threads.extend(reader.start(stop))
        assert all(i.synced.wait(10) for i in reader.informers.values())
        return reader

    yield start
    stop.set()
    for thread in threads:
        thread.join(5)


def test_absent_crds_are_skipped_with_one_log_line(fake_kube, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="headstart.known")
    reader = make_known_reader(KnownDemandConfig(), *watching(tmp_path),
                               fake_kube.api_client(), "nvidia.com/gpu", HORIZON)
    # batch/v1 is always served; every CRD is absent from a bare cluster
    assert reader.served == {"jobs.batch": "v1", "cronjobs.batch": "v1"}
    lines = [r.getMessage() for r in caplog.records if r.name == "headstart.known"]
    assert len(lines) == 1 and lines[0].startswith("known demand: not served")
    assert "workloads.kueue.x-k8s.io (kueue)" in lines[0]
    assert "podgroups.scheduling.volcano.sh (podgroups)" in lines[0]


def test_disabled_sources_are_not_even_discovered(fake_kube, tmp_path):
    config = KnownDemandConfig(kueue=False, jobs=False, jobsets=False, kubeflow=False,
                               rayjobs=False, podgroups=False)
    reader = make_known_reader(config, *watching(tmp_path), fake_kube.api_client(),
                               "nvidia.com/gpu", HORIZON)
    assert reader.served == {"cronjobs.batch": "v1"}
    assert not any("kueue" in path for _, path, _ in fake_kube.requests)


def test_a_cluster_with_kueue_v1beta1_only_is_read_in_v1beta1(fake_kube, tmp_path):
    fake_kube.serve("kueue.x-k8s.io/v1beta1")
    reader = make_known_reader(KnownDemandConfig(), *watching(tmp_path),
                               fake_kube.api_client(), "nvidia.com/gpu", HORIZON)
    assert reader.served["workloads.kueue.x-k8s.io"] == "v1beta1"


def seed(kube, now: float = NOW) -> None:
    """One object per source, each announcing 1-GPU pods due by `now` + 5 minutes."""
    for group_version in CRD_GROUPS:
        kube.serve(group_version)
    kube.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                 "metadata": {"name": "cq"},
                 "spec": {"resourceGroups": [{
                     "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                     "flavors": [{"name": "f", "resources": [
                         {"name": "cpu", "nominalQuota": "64"},
                         {"name": "memory", "nominalQuota": "256Gi"},
                         {"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]}})
    kube.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": meta("lq"), "spec": {"clusterQueue": "cq"}})
    kube.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                 "metadata": meta("job-queued", owner=("batch/v1", "Job", "queued")),
                 "spec": {"queueName": "lq", "podSets": [
                     {"name": "main", "count": 2, "template": template()}]}})
    # the Workload's own Job, suspended by Kueue: counted once, through the Workload
    kube.create(job("queued", labels={"kueue.x-k8s.io/queue-name": "lq"}))
    # a Workload behind a ProvisioningRequest check: CA provisions for it, so covered
    kube.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                 "metadata": {"name": "prov"},
                 "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"}})
    kube.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                 "metadata": meta("job-provisioned", owner=("batch/v1", "Job", "provisioned")),
                 "spec": {"queueName": "lq", "podSets": [
                     {"name": "main", "count": 4, "template": template()}]},
                 "status": {"conditions": [condition("QuotaReserved", now - 60)],
                            "admissionChecks": [{"name": "prov", "state": "Pending",
                                                 "lastTransitionTime": stamp(now - 60),
                                                 "message": ""}]}})
    # a pod held by a scheduling gate: no node is on its way for it
    held = pod("held", node=None, phase="Pending")
    held["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    kube.create(held)
    kube.create(job("parked"))
    kube.create({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta("pt"),
                 "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3,
                                                             "template": template()}}}})
    kube.create(pod("pt-worker-0", owner=("kubeflow.org/v1", "PyTorchJob", "pt"),
                    labels={"training.kubeflow.org/replica-type": "worker"}))
    kube.create({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": meta("gang"),
                 "spec": {"minMember": 2, "minResources": {"nvidia.com/gpu": "2", "cpu": "8",
                                                           "memory": "32Gi"}}})
    kube.create({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("nightly"),
                 "spec": {"schedule": cron_at(now + 300),
                          "jobTemplate": {"spec": {"template": template()}}}})
    # a Job whose template cannot be read: left out and counted, never a crash
    broken = job("broken")
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "x"
    kube.create(broken)


def cron_at(when: float) -> str:
    """A daily schedule at the minute of `when` (UTC)."""
    moment = datetime.fromtimestamp(when, UTC)
    return f"{moment.minute} {moment.hour} * * *"


def test_items_from_every_source_counted_once(fake_kube, tmp_path, running):
    seed(fake_kube)
    reader = running(make_known_reader(KnownDemandConfig(), *watching(tmp_path),
                                       fake_kube.api_client(), "nvidia.com/gpu", HORIZON))
    assert len(reader.served) == len(WATCHED)
    pods = [live_pod(p) for p in fake_kube.list("v1", "Pod")]
    report = reader.items(NOW, pods)
    found = sorted((i.source, i.name, i.pods, i.covered) for i in report.items)
    assert found == [
        ("cronjobs", "nightly", 1, False),
        ("gated", "held", 1, False),
        ("jobs", "parked", 2, False),
        ("kubeflow", "pt", 2, False),  # 3 workers - 1 created
        ("kueue", "job-provisioned", 4, True),  # CA provisions it: listed, not counted
        ("kueue", "job-queued", 2, False),  # over the suspended Job "queued" it stands for
        ("podgroups", "gang", 2, False),
    ]
    assert report.unreadable == 1 and report.stale == () and report.absent == ()


def test_a_job_kueue_suspended_is_not_counted_while_kueue_is_stale(fake_kube, tmp_path,
                                                                    running):
    """With the Kueue watch failing, the Job Kueue suspended is not taken for a suspended
    Job due now (for suspended_window): only its Workload can say when it runs."""
    seed(fake_kube)
    reader = running(make_known_reader(KnownDemandConfig(), *watching(tmp_path),
                                       fake_kube.api_client(), "nvidia.com/gpu", HORIZON))
    for watched, informer in reader.informers.items():
        if watched.source == "kueue":
            informer.status.failing_since = NOW - 3 * TICK  # past max_stale_ticks (2) x tick
    report = reader.items(NOW, [live_pod(p) for p in fake_kube.list("v1", "Pod")])
    assert report.stale == ("kueue",)
    queued, = [i for i in report.items if i.name == "queued"]
    assert queued.source == "jobs" and queued.expected_s is None, queued
    assert "queued" not in {i.name for i in counted(report.items, NOW, HORIZON)}


def test_the_recorder_writes_known_and_announced_demand(fake_kube, tmp_path, running,
                                                          monkeypatch):
    import bucketing.catalog

    monkeypatch.setattr(bucketing.catalog, "load_catalog", lambda ref: CATALOG)
    # The fake stamps creationTimestamp with the real clock, as an API server does, so the
    # recorder runs at the real time here.
    now = (time.time() // TICK) * TICK + 1.0
    seed(fake_kube, now)
    fake_kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    time.sleep(1.1)  # creationTimestamp has whole seconds: seed a second before counting
    recorder = make_recorder(recorder_config(tmp_path), fake_kube.api_client(), time.time)
    recorder.known = make_known_recorder(
        KnownDemandConfig(), recorder.store, recorder.bucket_types,
        recorder.config.watch_settings(), recorder.config.max_stale_s, fake_kube.api_client(),
        CATALOG.gpu_resource, HORIZON)
    stop = threading.Event()
    threads = [threading.Thread(target=i.run, args=(stop,), daemon=True)
               for i in (recorder.pods, recorder.nodes)]
    for thread in threads:
        thread.start()
    running(recorder.known.reader)
    try:
        assert recorder.pods.synced.wait(10) and recorder.nodes.synced.wait(10)
        recorder.record(now)
        state = recorder.known.latest
        # due within 600 s: 2 (kueue) + 1 (gated) + 2 (parked job) + 2 (pt) + 2 (gang)
        # + 1 (cron) = 10 pods (the 4 behind the ProvisioningRequest are covered) of 1 GPU,
        # 4 cores, 16 GiB: 10 g5.xlarge by GPU, but 4 cores + 16 GiB exceed a g5.xlarge's
        # allocatable, so they are embedded into g5.12xlarge: 10 x 4 cores / 47.81 = 0.84,
        # 10 x 16 GiB / 190.5 = 0.84, 10 GPUs / 4 = 2.5 -> 3 nodes
        assert state.values.total == {"g5.xlarge": 0.0, "g5.12xlarge": 3.0}
        assert sum(state.values.pods.values()) == 10
        known = recorder.store.read_known()
        assert set(known["source"]) == {"total", "kueue", "gated", "jobs", "kubeflow",
                                        "podgroups", "cronjobs"}
        # the covered Workload is announced (its pods leave the forecaster's history), the
        # gated pod is not (it exists already)
        assert "batch/Job/team/provisioned" in recorder.known.announced
        assert "/Pod/team/held" not in recorder.known.announced
        # the PyTorchJob's missing workers appear after it was counted: announced demand
        time.sleep(1.1)
        for index in (1, 2):
            fake_kube.create(pod(f"pt-worker-{index}", node="n1",
                                 owner=("kubeflow.org/v1", "PyTorchJob", "pt"),
                                 labels={"training.kubeflow.org/replica-type": "worker"}))
        assert wait_for(lambda: len(recorder.pods.items()) == 4)  # pt-worker-0..2, held
        recorder.record(now + TICK)
        tick0 = (now // TICK) * TICK
        announced = recorder.store.read_announced(np.array([tick0, tick0 + TICK]),
                                                  ["g5.12xlarge"])
        # tick 0: nothing announced yet; tick 1: the 2 new workers -> 1 g5.12xlarge
        # (2 GPUs / 4); pt-worker-0 existed before pt was counted, so it is not announced
        assert announced.tolist() == [[0.0], [1.0]]
        assert recorder.known.latest.values.pods.get("kubeflow", 0) == 0
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
        recorder.store.close()


def test_stamp_is_the_api_time_format():
    assert stamp(NOW).endswith("Z")


def test_a_server_unreachable_at_start_is_checked_again_until_it_answers(tmp_path, caplog):
    # The service may start during an API outage: discovery must neither crash nor switch
    # the sources off for good; the next tick after the server answers reads them.
    import socket

    from kubernetes import client

    from predictor.live.known_reader import DISCOVERY_RETRY_S
    from tests.fakekube import FakeKube

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.retries = 0
    caplog.set_level(logging.INFO, logger="headstart.known")
    reader = make_known_reader(KnownDemandConfig(), *watching(tmp_path),
                               client.ApiClient(configuration), "nvidia.com/gpu", HORIZON)
    enabled = WATCHED  # every source is on by default
    assert (reader.served, len(reader.unchecked)) == ({}, len(enabled))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"cannot check {len(enabled)} resources yet" in warnings[0]

    reader.retry_discovery(NOW)  # still down: nothing changes, no crash
    assert len(reader.unchecked) == len(enabled)
    kube = FakeKube().start(port=port)
    try:
        reader.retry_discovery(NOW + 1)  # within the retry interval: not asked again
        assert len(reader.unchecked) == len(enabled)
        reader.retry_discovery(NOW + 1 + DISCOVERY_RETRY_S)
        assert reader.served == {"jobs.batch": "v1", "cronjobs.batch": "v1"}
        assert reader.unchecked == []
        assert "workloads.kueue.x-k8s.io (kueue)" in reader.absent
    finally:
        kube.stop()
