"""What one placeholder of each instance type requests, so that it fits the nodes it makes
cluster-autoscaler launch and still claims a whole node.

Decides, per instance type:
- from live nodes (`placeholders.size_from_nodes`), when a node of the type is a good
  template: Ready for at least a minute, schedulable, not going away and, for a GPU
  type, reporting all the catalog's GPUs (a GPU node is Ready before its device plugin
  registers the GPUs). That is how cluster-autoscaler picks the real node it builds a
  node group's template from (processors/nodeinfosprovider/mixed_nodeinfos_processor.go,
  `isNodeGoodTemplateCandidate`: Ready, stable for 1 minute, schedulable), and the
  template holds the node's DaemonSet and static (mirror) pods "as if the node was just
  created" (simulator/nodes.go `BuildNodeInfoForNode`). The request is the smallest
  allocatable among those nodes less the largest sum of DaemonSet and static pod
  requests seen on any of them, so it fits every one; GPUs: all of the type's;
- otherwise the fraction rule (`config_catalog.placeholder_request`): all GPUs plus a
  fraction of the catalog's CPU and memory;
- stability: a size taken from live nodes changes the pod template, and every change
  re-creates the type's placeholders (`strategy: Recreate`). The request already applied
  is kept while it still fits every template node and is within `KEEP_WITHIN` of the new
  size, so a DaemonSet pod coming and going does not churn the placeholders.

Also: `fit_problem`, whether a request fits no usable node of its type (a placeholder
that never schedules there, and that CA will not scale up for once the type's template
comes from such a node).

Must not: read the clock (`now_s` is passed in), log, or call the API.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bucketing.catalog import Catalog
from bucketing.resources import Resources
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.catalog import MIB, placeholder_request

# cluster-autoscaler's `stabilizationDelay`: a node Ready for less is no template yet.
TEMPLATE_READY_S = 60.0
# A request already applied is kept while within 5% of the size measured now.
KEEP_WITHIN = 0.05

Source = Literal["nodes", "fraction"]


# The node labels by which cluster-autoscaler's cloud providers recognise a GPU node
# before its device plugin has registered its GPUs (each provider's GPULabel(): aws,
# gce, azure), so it does not count such a node as ready capacity without GPUs and
# scale up again for the pods still pending on it (processors/customresources/
# gpu_processor.go).
GPU_NODE_LABELS = ("k8s.amazonaws.com/accelerator", "cloud.google.com/gke-accelerator",
                   "accelerator")


@dataclass(frozen=True)
class NodeRoom:
    """A node of a bucket type and what its DaemonSet and static pods take of it.

    usable: Ready, schedulable and not going away (observe.parse_node).
    ready_since_s: when its Ready condition last turned True (None = unknown).
    """

    name: str
    instance_type: str
    placement_group: str
    allocatable: Resources
    daemon_requests: Resources
    usable: bool
    ready_since_s: float | None
    gpu_labeled: bool = True
    """The node carries an autoscaler's GPU label (GPU_NODE_LABELS)."""

    @property
    def room(self) -> Resources:
        """What a pod can still request on a node that runs only its DaemonSets."""
        return self.allocatable - self.daemon_requests


@dataclass(frozen=True)
class PlaceholderSize:
    """One type's placeholder request, where it came from and the arithmetic in words."""

    instance_type: str
    request: Resources
    source: Source
    detail: str


def template_nodes(rooms: Iterable[NodeRoom], instance_type: str, gpus: int,
                   now_s: float) -> list[NodeRoom]:
    """The nodes of `instance_type` good enough to size from (see the module docstring)."""
    return [
        node for node in rooms
        if node.instance_type == instance_type and node.usable
        and node.ready_since_s is not None and now_s - node.ready_since_s >= TEMPLATE_READY_S
        and node.allocatable.gpu_milli >= gpus * 1000
    ]


def size_placeholders(
    config: OverprovisionerConfig,
    catalog: Catalog,
    rooms: Sequence[NodeRoom],
    now_s: float,
    applied: Mapping[str, Resources] | None = None,
) -> dict[str, PlaceholderSize]:
    """The placeholder request of every bucket type (`applied`: what the type's objects
    request now, kept when still good; see the module docstring)."""
    applied = applied or {}
    sizes = {}
    for name in config.instance_types:
        sizes[name] = _size_one(config, catalog, name, rooms, now_s, applied.get(name))
    return sizes


def _size_one(config: OverprovisionerConfig, catalog: Catalog, name: str,
              rooms: Sequence[NodeRoom], now_s: float,
              applied: Resources | None) -> PlaceholderSize:
    placeholders = config.placeholders
    gpus = catalog.get(name).gpus
    fallback = placeholder_request(config, catalog, name)
    candidates = template_nodes(rooms, name, gpus, now_s) if placeholders.size_from_nodes else []
    if not candidates:
        fraction = placeholders.gpu_type_fraction if gpus else placeholders.cpu_type_fraction
        why = "sizing from nodes is off" if not placeholders.size_from_nodes else (
            "no Ready node of the type to measure")
        return PlaceholderSize(name, fallback, "fraction",
                               f"{why}: {fraction:g} of the catalog's allocatable less "
                               f"daemonset overhead")
    smallest = min(candidates, key=lambda n: (n.allocatable.cpu_milli, n.allocatable.memory_bytes))
    cpu = min(n.allocatable.cpu_milli for n in candidates) - max(
        n.daemon_requests.cpu_milli for n in candidates)
    memory = min(n.allocatable.memory_bytes for n in candidates) - max(
        n.daemon_requests.memory_bytes for n in candidates)
    memory = math.floor(memory / MIB) * MIB
    if cpu <= 0 or memory <= 0:
        return PlaceholderSize(name, fallback, "fraction",
                               f"DaemonSet pods take all of node {smallest.name}: fraction rule")
    target = Resources(gpus * 1000 if placeholders.request_gpus else 0, cpu, memory)
    detail = (f"{len(candidates)} Ready node(s): smallest allocatable less the largest "
              f"DaemonSet/static requests = {cpu}m CPU, {memory // MIB}Mi")
    if applied is not None and _keep(applied, target, candidates):
        return PlaceholderSize(name, applied, "nodes",
                               detail + f"; keeping the applied {applied.cpu_milli}m, "
                               f"{applied.memory_bytes // MIB}Mi (within {KEEP_WITHIN:.0%})")
    return PlaceholderSize(name, target, "nodes", detail)


def _keep(applied: Resources, target: Resources, candidates: Sequence[NodeRoom]) -> bool:
    """The applied request still fits every template node and is close to the target."""
    return (
        applied.gpu_milli == target.gpu_milli
        and all(applied.fits_in(node.room) for node in candidates)
        and applied.cpu_milli >= target.cpu_milli * (1 - KEEP_WITHIN)
        and applied.memory_bytes >= target.memory_bytes * (1 - KEEP_WITHIN)
    )


def fit_problem(request: Resources, rooms: Iterable[NodeRoom], instance_type: str,
                now_s: float) -> str | None:
    """Why `request` fits no settled node of `instance_type`, or None (it fits one, or
    there is no settled node to compare with). Settled: usable and Ready for
    `TEMPLATE_READY_S`, and reporting GPUs if any are asked for; a node whose DaemonSets
    or device plugin are still starting says nothing yet."""
    nodes = [n for n in rooms
             if n.instance_type == instance_type and n.usable and n.ready_since_s is not None
             and now_s - n.ready_since_s >= TEMPLATE_READY_S
             and (n.allocatable.gpu_milli > 0 or request.gpu_milli == 0)]
    if not nodes or any(request.fits_in(n.room) for n in nodes):
        return None
    roomiest = max(nodes, key=lambda n: (n.room.gpu_milli, n.room.cpu_milli, n.room.memory_bytes))
    room = roomiest.room
    short = [what for what, asked, has in (
        ("GPUs", request.gpu_milli, room.gpu_milli),
        ("CPU", request.cpu_milli, room.cpu_milli),
        ("memory", request.memory_bytes, room.memory_bytes),
    ) if asked > has]
    return (
        f"requests {_text(request)} but the roomiest of {len(nodes)} Ready {instance_type} "
        f"node(s), {roomiest.name}, has {_text(room)} after its DaemonSet pods "
        f"(short of {', '.join(short)})"
    )


def _text(resources: Resources) -> str:
    gpus = f"{resources.gpu_milli / 1000:g} GPUs, " if resources.gpu_milli else ""
    return f"{gpus}{resources.cpu_milli}m CPU, {resources.memory_bytes // MIB}Mi"
