"""NodeState bookkeeping and NUMA zone choice."""

from __future__ import annotations

import pytest

from bucketing.resources import Resources
from locality.model import NodeTopology, NumaZone, node_state
from locality.numa import pod_numa_demand
from tests.locality.builders import make_node, make_pod

REAL = make_pod("real", gpus=2, cpu=10, memory_gib=40)
HELD = make_pod("held", gpus=4, cpu=40, memory_gib=300, placeholder=True)
DONE = make_pod("done", gpus=8, cpu=96, terminal=True)


def test_node_state_sums_real_pods_and_placeholders_apart():
    state = node_state(make_node("n"), [REAL, HELD, DONE])
    assert state.requested == Resources.of(2, 10, 40)
    assert state.placeholder_requested == Resources.of(4, 40, 300)
    # free counts the placeholder's capacity as free: 8 - 2 GPUs, 96 - 10 CPUs
    assert (state.free_gpu_milli, state.free_cpu_milli) == (6000, 86000)
    assert state.free_without_preemption == Resources.of(2, 46, 768 - 40 - 300)
    assert state.holds_placeholders


@pytest.mark.parametrize("pod", [REAL, HELD, DONE], ids=["real", "placeholder", "terminal"])
def test_with_pod_and_without_pod_are_inverse(pod):
    empty = node_state(make_node("n"))
    added = empty.with_pod(pod)
    assert added.without_pod(pod).requested == empty.requested
    assert added.without_pod(pod).placeholder_requested == empty.placeholder_requested
    assert (added.requested, added.placeholder_requested) == (
        node_state(make_node("n"), [pod]).requested,
        node_state(make_node("n"), [pod]).placeholder_requested,
    )


@pytest.mark.parametrize(
    ("gpus", "cpus", "expected"),
    [
        # kubelet's single-numa-node merge keeps the lower-numbered of equally narrow
        # zones, so the first zone that fits wins, not the tightest one.
        pytest.param(1, 4, "node-0", id="lowest-zone-not-tightest"),  # node-1 fits too
        pytest.param(2, 4, "node-0", id="both-fit-lowest-wins"),
        pytest.param(3, 4, "node-0", id="only-big-zone"),
        pytest.param(1, 10, "node-1", id="node-0-short-of-cpus"),  # node-0 has 8 CPUs
        pytest.param(3, 40, None, id="cpus-and-gpus-never-together"),
        pytest.param(0, 40, "node-1", id="cpu-only"),
    ],
)
def test_zone_for(gpus, cpus, expected):
    topology = NodeTopology("n", (NumaZone("node-0", 8000, 4000), NumaZone("node-1", 48000, 2000)))
    zone = topology.zone_for(gpus * 1000, cpus * 1000)
    assert (zone.name if zone else None) == expected


TWO_4GPU_ZONES = NodeTopology(
    "n", (NumaZone("node-0", 48000, 4000), NumaZone("node-1", 48000, 4000))
)


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        # (GPUs, CPUs) per admitted pod -> (GPUs, CPUs) free per zone afterwards.
        pytest.param([(4, 8)], [(0, 40), (4, 48)], id="first-4gpu-pod-takes-node-0"),
        pytest.param([(4, 8), (4, 8)], [(0, 40), (0, 40)], id="second-takes-node-1"),
        pytest.param([(4, 8), (4, 8), (4, 8)], [(0, 40), (0, 40)],
                     id="third-fits-no-zone-charges-nothing"),
        pytest.param([(1, 8), (4, 8)], [(3, 40), (0, 40)], id="small-then-big"),
        # 2 GPUs on node-0 (4 -> 2), 3 GPUs only node-1 holds (4 -> 1), 2 GPUs node-0 again.
        pytest.param([(2, 4), (3, 4), (2, 4)], [(0, 40), (1, 44)], id="order-matters"),
        # A CPU-only Guaranteed pod's 16 pinned CPUs: the lowest zone with them (48 - 16).
        pytest.param([(0, 16)], [(4, 32), (4, 48)], id="cpu-only-pinned-takes-node-0"),
        pytest.param([(0, 50)], [(4, 48), (4, 48)], id="pinned-cpus-no-zone-holds"),
        pytest.param([(1, 46)], [(3, 2), (4, 48)], id="cpus-charged-too"),  # 48 - 46 = 2
    ],
)
def test_charged(requests, expected):
    charged = TWO_4GPU_ZONES.charged(
        pod_numa_demand(round(gpus * 1000), round(cpus * 1000)) for gpus, cpus in requests)
    assert [(z.gpu_free_milli / 1000, z.cpu_free_milli / 1000) for z in charged.zones] == expected
    assert TWO_4GPU_ZONES.zones[0].gpu_free_milli == 4000  # the input is unchanged


def test_charged_returns_itself_when_nothing_is_charged():
    # Neither GPUs nor pinned CPUs (a Burstable CPU pod), and a pod no zone holds.
    nothing = [pod_numa_demand(0, 0), pod_numa_demand(5000, 0)]
    assert TWO_4GPU_ZONES.charged(nothing) is TWO_4GPU_ZONES
