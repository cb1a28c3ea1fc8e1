"""cluster-autoscaler's scale-down of a node that is not empty: how used it is, and where
its pods would go.

Decides, on the simulated cluster (pod_engine.py acts on it):
- `utilization`: CA's share of a node its pods request (simulator/utilization in CA):
  for a node with GPUs the GPU share alone ("GPU nodes are judged by their GPUs"), for
  any other the larger of the CPU and memory shares; a placeholder fills its node, so a
  node holding one is at 1;
- `underused`: that share below `--scale-down-gpu-utilization-threshold` (GPU nodes) or
  `--scale-down-utilization-threshold` (others), SimConfig's two thresholds;
- `drain_targets`: for each real pod of the node, another ready node of its type that
  takes it, first fit in node order with the room given to the earlier pods counted
  (CA simulates rescheduling every pod before it removes a node; one that fits nowhere
  keeps the node). Nodes holding a placeholder take none (CA would have to move it too).

Bounds: only with `SimConfig.drainable_pods` (the trace's pods as plain Jobs' pods; by
default they are the training operator's, which CA never evicts) does the engine drain
a node with real pods. A node is re-judged when one of its pods ends: one its pods could
not leave stays until a later end or its next check (`unneeded_s` later), not at every
CA loop. A moved pod keeps its end time: no restart cost (a training job would lose
the work since its last checkpoint).

Must not: change the cluster (it reads nodes and returns choices).
"""

from __future__ import annotations

from overprovisioner.sim.cluster import READY, Cluster, SimNode
from overprovisioner.sim.config import SimConfig


def utilization(node: SimNode) -> float:
    """The share of `node` its pods request, as CA counts it."""
    if node.placeholder:
        return 1.0
    if node.alloc_gpu > 0:
        return (node.alloc_gpu - node.free_gpu) / node.alloc_gpu
    cpu = (node.alloc_cpu - node.free_cpu) / node.alloc_cpu if node.alloc_cpu else 0.0
    mem = (node.alloc_mem - node.free_mem) / node.alloc_mem if node.alloc_mem else 0.0
    return max(cpu, mem)


def underused(node: SimNode, config: SimConfig) -> bool:
    """Below the threshold CA applies to this node."""
    threshold = (config.gpu_utilization_threshold if node.alloc_gpu > 0
                 else config.utilization_threshold)
    return utilization(node) < threshold


def drain_targets(cluster: Cluster, node: SimNode,
                  requests: list[tuple[int, int, int]]) -> list[tuple[int, SimNode]] | None:
    """(pod, node it moves to) for every real pod of `node`, or None when one fits on no
    other ready node of its type."""
    room: dict[int, list[int]] = {}
    moves: list[tuple[int, SimNode]] = []
    others = [n for n in cluster.nodes if n.type_index == node.type_index
              and n.index != node.index and n.status == READY and not n.placeholder]
    for pod in sorted(node.pods):
        need = requests[pod]
        for other in others:
            free = room.setdefault(other.index,
                                   [other.free_gpu, other.free_cpu, other.free_mem])
            if all(f >= r for f, r in zip(free, need, strict=True)):
                room[other.index] = [f - r for f, r in zip(free, need, strict=True)]
                moves.append((pod, other))
                break
        else:
            return None
    return moves
