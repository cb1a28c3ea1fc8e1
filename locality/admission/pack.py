"""Does a job fit a domain: a first-fit bin-pack of its pods onto the domain's nodes.

Decides: where each pod would go, request shape by shape (largest GPU request first,
as `locality.context.fit_job_into_groups`): the domain's existing nodes in their order,
then the nodes opened for earlier pods, then a new node of the first node group that
still has headroom and whose node holds the shape. The fit rule per node is
`locality.context.copies_that_fit`, the same as every other first-fit here.

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

from bucketing.resources import Resources
from locality.admission.snapshot import DomainRoom
from locality.context import copies_that_fit


@dataclass
class Bins:
    """Free room of a domain's nodes (rows: gpu, cpu, memory, unused, *devices per kind)
    and the nodes its node groups can still add ([group, allocatable, count left])."""

    rows: list[list[int]]
    pool: list[list] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    opened: int = 0

    def copy(self) -> Bins:
        return Bins([list(row) for row in self.rows], [list(entry) for entry in self.pool],
                    self.kinds, self.opened)

    def free_gpu_milli(self) -> int:
        return sum(max(row[0], 0) for row in self.rows)


def _row(free: Resources, kinds: Sequence[str]) -> list[int]:
    return [free.gpu_milli, free.cpu_milli, free.memory_bytes, 0,
            *(free.device(kind) for kind in kinds)]


def open_bins(room: DomainRoom, kinds: Sequence[str]) -> Bins:
    """A working copy of `room`. kinds: the device kinds any demand packed into it asks
    for (`Resources.devices`)."""
    return Bins([_row(free, kinds) for free in room.free],
                [[new.group, new.allocatable, new.count] for new in room.new_nodes],
                list(kinds))


def pack(bins: Bins, demand: Sequence[tuple[Resources, int]],
         pods_per_node: int | None = None) -> int:
    """Place `demand` ((request, count), largest first) into `bins`; the pods placed.
    pods_per_node: at most this many of these pods on one node (1 for `spread`)."""
    kinds = bins.kinds
    used: dict[int, int] = {}
    placed = 0
    for request, count in demand:
        left = count
        for index, row in enumerate(bins.rows):
            if left == 0:
                break
            left -= _fill(request, row, left, pods_per_node, used, index, kinds)
        while left > 0:
            entry = next((e for e in bins.pool if e[2] > 0
                          and copies_that_fit(request, _row(e[1], kinds), 1, kinds)), None)
            if entry is None:
                break
            entry[2] -= 1
            bins.opened += 1
            bins.rows.append(_row(entry[1], kinds))
            left -= _fill(request, bins.rows[-1], left, pods_per_node, used,
                          len(bins.rows) - 1, kinds)
        placed += count - left
    return placed


def _fill(request: Resources, row: list[int], left: int, pods_per_node: int | None,
          used: dict[int, int], index: int, kinds: Sequence[str]) -> int:
    at_most = left if pods_per_node is None else min(left, pods_per_node - used.get(index, 0))
    if at_most <= 0:
        return 0
    copies = copies_that_fit(request, row, at_most, list(kinds))
    if copies:
        row[0] -= copies * request.gpu_milli
        row[1] -= copies * request.cpu_milli
        row[2] -= copies * request.memory_bytes
        for kind, amount in request.devices:
            row[4 + kinds.index(kind)] -= copies * amount
        used[index] = used.get(index, 0) + copies
    return copies
