"""cluster-autoscaler's scale-up estimate for one instance type, on copies of the cluster state.

Decides how many nodes of each node group (placement group) of a type to add so that
the pending pods fit: CA first simulates the pending pods onto the nodes it already
asked for (upcoming nodes), then bin-packs the rest onto new nodes (first-fit
decreasing, `bucketing.pack.pack_shapes`), and its least-waste expander picks the node
group. Pods below the expendable cutoff are the caller's to leave out; placeholders
(priority -5 >= -10) count, each needing one whole node of its own group.

Bounds (what a simulation of CA can and cannot say):
- pods are pinned to one instance type (see `workload`), so the expander chooses among
  that type's placement groups; their waste is equal, and CA breaks such ties at random
  (seeded `rng` here);
- every node group's options are computed in the same scan (CA 1.3x can scale several
  groups in one loop with parallel scale-up); max nodes per group bound the result;
- no scale-up backoff, no quota errors, no failed launches.

Must not: mutate the cluster (it reads `Cluster` and returns counts).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from bucketing.pack import dominant_share_order, pack_shapes
from overprovisioner.sim.cluster import REMOVED, Cluster


def scale_up(
    cluster: Cluster,
    type_index: int,
    pending_requests: list[tuple[int, int, int]],
    pending_placeholders: dict[str, int],
    rng: np.random.Generator,
    max_nodes_per_group: int | None = None,
) -> dict[str, int]:
    """New nodes to launch per placement group of `type_index` (absent = none)."""
    groups = cluster.groups[type_index]
    kind = cluster.types[type_index]
    capacity = np.array(
        [kind.allocatable.gpu_milli, kind.allocatable.cpu_milli, kind.allocatable.memory_bytes],
        dtype=np.float64,
    )
    upcoming_groups: list[str] = []
    for group in groups:
        upcoming_groups.extend([group] * len(cluster.launching[(type_index, group)]))
    free = np.tile(capacity, (len(upcoming_groups), 1))
    touched = np.zeros(len(upcoming_groups), dtype=bool)

    leftover: Counter[tuple[int, int, int]] = Counter(pending_requests)
    if leftover and len(free):
        shapes = np.array(list(leftover), dtype=np.float64)
        for s in dominant_share_order(shapes, capacity):
            shape = shapes[s]
            key = tuple(int(v) for v in shape)
            used = shape > 0
            if not used.any():
                leftover.pop(key)
                continue
            room = np.floor((free[:, used] / shape[used]).min(axis=1)).clip(min=0)
            taken_before = np.cumsum(room) - room
            take = np.minimum(room, np.clip(leftover[key] - taken_before, 0, None))
            free -= take[:, None] * shape
            touched |= take > 0
            leftover[key] -= int(take.sum())
            if leftover[key] <= 0:
                leftover.pop(key)

    live = _live_per_group(cluster, type_index) if max_nodes_per_group is not None else {}

    launch: dict[str, int] = {}
    untouched = Counter(g for g, t in zip(upcoming_groups, touched, strict=True) if not t)
    for group, wanted in pending_placeholders.items():
        missing = wanted - untouched.get(group, 0)
        if missing > 0:
            launch[group] = launch.get(group, 0) + missing

    if leftover:
        shapes = np.array(list(leftover), dtype=np.float64)
        counts = np.array(list(leftover.values()), dtype=np.int64)
        nodes = pack_shapes(shapes, counts, capacity)
        if nodes:
            # Least waste: every group of the type wastes the same, so CA picks at random.
            open_groups = [
                g for g in groups
                if max_nodes_per_group is None
                or live[g] + launch.get(g, 0) + nodes <= max_nodes_per_group
            ] or list(groups)
            group = open_groups[int(rng.integers(len(open_groups)))]
            launch[group] = launch.get(group, 0) + nodes

    if max_nodes_per_group is not None:
        for group in list(launch):
            launch[group] = max(0, min(launch[group], max_nodes_per_group - live[group]))
    return {g: n for g, n in launch.items() if n > 0}


def _live_per_group(cluster: Cluster, type_index: int) -> dict[str, int]:
    counts = {g: 0 for g in cluster.groups[type_index]}
    for node in cluster.nodes:
        if node.type_index == type_index and node.status != REMOVED:
            counts[node.group] += 1
    return counts


def all_pods_new(now: float, oldest: float, oldest_gpu: float, new_pod_delay_s: float,
                 new_gpu_pod_delay_s: float) -> bool:
    """cluster-autoscaler's `allPodsAreNew` (core/static_autoscaler.go): it skips a
    loop's scale-up while the oldest unschedulable pod is younger than
    `new_pod_delay_s` (2 s), or the oldest one asking for GPUs younger than
    `new_gpu_pod_delay_s` (30 s: "nodes with GPU are very expensive", it waits for more
    pods to make one informed decision). `oldest` / `oldest_gpu`: creation times of
    the oldest such pod (inf = none); pending placeholders count too (CA sees pods)."""
    if oldest == math.inf:
        return False
    return (now < oldest + new_pod_delay_s - 1e-6
            or (oldest_gpu < math.inf and now < oldest_gpu + new_gpu_pod_delay_s - 1e-6))
