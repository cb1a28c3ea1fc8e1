"""The service through real HTTP (aiohttp test server), with the loop on the fake API server."""

from __future__ import annotations

import asyncio

from kube.leader import LeaderElector
from overprovisioner.config import LeaderElectionConfig
from overprovisioner.service.server import create_app
from predictor.live.known_reader import WATCHED
from tests.overprovisioner.service.test_loop import (
    RISING,
    MemoryDemand,
    at_tick,
    make_config,
    make_loop,
)


async def test_endpoints_before_and_after_the_first_tick(aiohttp_client, fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    # The model is pinned: the numbers below are the last value's (the default may change).
    loop = make_loop(fake_kube, make_config(forecast={"model": "last"}), demand)
    gate = asyncio.Event()
    now = [at_tick(29)]

    def clock() -> float:
        return now[0]

    async def sleep(seconds: float) -> None:
        await gate.wait()  # hold the loop after its first tick

    started = []
    app = create_app(loop, background=lambda: (started.append(1), lambda: started.append(0))[1],
                     clock=clock, sleep=sleep)
    client = await aiohttp_client(app)
    assert (await client.get("/healthz")).status == 200
    for _ in range(200):
        if loop.latest is not None:
            break
        await asyncio.sleep(0.02)
    response = await client.get("/readyz")
    assert response.status == 200
    response = await client.get("/plan")
    assert response.status == 200
    body = await response.json()
    assert body["ok"] and body["mode"] == "forecast" and body["model"] == "last"
    (g5,) = [b for b in body["buckets"] if b["instance_type"] == "g5.xlarge"]
    # Forecast 31 at q=0.9, 29 in use: 2 wanted, with the arithmetic in the reason.
    assert g5["wanted"] == 2 and g5["forecast"] == 31 and g5["forecast_point"] == 29
    assert "31.00" in g5["reason"]
    assert body["applied"]["backend"] == "deployment"
    assert body["config_warnings"] == []  # no cost cap in this config
    metrics = await (await client.get("/metrics")).text()
    assert 'headstart_overprovisioner_placeholders_wanted{instance_type="g5.xlarge"' in metrics
    assert "headstart_overprovisioner_api_errors_total" in metrics
    assert started == [1]
    await client.close()
    assert started == [1, 0]  # background work stopped on shutdown


async def test_plan_and_readyz_wait_for_the_first_tick(aiohttp_client, fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    loop = make_loop(fake_kube, make_config(), demand)
    loop.tick = lambda now: None  # a tick that never finishes a report
    client = await aiohttp_client(create_app(loop, clock=lambda: at_tick(29),
                                             sleep=lambda s: asyncio.sleep(3600)))
    assert (await client.get("/readyz")).status == 503
    response = await client.get("/plan")
    assert response.status == 503 and "first tick" in (await response.json())["error"]
    await client.close()


async def test_shutdown_releases_the_lease(aiohttp_client, fake_kube) -> None:
    demand = MemoryDemand(["g5.xlarge", "p4d.24xlarge"], RISING)
    elector = LeaderElector(fake_kube.api_client(), "headstart",
                            LeaderElectionConfig(lease_duration_s=3, renew_deadline_s=2,
                                                 retry_period_s=1), identity="svc")
    loop = make_loop(fake_kube, make_config(dry_run=True), demand)
    loop.is_leader = elector.is_leader
    client = await aiohttp_client(create_app(loop, elector=elector, clock=lambda: at_tick(29),
                                             sleep=lambda s: asyncio.sleep(3600)))
    for _ in range(250):
        if elector.is_leader():
            break
        await asyncio.sleep(0.02)
    assert elector.is_leader()
    await client.close()
    lease = fake_kube.get("coordination.k8s.io/v1", "Lease", "headstart-overprovisioner",
                          "headstart")
    assert not lease["spec"].get("holderIdentity")


async def test_cli_wiring_against_the_fake_cluster(aiohttp_client, fake_kube, tmp_path) -> None:
    """build_app as `headstart overprovisioner` runs it: recorder + SQLite, elector, applier.

    Also pins the API calls the service makes (the manifests' RBAC must allow exactly these).
    """
    from kubernetes import config as kube_config

    from overprovisioner.service.commands import build_app

    fake_kube.create({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": "gpu-1", "labels": {
                          "node.kubernetes.io/instance-type": "g5.xlarge"}},
                      "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                 "allocatable": {"cpu": "4", "memory": "16Gi",
                                                 "nvidia.com/gpu": "1"}}})
    config = make_config(forecast={"history_path": str(tmp_path / "history.sqlite")},
                         leader_election={"lease_duration": "3s", "renew_deadline": "2s",
                                          "retry_period": "1s"})
    api_client = kube_config.new_client_from_config(
        config_file=fake_kube.write_kubeconfig(tmp_path / "kubeconfig"))

    async def sleep(seconds: float) -> None:
        await asyncio.sleep(0.2)  # tick again soon, at the same (frozen) tick time

    app = build_app(config, api_client, clock=lambda: at_tick(29), sleep=sleep)
    client = await aiohttp_client(app)
    try:
        created = None
        for _ in range(300):
            created = fake_kube.get("apps/v1", "Deployment", "headstart-placeholder-g5-xlarge",
                                    "headstart")
            if created is not None:
                break
            await asyncio.sleep(0.02)
        assert created is not None, (await (await client.get("/plan")).json())
        # Cold start: one placeholder per type from the ladder (an empty history).
        assert created["spec"]["replicas"] == 1
        for _ in range(300):  # the tick writes before it publishes its report
            response = await client.get("/plan")
            if response.status == 200:
                break
            await asyncio.sleep(0.02)
        body = await response.json()
        assert body["mode"] == "ladder"
    finally:
        await client.close()
    assert (tmp_path / "history.sqlite").exists()

    calls = {(method, _resource(path)) for method, path, _ in fake_kube.requests}
    assert calls <= EXPECTED_CALLS, sorted(calls - EXPECTED_CALLS)


def _resource(path: str) -> str:
    """/apis/apps/v1/namespaces/headstart/deployments/x -> apps/v1 deployments."""
    parts = [p for p in path.split("/") if p]
    if parts[0] == "api":
        group_version, rest = "v1", parts[2:]
    else:
        group_version, rest = "/".join(parts[1:3]), parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    return f"{group_version} {rest[0]}" if rest else f"{group_version} (discovery)"


# (HTTP method, "group/version resource"): what the overprovisioner may call. RBAC verbs:
# GET on a collection = list (watch with ?watch=true), GET on a name = get, PATCH = patch
# (server-side apply), POST = create, PUT = update, DELETE = delete.
EXPECTED_CALLS = {
    *{(method, f"autoscaling.x-k8s.io/{version} {what}")
      for version in ("v1beta1", "v1alpha1")
      for method, what in (("GET", "(discovery)"), ("GET", "capacitybuffers"),
                           ("PATCH", "capacitybuffers"), ("DELETE", "capacitybuffers"))},
    ("GET", "apps/v1 deployments"),
    ("PATCH", "apps/v1 deployments"),
    ("DELETE", "apps/v1 deployments"),
    ("GET", "v1 podtemplates"),
    ("PATCH", "v1 podtemplates"),
    ("DELETE", "v1 podtemplates"),
    ("GET", "scheduling.k8s.io/v1 priorityclasses"),
    ("POST", "scheduling.k8s.io/v1 priorityclasses"),
    ("GET", "coordination.k8s.io/v1 leases"),
    ("POST", "coordination.k8s.io/v1 leases"),
    ("PUT", "coordination.k8s.io/v1 leases"),
    ("GET", "v1 pods"),
    ("GET", "v1 nodes"),
    ("GET", "v1 events"),
    # Known demand: discovery of each source's group/version, then list + watch.
    *{("GET", f"{w.group}/{v} (discovery)") for w in WATCHED for v in w.versions},
    *{("GET", f"{w.group}/{v} {w.plural}") for w in WATCHED for v in w.versions},
    ("GET", "v1 configmaps"),  # cluster-autoscaler's status, in kube-system
}


async def test_cli_dry_run_never_writes_not_even_a_lease(aiohttp_client, fake_kube,
                                                          tmp_path) -> None:
    from dataclasses import replace

    from kubernetes import config as kube_config

    from overprovisioner.service.commands import build_app

    config = replace(make_config(forecast={"history_path": str(tmp_path / "h.sqlite")}),
                     dry_run=True)
    api_client = kube_config.new_client_from_config(
        config_file=fake_kube.write_kubeconfig(tmp_path / "kubeconfig"))
    app = build_app(config, api_client, clock=lambda: at_tick(29),
                    sleep=lambda s: asyncio.sleep(3600))
    client = await aiohttp_client(app)
    try:
        for _ in range(250):
            response = await client.get("/plan")
            if response.status == 200:
                break
            await asyncio.sleep(0.02)
        body = await response.json()
        assert body["dry_run"] and body["applied"] is None
        assert any(b["wanted"] == 1 for b in body["buckets"])  # the ladder, planned only
    finally:
        await client.close()
    assert {method for method, _, _ in fake_kube.requests} == {"GET"}


def test_the_first_tick_waits_for_the_first_list_instead_of_recording_a_gap(tmp_path) -> None:
    import threading

    from bucketing.catalog import load_catalog
    from kube.informer import Informer
    from overprovisioner.service.demand import RecorderDemand
    from predictor.live.recorder import Recorder, RecorderConfig
    from predictor.live.store import HistoryStore

    class EmptyList:
        data = b'{"metadata": {"resourceVersion": "1"}, "items": []}'

        def release_conn(self):
            pass

    config = RecorderConfig(tick_s=300.0)
    pods = Informer("pods", lambda **kw: EmptyList(), lambda obj: None, config.watch_settings())
    nodes = Informer("nodes", lambda **kw: EmptyList(), lambda obj: None,
                     config.watch_settings())
    store = HistoryStore(tmp_path / "h.sqlite", 300.0)
    types = load_catalog("aws").subset(["g5.xlarge"]).instance_types
    demand = RecorderDemand(Recorder(config, store, types, pods, nodes), 86400.0)
    # The informers' first lists land a moment after the service's first tick starts.
    timers = [threading.Timer(0.2, informer.watch._list) for informer in (pods, nodes)]
    for timer in timers:
        timer.start()
    demand.record(at_tick(29))
    assert store.tick_count() == (1, 0)  # one observed tick, no gap
    store.close()


def test_the_recorder_reads_groups_with_the_configured_label_first(tmp_path) -> None:
    # Placeholders select their group with example.com/rack; demand must be recorded in
    # the same groups, or every grouped bucket is forecast as 0.
    from overprovisioner.service.demand import recorder_config
    from predictor.history.snapshot import node_group

    config = make_config(placeholders={"backend": "deployment",
                                       "placement_group_label": "example.com/rack"},
                         forecast={"history_path": str(tmp_path / "h.sqlite")})
    keys = recorder_config(config).placement_group_labels
    node = {"metadata": {"name": "n1", "labels": {"example.com/rack": "rack-9"}}}
    assert node_group(node, keys)[1] == "rack-9"
    # Any other key is no group for the overprovisioner (observe reads nodes the same way).
    other = {"metadata": {"name": "n2", "labels": {"headstart.io/placement-group": "pg-a"}}}
    assert node_group(other, keys)[1] is None



def test_a_taken_port_is_a_one_line_error(fake_kube, tmp_path) -> None:
    import socket
    import subprocess
    import sys

    import yaml

    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "op.yaml"
        config.write_text(yaml.safe_dump({
            "port": port, "instance_types": ["g5.xlarge"],
            "forecast": {"history_path": str(tmp_path / "h.sqlite")},
        }))
        kubeconfig = str(fake_kube.write_kubeconfig(tmp_path / "kubeconfig"))
        process = subprocess.run(
            [sys.executable, "-m", "headstart", "overprovisioner", "--config", str(config),
             "--kubeconfig", kubeconfig, "--dry-run"],
            capture_output=True, text=True, timeout=60,
        )
    assert process.returncode == 2, process.stderr
    assert f"{config}: port: cannot listen on 0.0.0.0:{port}" in process.stderr
    assert "Traceback" not in process.stderr


async def test_an_empty_history_is_backfilled_from_prometheus_once(aiohttp_server,
                                                                   tmp_path) -> None:
    from bucketing.catalog import load_catalog
    from kube.informer import Informer
    from overprovisioner.config.catalog import resolve_catalog
    from overprovisioner.service.demand import RecorderDemand, prometheus_backfill
    from predictor.live.recorder import Recorder, RecorderConfig
    from predictor.live.store import HistoryStore
    from tests.predictor.live.test_prometheus import matrix, prometheus_app

    tick = 300.0
    now = at_tick(29) + 10.0
    # One g5.xlarge-sized pod (1 GPU, 3 cores, 12 GiB) running at ticks 26..28.
    def samples(metric, value):
        return {"metric": metric, "values": [[at_tick(i), str(value)] for i in (26, 27, 28)]}

    pod = {"namespace": "team", "pod": "train"}
    answers = {
        "kube_pod_init_container_resource_requests": matrix([]),
        "kube_pod_container_resource_requests": matrix([
            samples({**pod, "resource": "nvidia_com_gpu"}, 1),
            samples({**pod, "resource": "cpu"}, 3),
            samples({**pod, "resource": "memory"}, 12 * 2**30)]),
        "kube_pod_status_phase": matrix([samples({**pod, "phase": "Running"}, 1)]),
    }
    calls: list = []
    server = await aiohttp_server(prometheus_app(answers, calls))
    config = make_config(forecast={"history_path": str(tmp_path / "h.sqlite"),
                                   "prometheus_url": str(server.make_url("/")),
                                   "backfill": "1h"})
    catalog = resolve_catalog(config)

    class Listed:
        data = b'{"metadata": {"resourceVersion": "1"}, "items": []}'

        def release_conn(self):
            pass

    recorder_config = RecorderConfig(tick_s=tick)
    settings = recorder_config.watch_settings()
    pods = Informer("pods", lambda **kw: Listed(), lambda obj: None, settings)
    nodes = Informer("nodes", lambda **kw: Listed(), lambda obj: None, settings)
    for informer in (pods, nodes):
        informer.watch._list()
    store = HistoryStore(tmp_path / "h.sqlite", tick)
    types = load_catalog("aws").subset(list(config.instance_types)).instance_types
    recorder = Recorder(recorder_config, store, types, pods, nodes)
    demand = RecorderDemand(recorder, 86400.0,
                            backfill=prometheus_backfill(config, catalog, recorder))
    await asyncio.to_thread(demand.record, now)
    # 1 h before tick 28 (the tick before this one): ticks 16..28, observed 26..28 only.
    assert calls and calls[0]["start"] == f"{at_tick(16):.3f}"
    assert calls[0]["end"] == f"{at_tick(28):.3f}"
    series = store.read_series()
    assert series.counts["g5.xlarge"].tolist()[-4:] == [1.0, 1.0, 1.0, 0.0]  # + tick 29 live
    assert store.tick_count() == (4, 10)  # ticks 26-29 observed; 16-25 gaps
    queries = len(calls)
    await asyncio.to_thread(demand.record, now + tick)
    assert len(calls) == queries  # once, at start-up, into an empty history only
    store.close()



async def test_known_demand_reaches_the_plan(aiohttp_client, fake_kube, tmp_path) -> None:
    """A suspended Job in the cluster: /plan adds its nodes on top of the cold-start ladder
    and says where they came from."""
    from kubernetes import config as kube_config

    from overprovisioner.service.commands import build_app

    fake_kube.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "team"},
        "spec": {"suspend": True, "parallelism": 2, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {
                "cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}}]}}},
    })
    # a pod held by a scheduling gate: CA launches no node for it, so it is known demand
    fake_kube.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "held", "namespace": "team"},
        "spec": {"schedulingGates": [{"name": "example.com/wait"}], "containers": [
            {"name": "c", "resources": {"requests": {
                "cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Pending"},
    })
    config = make_config(forecast={"history_path": str(tmp_path / "history.sqlite")},
                         leader_election={"enabled": False}, dry_run=True)
    api_client = kube_config.new_client_from_config(
        config_file=fake_kube.write_kubeconfig(tmp_path / "kubeconfig"))

    async def sleep(seconds: float) -> None:
        await asyncio.sleep(0.2)

    app = build_app(config, api_client, clock=lambda: at_tick(29), sleep=sleep)
    client = await aiohttp_client(app)
    try:
        body = None
        for _ in range(300):
            response = await client.get("/plan")
            if response.status == 200:
                body = await response.json()
                if body["known_demand"] and body["known_demand"]["items"]:
                    break
            await asyncio.sleep(0.05)
    finally:
        await client.close()
    assert body is not None and body["known_demand"] is not None, body
    g5 = next(b for b in body["buckets"] if b["instance_type"] == "g5.xlarge")
    # 2 + 1 gated pods of 1 GPU, 2 cores, 8 GiB: 3 g5.xlarge; ladder 1 + 3 known = 4
    assert (g5["known"], g5["known_by_source"], g5["wanted"]) == (
        3.0, {"jobs": 2.0, "gated": 1.0}, 4)
    held, train = body["known_demand"]["items"]  # counted first, then by source
    assert (train["source"], train["name"], train["pods"], train["counted"],
            train["covered"]) == ("jobs", "train", 2, True, False)
    assert (held["source"], held["name"], held["pods"], held["counted"]) == (
        "gated", "held", 1, True)
    assert body["known_demand"]["served"] == {"jobs.batch": "v1", "cronjobs.batch": "v1"}
