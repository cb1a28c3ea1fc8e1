"""The edge: Kubernetes JSON (Pod, Node, NodeResourceTopology) to locality's dataclasses.

Reads only the fields the decisions need, so admission add-ons and unknown fields
never matter. A pod's request comes from `bucketing.resources.pod_effective_request`
(the one place that sum is written). Malformed objects raise `InputError` naming the
field path (`pod.metadata.labels`, `nodeResourceTopology.zones[1].resources[0].available`).

Must not: log, read the clock, or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bucketing.errors import InputError
from bucketing.resources import (
    parse_resource_quantity,
    pod_effective_request,
    resources_from_list,
)
from locality.config import LocalityConfig
from locality.model import Node, NodeTopology, NumaZone, Pod

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
NRT_API_VERSION = "topology.node.k8s.io/v1alpha2"


def parse_pod(obj: Any, config: LocalityConfig, where: str = "pod") -> Pod:
    """A Pod object (as in an extender request or a watch event) to a `Pod`."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata = _object(obj.get("metadata"), f"{where}.metadata", required=True)
    spec = _object(obj.get("spec"), f"{where}.spec", required=True)
    status = _object(obj.get("status"), f"{where}.status", required=False)
    labels = _string_map(metadata.get("labels"), f"{where}.metadata.labels")
    annotations = _string_map(metadata.get("annotations"), f"{where}.metadata.annotations")
    try:
        request = pod_effective_request(obj, config.gpu_resource)
    except InputError as error:
        # pod_effective_request names paths from "pod."; keep the caller's prefix.
        message = str(error)
        if where != "pod" and message.startswith("pod"):
            message = where + message[3:]
        raise InputError(message) from None
    node_name = spec.get("nodeName")
    if node_name is not None and not isinstance(node_name, str):
        raise InputError(f"{where}.spec.nodeName: expected a string, got {node_name!r}")
    priority = spec.get("priority", 0)
    if priority is None:
        priority = 0
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise InputError(f"{where}.spec.priority: expected an integer, got {priority!r}")
    phase = status.get("phase")
    if phase is not None and not isinstance(phase, str):
        raise InputError(f"{where}.status.phase: expected a string, got {phase!r}")
    is_placeholder = labels.get(config.placeholder_label) == "true"
    group = labels.get(config.placeholder_group_label) if is_placeholder else None
    return Pod(
        namespace=_string(metadata.get("namespace", "default"), f"{where}.metadata.namespace"),
        name=_string(metadata.get("name"), f"{where}.metadata.name"),
        uid=_string(metadata.get("uid", ""), f"{where}.metadata.uid", allow_empty=True),
        labels=labels,
        annotations=annotations,
        request=request,
        node_name=node_name or None,
        priority=priority,
        is_placeholder=is_placeholder,
        placement_group=group or None,
        terminal=phase in _TERMINAL_PHASES,
        succeeded=phase == "Succeeded",
        pinned_cpu_milli=_pinned_cpu_milli(spec, config.gpu_resource),
    )


def _pinned_cpu_milli(spec: Mapping[str, Any], gpu_resource: str) -> int:
    """The CPUs kubelet's static CPU manager pins for the pod, in thousandths.

    Only a Guaranteed pod (every container, init containers included, with cpu and
    memory limits equal to its requests) gets exclusive CPUs, and of its containers
    only those asking for a whole number of CPUs (cpumanager `guaranteedCPUs`). Pod
    scope: the app containers summed, max with each init container. Burstable and
    BestEffort pods count 0: kubelet aligns only their devices. Pods with pod-level
    resources (`spec.resources`) count 0 too: how kubelet pins CPUs for them is not
    modelled. Restartable init containers (sidecars) are taken as init containers.
    The quantities were already validated by `pod_effective_request`.
    """
    if spec.get("resources"):
        return 0
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    whole_cpus: list[int] = []
    for container in [*init_containers, *containers]:
        resources = container.get("resources") or {}
        limits_raw = resources.get("limits") or {}
        requests_raw = resources.get("requests") or {}
        if "cpu" not in limits_raw or "memory" not in limits_raw:
            return 0  # not Guaranteed
        limits = resources_from_list(limits_raw, gpu_resource, "limits")
        requests = resources_from_list(requests_raw, gpu_resource, "requests")
        cpu = requests.cpu_milli if "cpu" in requests_raw else limits.cpu_milli
        memory = requests.memory_bytes if "memory" in requests_raw else limits.memory_bytes
        if cpu != limits.cpu_milli or memory != limits.memory_bytes:
            return 0  # not Guaranteed
        whole_cpus.append(cpu if cpu % 1000 == 0 else 0)
    init_count = len(init_containers)
    return max([sum(whole_cpus[init_count:]), *whole_cpus[:init_count]])


def parse_node(obj: Any, config: LocalityConfig, where: str = "node") -> Node:
    """A Node object to a `Node`: allocatable, placement group, instance type."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata = _object(obj.get("metadata"), f"{where}.metadata", required=True)
    spec = _object(obj.get("spec"), f"{where}.spec", required=False)
    status = _object(obj.get("status"), f"{where}.status", required=False)
    labels = _string_map(metadata.get("labels"), f"{where}.metadata.labels")
    allocatable = resources_from_list(
        status.get("allocatable"), config.gpu_resource, f"{where}.status.allocatable"
    )
    group = None
    for key in config.placement_group_labels:
        value = labels.get(key)
        if value:
            group = value
            break
    unschedulable = spec.get("unschedulable", False)
    if not isinstance(unschedulable, bool):
        raise InputError(f"{where}.spec.unschedulable: expected a boolean, got {unschedulable!r}")
    return Node(
        name=_string(metadata.get("name"), f"{where}.metadata.name"),
        labels=labels,
        allocatable=allocatable,
        placement_group=group,
        instance_type=labels.get(config.instance_type_label) or None,
        unschedulable=unschedulable,
        ready=_ready(status.get("conditions"), f"{where}.status.conditions"),
        blocking_taints=_blocking_taints(
            spec.get("taints"), config.unavailable_node_taints, f"{where}.spec.taints"
        ),
    )


def _ready(conditions: Any, where: str) -> bool:
    """The Ready condition's status is "True"; a node reporting no Ready condition counts
    as ready (objects built by hand, simulators)."""
    for index, condition in enumerate(_list(conditions, where)):
        condition = _object(condition, f"{where}[{index}]", required=True)
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def _blocking_taints(taints: Any, keys: tuple[str, ...], where: str) -> tuple[str, ...]:
    """Keys of the node's NoSchedule/NoExecute taints among `keys` (PreferNoSchedule
    only steers, so it never blocks)."""
    found: list[str] = []
    for index, taint in enumerate(_list(taints, where)):
        taint = _object(taint, f"{where}[{index}]", required=True)
        key, effect = taint.get("key"), taint.get("effect")
        # isinstance first: a malformed effect (a list) is not hashable for the set.
        hard = isinstance(effect, str) and effect in _HARD_EFFECTS
        if hard and isinstance(key, str) and key in keys and key not in found:
            found.append(key)
    return tuple(found)


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def parse_node_topology(
    obj: Any, config: LocalityConfig, where: str = "nodeResourceTopology"
) -> NodeTopology:
    """A NodeResourceTopology (topology.node.k8s.io/v1alpha2) to the node's NUMA zones.

    Zones of type `Node` (NUMA nodes; a zone without a type counts as one) become
    `NumaZone`s with `available` CPU and GPUs (falling back to `allocatable` when a
    resource has no `available`). Other zone types are ignored. The object is named
    after its node. Zones come out in NUMA-id order (NFD names them `node-<id>`; other
    names keep their place after those), the order kubelet breaks ties in
    (`NodeTopology.zone_for`).
    """
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata = _object(obj.get("metadata"), f"{where}.metadata", required=True)
    name = _string(metadata.get("name"), f"{where}.metadata.name")
    zones_raw = obj.get("zones")
    if zones_raw is None:
        zones_raw = []
    if not isinstance(zones_raw, list):
        raise InputError(f"{where}.zones: expected a list")
    zones: list[NumaZone] = []
    for index, zone in enumerate(zones_raw):
        zone_where = f"{where}.zones[{index}]"
        if not isinstance(zone, Mapping):
            raise InputError(f"{zone_where}: expected an object")
        zone_type = zone.get("type", "Node")
        if zone_type not in ("Node", None):
            continue
        zone_name = _string(zone.get("name"), f"{zone_where}.name")
        resources = zone.get("resources") or []
        if not isinstance(resources, list):
            raise InputError(f"{zone_where}.resources: expected a list")
        cpu_milli = 0
        gpu_milli = 0
        for r_index, resource in enumerate(resources):
            r_where = f"{zone_where}.resources[{r_index}]"
            if not isinstance(resource, Mapping):
                raise InputError(f"{r_where}: expected an object")
            resource_name = _string(resource.get("name"), f"{r_where}.name")
            if resource_name not in ("cpu", config.gpu_resource):
                continue
            field = "available" if resource.get("available") is not None else "allocatable"
            raw = resource.get(field)
            if raw is None:
                raise InputError(f"{r_where}.available: missing (and no allocatable)")
            milli = int(parse_resource_quantity(raw, f"{r_where}.{field}") * 1000)
            if resource_name == "cpu":
                cpu_milli = milli
            else:
                gpu_milli = milli
        zones.append(NumaZone(zone_name, cpu_milli, gpu_milli))
    zones.sort(key=_numa_id)
    return NodeTopology(name, tuple(zones))


def _numa_id(zone: NumaZone) -> int:
    prefix, _, number = zone.name.rpartition("-")
    if prefix == "node" and number.isdigit():
        return int(number)
    return 1 << 30  # unknown naming: after the numbered zones, in listed order (stable)


def _object(value: Any, where: str, required: bool) -> Mapping[str, Any]:
    if value is None:
        if required:
            raise InputError(f"{where}: missing")
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _string(value: Any, where: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty):
        raise InputError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected a map of strings")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise InputError(f"{where}.{key}: expected a string value, got {item!r}")
    return dict(value)

