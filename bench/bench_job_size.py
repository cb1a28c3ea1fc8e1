"""Does the extender's cost per pod grow with the size of the pod's job? CPU per pod and
latency through real HTTP at 5,000 nodes for jobs of 32, 512 and 4,096 pods, against
the do-nothing extender measured in the same run.

    python bench/bench_job_size.py            # 3 runs of 100 pods per size, about 1 minute
    python bench/bench_job_size.py --quick    # 1 run, fewer requests (a smoke run)
    python bench/bench_job_size.py --record   # and write the figures to bench/results.json

Cluster: bench_extender's 5,000 8-GPU nodes (groups of 50, background pods using 0-6
GPUs per node, 10% of the nodes with two NUMA zones) and its 4 other jobs with their
PS bound and 8 workers waiting (their claims are kept). The job measured: 1 PS and
J - 1 one-GPU workers, half of them bound (packed 4 per node from the PS's group on,
as the extender would have put them), the other half pending in the cache: a job
halfway through being scheduled. The requests are what kube-scheduler sends for one of
its pending workers: filter and prioritize with every node name (nodeCacheCapable
true, `percentageOfNodesToScore: 100`), then bind, which records an assumption for the
job (so its claims and the next filter's context are computed afresh, as for every
pod kube-scheduler places). Servers run in their own processes (bench_extender's), the
client sends one request at a time with keep-alive, like kube-scheduler.

Reported per job size: the server's CPU per pod (filter + prioritize + bind; process
time, so waiting for a core is not counted) and p50 / p99 of filter and of
prioritize, each the median of `--runs` runs; the same for the do-nothing extender,
and the CPU ratio. Then the same work in this process without aiohttp and the network
(`in_process`): the handlers' decode, decision and encode, every size and both
extenders in turn within each run. That is the part of a request that can grow with
the job (the HTTP part cannot), measured where the shared machine's noise (client and
server on 2 cores) does not swamp it. Target: p99 <= 5 ms and flat in job size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_extender  # noqa: E402
from results_file import load_average, record  # noqa: E402

NODES = 5000
JOB_SIZES = (32, 512, 4096)
WORKERS_PER_NODE = 4


def build_cluster(job_size: int):
    """(node objects, pod objects, NRT objects, the pod to schedule)."""
    from tests.extender.builders import make_pod

    nodes, pods, nrts, _ = bench_extender.build_cluster(NODES)
    # bench_extender's own 33-pod job gives way to one of `job_size` pods.
    pods = [pod for pod in pods if pod["metadata"].get("labels", {}).get(
        "headstart.io/job") != "bert"]
    workers = job_size - 1
    bound = workers // 2
    pods.append(make_pod("ps-0", namespace="train", cpu="8", memory="32Gi", job="bert",
                         role="PS", node="node-00000", phase="Running"))
    for worker in range(workers):
        node = f"node-{worker // WORKERS_PER_NODE + 1:05d}" if worker < bound else None
        pods.append(make_pod(f"worker-{worker}", namespace="train", gpus=1, cpu="4",
                             memory="32Gi", job="bert", role="Worker", node=node,
                             phase="Running" if node else "Pending"))
    pod = pods[-1]  # a pending worker
    pod["metadata"]["resourceVersion"] = "4242"
    return nodes, pods, nrts, pod


def headstart_app(job_size: int):
    from extender.app import create_app
    from extender.cache import ClusterCache
    from extender.config import ExtenderConfig
    from locality.config import LocalityConfig
    from locality.parse import parse_node, parse_node_topology, parse_pod

    locality = LocalityConfig()
    nodes, pods, nrts, _ = build_cluster(job_size)
    cache = ClusterCache(locality)
    cache.replace_nodes([parse_node(node, locality) for node in nodes])
    cache.replace_pods([parse_pod(pod, locality) for pod in pods])
    cache.replace_topologies([parse_node_topology(nrt, locality) for nrt in nrts])
    cache.table()
    config = ExtenderConfig(max_body_bytes=1024**3)
    return create_app(config, cache, binder=bench_extender.NoApiBinder())


def serve(kind: str, job_size: int, ports: multiprocessing.Queue) -> None:
    app = headstart_app(job_size) if kind == "headstart" else bench_extender.do_nothing_app()
    bench_extender.run_app(app, ports)


def headstart_verbs(job_size: int) -> dict:
    """verb -> body -> answer: what the headstart handlers do with a request, minus
    aiohttp (decode, decide, encode; the bind records the assumption and binds nothing)."""
    from extender.app import DECIDER
    from extender.wire import (
        decode_json,
        encode_binding_result,
        encode_filter_result,
        encode_host_priorities,
        parse_binding_args,
        parse_extender_args,
    )

    decider = headstart_app(job_size)[DECIDER]

    def filter_(body: bytes) -> bytes:
        result = decider.filter(parse_extender_args(decode_json(body)), time.monotonic())
        return encode_filter_result(result.passed, result.failed, result.unresolvable, True)

    def prioritize(body: bytes) -> bytes:
        hosts, scores = decider.prioritize(parse_extender_args(decode_json(body)),
                                           time.monotonic())
        return encode_host_priorities(hosts, scores)

    def bind(body: bytes) -> bytes:
        decider.bind_arrived(parse_binding_args(decode_json(body)), time.monotonic())
        return encode_binding_result("")

    pod = None

    def context(body: bytes) -> None:
        # The pod's context afresh, as the first request after a bind computes it.
        nonlocal pod
        if pod is None:
            pod = decider.parse_pod(parse_extender_args(decode_json(body)).pod)
        decider.context(pod, time.monotonic())

    return {"filter": filter_, "prioritize": prioritize, "bind": bind, "context": context}


DO_NOTHING_VERBS = {"filter": bench_extender.accept_everything,
                    "prioritize": bench_extender.score_nothing,
                    "bind": bench_extender.bind_nothing}


def fixed_work() -> int:
    """About 2 ms of pure Python on this machine, the same every call: its p99 against
    its p50 is the machine's jitter (a shared VM's), which no extender can beat."""
    total = 0
    for value in range(20_000):
        total += value
    return total


def in_process(sizes: list[int], runs: int, requests: int) -> dict:
    """job size -> kind -> the handlers' own work without aiohttp and the network: per
    pod, the median process time of filter + prioritize + bind and p50 / p99 of filter
    and of prioritize (wall clock), each the median of `runs` runs; for headstart also
    p50 / p99 of building the pod's decision context after a bind (the part that reads
    where the job is), timed apart so the filter's figures stay those of a request.
    Every size and both kinds run in turn within each run, so a slow moment of the
    shared machine falls on all of them, not on one size. Under "fixed_work": p50 / p99
    of `fixed_work`, timed in each run between the requests."""
    import gc

    servers = {(size, "headstart"): headstart_verbs(size) for size in sizes}
    servers.update({(size, "baseline"): DO_NOTHING_VERBS for size in sizes})
    bodies = {size: request_bodies(size) for size in sizes}
    gc.collect()
    gc.freeze()  # as the extender does after its first sync (extender.sync)
    samples: dict = {key: [] for key in servers}
    fixed_work()
    for _ in range(runs):
        for (size, kind), verbs in servers.items():
            body = bodies[size]
            seconds: dict[str, list[float]] = {"filter": [], "prioritize": [], "cpu": []}
            for _ in range(requests):
                cpu = time.process_time()
                for verb in ("filter", "prioritize"):
                    started = time.perf_counter()
                    verbs[verb](body["cache"])
                    seconds[verb].append(time.perf_counter() - started)
                verbs["bind"](body["bind"])
                seconds["cpu"].append(time.process_time() - cpu)
            if kind == "headstart":
                # The part that reads the job's placement: after a bind (the cache
                # changed), the context is built afresh.
                seconds["context"] = []
                for _ in range(requests):
                    verbs["bind"](body["bind"])
                    started = time.perf_counter()
                    verbs["context"](body["cache"])
                    seconds["context"].append(time.perf_counter() - started)
            samples[(size, kind)].append(seconds)
        floor = []
        for _ in range(2 * requests):  # the machine's own jitter, on work that never varies
            started = time.perf_counter()
            fixed_work()
            floor.append(time.perf_counter() - started)
        samples.setdefault("floor", []).append(floor)
    floor_runs = samples.pop("floor")
    figures: dict = {"fixed_work": [round(1e3 * statistics.median(
        bench_extender.percentile(run, q) for run in floor_runs), 3) for q in (0.50, 0.99)]}
    for (size, kind), per_run in samples.items():
        figures.setdefault(size, {})[kind] = {
            "cpu_ms": round(1e3 * statistics.median(
                statistics.median(run["cpu"]) for run in per_run), 3),
            **{verb: [round(1e3 * statistics.median(
                bench_extender.percentile(run[verb], q) for run in per_run), 3)
                for q in (0.50, 0.99)] for verb in ("filter", "prioritize", "context")
                if verb in per_run[0]},
        }
    return figures


def request_bodies(job_size: int) -> dict[str, bytes]:
    nodes, _, _, pod = build_cluster(job_size)
    names = [node["metadata"]["name"] for node in nodes]
    bind = {"PodName": pod["metadata"]["name"], "PodNamespace": "train",
            "PodUID": pod["metadata"]["uid"], "Node": "node-00001"}
    return {"cache": json.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}).encode(),
            "bind": json.dumps(bind).encode()}


def measure(url: str, bodies: dict[str, bytes], requests: int, runs: int) -> dict:
    """verb -> [median p50, median p99] ms; "cpu_ms" -> median server CPU per pod."""
    per_run = [asyncio.run(bench_extender.latencies(url, bodies, requests)) for _ in range(runs)]
    figures: dict = {
        verb: [round(1e3 * statistics.median(bench_extender.percentile(run[verb], q)
                                              for run in per_run), 2) for q in (0.50, 0.99)]
        for verb in ("filter", "prioritize", "bind")
    }
    figures["cpu_ms"] = round(1e3 * statistics.median(run["cpu"][0] for run in per_run), 2)
    figures["cpu_ms_runs"] = [round(1e3 * run["cpu"][0], 2) for run in per_run]
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 run of fewer requests")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100, help="pods per run")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(JOB_SIZES))
    parser.add_argument("--pin", action="store_true",
                        help="the server on CPU 1, this client on CPU 0 (needs 2 CPUs): no "
                        "waiting for the other's core, as kube-scheduler and the extender "
                        "rarely share one core on a control-plane node")
    parser.add_argument("--record", action="store_true",
                        help="write the figures to bench/results.json (entry extender-job-size)")
    parser.add_argument("--before-into", metavar="RESULTS_JSON",
                        help="run on an older build's tree: store the figures as the `before` "
                        "of RESULTS_JSON's extender-job-size entry (with --before-commit and "
                        "--before-what)")
    parser.add_argument("--before-commit", default="", help="the older build's commit")
    parser.add_argument("--before-what", default="the build before",
                        help="what the older build lacks, for the table's caption")
    args = parser.parse_args()
    if args.pin and len(os.sched_getaffinity(0)) < 2:
        parser.error("--pin needs 2 CPUs")
    runs, requests = (1, 20) if args.quick else (args.runs, args.requests)
    load_before = load_average()
    started = time.perf_counter()
    rows = []
    for job_size in args.sizes:
        bodies = request_bodies(job_size)
        figures = {}
        for kind in ("headstart", "baseline"):
            if args.pin:
                os.sched_setaffinity(0, {1})  # the forked server inherits CPU 1
            server = bench_extender.Server(serve, (kind, job_size), start_timeout_s=300)
            if args.pin:
                os.sched_setaffinity(0, {0})
            try:
                figures[kind] = measure(server.url, bodies, requests, runs)
            finally:
                server.stop()
        ours, base = figures["headstart"], figures["baseline"]
        rows.append({"job_pods": job_size, "headstart": ours, "baseline": base,
                     "cpu_ratio": round(ours["cpu_ms"] / base["cpu_ms"], 2)})
        print(f"... job of {job_size} pods done ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr)
    load = " / ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"headstart extender at {NODES:,} nodes by job size (median of {runs} run(s) of "
          f"{requests} pods; ms; load average {load} on {os.cpu_count()} cores)")
    print(f"{'job pods':>8} | {'CPU/pod':>7} {'filter p50':>10} {'p99':>6} {'prioritize p50':>14} "
          f"{'p99':>6} | {'do-nothing CPU/pod':>18} {'p99 f/p':>11} | {'CPU ratio':>9}")
    for row in rows:
        ours, base = row["headstart"], row["baseline"]
        print(f"{row['job_pods']:>8} | {ours['cpu_ms']:>7.2f} {ours['filter'][0]:>10.2f} "
              f"{ours['filter'][1]:>6.2f} {ours['prioritize'][0]:>14.2f} "
              f"{ours['prioritize'][1]:>6.2f} | {base['cpu_ms']:>18.2f} "
              f"{base['filter'][1]:>5.2f}/{base['prioritize'][1]:<5.2f} | "
              f"{row['cpu_ratio']:>8.2f}x")
    inside = in_process(args.sizes, runs, requests)
    print(f"\nthe same work in process, without aiohttp and the network (median of {runs} "
          f"run(s) of {requests} pods, sizes interleaved; ms)")
    print(f"{'job pods':>8} | {'CPU/pod':>7} {'vs smallest':>11} {'filter p50':>10} {'p99':>6} "
          f"{'prioritize p50':>14} {'p99':>6} {'context p50':>11} | "
          f"{'do-nothing CPU/pod':>18} {'p99 f/p':>11}")
    smallest = inside[min(args.sizes)]["headstart"]["cpu_ms"]
    for size in args.sizes:
        ours, base = inside[size]["headstart"], inside[size]["baseline"]
        print(f"{size:>8} | {ours['cpu_ms']:>7.2f} {ours['cpu_ms'] / smallest:>10.2f}x "
              f"{ours['filter'][0]:>10.2f} {ours['filter'][1]:>6.2f} "
              f"{ours['prioritize'][0]:>14.2f} {ours['prioritize'][1]:>6.2f} "
              f"{ours['context'][0]:>11.2f} | "
              f"{base['cpu_ms']:>18.2f} {base['filter'][1]:>5.2f}/{base['prioritize'][1]:<5.2f}")
    floor = inside["fixed_work"]
    print(f"machine jitter: a fixed {floor[0]:.2f} ms loop has p99 {floor[1]:.2f} ms here")
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.before_into:
        path = Path(args.before_into)
        results = json.loads(path.read_text())
        results["extender-job-size"]["figures"]["before"] = {
            "what": args.before_what, "commit": args.before_commit, "when": "after",
            "load": f"{load_before:.1f}-{os.getloadavg()[0]:.1f}", "rows": rows,
            "in_process": [{"job_pods": size, **inside[size]} for size in args.sizes],
        }
        path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        print(f"stored as the before of extender-job-size in {path}")
    if args.record:
        record("extender-job-size", {
            "nodes": NODES, "runs": runs, "pods_per_run": requests, "rows": rows,
            "in_process": [{"job_pods": size, **inside[size]} for size in args.sizes],
            "fixed_work": inside["fixed_work"],
        }, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
