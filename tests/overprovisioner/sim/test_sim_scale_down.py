"""cluster-autoscaler's scale-down of nodes that still run pods: the utilization
thresholds (GPU nodes by their GPU share), whether the pods may be drained, and whether
they fit elsewhere. Each scenario replays pods running before the trace on 8-GPU
g4dn.metal nodes (96 vCPU), so where they start is fixed:

  x: 5 GPUs, ends at 600 s -> n0     y: 1 GPU, runs all day -> n0 (6 of 8 GPUs)
  z: Z GPUs, runs all day -> n1 (Z > 2: n0 has 2 GPUs left)

At 600 s x ends: n0 holds y alone, 1 of 8 GPUs = 12.5%. CA's unneeded time (600 s)
later, at 1,200 s, CA drains n0 if y may be evicted, n0 is under the GPU threshold and
y fits on n1 (Z + 1 <= 8); n1 (Z of 8) is under the threshold only when Z < 4.
"""

from __future__ import annotations

import math

import pytest

from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.pod_engine import run
from overprovisioner.sim.scale_down import utilization
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

METAL = types("g4dn.metal")
DAY = 86_400.0


def replay(z_gpus: int, y_cpus: int = 2, **config):
    rows = [pod("x", -100.0, 700.0, 5), pod("y", -100.0, DAY, 1, cpu=y_cpus),
            pod("z", -100.0, DAY, z_gpus)]
    workload = build_workload(table(rows, start=-100.0, end=7_200.0), METAL)
    assert workload.initial.all()
    return run(workload, CATALOG, "reactive", SimConfig(groups_per_gpu_type=1, **config))


def removed(result) -> list[float]:
    return [float(t) for t in result.node_removed]


def test_the_training_operators_pods_keep_an_underused_node():
    # The default: the trace's pods are a custom controller's; CA never evicts them.
    result = replay(4)
    assert len(result.node_type) == 2 and all(math.isnan(t) for t in removed(result))


def test_drainable_pods_leave_an_underused_gpu_node_and_it_goes():
    result = replay(4, drainable_pods=True)
    # n0 (12.5%) drained at 1,200 s: y now runs on n1 beside z (5 of 8 GPUs); n1 at 50%
    # is not under the 0.5 threshold and stays.
    assert removed(result)[0] == pytest.approx(1_200.0)
    assert math.isnan(removed(result)[1])
    assert result.notes["evictions"] == 1
    # y ran to its end on n1: nothing waited for capacity.
    assert result.placed_at.tolist() == [-100.0, -100.0, -100.0]


def test_a_node_at_or_above_the_gpu_threshold_is_not_drained():
    # With the GPU threshold at 0.1, n0 at 12.5% is used enough: kept.
    result = replay(4, drainable_pods=True, gpu_utilization_threshold=0.1)
    assert all(math.isnan(t) for t in removed(result))


def test_a_node_whose_pods_fit_nowhere_else_is_kept():
    # z takes all 8 GPUs of n1: y has nowhere to go, so n0 stays however idle it is.
    result = replay(8, drainable_pods=True)
    assert all(math.isnan(t) for t in removed(result))


def test_gpu_nodes_are_judged_by_their_gpus_alone():
    # y asks for 90 of n0's 96 vCPUs but 1 of its 8 GPUs: by CPU n0 is busy, by GPU it
    # is at 12.5%, and CA judges GPU nodes by their GPUs: drained.
    result = replay(4, y_cpus=90, drainable_pods=True)
    assert removed(result)[0] == pytest.approx(1_200.0)


def test_utilization_as_ca_counts_it():
    class Node:
        def __init__(self, gpu, free_gpu, cpu, free_cpu, mem, free_mem, placeholder=False):
            self.alloc_gpu, self.free_gpu, self.placeholder = gpu, free_gpu, placeholder
            self.alloc_cpu, self.free_cpu, self.alloc_mem, self.free_mem = (
                cpu, free_cpu, mem, free_mem)

    assert utilization(Node(8000, 7000, 96000, 1000, 1, 0)) == pytest.approx(0.125)
    assert utilization(Node(0, 0, 4000, 1000, 100, 90)) == pytest.approx(0.75)  # CPU
    assert utilization(Node(0, 0, 4000, 3000, 100, 10)) == pytest.approx(0.90)  # memory
    assert utilization(Node(8000, 8000, 1, 1, 1, 1, placeholder=True)) == 1.0
