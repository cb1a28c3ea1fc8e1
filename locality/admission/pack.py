"""Does a job fit a domain: a first-fit bin-pack of its pods onto the domain's nodes.

Decides: where each pod would go, request shape by shape (largest GPU request first):
the domain's existing nodes in their order, then the nodes opened for earlier pods, then
a new node of the first node group that still has headroom and whose node holds the
shape. The first-fit rule is `locality.firstfit.fill`, the one the extender's group
sizing (`NodeTable.fit_job_into_groups`) uses too.

Bounds, as cluster-autoscaler's binpacking estimator states its own: the greedy is
conservative (a search might find a packing it misses, never the reverse); pods
per node (`pods` allocatable), host ports, taints and affinities other than the domain
are not modelled: kube-scheduler checks them when it places the pods.

`Bins` is a working copy of one domain's room; `pack` changes the copy it is given
(callers copy first when they only want to know). Must not: read the clock, log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from bucketing.resources import Resources
from locality.admission.snapshot import DomainRoom
from locality.firstfit import Room, fill


@dataclass
class Bins:
    """Free room of a domain's nodes (`Room`, opened nodes last) and the nodes its node
    groups can still add ([group, allocatable, count left])."""

    room: Room
    pool: list[list] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    opened: int = 0

    def copy(self) -> Bins:
        # Room is a value: sharing it is safe, pack replaces it.
        return Bins(self.room, [list(entry) for entry in self.pool], self.kinds, self.opened)

    def free_gpu_milli(self) -> int:
        return int(np.maximum(self.room.gpu, 0).sum())


def open_bins(room: DomainRoom, kinds: Sequence[str]) -> Bins:
    """A working copy of `room`. kinds: the device kinds any demand packed into it asks
    for (`Resources.devices`)."""
    return Bins(Room.of(room.free, kinds, 0),
                [[new.group, new.allocatable, new.count] for new in room.new_nodes],
                list(kinds))


def pack(bins: Bins, demand: Sequence[tuple[Resources, int]],
         pods_per_node: int | None = None) -> int:
    """Place `demand` ((request, count), largest first) into `bins`; the pods placed.
    pods_per_node: at most this many of these pods on one node (1 for `spread`)."""
    per_node = pods_per_node or sum(count for _, count in demand)
    room = bins.room.with_pods(per_node)
    placed = 0
    for request, count in demand:
        take, room = fill(room, request, count)
        left = count - int(take.sum())
        while left > 0:
            entry = next((e for e in bins.pool if e[2] > 0
                          and Room.of([e[1]], bins.kinds, 1).copies(request)[0]), None)
            if entry is None:
                break
            entry[2] -= 1
            bins.opened += 1
            room = room.extended(Room.of([entry[1]], bins.kinds, per_node))
            # The earlier nodes took all of this shape they could: only the new one takes.
            take, room = fill(room, request, left)
            left -= int(take.sum())
        placed += count - left
    bins.room = room
    return placed
