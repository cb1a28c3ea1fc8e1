"""The extender service through real HTTP (aiohttp test server): wire format, faults,
probes, metrics, explain, bind, unknown nodes, and NUMA zones of pods bound back to
back. Jobs scheduled by a kube-scheduler stand-in: test_interleaved_jobs.py."""

from __future__ import annotations

import asyncio
import copy
import json
import random
from pathlib import Path

import pytest

from extender.app import OPS_APP, create_app
from extender.cache import ClusterCache
from extender.config import ExtenderConfig
from extender.decide import Decider
from extender.wire import BindingArgs
from locality.config import LocalityConfig
from locality.parse import parse_node, parse_node_topology, parse_pod
from tests.extender.builders import JSON_HEADERS, args_body, make_node, make_nrt, make_pod
from tests.extender.kubescheduler import KubeSchedulerStandIn

CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "extender-captures"
LOCALITY = LocalityConfig()


def build_cache(nodes=(), pods=(), nrts=(), synced=True) -> ClusterCache:
    cache = ClusterCache(LOCALITY)
    if synced:
        cache.replace_nodes([parse_node(node, LOCALITY) for node in nodes])
        cache.replace_pods([parse_pod(pod, LOCALITY) for pod in pods])
        cache.replace_topologies([parse_node_topology(nrt, LOCALITY) for nrt in nrts])
    return cache


@pytest.fixture
def serve(aiohttp_client):
    """A client of kube-scheduler's app (filter, prioritize, bind)."""
    async def start(cache: ClusterCache, config: ExtenderConfig | None = None, binder=None):
        app = create_app(config or ExtenderConfig(), cache, binder=binder)
        return await aiohttp_client(app)

    return start


@pytest.fixture
def ops_of(aiohttp_client):
    """A client of the ops app (probes, metrics, explain) that shares `client`'s state."""
    async def start(client):
        return await aiohttp_client(client.app[OPS_APP])

    return start


async def post(client, verb: str, body: bytes, headers=JSON_HEADERS):
    response = await client.post(f"/{verb}", data=body, headers=headers)
    return response.status, await response.text()


# ---- golden: the captured requests get the accepted answers ---------------------------


def captured(name: str):
    path = CAPTURES / name
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    return path.read_bytes()


def capture_cluster() -> ClusterCache:
    """The captured cluster's nodes: cpu-a-1 and gpu-a-1 as sent, gpu-b-1 a copy of gpu-a-1."""
    nodes = json.loads(captured("filter-nodecachecapable-false.request.json"))["Nodes"]["items"]
    gpu_b = copy.deepcopy(nodes[1])
    gpu_b["metadata"]["name"] = "gpu-b-1"
    return build_cache(nodes + [gpu_b])


@pytest.mark.parametrize(
    "verb, mode",
    [("filter", "true"), ("filter", "false"), ("prioritize", "true"), ("prioritize", "false")],
    ids=["filter-cache", "filter-nocache", "prioritize-cache", "prioritize-nocache"],
)
async def test_captured_requests_get_the_accepted_answers(serve, verb, mode):
    client = await serve(capture_cluster(),
                         ExtenderConfig(node_cache_capable=mode == "true"))
    request = captured(f"{verb}-nodecachecapable-{mode}.request.json")
    status, text = await post(client, verb, request)
    accepted = json.loads(captured(f"{verb}-nodecachecapable-{mode}.response.json"))
    assert status == 200
    # The captured pods belong to no job: every node passes and scores 0, as accepted.
    assert json.loads(text) == accepted


# ---- faults: clear messages, never a traceback, and the service keeps serving ---------

GOOD_POD = make_pod("p", gpus=1)
GOOD = args_body(GOOD_POD, names=["n1"])


@pytest.mark.parametrize(
    "verb, body, headers, status, message",
    [
        ("filter", b"{", JSON_HEADERS, 400, "invalid JSON"),
        ("prioritize", b"{", JSON_HEADERS, 400, "invalid JSON"),
        ("filter", b"\xff", JSON_HEADERS, 400, "not UTF-8"),
        ("filter", b"[1]", JSON_HEADERS, 400, "expected a JSON object"),
        ("filter", GOOD, {"Content-Type": "text/plain"}, 400, "Content-Type must be"),
        ("prioritize", GOOD, {}, 400, "Content-Type must be application/json"),
        # Content faults: filter answers 200 with the protocol's Error (kube-scheduler drops
        # the body of non-200 answers); prioritize has no such field, so 400.
        ("filter", b'{"NodeNames": ["n1"]}', JSON_HEADERS, 200, "field Pod is missing"),
        ("prioritize", b'{"NodeNames": ["n1"]}', JSON_HEADERS, 400, "field Pod is missing"),
        ("filter", b'{"Pod": [], "NodeNames": ["n1"]}', JSON_HEADERS, 200, "Pod must be an object"),
        ("filter", args_body(GOOD_POD, names=None), JSON_HEADERS, 200, "neither NodeNames"),
        ("filter", json.dumps({"Pod": GOOD_POD, "NodeNames": [1]}).encode(), JSON_HEADERS, 200,
         "NodeNames[0] must be a string"),
        ("filter", args_body(make_pod("q", cpu="lots"), names=["n1"]), JSON_HEADERS, 200,
         "is not a Kubernetes quantity"),
        ("prioritize", args_body(make_pod("q", cpu="lots"), names=["n1"]), JSON_HEADERS, 400,
         "is not a Kubernetes quantity"),
    ],
    ids=["filter-truncated", "prioritize-truncated", "not-utf8", "top-level-list",
         "text-plain", "no-content-type", "filter-no-pod", "prioritize-no-pod",
         "pod-list", "no-candidates", "name-number", "filter-bad-quantity",
         "prioritize-bad-quantity"],
)
async def test_faults_get_clear_answers_and_the_service_keeps_serving(
    serve, verb, body, headers, status, message
):
    client = await serve(build_cache([make_node("n1")]))
    got_status, text = await post(client, verb, body, headers)
    assert got_status == status
    answer = json.loads(text)
    assert message in answer["Error"]
    assert "Traceback" not in text
    assert (await post(client, verb, GOOD))[0] == 200


async def test_a_body_over_the_limit_is_413_naming_the_setting(serve):
    client = await serve(build_cache([make_node("n1")]), ExtenderConfig(max_body_bytes=4096))
    big = args_body(make_pod("p"), names=[f"node-{i:05d}" for i in range(2000)])
    status, text = await post(client, "filter", big)
    assert status == 413
    assert "max_body_bytes (4096 bytes)" in json.loads(text)["Error"]
    assert (await post(client, "filter", GOOD))[0] == 200


@pytest.mark.parametrize(
    "policy, passed, unresolvable, known_score",
    [
        # kube-scheduler's own filters admitted the node the watch has not delivered yet
        # (one cluster-autoscaler just added): failing it as resolvable would send the
        # scheduler preempting pods elsewhere for nothing, so it passes.
        ("preferred", ["n1", "new"], {}, 6),  # n1: idle 3 + group 3
        ("none", ["n1", "new"], {}, 3),  # n1: idle 3, no group term
        # Its placement group cannot be checked, and preemption would not change that.
        ("required", ["n1"], {"new": "node not (yet) in the extender's node cache: its "
                                     "placement group cannot be checked (policy required)"}, 6),
    ],
    ids=["preferred-passes", "none-passes", "required-unresolvable"],
)
async def test_a_node_the_cache_has_not_seen_never_fails_as_resolvable(
    serve, policy, passed, unresolvable, known_score
):
    client = await serve(build_cache([make_node("n1", group="pg-a")]))
    pod = make_pod("w", gpus=1, job="j", role="worker",
                   annotations={"headstart.io/placement-group": policy})
    status, text = await post(client, "filter", args_body(pod, names=["new", "n1"]))
    answer = json.loads(text)
    assert status == 200
    assert sorted(answer["NodeNames"]) == passed
    assert answer["FailedNodes"] == {}
    assert answer["FailedAndUnresolvableNodes"] == unresolvable
    status, text = await post(client, "prioritize", args_body(pod, names=["n1", "new"]))
    scores = {entry["Host"]: entry["Score"] for entry in json.loads(text)}
    # Unknown: the lowest score, never a pull toward it; n1 is known and empty.
    assert scores == {"n1": known_score, "new": 0}


async def test_a_bug_in_the_core_never_leaks_a_traceback(serve, ops_of, monkeypatch):
    def broken(self, args, now):
        raise RuntimeError("boom")

    monkeypatch.setattr(Decider, "filter", broken)
    monkeypatch.setattr(Decider, "prioritize", broken)
    client = await serve(build_cache([make_node("n1")]))
    status, text = await post(client, "filter", GOOD)
    assert status == 200 and "internal error" in json.loads(text)["Error"]
    status, text = await post(client, "prioritize", GOOD)
    assert status == 500 and "boom" not in text and "Traceback" not in text
    assert (await (await ops_of(client)).get("/healthz")).status == 200


# ---- nodeCacheCapable false: full Node objects in, passing Node objects out ------------


async def test_without_node_cache_the_passing_nodes_come_back_as_objects(serve):
    nodes = [make_node("big", gpus=8), make_node("small", gpus=1)]
    client = await serve(build_cache([]), ExtenderConfig(node_cache_capable=False))
    pod = make_pod("w", gpus=4, job="j", role="worker")
    status, text = await post(client, "filter", args_body(pod, nodes=nodes))
    answer = json.loads(text)
    assert status == 200
    assert answer["Nodes"]["items"] == [nodes[0]]  # 4 GPUs fit on 8, not on 1
    assert "insufficient GPU" in answer["FailedNodes"]["small"]
    assert "NodeNames" not in answer


# ---- probes, metrics, explain ----------------------------------------------------------


async def test_each_port_serves_only_its_own_routes(serve, ops_of):
    # kube-scheduler's port: no metrics or explain there; the ops port: no bind there,
    # so the NetworkPolicy can admit Prometheus to one and only the scheduler to the other.
    client = await serve(build_cache([make_node("n1")]), binder=RecordingBinder())
    ops = await ops_of(client)
    for path in ("/metrics", "/healthz", "/readyz", "/explain"):
        assert (await client.get(path)).status == 404, path
    for path in ("/bind", "/filter", "/prioritize"):
        assert (await ops.post(path, json={})).status == 404, path
    assert (await ops.get("/healthz")).status == 200


async def test_readyz_waits_for_the_first_full_sync(serve, ops_of):
    cache = build_cache(synced=False)
    client = await ops_of(await serve(cache))
    assert (await client.get("/readyz")).status == 503
    assert (await client.get("/healthz")).status == 200
    cache.replace_nodes([])
    cache.replace_pods([])
    response = await client.get("/readyz")
    assert response.status == 200 and (await response.json())["ready"] is True


async def test_metrics_count_requests_reasons_and_cache_size(serve, ops_of):
    client = await serve(build_cache([make_node("n1", gpus=1), make_node("n2", gpus=8)]))
    pod = make_pod("w", gpus=4, job="j", role="worker")
    await post(client, "filter", args_body(pod, names=["n1", "n2"]))
    await post(client, "prioritize", args_body(pod, names=["n2"]))
    await post(client, "filter", b"{")
    text = await (await (await ops_of(client)).get("/metrics")).text()
    assert 'headstart_extender_requests_total{outcome="ok",verb="filter"} 1.0' in text
    assert 'headstart_extender_requests_total{outcome="rejected",verb="filter"} 1.0' in text
    assert 'headstart_extender_request_duration_seconds_count{verb="prioritize"} 1.0' in text
    assert ('headstart_extender_filtered_nodes_total{reason="insufficient_gpu",'
            'resolvable="true"} 1.0') in text
    assert 'headstart_extender_cache_objects{kind="nodes"} 2.0' in text
    # Prioritize guessed nothing: where the pod goes is kube-scheduler's choice.
    assert 'headstart_extender_cache_objects{kind="assumed_placements"} 0.0' in text


async def test_explain_shows_each_node_verdict_and_score_terms(serve, ops_of):
    worker = make_pod("w-0", gpus=2, job="j", role="worker")
    ps = make_pod("ps-0", cpu="2", job="j", role="ps", node="a")
    cache = build_cache(
        [make_node("a", group="g1"), make_node("b", group="g1"), make_node("c", gpus=1)],
        [worker, ps],
        [make_nrt("b", [(48, 4), (48, 4)])],
    )
    client = await ops_of(await serve(cache))
    response = await client.get("/explain", params={"pod": "team/w-0"})
    data = await response.json()
    assert response.status == 200
    assert data["job"] == "team/j" and data["role"] == "worker"
    by_name = {row["name"]: row for row in data["nodes"]}
    # a holds the PS: node term 5 (counterpart) + group 3 (home group g1) = 8.
    assert by_name["a"]["score"]["node"] == 5 and by_name["a"]["score"]["total"] == 8
    assert by_name["b"]["score"]["numa"] == 1  # a zone holds 2 GPUs and 1 CPU together
    assert by_name["c"]["passed"] is False and "insufficient GPU" in by_name["c"]["reason"]
    assert (await client.get("/explain", params={"pod": "team/nope"})).status == 404
    assert (await client.get("/explain", params={"pod": "nonamespace"})).status == 400


# ---- bind ------------------------------------------------------------------------------


class RecordingBinder:
    def __init__(self, error: str = "") -> None:
        self.calls: list[BindingArgs] = []
        self.error = error

    async def bind(self, args: BindingArgs) -> str:
        self.calls.append(args)
        return self.error


async def test_bind_creates_the_binding_and_records_the_placement_at_once(serve):
    worker = make_pod("w-0", gpus=8, job="j", role="worker")
    cache = build_cache([make_node("a"), make_node("b")], [worker])
    binder = RecordingBinder()
    client = await serve(cache, ExtenderConfig(), binder)
    body = {"PodName": "w-0", "PodNamespace": "team", "PodUID": "uid-team-w-0", "Node": "a"}
    response = await client.post("/bind", json=body)
    assert response.status == 200 and await response.json() == {"Error": ""}
    assert binder.calls == [BindingArgs("w-0", "team", "uid-team-w-0", "a")]
    assert cache.assumed.by_uid["uid-team-w-0"].node_name == "a"
    # Node a is now full for the next 8-GPU worker even though no watch event came.
    other = make_pod("w-1", gpus=8, job="j", role="worker")
    _, text = await post(client, "filter", args_body(other, names=["a", "b"]))
    assert json.loads(text)["NodeNames"] == ["b"]


async def test_bind_failure_is_reported_and_the_placement_dropped(serve):
    worker = make_pod("w-0", gpus=8, job="j", role="worker")
    cache = build_cache([make_node("a")], [worker])
    binder = RecordingBinder("binding team/w-0 to a failed: API status 409 Conflict")
    client = await serve(cache, ExtenderConfig(), binder)
    body = {"PodName": "w-0", "PodNamespace": "team", "PodUID": "uid-team-w-0", "Node": "a"}
    response = await client.post("/bind", json=body)
    assert (await response.json())["Error"].endswith("409 Conflict")
    # kube-scheduler forgets the pod and retries it: so does the extender.
    assert len(cache.assumed) == 0


async def test_a_malformed_bind_request_is_answered_in_the_error_field(serve):
    binder = RecordingBinder()
    client = await serve(build_cache([make_node("a")]), ExtenderConfig(), binder)
    response = await client.post("/bind", json={"PodName": "w-0", "Node": "a"})
    assert response.status == 200
    assert "PodNamespace must be a non-empty string" in (await response.json())["Error"]
    assert binder.calls == []


async def test_a_request_waits_for_a_bind_in_flight_and_is_judged_with_it(serve):
    # kube-scheduler answered w-0 and started w-1's cycle before w-0's bind arrived.
    pods = [make_pod(f"w-{i}", gpus=1, job="j", role="worker") for i in range(2)]
    cache = build_cache([make_node("a"), make_node("b")], pods)
    client = await serve(cache, ExtenderConfig(bind_wait_seconds=2), RecordingBinder())
    await post(client, "prioritize", args_body(pods[0], names=["a", "b"]))
    waiting = asyncio.create_task(post(client, "prioritize", args_body(pods[1], names=["a", "b"])))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # held until the bind (bound at 2 s)
    body = {"PodName": "w-0", "PodNamespace": "team", "PodUID": "uid-team-w-0", "Node": "b"}
    await client.post("/bind", json=body)
    _, text = await asyncio.wait_for(waiting, 1.0)
    scores = {entry["Host"]: entry["Score"] for entry in json.loads(text)}
    assert scores["b"] > scores["a"]  # b holds w-0 now: the job's node


async def test_a_bind_that_does_not_come_costs_the_wait_once_per_job(serve, ops_of):
    # w-0 waits in a Permit plugin (a gang): its bind comes only when the gang is whole.
    pods = [make_pod(f"w-{i}", gpus=1, job="j", role="worker") for i in range(3)]
    cache = build_cache([make_node("a")], pods)
    client = await serve(cache, ExtenderConfig(bind_wait_seconds=0.3), RecordingBinder())
    loop = asyncio.get_running_loop()
    await post(client, "prioritize", args_body(pods[0], names=["a"]))
    started = loop.time()
    await post(client, "filter", args_body(pods[1], names=["a"]))
    # Waited until 0.3 s after w-0 was answered (a little before `started`).
    assert loop.time() - started >= 0.2
    started = loop.time()
    await post(client, "filter", args_body(pods[2], names=["a"]))
    await post(client, "prioritize", args_body(pods[2], names=["a"]))
    assert loop.time() - started < 0.25  # w-0 is overdue: job j's binds are held
    text = await (await (await ops_of(client)).get("/metrics")).text()
    assert 'headstart_extender_bind_wait_seconds_count{outcome="timeout"} 1.0' in text


async def test_bind_route_is_absent_unless_enabled(serve):
    client = await serve(build_cache([make_node("a")]), ExtenderConfig(bind_enabled=False))
    response = await client.post("/bind", json={"PodName": "p"})
    assert response.status == 404


# ---- mutated requests through HTTP: never a 500, never a traceback ---------------------


def mutations(seed: int, count: int):
    """Requests derived from a valid one: keys dropped, values retyped, bytes cut."""
    import random

    rng = random.Random(seed)
    base = json.loads(args_body(make_pod("w", gpus=1, job="j", role="worker"),
                                names=["n1", "ghost"]))
    junk = [None, 0, -1, 1.5, "", "x", [], {}, [1], {"a": 1}, True, "9Zi", ["n1"]]
    for _ in range(count):
        document = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            # Walk to a random container, then drop or retype one of its entries.
            node = document
            path = []
            while isinstance(node, dict | list) and node and rng.random() < 0.7:
                key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(
                    len(node))
                path.append((node, key))
                node = node[key]
            if not path:
                continue
            parent, key = path[-1]
            if isinstance(parent, dict) and rng.random() < 0.3:
                del parent[key]
            else:
                parent[key] = rng.choice(junk)
        body = json.dumps(document).encode()
        if rng.random() < 0.1:
            body = body[: rng.randrange(len(body))]
        yield body


async def test_mutated_requests_never_get_a_500_and_the_service_keeps_serving(serve):
    client = await serve(build_cache([make_node("n1")]))
    for index, body in enumerate(mutations(seed=11, count=300)):
        verb = "filter" if index % 2 else "prioritize"
        status, text = await post(client, verb, body)
        assert status in (200, 400), (status, text)
        assert "Traceback" not in text
        if status == 200 and verb == "filter":
            assert set(json.loads(text)) >= {"FailedNodes", "FailedAndUnresolvableNodes",
                                              "Error"}
    assert (await post(client, "filter", GOOD))[0] == 200


async def test_without_node_cache_known_nodes_keep_their_cached_pods(serve):
    nodes = [make_node("busy", gpus=8), make_node("fresh", gpus=8)]
    # The cache knows "busy" with 6 of its 8 GPUs taken; "fresh" is new to it.
    cache = build_cache([nodes[0]], [make_pod("other", gpus=6, node="busy", phase="Running")])
    client = await serve(cache, ExtenderConfig(node_cache_capable=False))
    pod = make_pod("w", gpus=4, job="j", role="worker")
    _, text = await post(client, "filter", args_body(pod, nodes=nodes))
    answer = json.loads(text)
    # busy: 8 - 6 = 2 GPUs free < 4; fresh: parsed from the request, 8 free.
    assert [node["metadata"]["name"] for node in answer["Nodes"]["items"]] == ["fresh"]
    assert "insufficient GPU" in answer["FailedNodes"]["busy"]


# ---- NUMA zones: steered and freshly bound GPU pods take their zone -------------------


async def test_gpu_pods_back_to_back_do_not_share_a_numa_zone_before_the_nrt_catches_up(serve):
    # Nodes a and b: 8 GPUs in two NUMA zones of 4 GPUs and 48 CPUs. Two 3-GPU workers
    # land on a (pack): node-0 and node-1 keep 1 GPU each, the node 8 - 6 = 2. A 2-GPU
    # chief fits a's GPU total but no zone of a, so kubelet (single-numa-node) would
    # reject it there: a must be unresolvable even though no NRT has changed yet.
    # All Guaranteed with whole CPUs, so their CPUs are pinned to their zone too.
    numa = {"headstart.io/numa": "required"}
    workers = [make_pod(f"w{i}", gpus=3, cpu="8", job="nj", role="worker", annotations=numa,
                        guaranteed=True)
               for i in range(2)]
    chief = make_pod("chief", gpus=2, cpu="4", job="nj", role="chief", annotations=numa,
                     guaranteed=True)
    nodes = [make_node("a"), make_node("b")]
    cache = build_cache(nodes, [*workers, chief],
                        [make_nrt("a", [(48, 4), (48, 4)]), make_nrt("b", [(48, 4), (48, 4)])])
    client = await serve(cache, binder=RecordingBinder())
    # kube-scheduler (tests/extender/kubescheduler.py) places and binds both workers:
    # the first on a or b at random, the second with it (its job's node).
    scheduler = KubeSchedulerStandIn(client, nodes, [], random.Random(5))
    placed = [await scheduler.schedule(pod) for pod in workers]
    await scheduler.drain()
    node = placed[0]
    assert placed == [node, node]
    no_zone = ("no NUMA zone holds 2 GPU and 4 pinned CPU together (topology manager "
               "single-numa-node, container scope, would reject the pod)")

    async def chief_on_node():
        _, text = await post(client, "filter", args_body(chief, names=["a", "b"]))
        answer = json.loads(text)
        return "passed" if node in answer["NodeNames"] else answer[
            "FailedAndUnresolvableNodes"][node]

    assert await chief_on_node() == no_zone  # the two binds' assumptions hold both zones
    # The watch shows both workers bound: the assumptions go, the bound pods keep
    # their zones while the node's NRT object is the one published before they came.
    for worker in workers:
        bound = copy.deepcopy(worker)
        bound["spec"]["nodeName"], bound["status"]["phase"] = node, "Running"
        cache.apply_pod(parse_pod(bound, LOCALITY))
    assert len(cache.assumed) == 0
    assert cache.unreflected_pods(node) == ("team/w0", "team/w1")
    assert await chief_on_node() == no_zone
    # The topology updater republishes: its zones count the workers now (1 GPU left each).
    cache.apply_topology(parse_node_topology(make_nrt(node, [(40, 1), (40, 1)]), LOCALITY))
    assert cache.unreflected_pods(node) == ()
    assert await chief_on_node() == no_zone
    # w1 finished and the updater republished node-1 with its 4 GPUs: the chief fits.
    cache.apply_topology(parse_node_topology(make_nrt(node, [(40, 1), (48, 4)]), LOCALITY))
    assert await chief_on_node() == "passed"


async def test_a_pytorchjob_lands_in_the_one_nvlink_clique_that_holds_it(serve):
    # Two GB200-style cliques of 2 nodes (4 GPUs each): c-big has one node free and one
    # half used, c-small's nodes are each 3 GPUs busy. A PyTorchJob of a master and 5
    # one-GPU workers (6 GPUs) fits c-big only (4 + 2 = 6 free; c-small: 1 + 1 = 2), so
    # its first pod must not open c-small, and the rest follow it into c-big.
    clique = "nvidia.com/gpu.clique"
    nodes = [make_node("big-1", gpus=4, labels={clique: "c-big"}),
             make_node("big-2", gpus=4, labels={clique: "c-big"}),
             make_node("small-1", gpus=4, labels={clique: "c-small"}),
             make_node("small-2", gpus=4, labels={clique: "c-small"})]
    busy = [make_pod("busy-big", gpus=2, node="big-2", phase="Running"),
            make_pod("busy-small-1", gpus=3, node="small-1", phase="Running"),
            make_pod("busy-small-2", gpus=3, node="small-2", phase="Running")]
    labels = {"training.kubeflow.org/job-name": "ddp"}
    job = [make_pod("ddp-master-0", gpus=1, labels={
        **labels, "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/job-role": "master"})]
    job += [make_pod(f"ddp-worker-{i}", gpus=1, labels={
        **labels, "training.kubeflow.org/replica-type": "worker"}) for i in range(5)]
    cache = build_cache(nodes, [*busy, *job])
    client = await serve(cache, binder=RecordingBinder())
    for seed in range(3):  # kube-scheduler breaks ties at random
        scheduler = KubeSchedulerStandIn(client, nodes, busy, random.Random(seed))
        placed = [await scheduler.schedule(pod) for pod in job]
        await scheduler.drain()
        assert set(placed) == {"big-1", "big-2"}, (seed, placed)
        cache.set_assumed(type(cache.assumed)())  # the next seed starts from scratch


# ---- /bind binds only the pods of the schedulers it serves ---------------------------


@pytest.mark.parametrize(("node_cache_capable", "limit"), [(True, 8 * 1024**2),
                                                            (False, 64 * 1024**2)])
def test_the_default_body_limit_follows_what_kube_scheduler_sends(node_cache_capable, limit):
    """Names only (2.3 MB for 50,000 EKS-style names) or every Node object."""
    assert ExtenderConfig(node_cache_capable=node_cache_capable).body_limit == limit
    assert ExtenderConfig(node_cache_capable=node_cache_capable,
                          max_body_bytes=4096).body_limit == 4096


def test_the_default_limit_holds_a_50000_node_request_three_times_over():
    """kube-scheduler's filter request with nodeCacheCapable: the pod and every node
    name, here 50,000 EKS-style ones."""
    names = [f"ip-10-{i // 65536}-{i // 256 % 256}-{i % 256}.us-west-2.compute.internal"
             for i in range(50_000)]
    body = args_body(make_pod("w-0", gpus=8, job="j", role="worker"), names=names)
    assert 3 * len(body) < ExtenderConfig().body_limit


async def test_a_body_that_never_arrives_is_408_and_other_requests_are_answered(
        serve, ops_of):
    """A client that sends headers and then a byte at a time holds its handler for
    body_read_timeout_seconds at most; the port keeps answering meanwhile."""
    client = await serve(build_cache([make_node("n1")]),
                         ExtenderConfig(body_read_timeout_seconds=0.5))
    ops = await ops_of(client)

    async def trickle():
        yield b"{"
        for _ in range(40):
            await asyncio.sleep(0.1)
            yield b" "

    slow = asyncio.ensure_future(client.post(
        "/filter", data=trickle(), headers={"Content-Type": "application/json"}))
    await asyncio.sleep(0.1)
    assert (await post(client, "filter", GOOD))[0] == 200  # answered while it trickles
    assert (await ops.get("/healthz")).status == 200
    response = await slow
    assert response.status == 408
    assert "body_read_timeout_seconds (0.5 s)" in (await response.json())["Error"]


async def test_half_sent_headers_hold_only_their_own_connection(serve, ops_of):
    """A client that sends part of a request line and headers, then nothing, holds one
    connection and no handler: the port and the ops port keep answering. (On the shipped
    mutual-TLS port such a client must first present the scheduler's certificate.)"""
    client = await serve(build_cache([make_node("n1")]))
    ops = await ops_of(client)
    stalled = []
    for _ in range(20):
        reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
        writer.write(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: applic")
        await writer.drain()
        stalled.append((reader, writer))
    await asyncio.sleep(0.2)
    assert (await post(client, "filter", GOOD))[0] == 200
    assert (await ops.get("/healthz")).status == 200
    for _, writer in stalled:
        writer.close()


@pytest.mark.parametrize(
    ("scheduler", "in_cache", "names", "refused"),
    [
        ("headstart-scheduler", True, ("headstart-scheduler",), None),
        ("default-scheduler", True, ("headstart-scheduler",), "scheduler_name"),
        ("headstart-scheduler", False, ("headstart-scheduler",), "unknown_pod"),
        ("default-scheduler", True, (), None),
        ("default-scheduler", True, ("headstart-scheduler", "default-scheduler"), None),
    ],
    ids=["ours", "another-schedulers-pod", "not-in-the-cache", "check-off", "two-names"],
)
async def test_bind_refuses_pods_of_other_schedulers(serve, ops_of, scheduler, in_cache, names,
                                                     refused):
    pod = make_pod("w-0", gpus=1, job="j", role="worker")
    pod["spec"]["schedulerName"] = scheduler
    binder = RecordingBinder()
    cache = build_cache([make_node("a")], [pod] if in_cache else [])
    client = await serve(cache, ExtenderConfig(bind_scheduler_names=names), binder)
    body = {"PodName": "w-0", "PodNamespace": "team", "PodUID": "uid-team-w-0", "Node": "a"}
    response = await client.post("/bind", json=body)
    assert response.status == 200
    error = (await response.json())["Error"]
    metrics = await (await (await ops_of(client)).get("/metrics")).text()
    if refused is None:
        assert error == "" and len(binder.calls) == 1
    else:
        assert error.startswith("refusing to bind team/w-0") and binder.calls == []
        assert len(cache.assumed) == 0  # nothing recorded for a refused bind
        assert f'headstart_extender_bind_refused_total{{reason="{refused}"}} 1.0' in metrics


async def test_a_job_is_pulled_to_the_node_its_pod_is_nominated_for(serve):
    # kube-scheduler preempted for the PS on b and nominated it there; the PS is not bound
    # yet (its victims are terminating), and its worker comes next.
    ps = make_pod("ps-0", cpu="8", job="j", role="ps")
    ps["status"]["nominatedNodeName"] = "b"
    worker = make_pod("w-0", gpus=1, job="j", role="worker")
    cache = build_cache([make_node("a", group="g"), make_node("b", group="g")], [ps, worker])
    client = await serve(cache)
    _, text = await post(client, "prioritize", args_body(worker, names=["a", "b"]))
    scores = {entry["Host"]: entry["Score"] for entry in json.loads(text)}
    assert scores["b"] > scores["a"]  # b holds the job's centre: the counterpart term


CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


@pytest.mark.parametrize(("uid", "node", "refused"), [
    ("uid-team-w-0", "a", None),
    ("", "a", "empty_uid"),
    ("uid-team-w-0", "no-such-node", "unknown_node"),
    ("uid-team-w-0", "control-plane-1", "node_refused"),  # tainted: no toleration
    ("uid-team-w-0", "b", "node_refused"),  # outside its nodeSelector
], ids=["ok", "empty-uid", "no-such-node", "tainted-control-plane", "outside-its-selector"])
async def test_bind_refuses_what_the_pod_can_never_run_on(serve, ops_of, uid, node, refused):
    """A caller that reaches /bind cannot bind a pod without its UID, to a node that does
    not exist, or to one the pod's own constraints rule out (as the filter would)."""
    pod = make_pod("w-0", gpus=1, job="j", role="worker")
    pod["spec"]["nodeSelector"] = {"pool": "gpu"}
    control_plane = make_node("control-plane-1", labels={"pool": "gpu"})
    control_plane["spec"] = {"taints": [CONTROL_PLANE_TAINT]}
    nodes = [make_node("a", labels={"pool": "gpu"}), make_node("b"), control_plane]
    binder = RecordingBinder()
    client = await serve(build_cache(nodes, [pod]), binder=binder)
    body = {"PodName": "w-0", "PodNamespace": "team", "PodUID": uid, "Node": node}
    error = (await (await client.post("/bind", json=body)).json())["Error"]
    metrics = await (await (await ops_of(client)).get("/metrics")).text()
    if refused is None:
        assert error == "" and len(binder.calls) == 1
    else:
        assert error.startswith("refusing to bind team/w-0") and binder.calls == []
        assert f'headstart_extender_bind_refused_total{{reason="{refused}"}} 1.0' in metrics
