"""Scheduling throughput of a real kube-scheduler on kwok nodes: no extender, a do-nothing
extender, and headstart's extender, measured in the same run.

    HEADSTART_E2E_BIN=/path/to/bin python bench/bench_scheduler_real.py
        [--nodes 1000] [--pods 2000] [--runs 3] [--qps 1000]

Needs the binaries of the end-to-end tests (README, "End-to-end tests"); without
HEADSTART_E2E_BIN it prints why and exits 2. About 9 minutes on 2 busy cores.

Cluster (tests/e2e/controlplane.py): etcd, kube-apiserver, kwok, and three
kube-schedulers started from the SHIPPED headstart-scheduler configuration
(manifests/base/scheduler/scheduler-config.yaml: MostAllocated, percentageOfNodesToScore
100), differing only in their extender: (1) none (kube-scheduler binds); (2) a do-nothing
aiohttp extender that parses each request and accepts every node with score 0
(bench/bench_extender.py's baseline), and binds as the shipped config's `bindVerb`
asks (one POST of the Binding): same protocol, nodeCacheCapable true, the shipped
mutual TLS; (3) `headstart extender`, run as users run it (its own process,
list+watch of the cluster, bind on).
Each has its own schedulerName, leader election off, and client QPS/burst `--qps` (with
kube-scheduler's default, 50, the scheduler without extender binds at most about 51
pods/s here, a cap that hides part of what the extender costs; pass --qps 50 to measure
the shipped behaviour). No controller-manager or cluster-autoscaler: nodes are created
directly as kwok-managed Node objects (8 GPUs, 96 CPUs, 768 GiB, in placement
groups of 100), kwok marks them Ready and the bound pods Running (no node Leases).

One run: in a fresh namespace, `--pods` pods of training jobs (1 PS + 19 one-GPU workers
each, headstart's job labels) are created by 8 client threads for one scheduler, a burst
of submissions; throughput = pods / (last binding - first create), bindings timed by a
watch. Creating and scheduling share the machine's cores, so on 2 cores the creation of
2,000 pods itself takes most of a run (printed per run): the figure is the end-to-end
rate of that burst, and the ratios say how much the extender slows it. The modes
alternate run by run (1, 2, 3, 1, 2, 3, ...) so that drift in the machine's load hits all
of them; headstart's extender runs only during its own runs (started before, cache
synced, stopped after), so its watch traffic does not slow the others. Reported: each
mode's runs and median, and the ratios of the medians: (3) against (1) and against (2).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.e2e.controlplane import (  # noqa: E402 - after the path fix, as the other benches
    DATA,
    ClusterSpec,
    ControlPlane,
    binaries_problem,
    pod_group_crd,
)
from tests.e2e.kube import Kube, NotYet  # noqa: E402

MODES = ("plain", "do-nothing", "headstart")
WORKERS_PER_JOB = 19
GROUP_SIZE = 100
CREATE_THREADS = 8
RUN_TIMEOUT_S = 1800.0


def scheduler_configs(noop_url: str, headstart_url: str, qps: int) -> dict[str, dict]:
    from tests.e2e.headstart import scheduler_variant

    configs = {}
    for mode, url in (("plain", None), ("do-nothing", noop_url), ("headstart", headstart_url)):
        config = scheduler_variant(f"bench-{mode}", url)
        config["clientConnection"] = {"qps": qps, "burst": qps}
        configs[f"bench-{mode}"] = config
    return configs


def serve_do_nothing(port: int, server: str, ca: str, cert: str, key: str,
                     tls_cert: str, tls_key: str, client_ca: str) -> None:
    """The do-nothing extender (child process): bench_extender's app, which parses each
    request and accepts every node, plus the bind verb the shipped configuration
    registers: one POST of the pod's Binding, as any binding extender must make. It
    serves the shipped mutual TLS as headstart's does (`tls_cert`, `tls_key`; clients
    signed by `client_ca`), so the two differ only in what they decide."""
    import ssl

    from aiohttp import ClientSession, web

    from bench.bench_extender import do_nothing_app

    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)

    async def bind(request: web.Request) -> web.Response:
        args = json.loads(await request.read())
        namespace, name = args["PodNamespace"], args["PodName"]
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": args["PodUID"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]}}
        url = f"{server}/api/v1/namespaces/{namespace}/pods/{name}/binding"
        async with request.app["client"].post(url, json=body, ssl=context) as response:
            error = "" if response.status < 300 else f"HTTP {response.status}"
        return web.json_response({"Error": error})

    async def client(app: web.Application):
        async with ClientSession() as session:
            app["client"] = session
            yield

    app = do_nothing_app(bind)
    app.cleanup_ctx.append(client)
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=client_ca)
    serving.load_cert_chain(tls_cert, tls_key)
    serving.verify_mode = ssl.CERT_REQUIRED
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None,
                ssl_context=serving)


def stages_without_heartbeats(directory: Path) -> Path:
    """kwok's stages less the node heartbeat (no controller-manager reads it here)."""
    import yaml

    stages = [stage for stage in yaml.safe_load_all((DATA / "kwok-stages.yaml").read_text())
              if stage and stage["metadata"]["name"] != "node-heartbeat-with-lease"]
    path = directory / "kwok-stages-no-heartbeat.yaml"
    path.write_text(yaml.safe_dump_all(stages))
    return path


def parallel(cluster: ControlPlane, items: list[Any], call) -> None:
    """`call(kube, item)` for every item, over CREATE_THREADS clients (one session each)."""
    local = threading.local()

    def run(item: Any) -> None:
        if not hasattr(local, "kube"):
            local.kube = cluster.client()
        call(local.kube, item)

    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(run, items))


def create_nodes(cluster: ControlPlane, count: int) -> None:
    from tests.e2e.objects import kwok_node

    nodes = [kwok_node(f"node-{index:05d}", memory="768Gi",
                       group=f"pg-{index // GROUP_SIZE}") for index in range(count)]
    parallel(cluster, nodes, lambda kube, node: kube.create("/api/v1/nodes", node))
    def all_ready() -> Any:
        ready = sum(any(c["type"] == "Ready" and c["status"] == "True"
                        for c in (node.get("status") or {}).get("conditions") or [])
                    for node in cluster.kube.list("/api/v1/nodes"))
        return ready == count or NotYet(f"{ready} Ready")

    cluster.wait(f"all {count} nodes Ready", all_ready, 300, ["kwok"])


def job_pods(namespace: str, scheduler: str, count: int) -> list[dict]:
    from tests.e2e.objects import training_pod

    pods = []
    job = 0
    while len(pods) < count:
        name = f"j{job:03d}"
        pods.append(training_pod(f"{name}-ps-0", namespace, name, "ps", cpu="4",
                                 memory="8Gi", scheduler=scheduler))
        for index in range(WORKERS_PER_JOB):
            pods.append(training_pod(f"{name}-w-{index:02d}", namespace, name, "worker",
                                     gpus=1, cpu="4", memory="16Gi", scheduler=scheduler))
        job += 1
    return pods[:count]


class BindingWatch:
    """Watches one namespace's pods; `bound[name]` = when its nodeName first appeared.

    The API server ends a watch whose reader falls behind; the watch then resumes from
    the last resourceVersion seen (a relist on 410 Gone), as an informer does."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.path = f"/api/v1/namespaces/{namespace}/pods"
        self.bound: dict[str, float] = {}
        self.restarts = 0
        self.error: str | None = None
        self.closed = False
        self.version = self._list()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _list(self) -> str:
        listing = self.kube.request("GET", self.path)
        self._seen(listing.get("items") or [])
        return listing["metadata"]["resourceVersion"]

    def _seen(self, pods: list[dict]) -> None:
        now = time.monotonic()
        for pod in pods:
            name = pod["metadata"]["name"]
            if pod["spec"].get("nodeName") and name not in self.bound:
                self.bound[name] = now

    def _run(self) -> None:
        while not self.closed:
            try:
                self._stream()
            except Exception as error:  # noqa: BLE001 - shown by state(); then resumed
                self.error = f"{type(error).__name__}: {error}"
            self.restarts += 1

    def _stream(self) -> None:
        with self.kube.session.get(
                self.kube.server + self.path,
                params={"watch": "1", "resourceVersion": self.version,
                        "allowWatchBookmarks": "true"},
                stream=True, timeout=(10, 1800)) as response:
            for line in response.iter_lines():
                if self.closed:
                    return
                if not line:
                    continue
                event = json.loads(line)
                pod = event.get("object") or {}
                if event.get("type") == "ERROR":  # 410 Gone: relist, then watch from there
                    self.version = self._list()
                    return
                self.version = pod["metadata"]["resourceVersion"]
                if event.get("type") in ("ADDED", "MODIFIED"):
                    self._seen([pod])

    def state(self) -> str:
        return f"{len(self.bound)} bound; watch restarts: {self.restarts}; error: {self.error}"

    def close(self) -> None:
        """Stop after the next event (the run's pod deletions bring one at once).
        Closing the response from here instead would block until the watching thread's
        TLS read returns: up to the API server's next bookmark, a minute."""
        self.closed = True


def start_extender(cluster: ControlPlane, extender: Any, nodes: int) -> None:
    """(Re)start `extender` (one object for every run: a process restarts with the
    command line, and so the ops port, of its first start) and wait for its cache."""
    extender.start()
    extender.wait_ready()
    cluster.wait("the extender's cache to hold every node",
                 lambda: extender.readyz()["nodes"] >= nodes, 120, [extender.name])


def fresh_namespace(cluster: ControlPlane, namespace: str) -> None:
    cluster.kube.ensure_namespace(namespace, service_account_timeout_s=None)  # no kcm here
    # No controller-manager: the ServiceAccount admission plugin needs this one.
    cluster.kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                        {"metadata": {"name": "default"}})


def timed_burst(cluster: ControlPlane, namespace: str, pods: list[dict], logs: list[str],
                first: Sequence[tuple[str, dict]] = ()) -> dict[str, float]:
    """Create `first` (API path, body: e.g. the gangs' PodGroups), then `pods`, each over
    CREATE_THREADS clients, and wait until every pod is bound: pods/s from the first
    create to the last binding, the seconds, and how long the pods' creation took."""
    watch = BindingWatch(cluster.client(), namespace)
    created: list[float] = []
    started = time.monotonic()
    parallel(cluster, list(first), lambda client, item: client.create(*item))

    def create(client: Kube, body: dict) -> None:
        client.create(f"/api/v1/namespaces/{namespace}/pods", body)
        created.append(time.monotonic())

    parallel(cluster, pods, create)
    cluster.wait(f"all {len(pods)} pods of {namespace} bound",
                 lambda: len(watch.bound) == len(pods) or NotYet(watch.state()),
                 RUN_TIMEOUT_S, logs)
    watch.close()
    last_bound = max(watch.bound.values())
    return {"pods_per_s": len(pods) / (last_bound - started),
            "seconds": last_bound - started, "create_seconds": max(created) - started}


def delete_pods(cluster: ControlPlane, namespace: str, names: list[str]) -> None:
    # One DELETE per pod from the client threads: a deletecollection runs one delete at
    # a time in the API server (--delete-collection-workers=1), minutes for 2,000 pods.
    parallel(cluster, names,
             lambda client, name: client.delete(f"/api/v1/namespaces/{namespace}/pods/{name}",
                                                grace_period_s=0))
    cluster.wait(f"the pods of {namespace} deleted",
                 lambda: not cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods"), 600)


def one_run(cluster: ControlPlane, mode: str, rep: int, pods: int) -> dict[str, float]:
    namespace = f"{mode}-{rep}"
    fresh_namespace(cluster, namespace)
    bodies = job_pods(namespace, f"bench-{mode}", pods)
    result = timed_burst(cluster, namespace, bodies, [f"bench-{mode}"])
    delete_pods(cluster, namespace, [b["metadata"]["name"] for b in bodies])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--qps", type=int, default=1000,
                        help="kube-schedulers' client QPS and burst (default 1000)")
    parser.add_argument("--serve-do-nothing", nargs=8, help=argparse.SUPPRESS,
                        metavar=("PORT", "SERVER", "CA", "CERT", "KEY", "TLS_CERT",
                                 "TLS_KEY", "CLIENT_CA"))
    args = parser.parse_args()
    if args.serve_do_nothing:
        port, *rest = args.serve_do_nothing
        serve_do_nothing(int(port), *rest)
        return 0
    problem = binaries_problem()
    if problem:
        print(f"bench_scheduler_real: {problem}", file=sys.stderr)
        return 2

    import os

    from tests.e2e.headstart import Extender, extender_url
    from tests.e2e.pki import ADMIN, Pki
    from tests.e2e.processes import free_ports
    from tests.e2e.scheduler_tls import scheduler_pki

    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="bench-scheduler-real-"))
    noop_port, headstart_port = free_ports(2)
    # Both extenders in the shipped scheme (mutual TLS, the e2e harness's certificates).
    noop_url, tls = extender_url(noop_port), scheduler_pki()
    spec = ClusterSpec(
        controller_manager=False, anchor_node=False, audit_policy=None,
        # Without a controller-manager nothing would lift the not-ready taint this
        # admission plugin puts on every new node (kcm's node lifecycle controller does).
        apiserver_args=("--disable-admission-plugins=TaintNodesByCondition",),
        schedulers=scheduler_configs(noop_url, extender_url(headstart_port), args.qps),
        kwok_stages=stages_without_heartbeats(work), kwok_node_lease_s=0,
        # The shipped profile runs Coscheduling (scheduler-plugins' kube-scheduler),
        # whose informer waits for PodGroups to be served before it schedules anything.
        crds=(pod_group_crd(),),
    )
    pki = Pki(work / "pki")
    cluster = ControlPlane(Path(os.environ["HEADSTART_E2E_BIN"]), work / "cluster", pki, spec)
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    try:
        cluster.run("do-nothing-extender", [
            sys.executable, __file__, "--serve-do-nothing", str(noop_port), cluster.server,
            str(pki.ca_cert), *map(str, pki.client(ADMIN)), *map(str, tls.server),
            str(tls.ca)])
        cluster.start()
        cluster.wait("the do-nothing extender to answer",  # 405: GET on a POST route
                     lambda: requests.get(noop_url + "/filter", timeout=2, verify=str(tls.ca),
                                          cert=tuple(map(str, tls.client))).status_code == 405,
                     60, ["do-nothing-extender"])
        print(f"cluster up in {cluster.timings['total']:.1f} s (logs: {cluster.logs})",
              flush=True)
        create_nodes(cluster, args.nodes)
        print(f"{args.nodes} kwok nodes Ready", flush=True)
        # It binds only pods of the scheduler that calls it (bind_scheduler_names).
        extender = Extender(cluster, port=headstart_port,
                            settings={"bind_scheduler_names": ["bench-headstart"]})
        for rep in range(args.runs):
            for mode in MODES:
                if mode == "headstart":
                    start_extender(cluster, extender, args.nodes)
                try:
                    result = one_run(cluster, mode, rep, args.pods)
                finally:
                    if mode == "headstart":
                        extender.stop()
                results[mode].append(result)
                print(f"run {rep + 1} {mode:>10}: {result['pods_per_s']:6.1f} pods/s "
                      f"({result['seconds']:.1f} s; pods created in "
                      f"{result['create_seconds']:.1f} s)", flush=True)
    finally:
        cluster.stop()
        # etcd's data (~400 MB after a full run) is of no use once stopped; logs stay.
        shutil.rmtree(cluster.workdir / "etcd-data", ignore_errors=True)

    medians = {mode: statistics.median(r["pods_per_s"] for r in results[mode])
               for mode in MODES}
    print(f"\n{args.pods} pods on {args.nodes} nodes, client QPS {args.qps}, "
          f"median of {args.runs} runs (pods/s from first create to last binding):")
    for mode in MODES:
        runs = ", ".join(f"{r['pods_per_s']:.1f}" for r in results[mode])
        print(f"  {mode:>10}: {medians[mode]:6.1f}   (runs: {runs})")
    print(f"headstart / plain      = {medians['headstart'] / medians['plain']:.2f}")
    print(f"headstart / do-nothing = {medians['headstart'] / medians['do-nothing']:.2f}")
    print(f"do-nothing / plain     = {medians['do-nothing'] / medians['plain']:.2f}")
    print(f"logs: {cluster.logs}; whole benchmark {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
