"""Small builders for locality tests: pods, nodes, node states, contexts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from bucketing.resources import Resources, device_tuple
from locality.config import LocalityConfig
from locality.context import DecisionContext, decision_context
from locality.model import Node as NodeModel
from locality.model import NodeState, NodeTopology, NumaZone, Pod, node_state
from locality.numa import TopologyManagerPolicy, TopologyManagerScope
from locality.placement import AssumedPlacements

CONFIG = LocalityConfig()


def make_pod(
    name: str = "p",
    *,
    cpu: str | float = 1,
    gpus: float = 0,
    memory_gib: float = 1,
    job: str | None = None,
    role: str | None = None,
    namespace: str = "ns",
    node: str | None = None,
    packing: str | None = None,
    group: str | None = None,
    numa: str | None = None,
    job_size: int | None = None,
    placeholder: bool = False,
    placeholder_group: str | None = None,
    terminal: bool = False,
    uid: str | None = None,
    pinned: bool = False,
    devices: Iterable[tuple[str, float]] = (),
) -> Pod:
    """A pod; `job`/`role` use the headstart labels, policy goes in annotations.

    pinned: Guaranteed with whole CPUs, so kubelet pins its CPUs to its NUMA zone
    (`Pod.pinned_cpu_milli` = the CPU request); otherwise only its GPUs are aligned.
    """
    cores = int(cpu[:-1]) / 1000 if isinstance(cpu, str) and cpu.endswith("m") else float(cpu)
    labels: dict[str, str] = {}
    if job is not None:
        labels["headstart.io/job"] = job
    if role is not None:
        labels["headstart.io/role"] = role
    annotations: dict[str, str] = {}
    if packing is not None:
        annotations["headstart.io/packing"] = packing
    if group is not None:
        annotations["headstart.io/placement-group"] = group
    if numa is not None:
        annotations["headstart.io/numa"] = numa
    if job_size is not None:
        annotations["headstart.io/job-size"] = str(job_size)
    if placeholder:
        labels["headstart.io/placeholder"] = "true"
    return Pod(
        namespace=namespace,
        name=name,
        uid=uid or f"uid-{namespace}-{name}",
        labels=labels,
        annotations=annotations,
        request=replace(Resources.of(gpus, cores, memory_gib),
                        devices=device_tuple((kind, round(count * 1000))
                                             for kind, count in devices)),
        node_name=node,
        priority=-5 if placeholder else 0,
        is_placeholder=placeholder,
        placement_group=placeholder_group,
        terminal=terminal,
        pinned_cpu_milli=round(cores * 1000) if pinned else 0,
    )


def make_node(
    name: str, *, gpus: float = 8, cpu: float = 96, memory_gib: float = 768,
    group: str | None = None, unschedulable: bool = False,
) -> NodeModel:
    return NodeModel(name, {}, Resources.of(gpus, cpu, memory_gib), group, None, unschedulable)


def make_state(
    name: str,
    *,
    gpus: float = 8,
    cpu: float = 96,
    memory_gib: float = 768,
    group: str | None = None,
    pods: Iterable[Pod] = (),
    zones: Iterable[tuple[float, ...]] | None = None,
    policy: str = "single-numa-node",
    scope: str = "pod",
    domains: Iterable[tuple[str, str]] = (),
    devices: Iterable[tuple[str, float]] = (),
) -> NodeState:
    """A node state; `zones` as (free GPUs, free CPUs[, GPU capacity, CPU capacity]) per
    NUMA zone, None = no NRT data;
    `policy` / `scope` the kubelet Topology Manager's; `domains` (level, domain) pairs;
    `devices` (kind, count) advertised per device kind."""
    topology = None
    if zones is not None:
        topology = NodeTopology(
            name,
            tuple(
                NumaZone(f"node-{index}", round(zone[1] * 1000), round(zone[0] * 1000),
                         round(zone[3] * 1000) if len(zone) > 2 else None,
                         round(zone[2] * 1000) if len(zone) > 2 else None)
                for index, zone in enumerate(zones)
            ),
            TopologyManagerPolicy(policy),
            TopologyManagerScope(scope),
        )
    node = make_node(name, gpus=gpus, cpu=cpu, memory_gib=memory_gib, group=group)
    if domains or devices:
        allocatable = node.allocatable
        node = replace(
            node, domains=tuple(domains),
            allocatable=Resources(allocatable.gpu_milli, allocatable.cpu_milli,
                                  allocatable.memory_bytes,
                                  device_tuple((kind, round(count * 1000))
                                               for kind, count in devices)),
        )
    return node_state(node, list(pods), topology)


def cluster_of(states: Iterable[NodeState]) -> dict[str, NodeState]:
    return {state.name: state for state in states}


def context_for(
    pod: Pod,
    states: Iterable[NodeState] | Mapping[str, NodeState],
    job_pods: Iterable[Pod] = (),
    assumed: AssumedPlacements | None = None,
    now: float = 0.0,
    config: LocalityConfig = CONFIG,
) -> DecisionContext:
    cluster = dict(states) if isinstance(states, Mapping) else cluster_of(states)
    return decision_context(
        pod,
        job_pods=list(job_pods),
        assumed=assumed if assumed is not None else AssumedPlacements(),
        cluster=cluster,
        now=now,
        config=config,
    )
