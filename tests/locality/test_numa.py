"""kubelet's Topology Manager as headstart models it: admission and alignment per policy
and scope, and the zones each admitted pod takes."""

from __future__ import annotations

import pytest

from locality.numa import (
    NO_NUMA_DEMAND,
    NodeTopology,
    NumaDemand,
    NumaFit,
    NumaZone,
    TopologyManagerPolicy,
    TopologyManagerScope,
    pod_numa_demand,
)

G = 1000  # one GPU, or one CPU, in thousandths

SINGLE = TopologyManagerPolicy.SINGLE_NUMA_NODE
RESTRICTED = TopologyManagerPolicy.RESTRICTED
BEST_EFFORT = TopologyManagerPolicy.BEST_EFFORT
NONE = TopologyManagerPolicy.NONE
POD = TopologyManagerScope.POD
CONTAINER = TopologyManagerScope.CONTAINER


def node(policy, scope, *free, capacity=(4, 48)):
    """Zones with (free GPUs, free CPUs); every zone has `capacity` (GPUs, CPUs)."""
    zones = tuple(
        NumaZone(f"node-{index}", cpus * G, gpus * G, capacity[1] * G, capacity[0] * G)
        for index, (gpus, cpus) in enumerate(free)
    )
    return NodeTopology("n", zones, policy, scope)


def pod(gpus, cpus=0):
    return pod_numa_demand(gpus * G, cpus * G)


def containers(*app, init=()):
    """A pod whose app containers (and init containers) ask (GPUs, pinned CPUs) each."""
    app_units = tuple((g * G, c * G) for g, c in app)
    init_units = tuple((g * G, c * G) for g, c in init)
    pod_unit = (max([sum(g for g, _ in app_units), *(g for g, _ in init_units)]),
                max([sum(c for _, c in app_units), *(c for _, c in init_units)]))
    return NumaDemand(pod_unit, init_units, app_units)


CASES = [
    # single-numa-node: one zone holds 2 GPUs and 8 CPUs (node-1: 2 free) -> aligned
    # there; node-1 keeps 2 - 2 = 0 GPUs and 16 - 8 = 8 CPUs.
    pytest.param(node(SINGLE, POD, (1, 32), (2, 16)), pod(2, 8),
                 NumaFit.ALIGNED, [(1, 32), (0, 8)], id="single-one-zone-fits"),
    # 1 + 1 free GPUs: the node has 2, but no zone does: kubelet rejects.
    pytest.param(node(SINGLE, POD, (1, 32), (1, 32)), pod(2),
                 NumaFit.REJECTED, [(1, 32), (1, 32)], id="single-no-zone-rejects"),
    # Both zones fit: the lower NUMA id wins (4 - 2 = 2 on node-0).
    pytest.param(node(SINGLE, POD, (4, 48), (4, 48)), pod(2),
                 NumaFit.ALIGNED, [(2, 48), (4, 48)], id="single-lowest-zone-wins"),
    # best-effort admits anyway; the 2 GPUs and 8 CPUs spread from the lowest zone:
    # node-0 gives 1 GPU and 8 CPUs (32 - 8 = 24), node-1 the other GPU.
    pytest.param(node(BEST_EFFORT, POD, (1, 32), (1, 32)), pod(2, 8),
                 NumaFit.UNALIGNED, [(0, 24), (0, 32)], id="best-effort-admits-unaligned"),
    pytest.param(node(BEST_EFFORT, POD, (1, 32), (2, 32)), pod(2, 8),
                 NumaFit.ALIGNED, [(1, 32), (0, 24)], id="best-effort-aligns-when-it-can"),
    # none: admitted, never aligned (devices land where they land); charged like
    # best-effort's lowest fitting zone, an estimate.
    pytest.param(node(NONE, POD, (4, 48), (4, 48)), pod(2),
                 NumaFit.UNALIGNED, [(2, 48), (4, 48)], id="none-never-aligned"),
    # restricted, 6 GPUs on zones of capacity 4: the narrowest mask that could ever hold
    # 6 is both zones, so that hint is preferred; 3 + 3 free -> admitted, not one zone.
    pytest.param(node(RESTRICTED, POD, (3, 48), (3, 48)), pod(6),
                 NumaFit.UNALIGNED, [(0, 48), (0, 48)], id="restricted-wide-preferred-admits"),
    # restricted, 2 GPUs: one zone could hold them (capacity 4), so only a one-zone
    # hint is preferred; 1 + 1 free -> the best hint is not preferred: rejected.
    pytest.param(node(RESTRICTED, POD, (1, 48), (1, 48)), pod(2),
                 NumaFit.REJECTED, [(1, 48), (1, 48)], id="restricted-narrow-but-split-rejects"),
    # restricted, 2 GPUs (1 zone wide) with 40 pinned CPUs (zones of 32 CPUs: 2 wide):
    # the preferred masks differ, so no merged hint is preferred: rejected.
    pytest.param(node(RESTRICTED, POD, (4, 32), (4, 32), capacity=(4, 32)), pod(2, 40),
                 NumaFit.REJECTED, [(4, 32), (4, 32)], id="restricted-unequal-widths-reject"),
    pytest.param(node(RESTRICTED, POD, (2, 48), (2, 48)), pod(2),
                 NumaFit.ALIGNED, [(0, 48), (2, 48)], id="restricted-one-zone-aligned"),
    # container scope: two 2-GPU containers, 3 free per zone. Each fits a zone in turn:
    # node-0 (3 - 2 = 1), then node-1 (3 - 2 = 1).
    pytest.param(node(SINGLE, CONTAINER, (3, 48), (3, 48)), containers((2, 0), (2, 0)),
                 NumaFit.ALIGNED, [(1, 48), (1, 48)], id="container-scope-each-container"),
    # The same pod under pod scope needs 4 GPUs in one zone: rejected.
    pytest.param(node(SINGLE, POD, (3, 48), (3, 48)), containers((2, 0), (2, 0)),
                 NumaFit.REJECTED, [(3, 48), (3, 48)], id="pod-scope-whole-pod"),
    # An init container's 4 GPUs are checked against the free zones (node-1 has 4) and
    # handed on, not kept; the 2-GPU app container then takes node-0 (3 - 2 = 1).
    pytest.param(node(SINGLE, CONTAINER, (3, 48), (4, 48)),
                 containers((2, 0), init=[(4, 0)]),
                 NumaFit.ALIGNED, [(1, 48), (4, 48)], id="init-container-checked-not-kept"),
    pytest.param(node(SINGLE, CONTAINER, (3, 48), (3, 48)),
                 containers((2, 0), init=[(4, 0)]),
                 NumaFit.REJECTED, [(3, 48), (3, 48)], id="init-container-no-zone-rejects"),
    # Nothing to align (no GPUs, no pinned CPUs): kubelet has no hint to give.
    pytest.param(node(SINGLE, POD, (0, 0), (0, 0)), NO_NUMA_DEMAND,
                 NumaFit.UNKNOWN, [(0, 0), (0, 0)], id="nothing-to-align"),
]


@pytest.mark.parametrize(("topology", "demand", "fit", "zones_after"), CASES)
def test_fit_and_charge(topology, demand, fit, zones_after):
    assert topology.fit(demand) is fit
    charged = topology.charged([demand])
    assert [(z.gpu_free_milli // G, z.cpu_free_milli // G) for z in charged.zones] == zones_after
    assert (charged is topology) == (fit in (NumaFit.UNKNOWN, NumaFit.REJECTED))


def test_gpus_without_numa_affinity_leave_only_pinned_cpus():
    # The zones list no GPU (DRA GPUs, or a device plugin reporting no NUMA node): like
    # scheduler-plugins, the GPUs count as node-level and only pinned CPUs are aligned.
    topology = NodeTopology("n", (NumaZone("node-0", 4 * G, 0), NumaZone("node-1", 48 * G, 0)),
                            SINGLE, POD, gpu_reported=False)
    assert topology.fit(pod(4)) is NumaFit.UNKNOWN
    assert topology.fit(pod(4, 8)) is NumaFit.ALIGNED  # node-1 holds the 8 CPUs
    assert topology.fit(pod(4, 64)) is NumaFit.REJECTED
