"""NodeState bookkeeping and NUMA zone choice."""

from __future__ import annotations

import pytest

from bucketing.resources import Resources
from locality.model import NodeTopology, NumaZone, node_state
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
        pytest.param(1, 4, "node-1", id="tightest-gpu-fit"),  # node-1 leaves 1 GPU, node-0 3
        pytest.param(2, 4, "node-1", id="exact"),
        pytest.param(3, 4, "node-0", id="only-big-zone"),
        pytest.param(3, 40, None, id="cpus-and-gpus-never-together"),
        pytest.param(0, 40, "node-1", id="cpu-only"),
    ],
)
def test_best_zone(gpus, cpus, expected):
    topology = NodeTopology("n", (NumaZone("node-0", 8000, 4000), NumaZone("node-1", 48000, 2000)))
    zone = topology.best_zone_for(gpus * 1000, cpus * 1000)
    assert (zone.name if zone else None) == expected
