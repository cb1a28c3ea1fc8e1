"""NUMA zones and what kubelet's Topology Manager does with a pod on a node.

Decides, for one node's NodeResourceTopology zones and one pod's NUMA demand, whether
kubelet would admit the pod (`NumaFit.REJECTED` when not), and whether its aligned
resources (device-plugin GPUs, pinned CPUs) would each sit in one zone
(`NumaFit.ALIGNED`), following the node's `topologyManagerPolicy` and
`topologyManagerScope` as NFD's topology updater publishes them in the NRT
`attributes` (scheduler-plugins pkg/noderesourcetopology/nodeconfig reads the same
two names and values; without them it assumes kubelet's defaults, `none` and
`container`, and so does this module through `LocalityConfig`):

- `none`: kubelet aligns nothing and admits everything: UNALIGNED.
- `best-effort`: admits everything; the preferred (narrowest) hint wins, so a pod
  that fits one zone lands in one zone: ALIGNED when it fits, else UNALIGNED.
- `single-numa-node`: admits only when every unit (the pod, or each container under
  `container` scope) fits one zone: ALIGNED, else REJECTED. This is what
  scheduler-plugins' Filter models (filter.go, `singleNUMAContainerLevelHandler`:
  init containers checked against the free zones, app containers charged in turn).
- `restricted`: admits only when the merged hint is preferred
  (topologymanager policy_restricted.go `canAdmitPodResult`). A hint is preferred
  when its mask is as narrow as the request can ever be on this machine (the device
  manager and CPU manager count all devices / CPUs of a mask, not the free ones, for
  that minimum width), and the merge keeps a preferred hint only when every
  resource's preferred masks are equal (policy.go `mergePermutation`). So the pod is
  admitted iff some mask of the common minimum width has the free GPUs and CPUs;
  ALIGNED when that width is one zone. scheduler-plugins does not filter this
  policy; kubelet rejects, so headstart does.

Units: `pod` scope aligns the pod as a whole (its GPUs and pinned CPUs, the app
containers summed, max with each init container); `container` scope aligns each
container on its own: init containers one at a time against the free zones (they
run before the app containers and hand their devices on), then app containers and
restartable init containers (sidecars) in start order, each taking its zone(s).

Ties: every fitting mask of the same width is equally preferred; kubelet's merge keeps
the lower-numbered NUMA nodes (bitmask `IsNarrowerThan`), so zones are tried in
NUMA-id order and masks in lexicographic order.

Not modelled: memory and hugepages (the memory manager), devices that report no NUMA
affinity (taken as node-level, as scheduler-plugins does when no zone lists them),
DRA devices (the Topology Manager gets no hints for them), `max-allowable-numa-nodes`,
and the `prefer-closest-numa-nodes` policy option (distances are ignored).

Must not: parse JSON, log, read the clock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

Unit = tuple[int, int]
"""(GPU thousandths, pinned CPU thousandths) one alignment unit asks one mask for."""


class TopologyManagerPolicy(enum.Enum):
    """kubelet's `topologyManagerPolicy` (the NRT attribute's values)."""

    NONE = "none"
    BEST_EFFORT = "best-effort"
    RESTRICTED = "restricted"
    SINGLE_NUMA_NODE = "single-numa-node"


class TopologyManagerScope(enum.Enum):
    """kubelet's `topologyManagerScope`: align each container, or the pod as a whole."""

    CONTAINER = "container"
    POD = "pod"


class NumaFit(enum.IntEnum):
    """What kubelet does with a pod on a node (ordered: the table stores the value)."""

    UNKNOWN = 0  # no NUMA data for what the pod asks (no NRT, or nothing to align)
    REJECTED = 1  # the Topology Manager refuses admission (TopologyAffinityError)
    UNALIGNED = 2  # admitted, but some unit is not in one zone (or not aligned at all)
    ALIGNED = 3  # admitted, every unit in one zone


@dataclass(frozen=True, slots=True)
class NumaDemand:
    """What kubelet aligns for one pod: device-plugin GPUs and pinned CPUs.

    pod: the pod-scope unit. init: each non-restartable init container's unit.
    app: each app container's and sidecar's unit, in start order (sidecars first).
    Pinned CPUs are only a Guaranteed pod's whole CPUs (`locality.parse`).
    """

    pod: Unit
    init: tuple[Unit, ...] = ()
    app: tuple[Unit, ...] = ()

    @property
    def gpu_milli(self) -> int:
        return self.pod[0]

    @property
    def cpu_milli(self) -> int:
        return self.pod[1]

    def is_zero(self) -> bool:
        return self.pod == (0, 0)

    def without_gpus(self) -> NumaDemand:
        """The demand on a node whose zones list no GPUs (their devices report no NUMA
        affinity, or come through DRA): only the pinned CPUs are aligned."""
        return NumaDemand(
            (0, self.pod[1]),
            tuple((0, cpu) for _, cpu in self.init),
            tuple((0, cpu) for _, cpu in self.app),
        )

    def units(self, scope: TopologyManagerScope) -> tuple[tuple[Unit, ...], tuple[Unit, ...]]:
        """(units checked against the free zones only, units that take their zones)."""
        if scope is TopologyManagerScope.POD or not (self.init or self.app):
            return (), (self.pod,)
        return self.init, self.app


NO_NUMA_DEMAND = NumaDemand((0, 0))


def pod_numa_demand(gpu_milli: int, pinned_cpu_milli: int) -> NumaDemand:
    """A single-container pod's demand (tests, the simulator, hand-built pods)."""
    if gpu_milli <= 0 and pinned_cpu_milli <= 0:
        return NO_NUMA_DEMAND
    unit = (max(gpu_milli, 0), max(pinned_cpu_milli, 0))
    return NumaDemand(unit, (), (unit,))


@dataclass(frozen=True, slots=True)
class NumaZone:
    """One NUMA node of a machine: what is still free (NRT `available`) and what it has.

    cpu_capacity_milli / gpu_capacity_milli: the zone's `capacity` (all CPUs and
    devices, what kubelet's minimum hint width counts); None when not published
    (then the free amounts stand in, which can only make a hint look wider).
    """

    name: str
    cpu_free_milli: int
    gpu_free_milli: int
    cpu_capacity_milli: int | None = None
    gpu_capacity_milli: int | None = None

    def holds(self, gpu_milli: int, cpu_milli: int) -> bool:
        return self.gpu_free_milli >= gpu_milli and self.cpu_free_milli >= cpu_milli

    @property
    def cpu_capacity(self) -> int:
        return self.cpu_free_milli if self.cpu_capacity_milli is None else self.cpu_capacity_milli

    @property
    def gpu_capacity(self) -> int:
        return self.gpu_free_milli if self.gpu_capacity_milli is None else self.gpu_capacity_milli


@dataclass(frozen=True, slots=True)
class NodeTopology:
    """The NUMA zones of a node, from its NodeResourceTopology object, and its kubelet's
    Topology Manager settings.

    zones: in NUMA-id order (`locality.parse` sorts NFD's `node-N` names by N), the
    order kubelet breaks ties in. policy / scope: from the NRT attributes (or the
    configured defaults). gpu_reported: some zone lists a GPU resource; when none
    does, the node's GPUs carry no NUMA affinity and only pinned CPUs are aligned.
    Built by hand (tests, benchmarks) it means `single-numa-node` with `pod` scope.
    """

    node_name: str
    zones: tuple[NumaZone, ...]
    policy: TopologyManagerPolicy = TopologyManagerPolicy.SINGLE_NUMA_NODE
    scope: TopologyManagerScope = TopologyManagerScope.POD
    gpu_reported: bool = True

    def fit(self, demand: NumaDemand | None) -> NumaFit:
        """What kubelet does with a pod of this demand here (module docstring)."""
        return self._admit(demand, self.zones)[0]

    def zone_for(self, gpu_milli: int, cpu_milli: int) -> NumaZone | None:
        """The zone a single unit of these amounts takes: the lowest-numbered zone that
        holds both (every single-zone hint that fits is equally preferred and the merge
        keeps the lower NUMA id); None if no zone can."""
        index = _first_holding(self.zones, gpu_milli, cpu_milli)
        return None if index is None else self.zones[index]

    def charged(self, demands: Iterable[NumaDemand | None]) -> NodeTopology:
        """The topology after pods with these demands are admitted, in this order.

        Each unit takes what the node's policy gives it: one zone when one fits (the
        lowest-numbered), under `restricted` the lowest mask of the preferred width,
        otherwise (best-effort or none without a fitting zone) the free amounts of the
        lowest zones in turn: an estimate, kubelet may spread them differently. A
        rejected pod, or one with nothing to align, takes nothing. Returns self when
        nothing is charged.
        """
        zones = self.zones
        changed = False
        for demand in demands:
            fit, after = self._admit(demand, zones)
            if fit in (NumaFit.ALIGNED, NumaFit.UNALIGNED) and after is not zones:
                zones = after
                changed = True
        return replace(self, zones=zones) if changed else self

    def _admit(
        self, demand: NumaDemand | None, zones: tuple[NumaZone, ...]
    ) -> tuple[NumaFit, tuple[NumaZone, ...]]:
        if demand is None:
            return NumaFit.UNKNOWN, zones
        if not self.gpu_reported:
            demand = demand.without_gpus()
        if demand.is_zero():
            return NumaFit.UNKNOWN, zones
        checked, taking = demand.units(self.scope)
        policy = self.policy
        free = [[zone.gpu_free_milli, zone.cpu_free_milli] for zone in zones]
        capacity = [(zone.gpu_capacity, zone.cpu_capacity) for zone in zones]
        aligned = True
        # Init containers are checked against the free zones and take nothing (they
        # hand their devices on); the others take their zones in turn.
        for unit, takes in [*((unit, False) for unit in checked),
                            *((unit, True) for unit in taking)]:
            mask = _mask_for(policy, free, capacity, unit)
            if mask is None:
                if policy in _REJECTING:
                    return NumaFit.REJECTED, zones
                aligned = False
                mask = tuple(range(len(free)))  # best-effort / none: spread (estimate)
            elif len(mask) > 1:
                aligned = False
            if takes:
                _take(free, mask, unit)
        if policy is TopologyManagerPolicy.NONE:
            aligned = False
        fit = NumaFit.ALIGNED if aligned else NumaFit.UNALIGNED
        after = tuple(
            zone if (zone.gpu_free_milli, zone.cpu_free_milli) == (gpu, cpu)
            else replace(zone, gpu_free_milli=gpu, cpu_free_milli=cpu)
            for zone, (gpu, cpu) in zip(zones, free, strict=True)
        )
        if all(new is old for new, old in zip(after, zones, strict=True)):
            after = zones
        return fit, after


_REJECTING = frozenset({TopologyManagerPolicy.SINGLE_NUMA_NODE, TopologyManagerPolicy.RESTRICTED})


def _first_holding(zones: Sequence[NumaZone], gpu_milli: int, cpu_milli: int) -> int | None:
    for index, zone in enumerate(zones):
        if zone.holds(gpu_milli, cpu_milli):
            return index
    return None


def _mask_for(
    policy: TopologyManagerPolicy,
    free: list[list[int]],
    capacity: list[tuple[int, int]],
    unit: Unit,
) -> tuple[int, ...] | None:
    """The zones kubelet gives `unit`: one zone when one holds it (every policy but
    `restricted` without a single-zone width), the preferred mask under `restricted`,
    None when the policy finds no aligned placement."""
    gpu, cpu = unit
    for index, (zone_gpu, zone_cpu) in enumerate(free):
        if zone_gpu >= gpu and zone_cpu >= cpu:
            return (index,)
    if policy is not TopologyManagerPolicy.RESTRICTED:
        return None
    return _restricted_mask(free, capacity, unit)


def _restricted_mask(
    free: list[list[int]], capacity: list[tuple[int, int]], unit: Unit
) -> tuple[int, ...] | None:
    """The lowest mask of the common minimum width that has the free amounts; None
    when the resources' minimum widths differ or no such mask has room."""
    count = len(free)
    widths = set()
    for dim, amount in enumerate(unit):
        if amount <= 0:
            continue
        width = next(
            (size for size in range(1, count + 1)
             if any(sum(capacity[i][dim] for i in mask) >= amount
                    for mask in combinations(range(count), size))),
            None,
        )
        if width is None:
            return None  # more than the machine has: no hint at all
        widths.add(width)
    if len(widths) != 1:
        return None  # no permutation of preferred hints has equal masks
    width = widths.pop()
    for mask in combinations(range(count), width):
        if all(sum(free[i][dim] for i in mask) >= amount
               for dim, amount in enumerate(unit) if amount > 0):
            return mask
    return None


def _take(free: list[list[int]], mask: tuple[int, ...], unit: Unit) -> None:
    """Subtract `unit` from the zones of `mask`, lowest zone first."""
    for dim, amount in enumerate(unit):
        left = amount
        for index in mask:
            if left <= 0:
                break
            take = min(max(free[index][dim], 0), left)
            free[index][dim] -= take
            left -= take
        if left > 0:  # more than the mask has free: charge the rest to its first zone
            free[mask[0]][dim] -= left
