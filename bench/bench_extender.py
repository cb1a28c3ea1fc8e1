"""Latency and throughput of the headstart extender through real HTTP, against a
do-nothing aiohttp extender measured in the same run, and what waiting for binds in
flight costs, against the same extender with the wait off.

    python bench/bench_extender.py            # full run, about 3-4 minutes
    python bench/bench_extender.py --quick    # a smoke run, fewer requests
    python bench/bench_extender.py --no-binds-in-flight   # the per-verb table only

Setup per cluster size (100, 1,000, 5,000 nodes): 8-GPU nodes in placement groups of
50, background pods using 0-6 GPUs per node, 10% of the nodes publishing two NUMA
zones, a training job of 1 PS + 32 one-GPU workers already bound, and 4 more jobs with
their PS bound and 8 workers each still waiting (their claims are computed on every
cache change). The request is the first job's next worker with every node name
(nodeCacheCapable true, what `percentageOfNodesToScore: 100` sends). Each server runs
in its own process on 127.0.0.1 (the production app from `extender.app.create_app`,
middleware and metrics included, with a binder that creates nothing); the client is an
aiohttp session with keep-alive, like kube-scheduler's. Filter, prioritize and bind
follow each other, as kube-scheduler sends them; the bind records the pod on a node,
so every filter works on a changed cache (no memo hit, claims recomputed).

Baseline: an aiohttp handler that reads and parses the same request and accepts every
node (score 0), and answers bind with no error: the cost any Python extender pays.
Reported: p50/p99 per verb (the median of 3 runs), the ratio of headstart's
filter+prioritize p50 to the baseline's at 1,000 nodes (target <= 1.3), p99 at 5,000
nodes (target <= 10 ms), requests/s with 8 concurrent clients at 1,000 nodes (target
>= 500), and the nodeCacheCapable=false figures, whose requests carry every Node
object (megabytes).

Binds in flight (1,000 nodes): kube-scheduler starts pod N+1's cycle while pod N's bind
is still on its way. The client sends a job's pods one after another (filter, then
prioritize) and each pod's bind concurrently, `delay` after its prioritize answer;
the next pod's filter goes out at once (the worst case: in kube-scheduler its own
filters run first). Reported: the median per-pod filter+prioritize latency with
`bind_wait_seconds: 0.25` (the default) and with 0 (no wait), medians of 3 runs, and
what a job whose binds never come (a gang held in Permit) costs in all.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CAPTURES = REPO.parent / "shared" / "extender-captures"
SIZES = (100, 1000, 5000)
GROUP_SIZE = 50
HEADERS = {"Content-Type": "application/json"}


# ---- the cluster -----------------------------------------------------------------------


def node_template() -> dict:
    """A realistic Node object (the captured GPU node: labels, conditions, managedFields)."""
    path = CAPTURES / "filter-nodecachecapable-false.request.json"
    if path.is_file():
        node = json.loads(path.read_text())["Nodes"]["items"][1]
        node["metadata"]["labels"].pop("example.com/placement-group", None)
        return node
    from tests.extender.builders import make_node

    return make_node("template")


def build_cluster(size: int, seed: int = 7):
    """(node objects, pod objects, NRT objects, the pod to schedule) for `size` nodes."""
    import numpy as np

    from tests.extender.builders import make_nrt, make_pod

    rng = np.random.default_rng(seed)
    template = node_template()
    nodes = []
    for index in range(size):
        node = copy.deepcopy(template)
        name = f"node-{index:05d}"
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        node["metadata"]["labels"]["headstart.io/placement-group"] = f"pg-{index // GROUP_SIZE}"
        nodes.append(node)
    pods = []
    for index in range(size):
        gpus = int(rng.integers(0, 7))
        if gpus:
            pods.append(make_pod(f"bg-{index}", namespace="background", gpus=gpus,
                                 cpu=str(4 * gpus), memory=f"{32 * gpus}Gi",
                                 node=f"node-{index:05d}", phase="Running"))
    # The job: PS on node 0, 32 one-GPU workers, 4 per node on the group's quieter nodes.
    pods.append(make_pod("ps-0", namespace="train", cpu="8", memory="32Gi", job="bert",
                         role="PS", node="node-00000", phase="Running"))
    for worker in range(32):
        pods.append(make_pod(f"worker-{worker}", namespace="train", gpus=1, cpu="4",
                             memory="32Gi", job="bert", role="Worker",
                             node=f"node-{worker // 4 + 1:05d}", phase="Running"))
    # Other jobs with pods still waiting: their PS bound, 8 workers each pending.
    for other in range(4):
        job = f"other-{other}"
        ps_node = f"node-{(other + 1) * size // 5:05d}"
        pods.append(make_pod(f"{job}-ps-0", namespace="train", cpu="8", memory="32Gi",
                             job=job, role="PS", node=ps_node, phase="Running"))
        pods += [make_pod(f"{job}-worker-{i}", namespace="train", gpus=1, cpu="4",
                          memory="32Gi", job=job, role="Worker") for i in range(8)]
    pod = make_pod("worker-32", namespace="train", gpus=1, cpu="4", memory="32Gi",
                   job="bert", role="Worker")
    pod["metadata"]["resourceVersion"] = "4242"  # as kube-scheduler's informer sends it
    pods.append(pod)
    nrts = [make_nrt(f"node-{index:05d}", [(48, 4), (48, 4)]) for index in range(0, size, 10)]
    return nodes, pods, nrts, pod


def request_bodies(size: int) -> dict[str, bytes]:
    nodes, _, _, pod = build_cluster(size)
    names = [node["metadata"]["name"] for node in nodes]
    bind = {"PodName": pod["metadata"]["name"], "PodNamespace": "train",
            "PodUID": pod["metadata"]["uid"], "Node": "node-00001"}
    return {
        "cache": json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode(),
        "nocache": json.dumps({"Pod": pod, "Nodes": {"items": nodes}, "NodeNames": None}).encode(),
        "bind": json.dumps(bind).encode(),
    }


def job_pod_bodies(size: int, count: int) -> list[tuple[bytes, str]]:
    """(filter/prioritize body, pod name) for `count` new workers of the first job."""
    from tests.extender.builders import make_pod

    nodes, _, _, _ = build_cluster(size)
    names = [node["metadata"]["name"] for node in nodes]
    bodies = []
    for index in range(count):
        pod = make_pod(f"new-worker-{index}", namespace="train", gpus=1, cpu="4",
                       memory="32Gi", job="bert", role="Worker")
        bodies.append((json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode(),
                       pod["metadata"]["name"]))
    return bodies


# ---- the servers (child processes) -----------------------------------------------------


class NoApiBinder:
    """Creates no Binding: the bench measures the extender, not an API server."""

    async def bind(self, args) -> str:
        return ""


def headstart_app(size: int, bind_wait_seconds: float, prepare=None):
    """The extender's app on a cache of `size` nodes; `prepare(cache)` is called with the
    cache still empty (to start what must see every change of it)."""
    from extender.app import create_app
    from extender.cache import ClusterCache
    from extender.config import ExtenderConfig
    from locality.config import LocalityConfig
    from locality.parse import parse_node, parse_node_topology, parse_pod

    locality = LocalityConfig()
    nodes, pods, nrts, _ = build_cluster(size)
    cache = ClusterCache(locality)
    if prepare is not None:
        prepare(cache)
    cache.replace_nodes([parse_node(node, locality) for node in nodes])
    cache.replace_pods([parse_pod(pod, locality) for pod in pods])
    cache.replace_topologies([parse_node_topology(nrt, locality) for nrt in nrts])
    cache.table()
    # No scheduler-name check on /bind: the binds-in-flight part sends pods no watch put
    # in this cache, and the check would refuse them (it costs one dict lookup).
    config = ExtenderConfig(max_body_bytes=1024**3, bind_wait_seconds=bind_wait_seconds,
                            bind_scheduler_names=())
    return create_app(config, cache, binder=NoApiBinder())


def accept_everything(body: bytes) -> bytes:
    """The do-nothing extender's filter answer: every node passes."""
    args = json.loads(body)
    answer = {"FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}
    if args.get("NodeNames") is not None:
        answer["NodeNames"] = args["NodeNames"]
    else:
        answer["Nodes"] = args["Nodes"]
    return json.dumps(answer).encode()


def score_nothing(body: bytes) -> bytes:
    """The do-nothing extender's prioritize answer: every node scores 0."""
    args = json.loads(body)
    names = args.get("NodeNames")
    if names is None:
        names = [node["metadata"]["name"] for node in args["Nodes"]["items"]]
    return json.dumps([{"Host": name, "Score": 0} for name in names]).encode()


def bind_nothing(body: bytes) -> bytes:
    """The do-nothing extender's bind answer: no error, nothing bound."""
    json.loads(body)
    return b'{"Error":""}'


def do_nothing_app(bind_handler=None):
    """Parse the request, accept every node: the floor for a Python aiohttp extender.
    `bind_handler` replaces the /bind that binds nothing (bench_scheduler_real.py's binds
    for real)."""
    from aiohttp import web

    def handler(answer):
        async def handle(request: web.Request) -> web.Response:
            return web.Response(body=answer(await request.read()),
                                content_type="application/json")
        return handle

    app = web.Application(client_max_size=1024**3)
    app.router.add_post("/filter", handler(accept_everything))
    app.router.add_post("/prioritize", handler(score_nothing))
    app.router.add_post("/bind", bind_handler or handler(bind_nothing))
    return app


def serve(kind: str, size: int, bind_wait_seconds: float, ports: multiprocessing.Queue) -> None:
    from aiohttp import web

    app = (headstart_app(size, bind_wait_seconds) if kind == "headstart"
           else do_nothing_app())
    if kind == "headstart":
        from extender.app import METRICS

        async def bind_waits(request: web.Request) -> web.Response:
            # Seconds the server's calls spent waiting for binds in flight, and how many
            # waited: measured where it happens, free of the client's own jitter.
            registry = app[METRICS].registry
            total = count = 0.0
            for outcome in ("bound", "timeout"):
                labels = {"outcome": outcome}
                total += registry.get_sample_value(
                    "headstart_extender_bind_wait_seconds_sum", labels) or 0.0
                count += registry.get_sample_value(
                    "headstart_extender_bind_wait_seconds_count", labels) or 0.0
            return web.json_response({"seconds": total, "waits": count})

        app.router.add_get("/bench-waits", bind_waits)
    run_app(app, ports)


def run_app(app, ports: multiprocessing.Queue) -> None:
    """Serve `app` on a free port of 127.0.0.1 (put on `ports`) until killed, with
    GET /bench-cpu answering the server's own CPU seconds: latencies on a shared machine
    include waiting for a core; CPU per request does not."""
    import gc

    from aiohttp import web

    async def cpu_seconds(request: web.Request) -> web.Response:
        return web.json_response(time.process_time())

    app.router.add_get("/bench-cpu", cpu_seconds)
    gc.collect()
    gc.freeze()  # what a long-running server would do after its first sync

    async def main() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


class Server:
    """`target(*args, ports)` in a forked process; `url` once it serves."""

    def __init__(self, target, args: tuple, start_timeout_s: float = 120.0) -> None:
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        self.process = context.Process(target=target, args=(*args, queue), daemon=True)
        self.process.start()
        self.url = f"http://127.0.0.1:{queue.get(timeout=start_timeout_s)}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(10)


# ---- the client ------------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def latencies(url: str, bodies: dict[str, bytes], requests: int,
                    body_kind: str = "cache") -> dict[str, list[float]]:
    """Round-trip seconds per verb, and under "cpu" the server's CPU seconds per
    filter+prioritize+bind round (one pod)."""
    import aiohttp

    seconds: dict[str, list[float]] = {"filter": [], "prioritize": [], "bind": [], "cpu": []}
    verbs = (("filter", bodies[body_kind]), ("prioritize", bodies[body_kind]),
             ("bind", bodies["bind"]))
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        for verb, body in verbs:  # warm-up
            for _ in range(5):
                async with session.post(f"{url}/{verb}", data=body, headers=HEADERS) as reply:
                    await reply.read()
        async with session.get(f"{url}/bench-cpu") as reply:
            cpu_before = float(await reply.json())
        for _ in range(requests):
            for verb, body in verbs:
                started = time.perf_counter()
                async with session.post(f"{url}/{verb}", data=body, headers=HEADERS) as reply:
                    await reply.read()
                    if reply.status != 200:
                        raise RuntimeError(f"{verb}: HTTP {reply.status}")
                seconds[verb].append(time.perf_counter() - started)
        async with session.get(f"{url}/bench-cpu") as reply:
            seconds["cpu"].append((float(await reply.json()) - cpu_before) / requests)
    return seconds


async def pods_with_binds_in_flight(url: str, pods: list[tuple[bytes, str]],
                                    bind_delay: float | None) -> tuple[list[float], float]:
    """(per pod: seconds of its filter + prioritize, the server's seconds spent waiting
    for binds in all), while each earlier pod's bind is sent `bind_delay` after its
    prioritize answer (None: never sent, a held gang)."""
    import aiohttp

    async def bind_later(session, name: str, node: str) -> None:
        await asyncio.sleep(bind_delay)
        body = json.dumps({"PodName": name, "PodNamespace": "train",
                           "PodUID": f"uid-train-{name}", "Node": node}).encode()
        async with session.post(f"{url}/bind", data=body, headers=HEADERS) as reply:
            await reply.read()

    per_pod = []
    binds = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8)) as session:
        for body, name in pods:
            started = time.perf_counter()
            async with session.post(f"{url}/filter", data=body, headers=HEADERS) as reply:
                await reply.read()
            async with session.post(f"{url}/prioritize", data=body, headers=HEADERS) as reply:
                scores = json.loads(await reply.read())
            per_pod.append(time.perf_counter() - started)
            node = max(scores, key=lambda entry: entry["Score"])["Host"]
            if bind_delay is not None:
                binds.append(asyncio.create_task(bind_later(session, name, node)))
        await asyncio.gather(*binds)
        async with session.get(f"{url}/bench-waits") as reply:
            waited = (await reply.json())["seconds"]
    return per_pod, waited


def measure_binds_in_flight(size: int, pods: int, runs: int
                            ) -> dict[str, tuple[float, float, float]]:
    """case -> (median per-pod ms with the wait, same without, the server's wait per pod
    in ms with the wait); for "binds held" the job's totals instead of per-pod figures.
    Medians over `runs` runs, each on a fresh server; the two builds alternate."""
    bodies = job_pod_bodies(size, pods)
    figures = {}
    for case, delay in (("bind at once", 0.0), ("bind 2 ms late", 0.002),
                        ("bind 10 ms late", 0.010), ("binds held", None)):
        samples: dict[float, list[tuple[float, float]]] = {0.25: [], 0.0: []}
        for _ in range(runs):
            for wait in (0.25, 0.0):
                server = Server(serve, ("headstart", size, wait))
                try:
                    per_pod, waited = asyncio.run(
                        pods_with_binds_in_flight(server.url, bodies, delay))
                finally:
                    server.stop()
                latency = sum(per_pod) if delay is None else statistics.median(per_pod)
                samples[wait].append((latency, waited if delay is None else waited / pods))
        waiting = statistics.median(latency for latency, _ in samples[0.25])
        not_waiting = statistics.median(latency for latency, _ in samples[0.0])
        waited = statistics.median(waited for _, waited in samples[0.25])
        figures[case] = (1e3 * waiting, 1e3 * not_waiting, 1e3 * waited)
    return figures


async def throughput(url: str, body: bytes, clients: int, duration: float) -> float:
    import aiohttp

    done = 0
    deadline = time.perf_counter() + duration

    async def client(session) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            for verb in ("filter", "prioritize"):
                async with session.post(f"{url}/{verb}", data=body, headers=HEADERS) as reply:
                    await reply.read()
                done += 1

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        return done / (time.perf_counter() - started)


def measure(url: str, bodies: dict[str, bytes], requests: int, runs: int,
            body_kind: str = "cache") -> dict[str, tuple[float, float]]:
    """verb -> (median p50, median p99) in milliseconds over `runs` runs; "cpu" -> (median
    server CPU ms per filter+prioritize+bind round, same)."""
    per_run = [asyncio.run(latencies(url, bodies, requests, body_kind)) for _ in range(runs)]
    figures = {
        verb: (
            1e3 * statistics.median(percentile(run[verb], 0.50) for run in per_run),
            1e3 * statistics.median(percentile(run[verb], 0.99) for run in per_run),
        )
        for verb in ("filter", "prioritize", "bind")
    }
    cpu = 1e3 * statistics.median(run["cpu"][0] for run in per_run)
    figures["cpu"] = (cpu, cpu)
    return figures


# ---- the run ---------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument("--no-binds-in-flight", action="store_true",
                        help="skip the binds-in-flight part (an A/B of two builds needs only "
                             "the per-verb table and the server CPU per pod)")
    args = parser.parse_args()
    runs = 1 if args.quick else 3
    requests = {100: 300, 1000: 300, 5000: 100}
    nocache_requests = {100: 20, 1000: 5, 5000: 2}
    if args.quick:
        requests = {size: max(count // 10, 10) for size, count in requests.items()}
        nocache_requests = {size: 1 for size in nocache_requests}

    started = time.perf_counter()
    rows = []
    nocache_rows = []
    rates: dict[str, float] = {}
    for size in SIZES:
        bodies = request_bodies(size)
        figures = {}
        nocache = {}
        for kind in ("headstart", "baseline"):
            server = Server(serve, (kind, size, 0.25))
            try:
                figures[kind] = measure(server.url, bodies, requests[size], runs)
                if size == 1000:
                    rates[kind] = asyncio.run(
                        throughput(server.url, bodies["cache"], 8, 1.0 if args.quick else 3.0)
                    )
                nocache[kind] = measure(server.url, bodies, nocache_requests[size], 1, "nocache")
            finally:
                server.stop()
        rows.append((size, figures))
        nocache_rows.append((size, len(bodies["nocache"]), nocache))
        print(f"... {size} nodes done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)

    load = " / ".join(f"{value:.1f}" for value in os.getloadavg())
    print("headstart extender through HTTP on 127.0.0.1 (nodeCacheCapable true, "
          f"median of {runs} run(s); ms; load average {load} on {os.cpu_count()} cores)")
    print(f"{'nodes':>6} {'verb':<11} {'p50':>7} {'p99':>7} | {'do-nothing p50':>14} "
          f"{'p99':>7} | {'p50 ratio':>9}")
    for size, figures in rows:
        for verb in ("filter", "prioritize", "bind"):
            ours, base = figures["headstart"][verb], figures["baseline"][verb]
            print(f"{size:>6} {verb:<11} {ours[0]:>7.2f} {ours[1]:>7.2f} | {base[0]:>14.2f} "
                  f"{base[1]:>7.2f} | {ours[0] / base[0]:>8.2f}x")
    print("server CPU per pod: filter+prioritize+bind (ms; unaffected by waiting for a core):")
    for size, figures in rows:
        ours, base = figures["headstart"]["cpu"][0], figures["baseline"]["cpu"][0]
        print(f"{size:>6} headstart {ours:>6.2f}  do-nothing {base:>6.2f}  = {ours / base:.2f}x")
    at_1000 = dict(rows)[1000]
    ours = at_1000["headstart"]["filter"][0] + at_1000["headstart"]["prioritize"][0]
    base = at_1000["baseline"]["filter"][0] + at_1000["baseline"]["prioritize"][0]
    at_5000 = dict(rows)[5000]["headstart"]
    print(f"filter+prioritize p50 at 1,000 nodes: {ours:.2f} ms vs do-nothing {base:.2f} ms "
          f"= {ours / base:.2f}x; server CPU {at_1000['headstart']['cpu'][0]:.2f} vs "
          f"{at_1000['baseline']['cpu'][0]:.2f} ms = "
          f"{at_1000['headstart']['cpu'][0] / at_1000['baseline']['cpu'][0]:.2f}x "
          "(target <= 1.3x)")
    print(f"p99 at 5,000 nodes: filter {at_5000['filter'][1]:.2f} ms, prioritize "
          f"{at_5000['prioritize'][1]:.2f} ms (target <= 10 ms)")
    print(f"throughput at 1,000 nodes, 8 clients: headstart {rates['headstart']:.0f} req/s, "
          f"do-nothing {rates['baseline']:.0f} req/s (target >= 500)")
    print("nodeCacheCapable false (every Node object in the request; p50 ms):")
    print(f"{'nodes':>6} {'request MB':>10} {'filter':>8} {'prioritize':>10} | "
          f"{'do-nothing filter':>17} {'prioritize':>10}")
    for size, payload, nocache in nocache_rows:
        ours, base = nocache["headstart"], nocache["baseline"]
        print(f"{size:>6} {payload / 1e6:>10.1f} {ours['filter'][0]:>8.1f} "
              f"{ours['prioritize'][0]:>10.1f} | {base['filter'][0]:>17.1f} "
              f"{base['prioritize'][0]:>10.1f}")
    if args.no_binds_in_flight:
        print(f"total {time.perf_counter() - started:.0f} s")
        return 0
    in_flight = measure_binds_in_flight(1000, 8 if args.quick else 32, 1 if args.quick else 5)
    print("binds in flight, 1,000 nodes, a job's pods back to back (filter+prioritize, ms; "
          "bind_wait_seconds 0.25 vs 0; server = time the server's calls waited):")
    for case, (waiting, not_waiting, waited) in in_flight.items():
        label = "job total" if case == "binds held" else "per pod"
        print(f"  {case:<16} {label}: {waiting:>8.2f} with the wait, {not_waiting:>8.2f} "
              f"without = {waiting / not_waiting:.2f}x; server waited {waited:.2f}")
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
