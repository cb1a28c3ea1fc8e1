"""Time one job-admission round, the pure part, for a job of 32, 512 and 4,096 pods at
5,000 nodes (target from issue 17: a 4,096-pod job at 5,000 nodes under 1 s).

    python bench/bench_admission.py [--nodes 5000] [--pods 32 512 4096] [--repeats 3]
                                    [--record]

The round is what `extender.admission.admitter.Admitter` does between reading the
cache and calling the API: `gather` (gated pods -> jobs, reservations), `level_room`
(free room and autoscaler headroom per placement group, and of the whole cluster),
`plan` (bin-pack the job into every domain, pick one) and `ungate_patch` for every
admitted pod (the JSON patch the admitter sends; computed from each pod's JSON, which
the admitter reads fresh).

The cluster: `--nodes` nodes of 8 GPUs, 96 CPUs, 1,152 GiB in 5 placement groups, every
other node with 4 GPUs and 48 CPUs taken by bound pods, and a node group per placement
group that may add 100 nodes. The job: 1 PS pod (8 CPUs, no GPU) per 16 pods, the rest
workers of 1 GPU and 4 CPUs, all behind the gate, size declared. A 4,096-pod job needs
3,840 GPUs: a group's 1,000 nodes have 6,000 free, so every domain holds it and the
round packs it into all 5 to choose. Baseline in the same run: the round with a 1-pod
job (what the round costs before the job's size matters). Wall-clock medians of
`--repeats` runs, each after one warm-up round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import load_average, record  # noqa: E402

from bucketing.resources import Resources  # noqa: E402
from extender.admission.patch import ungate_patch  # noqa: E402
from locality.admission.assign import plan  # noqa: E402
from locality.admission.config import GATE, AdmissionConfig, NodeGroup  # noqa: E402
from locality.admission.gather import gather  # noqa: E402
from locality.admission.snapshot import CLUSTER_LEVEL, level_room  # noqa: E402
from locality.config import PLACEMENT_GROUP_LEVEL, LocalityConfig  # noqa: E402
from locality.model import Node, NodeState, Pod  # noqa: E402

GROUPS = 5
PG_LABEL = "headstart.io/placement-group"
INSTANCE = "p4d.24xlarge"
LOCALITY = LocalityConfig()
ADMISSION = AdmissionConfig(node_groups=tuple(
    NodeGroup(f"p4d-pg-{g}", INSTANCE, f"pg-{g}", max_size=10_000) for g in range(GROUPS)))


def cluster(nodes: int) -> list[NodeState]:
    per_group = nodes // GROUPS
    states = []
    for index in range(nodes):
        group = f"pg-{index // per_group % GROUPS}"
        node = Node(f"node-{index}", {PG_LABEL: group, "node.kubernetes.io/instance-type":
                                      INSTANCE}, Resources.of(8, 96, 1152), group, INSTANCE)
        used = Resources.of(4, 48, 64) if index % 2 else Resources.of(0, 0, 0)
        states.append(NodeState(node, requested=used))
    return states


def job(pods: int) -> tuple[list[Pod], list[dict]]:
    """The gated pods, parsed and as JSON (what the admitter reads before patching)."""
    parsed, raw = [], []
    for index in range(pods):
        ps = index % 16 == 0
        name = f"train-{'ps' if ps else 'worker'}-{index}"
        labels = {"headstart.io/job": "train", "headstart.io/role": "ps" if ps else "worker"}
        annotations = {"headstart.io/job-size": str(pods),
                       "headstart.io/placement-group": "required"}
        request = Resources.of(0, 8, 32) if ps else Resources.of(1, 4, 64)
        parsed.append(Pod("team", name, f"uid-{index}", labels, annotations, request,
                          scheduling_gates=(GATE,), created_at=1_000.0 + index))
        raw.append({"metadata": {"name": name, "namespace": "team", "uid": f"uid-{index}",
                                 "resourceVersion": str(index), "labels": labels,
                                 "annotations": annotations},
                    "spec": {"schedulingGates": [{"name": GATE}], "containers": [{}]}})
    return parsed, raw


def admission_round(states: list[NodeState], pods: list[Pod], raw: list[dict]) -> int:
    """gather -> level_room -> plan -> patches; returns the pods patched (a check)."""
    by_name = {doc["metadata"]["name"]: doc for doc in raw}
    gathered = gather(pods, {}, lambda key: pods, LOCALITY, ADMISSION)
    # As the admitter: the placement groups, and the whole cluster (`preferred` jobs).
    rooms = {level: level_room(states, level, LOCALITY, ADMISSION.node_groups)
             for level in (PLACEMENT_GROUP_LEVEL, CLUSTER_LEVEL)}
    decided = plan(gathered.jobs, rooms, gathered.reservations, 10_000.0, ADMISSION,
                   gathered.releases)
    patched = 0
    for admission in decided.admissions:
        assert admission.domain is not None and admission.label_key is not None
        domain = (admission.label_key, admission.domain.value, str(admission.domain))
        for pod in admission.pods:
            if ungate_patch(by_name[pod.name], GATE, domain, admission.locality) is not None:
                patched += 1
    return patched


def timed(states: list[NodeState], size: int, repeats: int) -> tuple[float, list[float]]:
    pods, raw = job(size)
    assert admission_round(states, pods, raw) == size, "the job must be admitted whole"
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        admission_round(states, pods, raw)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs), runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, nargs="+", default=[32, 512, 4096])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true",
                        help="write the figures into bench/results.json")
    args = parser.parse_args()
    load_before = load_average()
    states = cluster(args.nodes)
    baseline, baseline_runs = timed(states, 1, args.repeats)
    print(f"{args.nodes} nodes, baseline (1-pod job): {baseline * 1000:.1f} ms "
          f"({', '.join(f'{r * 1000:.1f}' for r in baseline_runs)})")
    rows = []
    for size in args.pods:
        median, runs = timed(states, size, args.repeats)
        rows.append({"pods": size, "median_ms": round(median * 1000, 1),
                     "runs_ms": [round(r * 1000, 1) for r in runs]})
        print(f"{size:>5} pods: {median * 1000:.1f} ms median "
              f"({', '.join(f'{r * 1000:.1f}' for r in runs)})")
    if args.record:
        record("admission", {"nodes": args.nodes, "repeats": args.repeats,
                             "baseline_ms": round(baseline * 1000, 1),
                             "baseline_runs_ms": [round(r * 1000, 1) for r in baseline_runs],
                             "rounds": rows}, load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
