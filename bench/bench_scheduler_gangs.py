"""Scheduling throughput of real kube-schedulers when the pods come as gangs: scheduler-plugins'
Coscheduling without extender, headstart's extender and admitter as shipped, and
Kubernetes 1.36's in-tree gang scheduling, measured in the same run.

    HEADSTART_E2E_BIN=/path/to/bin python bench/bench_scheduler_gangs.py
        [--nodes 1000] [--gang-sizes 4,64] [--pods 2048] [--runs 3] [--qps N]
        [--modes coscheduling,headstart,gang-scheduling] [--record]

Needs the binaries of the end-to-end tests (README, "End-to-end tests"); without
HEADSTART_E2E_BIN it prints why and exits 2. One invocation per node count; `--record`
keeps each as its own entry of bench/results.json (`scheduler-gangs-1000`,
`scheduler-gangs-5000`), rendered in docs/extender.md. On 2 busy cores the default
(1,000 nodes, 3 runs) took 45 minutes; the 5,000-node cluster is opt-in by flag,
`--nodes 5000 --runs 1`, which took 20 minutes (3 runs would take about an hour).

Cluster: bench_scheduler_real's (etcd, kube-apiserver, kwok; no controller-manager;
`--nodes` kwok nodes of 8 GPUs in placement groups of 100), with headstart's manifests
installed (its RBAC, the placement-gate MutatingAdmissionPolicy, the Gang CRD) and
scheduler-plugins' PodGroup CRD, and the API server's `GenericWorkload` and
`GangScheduling` feature gates and `scheduling.k8s.io/v1alpha2` on. Three kube-schedulers,
all from the SHIPPED configuration (manifests/base/scheduler/scheduler-config.yaml:
MostAllocated, percentageOfNodesToScore 100, no default spreading, client QPS/burst as
shipped unless `--qps`):

- `coscheduling`: scheduler-plugins' kube-scheduler with the shipped Coscheduling
  profile, no extender (kube-scheduler binds), as headstart-scheduler's ServiceAccount;
  the bench creates each gang's PodGroup (minMember = the gang's size, the admitter's
  scheduleTimeoutSeconds) before its pods, which carry its label. The baseline.
- `headstart`: the shipped headstart-scheduler (the same profile, the extender over
  mutual TLS, bind through it, leader election) and `headstart extender` with its
  shipped config: the placement gate holds every pod, the admitter admits each gang
  whole into a placement group, creates its PodGroup and labels and ungates its pods.
  The pods are created bare (a job label, `headstart.io/job-size`), as a Job's would be.
  The extender runs only during its own runs (started, cache synced and leading its
  admission Lease before the run).
- `gang-scheduling`: the upstream 1.36.2 kube-scheduler with `--feature-gates=
  GenericWorkload=true,GangScheduling=true` (GangScheduling joins the default plugins)
  and the without-coscheduling component's profile; the bench creates each gang's
  `scheduling.k8s.io/v1alpha2` PodGroup (`schedulingPolicy.gang.minCount` = its size)
  and the pods name it in `spec.schedulingGroup.podGroupName`. In 1.36 that field
  replaced `spec.workloadRef` (tombstoned), and the v1alpha1 Workload API with
  `podGroups` became v1alpha2's Workload (`podGroupTemplates`) plus standalone PodGroups,
  which are what the scheduler reads; no Workload is created (no controller here would
  use it). Runs as cluster-admin.

One run: `--pods` one-GPU worker pods (4 CPUs, 16 GiB) in gangs of one size, in a fresh
namespace, created gang after gang by 8 client threads (PodGroups first where the bench
makes them); throughput = pods / (last binding - first create), bindings timed by a
watch, so the admitter's rounds and PodGroup writes count in `headstart`'s figure. Each
run checks the gang rule was in force (every pod carried its PodGroup). Modes alternate
run by run (for each run, each gang size, each mode) so drift in the machine's load hits
all of them. Reported: each mode's runs and median per gang size, and each median
against `coscheduling`'s of the same gang size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_scheduler_real import (  # noqa: E402 - after the path fix, as the other benches
    create_nodes,
    delete_pods,
    fresh_namespace,
    stages_without_heartbeats,
    start_extender,
    timed_burst,
)
from results_file import load_average, record  # noqa: E402

from common.errors import InputError  # noqa: E402
from tests.e2e.controlplane import ClusterSpec, ControlPlane, binaries_problem  # noqa: E402

MODES = ("coscheduling", "headstart", "gang-scheduling")
BASELINE = "coscheduling"
SCHEDULERS = {"coscheduling": "bench-coscheduling", "headstart": "headstart-scheduler",
              "gang-scheduling": "bench-gang-scheduling"}
IN_TREE_GATES = "GenericWorkload=true,GangScheduling=true"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
JOB_SIZE = "headstart.io/job-size"
IN_TREE_PODGROUPS = "/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups"
PLUGINS_PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"


def gang_pods(mode: str, namespace: str, gang_size: int, count: int
              ) -> tuple[list[tuple[str, dict]], list[dict]]:
    """(PodGroups to create first, as (API path, body); the pods, gang after gang)."""
    from locality.admission.config import AdmissionConfig
    from tests.e2e.objects import training_pod

    groups: list[tuple[str, dict]] = []
    pods: list[dict] = []
    for gang in range(count // gang_size):
        name = f"g{gang:04d}"
        if mode == "coscheduling":
            groups.append((PLUGINS_PODGROUPS.format(namespace=namespace), {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"minMember": gang_size, "scheduleTimeoutSeconds":
                         AdmissionConfig().pod_group_timeout_seconds}}))
        elif mode == "gang-scheduling":
            groups.append((IN_TREE_PODGROUPS.format(namespace=namespace), {
                "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"schedulingPolicy": {"gang": {"minCount": gang_size}}}}))
        for index in range(gang_size):
            pod = training_pod(f"{name}-w-{index:02d}", namespace, name, "worker", gpus=1,
                               cpu="4", memory="16Gi", scheduler=SCHEDULERS[mode],
                               annotations={JOB_SIZE: str(gang_size)})
            if mode == "coscheduling":
                pod["metadata"]["labels"][POD_GROUP_LABEL] = name
            elif mode == "gang-scheduling":
                pod["spec"]["schedulingGroup"] = {"podGroupName": name}
            pods.append(pod)
    return groups, pods


def gang_rule_missing(mode: str, pods: list[dict]) -> list[str]:
    """The pods that did not carry their gang's PodGroup when bound (the admitter's label
    under headstart, the field the API server keeps only with GenericWorkload on)."""
    if mode == "gang-scheduling":
        return [p["metadata"]["name"] for p in pods
                if not (p["spec"].get("schedulingGroup") or {}).get("podGroupName")]
    return [p["metadata"]["name"] for p in pods
            if not (p["metadata"].get("labels") or {}).get(POD_GROUP_LABEL)]


def one_run(cluster: ControlPlane, mode: str, rep: int, gang_size: int, count: int
            ) -> dict[str, float]:
    namespace = f"{mode}-{gang_size}-{rep}"
    fresh_namespace(cluster, namespace)
    groups, pods = gang_pods(mode, namespace, gang_size, count)
    logs = [SCHEDULERS[mode]] + (["headstart-extender"] if mode == "headstart" else [])
    result = timed_burst(cluster, namespace, pods, logs, first=groups)
    missing = gang_rule_missing(mode, cluster.kube.list(f"/api/v1/namespaces/{namespace}/pods"))
    if missing:
        raise RuntimeError(f"{mode}: {len(missing)} pods bound without their gang's PodGroup "
                           f"(e.g. {namespace}/{missing[0]}): the gang rule was not in force")
    delete_pods(cluster, namespace, [p["metadata"]["name"] for p in pods])
    return result


def cluster_spec(work: Path, extender_port: int, qps: int | None) -> ClusterSpec:
    from tests.e2e import installed
    from tests.e2e.controlplane import pod_group_crd
    from tests.e2e.headstart import (
        ensure_installed,
        extender_url,
        headstart_scheduler_config,
        scheduler_variant,
    )

    configs = {
        "bench-coscheduling": scheduler_variant("bench-coscheduling", None),
        "headstart-scheduler": headstart_scheduler_config(extender_url(extender_port)),
        "bench-gang-scheduling": scheduler_variant("bench-gang-scheduling", None,
                                                   coscheduling=False),
    }
    if qps is not None:
        for config in configs.values():
            config["clientConnection"] = {"qps": qps, "burst": qps}
    account = (installed.NAMESPACE, installed.service_account("scheduler"))
    return ClusterSpec(
        controller_manager=False, anchor_node=False, audit_policy=None,
        # Without a controller-manager nothing would lift the not-ready taint this
        # admission plugin puts on every new node (kcm's node lifecycle controller does).
        apiserver_args=("--disable-admission-plugins=TaintNodesByCondition",
                        f"--feature-gates={IN_TREE_GATES}",
                        "--runtime-config=scheduling.k8s.io/v1alpha2=true"),
        schedulers=configs,
        scheduler_args={"bench-gang-scheduling": (f"--feature-gates={IN_TREE_GATES}",)},
        scheduler_accounts={"bench-coscheduling": account, "headstart-scheduler": account},
        setup=(ensure_installed,), crds=(pod_group_crd(),),
        kwok_stages=stages_without_heartbeats(work), kwok_node_lease_s=0,
    )


def wait_admitter_leads(cluster: ControlPlane, extender: Any) -> None:
    from tests.e2e.kube import NotYet

    cluster.wait("the admitter to lead", lambda: extender.get("/admission").json().get(
        "leader") or NotYet("not leading"), 120, [extender.name])


def summary(results: dict[int, dict[str, list[dict]]], modes: tuple[str, ...]) -> dict:
    """Per gang size: each mode's runs (pods/s, seconds, create seconds) and median, and
    each median against the baseline's."""
    out = {}
    for size, by_mode in results.items():
        medians = {mode: statistics.median(r["pods_per_s"] for r in by_mode[mode])
                   for mode in modes}
        out[str(size)] = {mode: {
            "pods_per_s": [round(r["pods_per_s"], 1) for r in by_mode[mode]],
            "seconds": [round(r["seconds"], 1) for r in by_mode[mode]],
            "create_seconds": [round(r["create_seconds"], 1) for r in by_mode[mode]],
            "median": round(medians[mode], 1),
            **({"vs_coscheduling": round(medians[mode] / medians[BASELINE], 2)}
               if BASELINE in modes else {}),
        } for mode in modes}
    return out


def parse_list(text: str, what: str, choices: tuple[str, ...] | None = None) -> tuple:
    items = tuple(item.strip() for item in text.split(",") if item.strip())
    if not items:
        raise InputError(f"{what}: empty list")
    if choices is not None:
        unknown = [item for item in items if item not in choices]
        if unknown:
            raise InputError(f"{what}: unknown {', '.join(unknown)} (choose from "
                             f"{', '.join(choices)})")
        return items
    try:
        sizes = tuple(int(item) for item in items)
    except ValueError:
        raise InputError(f"{what}: expected whole numbers, got {text!r}") from None
    if any(size < 1 for size in sizes):
        raise InputError(f"{what}: sizes must be at least 1, got {text!r}")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gang-sizes", default="4,64")
    parser.add_argument("--pods", type=int, default=2048,
                        help="pods per run (a multiple of every gang size; default 2048)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--qps", type=int, default=None,
                        help="every scheduler's client QPS and burst (default: as shipped)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--record", action="store_true",
                        help="write the figures to bench/results.json")
    args = parser.parse_args()
    try:
        sizes = parse_list(args.gang_sizes, "--gang-sizes")
        modes = parse_list(args.modes, "--modes", MODES)
        uneven = [size for size in sizes if args.pods % size]
        if uneven:
            raise InputError(f"--pods {args.pods} is not a multiple of gang size "
                             f"{uneven[0]}")
    except InputError as error:
        parser.error(str(error))
    problem = binaries_problem()
    if problem:
        print(f"bench_scheduler_gangs: {problem}", file=sys.stderr)
        return 2

    from tests.e2e.headstart import Extender
    from tests.e2e.pki import Pki
    from tests.e2e.processes import free_ports

    began = time.monotonic()
    load_before = load_average()
    loads = [load_before]
    work = Path(tempfile.mkdtemp(prefix="bench-scheduler-gangs-"))
    (extender_port,) = free_ports(1)
    cluster = ControlPlane(Path(os.environ["HEADSTART_E2E_BIN"]), work / "cluster",
                           Pki(work / "pki"), cluster_spec(work, extender_port, args.qps))
    results: dict[int, dict[str, list[dict]]] = {size: {m: [] for m in modes} for size in sizes}
    try:
        cluster.start()
        print(f"cluster up in {cluster.timings['total']:.1f} s (logs: {cluster.logs})",
              flush=True)
        create_nodes(cluster, args.nodes)
        print(f"{args.nodes} kwok nodes Ready ({time.monotonic() - began:.0f} s)", flush=True)
        extender = Extender(cluster, port=extender_port)
        for rep in range(args.runs):
            for size in sizes:
                for mode in modes:
                    if mode == "headstart":
                        start_extender(cluster, extender, args.nodes)
                        wait_admitter_leads(cluster, extender)
                    try:
                        result = one_run(cluster, mode, rep, size, args.pods)
                    finally:
                        if mode == "headstart":
                            extender.stop()
                    results[size][mode].append(result)
                    loads.append(load_average())
                    print(f"run {rep + 1} gangs of {size:>3} {mode:>15}: "
                          f"{result['pods_per_s']:6.1f} pods/s ({result['seconds']:.1f} s; "
                          f"pods created in {result['create_seconds']:.1f} s; load "
                          f"{loads[-1]:.1f})", flush=True)
    finally:
        cluster.stop()
        shutil.rmtree(cluster.workdir / "etcd-data", ignore_errors=True)

    figures = summary(results, modes)
    print(f"\n{args.pods} pods on {args.nodes} nodes, median of {args.runs} runs "
          "(pods/s from first create to last binding):")
    for size in sizes:
        for mode in modes:
            row = figures[str(size)][mode]
            ratio = f"  x{row['vs_coscheduling']:.2f}" if "vs_coscheduling" in row else ""
            print(f"  gangs of {size:>3} {mode:>15}: {row['median']:6.1f}{ratio}   "
                  f"(runs: {', '.join(map(str, row['pods_per_s']))})")
    elapsed = time.monotonic() - began
    print(f"logs: {cluster.logs}; whole benchmark {elapsed:.0f} s; 1-minute load "
          f"{min(loads):.1f}-{max(loads):.1f}")
    if args.record:
        record(f"scheduler-gangs-{args.nodes}", {
            "nodes": args.nodes, "pods": args.pods, "runs": args.runs,
            "gang_sizes": list(sizes), "qps": args.qps, "modes": list(modes),
            "gangs": figures, "seconds": round(elapsed),
            "load_range": [round(min(loads), 1), round(max(loads), 1)],
        }, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
