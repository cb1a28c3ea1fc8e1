"""The one first-fit rule: how many copies of a request each node takes, filling nodes in
their order.

Used by every question of the form "how much of this job fits there": the extender's
group and domain sizing (`NodeTable.fit_job_into_groups`, which decides whether a group
can hold a job's remaining pods) and the admitter's packer (`locality.admission.pack`,
which may also open nodes its node groups can add). Both ask `fill` the same way, so a
group judged able to hold a job and a domain the admitter chose agree.

The rule per node: copies = min(room for more of the job's pods, free GPU // GPU
request, free CPU // CPU request, free memory // memory request, free devices of each
kind // that kind's request); a dimension the request does not ask for is not checked,
negative free room (an overcommitted node) holds nothing. Nodes fill in their order
until `count` copies are placed, per group when rows carry groups.

Greedy packing can miss a packing a search would find (it is conservative), never the
reverse, as cluster-autoscaler's binpacking estimator states of its own.

Must not: change its inputs (a `Room` is a value; `fill` returns a new one), read the
clock, log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bucketing.resources import Resources


@dataclass(frozen=True, slots=True)
class Room:
    """Free room per node (rows), in columns: GPU, CPU (milli), memory (bytes), free
    devices per kind (`Resources.devices`: MIG slices, a vendor's GPUs) and how many more
    pods of the job each node may take."""

    gpu: np.ndarray
    cpu: np.ndarray
    memory: np.ndarray
    devices: Mapping[str, np.ndarray]
    pods: np.ndarray

    @classmethod
    def of(cls, free: Sequence[Resources], kinds: Sequence[str], pods: int) -> Room:
        """Rows from each node's free `Resources`; every node may take `pods` pods."""
        return cls(
            np.array([r.gpu_milli for r in free], dtype=np.int64),
            np.array([r.cpu_milli for r in free], dtype=np.int64),
            np.array([r.memory_bytes for r in free], dtype=np.int64),
            {kind: np.array([r.device(kind) for r in free], dtype=np.int64) for kind in kinds},
            np.full(len(free), pods, dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.gpu)

    def with_pods(self, pods: int) -> Room:
        """The same free room, every node taking up to `pods` more of a job's pods."""
        return Room(self.gpu, self.cpu, self.memory, self.devices,
                    np.full(len(self.gpu), pods, dtype=np.int64))

    def extended(self, other: Room) -> Room:
        """These rows, then `other`'s (same device kinds)."""
        return Room(np.r_[self.gpu, other.gpu], np.r_[self.cpu, other.cpu],
                    np.r_[self.memory, other.memory],
                    {kind: np.r_[free, other.devices[kind]] for kind, free in self.devices.items()},
                    np.r_[self.pods, other.pods])

    def copies(self, request: Resources) -> np.ndarray:
        """Per node, how many copies of `request` fit (at most its `pods`)."""
        copies = self.pods
        if request.gpu_milli > 0:
            copies = np.minimum(copies, np.maximum(self.gpu, 0) // request.gpu_milli)
        if request.cpu_milli > 0:
            copies = np.minimum(copies, np.maximum(self.cpu, 0) // request.cpu_milli)
        if request.memory_bytes > 0:
            copies = np.minimum(copies, np.maximum(self.memory, 0) // request.memory_bytes)
        for kind, amount in request.devices:
            if amount > 0:
                copies = np.minimum(copies, np.maximum(self.devices[kind], 0) // amount)
        return copies

    def plus(self, freed: Room) -> Room:
        """The room after `freed`'s rows (as many, same kinds) were given back; the pods
        a node may take do not change."""
        return Room(self.gpu + freed.gpu, self.cpu + freed.cpu, self.memory + freed.memory,
                    {kind: free + freed.devices[kind] for kind, free in self.devices.items()},
                    self.pods)

    def less(self, request: Resources, take: np.ndarray) -> Room:
        """The room after each node took `take` copies of `request`."""
        devices = dict(self.devices)
        for kind, amount in request.devices:
            devices[kind] = devices[kind] - take * amount
        return Room(self.gpu - take * request.gpu_milli, self.cpu - take * request.cpu_milli,
                    self.memory - take * request.memory_bytes, devices, self.pods - take)


def group_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by group code: (each row's group number 0, 1, ... in row order,
    the first row of each group), as `fill` takes them."""
    changes = np.r_[False, codes[1:] != codes[:-1]]
    return np.cumsum(changes), np.flatnonzero(np.r_[True, changes[1:]])


def fill(room: Room, request: Resources, count: int,
         groups: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, Room]:
    """Place up to `count` copies of `request` first-fit: (copies each node takes, the
    room after). groups: `group_rows` of the rows (a group's rows adjacent); each group
    then gets up to `count` on its own. None: the rows are one group."""
    copies = room.copies(request)
    before = np.cumsum(copies) - copies  # copies the earlier rows could take
    if groups is not None:
        row_group, starts = groups
        before = before - before[starts][row_group]
    take = np.clip(count - before, 0, copies)
    return take, room.less(request, take)
