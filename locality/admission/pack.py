"""Does a job fit a domain: a first-fit bin-pack of its pods onto the domain's nodes.

Decides: where each pod would go, request shape by shape (largest GPU request first):
the domain's existing nodes in their order, then the nodes opened for earlier pods, then
a new node of the first node group that still has headroom and whose node holds the
shape. The first-fit rule is `locality.firstfit.fill`, the one the extender's group
sizing (`NodeTable.fit_job_into_groups`) uses too.

Each shape goes only to the nodes its pods may use (`locality.constraints`: node
selector, required node affinity, tolerations against taints), existing or new: a node
group's node is judged by its template (`snapshot.new_node_template`).

Bounds, as cluster-autoscaler's binpacking estimator states its own: the greedy is
conservative (a search might find a packing it misses, never the reverse); pods
per node (`pods` allocatable) and host ports other jobs hold are not modelled:
kube-scheduler checks them when it places the pods. A job's own rules that cap its pods
per node (anti-affinity to itself, host ports, hostname spread: `locality.pod_rules`)
come in as `pods_per_node`; the admitter refuses any other inter-pod rule at once.

`Bins` is a working copy of one domain's room; `pack` changes the copy it is given
(callers copy first when they only want to know). Must not: read the clock, log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from bucketing.resources import ZERO, Resources
from locality.admission.model import Demand
from locality.admission.snapshot import DomainRoom
from locality.constraints import PodConstraints
from locality.firstfit import Room, fill
from locality.model import Node


@dataclass
class Bins:
    """Free room of a domain's nodes (`Room`: its existing nodes, then the nodes `pack`
    opened), the existing nodes row for row (`nodes`; empty: rooms built by hand, where
    every node takes every pod), the templates of the opened ones, and the nodes its node
    groups can still add ([group, allocatable, count left, template])."""

    room: Room
    pool: list[list] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    opened: int = 0
    nodes: tuple[Node, ...] = ()
    """Shared by every copy: existing nodes never change within a round."""
    opened_nodes: list[Node | None] = field(default_factory=list)
    masks: dict[PodConstraints, np.ndarray | None] = field(default_factory=dict)
    """Per constraints, which existing nodes a pod may use (None: all); shared by copies."""
    withheld: np.ndarray | None = None
    """Rows no pod may use (room left to others: `growth.growth_room`); rows opened
    after it was set are not withheld. None: none."""

    def copy(self) -> Bins:
        # Room is a value: sharing it is safe, pack replaces it.
        return Bins(self.room, [list(entry) for entry in self.pool], self.kinds, self.opened,
                    self.nodes, list(self.opened_nodes), self.masks, self.withheld)

    def freed(self, by_node: Mapping[str, Resources]) -> Bins:
        """A copy with each named existing node's room grown by what it frees (pods
        leaving it); names not among `nodes` free nothing here."""
        rows = {node.name: index for index, node in enumerate(self.nodes)}
        given = [ZERO] * len(self.room)
        for name, resources in by_node.items():
            if name in rows:
                given[rows[name]] = given[rows[name]] + resources
        copy = self.copy()
        copy.room = self.room.plus(Room.of(given, self.kinds, 0))
        return copy

    def free_gpu_milli(self) -> int:
        return int(np.maximum(self.room.gpu, 0).sum())

    def allowed(self, constraints: PodConstraints) -> np.ndarray | None:
        """Which rows a pod with `constraints` may use; None: every row."""
        if constraints not in self.masks:
            mask = np.array([may_use(constraints, node) for node in self.nodes], dtype=bool)
            self.masks[constraints] = None if mask.all() else mask
        existing = self.masks[constraints]
        opened = [may_use(constraints, node) for node in self.opened_nodes]
        withheld = self.withheld
        if existing is None and all(opened) and (withheld is None or not withheld.any()):
            return None
        rows = len(self.room) - len(opened)
        mask = np.r_[existing if existing is not None else np.ones(rows, dtype=bool),
                     np.array(opened, dtype=bool)]
        if withheld is not None:
            mask[:len(withheld)] &= ~withheld
        return mask


def may_use(constraints: PodConstraints, node: Node | None) -> bool:
    """Whether a pod with `constraints` may use `node` (None: a node known by nothing
    but its room, which every pod may use)."""
    return node is None or constraints.refusal(node.name, node.labels, node.taints) is None


def open_bins(room: DomainRoom, kinds: Sequence[str], empty: bool = False) -> Bins:
    """A working copy of `room`. kinds: the device kinds any demand packed into it asks
    for (`Resources.devices`). empty: the nodes' capacity instead of their free room
    (what the domain could ever hold)."""
    free = room.capacity if empty else room.free
    return Bins(Room.of(free, kinds, 0),
                [[new.group, new.allocatable,
                  new.at_most if empty and new.at_most is not None else new.count,
                  new.template]
                 for new in room.new_nodes],
                list(kinds), nodes=room.nodes)


def pack(bins: Bins, demand: Demand, pods_per_node: int | None = None) -> int:
    """Place `demand` ((request, constraints, count), largest first) into `bins`; the pods
    placed. pods_per_node: at most this many of these pods on one node (1 for `spread`)."""
    per_node = pods_per_node or sum(count for _, _, count in demand)
    room = bins.room.with_pods(per_node)
    placed = 0
    for request, constraints, count in demand:
        allowed = bins.allowed(constraints)
        take, room = _fill_allowed(room, request, count, allowed)
        left = count - int(take.sum())
        while left > 0:
            found = next(((e, int(copies)) for e in bins.pool if e[2] > 0
                          and (copies := Room.of([e[1]], bins.kinds, per_node).copies(
                              request)[0]) and may_use(constraints, e[3])), None)
            if found is None:
                break
            entry, per_new = found
            # Opening nodes one at a time, first-fit takes this group's first entry again
            # until it runs out or the pods are placed, each new node taking `per_new`:
            # so open those nodes at once (the same result, one fill instead of one each).
            opening = min(entry[2], -(-left // per_new))
            entry[2] -= opening
            bins.opened += opening
            room = room.extended(Room.of([entry[1]] * opening, bins.kinds, per_node))
            bins.room = room  # `allowed` counts the rows
            bins.opened_nodes.extend([entry[3]] * opening)
            allowed = bins.allowed(constraints)
            # The earlier nodes took all of this shape they could: only the new ones take.
            take, room = _fill_allowed(room, request, left, allowed)
            left -= int(take.sum())
        placed += count - left
    bins.room = room
    return placed


def _fill_allowed(room: Room, request: Resources, count: int,
                  allowed: np.ndarray | None) -> tuple[np.ndarray, Room]:
    """`fill` on the rows `allowed` only (None: all); the other rows keep their room."""
    if allowed is None:
        return fill(room, request, count)
    take, after = fill(replace(room, pods=np.where(allowed, room.pods, 0)), request, count)
    return take, replace(after, pods=np.where(allowed, after.pods, room.pods))
