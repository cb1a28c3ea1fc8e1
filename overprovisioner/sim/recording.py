"""What the service's recorder would write at each tick of a simulated cluster, in its columns.

Decides the simulated history's columns and values as `predictor.history.snapshot` records a live
cluster's, so the predictive policy reads what the service would read from its store:
- columns: `type` for each instance type (pending pods, and pods bound on a node
  without a placement group) and `type@group` for every type and every placement group
  (pods bound in the group): the recorder writes every type's column of a group at a
  tick some pod runs there, 0 for the types with none;
- values: each column's pods' requests summed and embedded as the recorder does (the
  largest ratio to the type's node, rounded up), each pod in the type it is pinned to;
- `busy`: per tick, which groups had a pod running (the store holds a group's columns
  only from the ticks the recorder wrote them: `present` reads them for a window);
- the announced part of each column (pods of known demand that arrived), kept apart
  the same way, as the store keeps announced demand per column.

Must not: decide anything about placeholders (the policy reads the rows).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bucketing.catalog import InstanceType
from predictor.history.series import series_column

Request = tuple[int, int, int]


class Recording:
    """The rows recorded so far; the engine calls `move` as pods change column."""

    def __init__(self, types: Sequence[InstanceType], groups: dict[int, tuple[str, ...]],
                 vectors: np.ndarray, ticks: int, announced: bool) -> None:
        self.group_names = sorted({g for names in groups.values() for g in names if g})
        self.keys = [(b, g) for b in range(len(types)) for g in ("", *self.group_names)]
        self.index = {key: k for k, key in enumerate(self.keys)}
        self.columns = [series_column(types[b].name, g) for b, g in self.keys]
        self.group_of = [self.group_names.index(g) if g else -1 for _, g in self.keys]
        # The store returns its columns sorted by name.
        self.by_name = sorted(range(len(self.keys)), key=self.columns.__getitem__)
        self.vectors = [[float(v) for v in vectors[b]] for b, _ in self.keys]
        self.sums = [[0, 0, 0] for _ in self.keys]
        self.announced_sums = [[0, 0, 0] for _ in self.keys] if announced else None
        self.group_pods = [0] * len(self.group_names)
        self.history = np.zeros((ticks, len(self.keys)))
        self.announced = np.zeros((ticks, len(self.keys))) if announced else None
        self.busy = np.zeros((ticks, len(self.group_names)), dtype=bool)
        self.last_busy = [-1] * len(self.group_names)  # the last tick each group was busy
        self._present_key: tuple | None = None
        self._present = np.zeros(0, dtype=np.int64)

    def move(self, b: int, group: str | None, request: Request, sign: int,
             announced: bool) -> None:
        """A pod of type b enters (sign 1) or leaves (-1) the column of `group` (None:
        pending, which counts in the type's own column, as a pod on an ungrouped node)."""
        key = self.index[(b, group or "")]
        add_request(self.sums[key], request, sign)
        if announced and self.announced_sums is not None:
            add_request(self.announced_sums[key], request, sign)
        if group:
            self.group_pods[self.group_names.index(group)] += sign

    def record(self, tick: int) -> None:
        """Write tick `tick`'s row (again, at a re-plan: the recorder rewrites its tick)."""
        if tick >= len(self.history):
            return
        self.history[tick] = embedded(self.sums, self.vectors)
        if self.announced is not None and self.announced_sums is not None:
            self.announced[tick] = embedded(self.announced_sums, self.vectors)
        busy = [count > 0 for count in self.group_pods]
        self.busy[tick] = busy
        for g, now_busy in enumerate(busy):
            if now_busy:
                self.last_busy[g] = tick
            elif self.last_busy[g] == tick:  # the tick rewritten without the group
                earlier = np.flatnonzero(self.busy[:tick, g])
                self.last_busy[g] = int(earlier[-1]) if len(earlier) else -1

    def present(self, first: int, last: int) -> np.ndarray:
        """Indices of the columns the store returns for ticks first..last (the newest tick
        recorded), in its order (by name): every type's own column, and a group's columns
        when some tick of the window wrote them."""
        busy = tuple(first <= tick <= last for tick in self.last_busy)
        if busy != self._present_key:
            self._present_key = busy
            self._present = np.array([k for k in self.by_name if self.group_of[k] < 0
                                      or busy[self.group_of[k]]], dtype=np.int64)
        return self._present


def embedded(sums: list[list[int]], vectors: list[list[float]]) -> list[float]:
    """Per row, the embedding's count: the largest per-dimension ratio of the summed
    requests to the node's vector, rounded up (bucketing.embed, in plain Python: a
    handful of rows per tick, where numpy's call overhead dominates)."""
    counts = []
    for row, vector in zip(sums, vectors, strict=True):
        ratio = 0.0
        for value, size in zip(row, vector, strict=True):
            if size > 0 and value / size > ratio:
                ratio = value / size
        counts.append(float(math.ceil(ratio - 1e-9)) if ratio > 0 else 0.0)
    return counts


def add_request(total: list[int], request: Request, sign: int) -> None:
    """`total` += sign x `request`, per dimension (integer units: sums never drift)."""
    total[0] += sign * request[0]
    total[1] += sign * request[1]
    total[2] += sign * request[2]
