"""The simulated cluster: nodes in node groups (instance type x placement group), their free
capacity, placeholders, and the indexes the scheduler and autoscaler read.

Decides nothing about policy; it keeps the bookkeeping consistent so that every lookup
the event loop makes is O(1) or column arithmetic: `is_open[node]` marks the ready nodes
with room for their type's smallest pod (placeholder nodes included: a real pod
preempts them) and `open_count[type]` counts them; `free` and `holds_placeholder` mirror
each node's free room and placeholder as columns (set only by this class's methods,
beside the SimNode's own fields); `empty[(type, group)]` the ready nodes holding neither
real pods nor a placeholder, `launching[(type, group)]` the nodes
cluster-autoscaler asked for that are still starting.

Bounds: a node's capacity is one vector (GPU thousandths, CPU millicores, bytes); a
placeholder fills a whole node, so it only goes to an empty node and a real pod landing
on its node evicts it. Nodes never fail; the engine draws each start-up time.
This module works on its own state only: the engine builds one Cluster per run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bucketing.catalog import InstanceType
from bucketing.resources import Resources
from locality.model import Node, NodeState

LAUNCHING, READY, REMOVED = 0, 1, 2


class SimNode:
    """One node. free_* count only real pods (a placeholder's room counts as free)."""

    __slots__ = (
        "index", "name", "type_index", "group", "alloc_gpu", "alloc_cpu", "alloc_mem",
        "free_gpu", "free_cpu", "free_mem", "placeholder", "real_pods", "status",
        "launched_at", "ready_at", "removed_at", "empty_since", "under_since", "initial",
        "pods", "served",
        "_node", "_state",
    )

    def __init__(
        self, index: int, type_index: int, group: str, kind: InstanceType, now: float,
        initial: bool,
    ) -> None:
        self.index = index
        self.name = f"n{index}"
        self.type_index = type_index
        self.group = group
        alloc = kind.allocatable
        self.alloc_gpu, self.alloc_cpu, self.alloc_mem = (
            alloc.gpu_milli, alloc.cpu_milli, alloc.memory_bytes
        )
        self.free_gpu, self.free_cpu, self.free_mem = self.alloc_gpu, self.alloc_cpu, self.alloc_mem
        self.placeholder = False
        self.real_pods = 0
        self.status = READY if initial else LAUNCHING
        self.launched_at = now
        self.ready_at = now if initial else float("nan")
        self.removed_at = float("nan")
        self.empty_since = float("nan")
        self.under_since = float("nan")  # underused with real pods (sim.scale_down)
        self.initial = initial
        self.pods: set[int] = set()
        self.served = False  # ever held a real pod
        self._node = Node(
            self.name, {}, alloc, placement_group=group or None, instance_type=kind.name
        )
        self._state: NodeState | None = None

    def fits(self, gpu: int, cpu: int, mem: int) -> bool:
        return self.free_gpu >= gpu and self.free_cpu >= cpu and self.free_mem >= mem

    def state(self) -> NodeState:
        """The locality core's view of this node (cached until the node changes)."""
        if self._state is None:
            requested = Resources(
                self.alloc_gpu - self.free_gpu,
                self.alloc_cpu - self.free_cpu,
                self.alloc_mem - self.free_mem,
            )
            held = self._node.allocatable - requested if self.placeholder else Resources()
            self._state = NodeState(self._node, requested, held)
        return self._state


@dataclass(frozen=True)
class NodeGroup:
    """A node group: one instance type in one placement group ("" = none)."""

    type_index: int
    group: str


class Cluster:
    """All nodes of one simulation run and the indexes over them."""

    def __init__(
        self, types: tuple[InstanceType, ...], groups: dict[int, tuple[str, ...]],
        smallest_request: list[tuple[int, int, int]],
    ) -> None:
        self.types = types
        self.groups = groups
        self.smallest = smallest_request
        self.nodes: list[SimNode] = []
        self.open_count = [0] * len(types)
        self.empty: dict[tuple[int, str], set[int]] = {}
        self.launching: dict[tuple[int, str], set[int]] = {}
        self.with_placeholder: dict[tuple[int, str], set[int]] = {}
        self.live_count = [0] * len(types)
        self.ready_count = [0] * len(types)
        # Per type, bumped whenever a node of it may have gained room for a pod (a node
        # ready, a pod gone, a placeholder set or removed): a pod that fitted nowhere
        # still fits nowhere while it stands (the engine skips the search then).
        self.room_version = [0] * len(types)
        # Every node's free room and placeholder flag by node index, kept beside the
        # SimNodes' own fields so the scheduler's search is column arithmetic.
        self.free = np.zeros((3, 64), dtype=np.int64)
        self.holds_placeholder = np.zeros(64, dtype=bool)
        self.is_open = np.zeros(64, dtype=bool)
        self.type_of = np.full(64, -1, dtype=np.int64)
        for t, names in groups.items():
            for g in names:
                self.empty[(t, g)] = set()
                self.launching[(t, g)] = set()
                self.with_placeholder[(t, g)] = set()

    def add_node(self, type_index: int, group: str, now: float, initial: bool) -> SimNode:
        node = SimNode(len(self.nodes), type_index, group, self.types[type_index], now, initial)
        self.nodes.append(node)
        if node.index >= self.free.shape[1]:
            self.free = np.concatenate([self.free, np.zeros_like(self.free)], axis=1)
            self.holds_placeholder = np.r_[self.holds_placeholder,
                                           np.zeros_like(self.holds_placeholder)]
            self.is_open = np.r_[self.is_open, np.zeros_like(self.is_open)]
            self.type_of = np.r_[self.type_of, np.full_like(self.type_of, -1)]
        self.type_of[node.index] = type_index
        self.free[:, node.index] = (node.free_gpu, node.free_cpu, node.free_mem)
        self.live_count[type_index] += 1
        if initial:
            self.ready_count[type_index] += 1
            self.room_version[type_index] += 1
            self.refresh(node, now)
        else:
            self.launching[(type_index, group)].add(node.index)
        return node

    def node_ready(self, node: SimNode, now: float) -> None:
        node.status = READY
        node.ready_at = now
        self.ready_count[node.type_index] += 1
        self.launching[(node.type_index, node.group)].discard(node.index)
        self.room_version[node.type_index] += 1
        self.refresh(node, now)

    def remove_node(self, node: SimNode, now: float) -> None:
        key = (node.type_index, node.group)
        if node.status == READY:
            self.ready_count[node.type_index] -= 1
        node.status = REMOVED
        node.removed_at = now
        self.live_count[node.type_index] -= 1
        self._set_open(node, False)
        self.empty[key].discard(node.index)
        self.launching[key].discard(node.index)
        self.with_placeholder[key].discard(node.index)

    def bind_real(self, node: SimNode, pod: int, gpu: int, cpu: int, mem: int, now: float) -> None:
        node.free_gpu -= gpu
        node.free_cpu -= cpu
        node.free_mem -= mem
        self.free[:, node.index] = (node.free_gpu, node.free_cpu, node.free_mem)
        node.real_pods += 1
        node.served = True
        node.pods.add(pod)
        self.refresh(node, now)

    def unbind_real(
        self, node: SimNode, pod: int, gpu: int, cpu: int, mem: int, now: float
    ) -> None:
        node.free_gpu += gpu
        node.free_cpu += cpu
        node.free_mem += mem
        self.free[:, node.index] = (node.free_gpu, node.free_cpu, node.free_mem)
        node.real_pods -= 1
        node.pods.discard(pod)
        self.room_version[node.type_index] += 1
        self.refresh(node, now)

    def set_placeholder(self, node: SimNode, present: bool, now: float) -> None:
        node.placeholder = present
        self.holds_placeholder[node.index] = present
        self.room_version[node.type_index] += 1
        self.refresh(node, now)

    def _set_open(self, node: SimNode, is_open: bool) -> None:
        if self.is_open[node.index] != is_open:
            self.is_open[node.index] = is_open
            self.open_count[node.type_index] += 1 if is_open else -1

    def refresh(self, node: SimNode, now: float) -> None:
        """Re-file the node in the indexes after any change (O(1))."""
        node._state = None
        if node.status != READY:
            return
        key = (node.type_index, node.group)
        gpu, cpu, mem = self.smallest[node.type_index]
        self._set_open(node, node.fits(gpu, cpu, mem))
        if node.placeholder:
            self.with_placeholder[key].add(node.index)
        else:
            self.with_placeholder[key].discard(node.index)
        is_empty = node.real_pods == 0 and not node.placeholder
        if is_empty:
            self.empty[key].add(node.index)
            if node.empty_since != node.empty_since:  # NaN: it just became empty
                node.empty_since = now
        else:
            self.empty[key].discard(node.index)
            node.empty_since = float("nan")
