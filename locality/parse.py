"""The edge: Kubernetes JSON (Pod, Node, NodeResourceTopology) to locality's dataclasses.

Reads only the fields the decisions need, so admission add-ons and unknown fields
never matter. A pod's request comes from `bucketing.resources.pod_effective_request`
(the one place that sum is written), with GPUs summed over `gpu_resources` and every
device kind (GPUs per vendor, MIG slices) kept apart. Malformed objects raise
`InputError` naming the field path (`pod.metadata.labels`,
`nodeResourceTopology.zones[1].resources[0].available`).

Must not: log, read the clock, or keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from bucketing.resources import (
    DeviceNames,
    Resources,
    combine_containers,
    container_request,
    parse_resource_quantity,
    pod_effective_request,
    resources_from_list,
)
from common.errors import InputError
from locality.config import LocalityConfig
from locality.model import Node, Pod
from locality.numa import (
    NO_NUMA_DEMAND,
    NodeTopology,
    NumaDemand,
    NumaZone,
    TopologyManagerPolicy,
    TopologyManagerScope,
)
from locality.parse_constraints import json_list, node_taints, pod_constraints
from locality.placeholders import controller_kind
from locality.placeholders import is_placeholder as placeholder_rule
from locality.pod_rules import pod_rules
from locality.topology import LevelKeys, node_domains

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
VOLCANO_PODGROUP_GROUP = "scheduling.volcano.sh"
COSCHEDULING_PODGROUP_GROUP = "scheduling.x-k8s.io"


def parse_pod(obj: Any, config: LocalityConfig, where: str = "pod") -> Pod:
    """A Pod object (as in an extender request or a watch event) to a `Pod`."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata = json_object(obj.get("metadata"), f"{where}.metadata", required=True)
    spec = json_object(obj.get("spec"), f"{where}.spec", required=True)
    status = json_object(obj.get("status"), f"{where}.status", required=False)
    labels = _string_map(metadata.get("labels"), f"{where}.metadata.labels")
    annotations = _string_map(metadata.get("annotations"), f"{where}.metadata.annotations")
    try:
        request = pod_effective_request(obj, config.gpu_resources, _device_names(config))
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
    preemption_policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
    if preemption_policy not in ("PreemptLowerPriority", "Never"):
        raise InputError(f"{where}.spec.preemptionPolicy: expected PreemptLowerPriority or "
                         f"Never, got {preemption_policy!r}")
    phase = status.get("phase")
    if phase is not None and not isinstance(phase, str):
        raise InputError(f"{where}.status.phase: expected a string, got {phase!r}")
    namespace = json_string(metadata.get("namespace", "default"), f"{where}.metadata.namespace")
    # The label alone is anyone's to write (locality.placeholders says what makes one).
    is_placeholder = placeholder_rule(
        labels, namespace, spec.get("priorityClassName"),
        controller_kind(metadata.get("ownerReferences")),
        namespaces=config.placeholder_namespaces,
        priority_class=config.placeholder_priority_class, label=config.placeholder_label)
    group = labels.get(config.placeholder_group_label) if is_placeholder else None
    numa = _numa_demand(spec, config.gpu_resources)
    scheduler_name = spec.get("schedulerName") or "default-scheduler"  # the API's default
    if not isinstance(scheduler_name, str):
        raise InputError(f"{where}.spec.schedulerName: expected a string, got {scheduler_name!r}")
    nominated = status.get("nominatedNodeName")
    if nominated is not None and not isinstance(nominated, str):
        raise InputError(
            f"{where}.status.nominatedNodeName: expected a string, got {nominated!r}")
    return Pod(
        namespace=namespace,
        name=json_string(metadata.get("name"), f"{where}.metadata.name"),
        uid=json_string(metadata.get("uid", ""), f"{where}.metadata.uid", allow_empty=True),
        labels=labels,
        annotations=annotations,
        request=request,
        node_name=node_name or None,
        priority=priority,
        preempts=preemption_policy != "Never",
        is_placeholder=is_placeholder,
        placement_group=group or None,
        terminal=phase in _TERMINAL_PHASES,
        succeeded=phase == "Succeeded",
        pinned_cpu_milli=numa.cpu_milli,
        numa=numa,
        claims=_claims(spec, status, where),
        pod_group=_pod_group(labels, annotations, config),
        scheduling_gates=_gate_names(spec.get("schedulingGates"), f"{where}.spec.schedulingGates"),
        created_at=rfc3339_seconds(metadata.get("creationTimestamp"),
                              f"{where}.metadata.creationTimestamp"),
        scheduler_name=scheduler_name,
        nominated_node_name=nominated or None,
        constraints=pod_constraints(spec, f"{where}.spec"),
        deleting=metadata.get("deletionTimestamp") is not None,
        controller=_controller(metadata.get("ownerReferences"),
                               f"{where}.metadata.ownerReferences"),
        ready=_pod_ready(status.get("conditions"), f"{where}.status.conditions"),
        rules=pod_rules(spec, labels, f"{where}.spec"),
    )


def _pod_ready(conditions: Any, where: str) -> bool:
    """The pod's `Ready` condition is True (absent: not Ready, as kubelet has not said)."""
    for index, condition in enumerate(json_list(conditions, where)):
        condition = json_object(condition, f"{where}[{index}]", required=True)
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _controller(references: Any, where: str) -> tuple[str, str] | None:
    """(kind, name) of the owner reference marked `controller: true`, if any."""
    for index, reference in enumerate(json_list(references, where)):
        reference = json_object(reference, f"{where}[{index}]", required=True)
        if reference.get("controller") is True:
            return (json_string(reference.get("kind"), f"{where}[{index}].kind"),
                    json_string(reference.get("name"), f"{where}[{index}].name"))
    return None


def _gate_names(gates: Any, where: str) -> tuple[str, ...]:
    names = []
    for index, gate in enumerate(json_list(gates, where)):
        entry = json_object(gate, f"{where}[{index}]", required=True)
        names.append(json_string(entry.get("name"), f"{where}[{index}].name"))
    return tuple(names)


def rfc3339_seconds(raw: Any, where: str) -> float:
    """An RFC 3339 timestamp (`2026-01-02T03:04:05Z`, as the API server writes them) to
    seconds since the epoch; 0 when absent."""
    if raw is None:
        return 0.0
    if not isinstance(raw, str):
        raise InputError(f"{where}: expected an RFC 3339 timestamp, got {raw!r}")
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{where}: expected an RFC 3339 timestamp, got {raw!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _numa_demand(spec: Mapping[str, Any], gpu_resources: tuple[str, ...]) -> NumaDemand:
    """What kubelet's Topology Manager aligns for the pod: per container and for the pod,
    its device-plugin GPUs and the CPUs the static CPU manager pins.

    Only a Guaranteed pod (every container, init containers included, with cpu and
    memory limits equal to its requests) gets exclusive CPUs, and of its containers
    only those asking for a whole number of CPUs (cpumanager `guaranteedCPUs`).
    Burstable and BestEffort pods pin no CPU: kubelet aligns only their devices. Pods
    with pod-level resources (`spec.resources`) pin none either: how kubelet pins CPUs
    for them is not modelled. Pod scope: the app containers summed, max with each init
    container (restartable init containers, sidecars, counted like init containers
    there, as before); container scope: init containers one by one, then sidecars
    and app containers in start order. The quantities were already validated by
    `pod_effective_request`.
    """
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    guaranteed = not spec.get("resources")
    gpus: list[int] = []
    pinned: list[int] = []
    for container in [*init_containers, *containers]:
        resources = container.get("resources") or {}
        limits_raw = resources.get("limits") or {}
        requests_raw = resources.get("requests") or {}
        gpus.append(container_request(container, gpu_resources).gpu_milli)
        if not guaranteed:
            pinned.append(0)
            continue
        if "cpu" not in limits_raw or "memory" not in limits_raw:
            guaranteed = False  # not Guaranteed
            pinned.append(0)
            continue
        limits = resources_from_list(limits_raw, gpu_resources, "limits")
        requests = resources_from_list(requests_raw, gpu_resources, "requests")
        cpu = requests.cpu_milli if "cpu" in requests_raw else limits.cpu_milli
        memory = requests.memory_bytes if "memory" in requests_raw else limits.memory_bytes
        if cpu != limits.cpu_milli or memory != limits.memory_bytes:
            guaranteed = False
        pinned.append(cpu if cpu % 1000 == 0 else 0)
    if not guaranteed:
        pinned = [0] * len(pinned)
    init_count = len(init_containers)
    units = list(zip(gpus, pinned, strict=True))
    init_units = units[:init_count]
    app_units = units[init_count:]
    sidecar_flags = [
        isinstance(container, Mapping) and container.get("restartPolicy") == "Always"
        for container in init_containers
    ]
    # Pod scope: the units combined the way the pod's request is (the one walk).
    pod_unit = combine_containers(
        [Resources(gpu, cpu) for gpu, cpu in app_units],
        [(Resources(gpu, cpu), flag)
         for (gpu, cpu), flag in zip(init_units, sidecar_flags, strict=True)],
    )
    pod_gpu, pod_cpu = pod_unit.gpu_milli, pod_unit.cpu_milli
    if pod_gpu == 0 and pod_cpu == 0:
        return NO_NUMA_DEMAND
    sidecars = [unit for unit, flag in zip(init_units, sidecar_flags, strict=True) if flag]
    plain_init = [unit for unit, flag in zip(init_units, sidecar_flags, strict=True) if not flag]
    return NumaDemand(
        (pod_gpu, pod_cpu),
        tuple(unit for unit in plain_init if unit != (0, 0)),
        tuple(unit for unit in [*sidecars, *app_units] if unit != (0, 0)),
    )


def _claims(
    spec: Mapping[str, Any], status: Mapping[str, Any], where: str
) -> tuple[tuple[str, str], ...]:
    """The pod's ResourceClaims (spec.resourceClaims): ("claim", name) for a claim by
    name or one generated from a template (its name is in status.resourceClaimStatuses),
    ("template", template name) while the generated claim's name is not known yet."""
    entries = json_list(spec.get("resourceClaims"), f"{where}.spec.resourceClaims")
    if not entries:
        return ()
    generated = {}
    for index, entry in enumerate(
        json_list(status.get("resourceClaimStatuses"), f"{where}.status.resourceClaimStatuses")
    ):
        entry = json_object(entry, f"{where}.status.resourceClaimStatuses[{index}]", required=True)
        name, claim = entry.get("name"), entry.get("resourceClaimName")
        if isinstance(name, str) and isinstance(claim, str) and claim:
            generated[name] = claim
    claims = []
    for index, entry in enumerate(entries):
        entry_where = f"{where}.spec.resourceClaims[{index}]"
        entry = json_object(entry, entry_where, required=True)
        name = entry.get("name")
        claim_name = entry.get("resourceClaimName")
        template = entry.get("resourceClaimTemplateName")
        if isinstance(claim_name, str) and claim_name:
            claims.append(("claim", claim_name))
        elif isinstance(template, str) and template:
            claim = generated.get(name) if isinstance(name, str) else None
            claims.append(("claim", claim) if claim else ("template", template))
    return tuple(claims)


def _pod_group(
    labels: Mapping[str, str], annotations: Mapping[str, str], config: LocalityConfig
) -> tuple[str, str] | None:
    """(API group, PodGroup name) of the pod's PodGroup: Volcano's annotation, else
    scheduler-plugins Coscheduling's label; None when it names none."""
    name = annotations.get(config.pod_group_annotation)
    if name:
        return (VOLCANO_PODGROUP_GROUP, name)
    name = labels.get(config.pod_group_label)
    if name:
        return (COSCHEDULING_PODGROUP_GROUP, name)
    return None


def parse_node(obj: Any, config: LocalityConfig, where: str = "node") -> Node:
    """A Node object to a `Node`: allocatable, placement group, instance type."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata = json_object(obj.get("metadata"), f"{where}.metadata", required=True)
    spec = json_object(obj.get("spec"), f"{where}.spec", required=False)
    status = json_object(obj.get("status"), f"{where}.status", required=False)
    labels = _string_map(metadata.get("labels"), f"{where}.metadata.labels")
    allocatable = resources_from_list(
        status.get("allocatable"), config.gpu_resources, f"{where}.status.allocatable",
        _device_names(config),
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
        name=json_string(metadata.get("name"), f"{where}.metadata.name"),
        labels=labels,
        allocatable=allocatable,
        placement_group=group,
        instance_type=labels.get(config.instance_type_label) or None,
        unschedulable=unschedulable,
        ready=_ready(status.get("conditions"), f"{where}.status.conditions"),
        blocking_taints=_blocking_taints(
            spec.get("taints"), config.unavailable_node_taints, f"{where}.spec.taints"
        ),
        domains=node_domains(labels, _level_keys(config)),
        taints=node_taints(spec.get("taints"), f"{where}.spec.taints"),
    )


@lru_cache(maxsize=8)
def _level_keys(config: LocalityConfig) -> LevelKeys:
    return LevelKeys.of(config)


@lru_cache(maxsize=8)
def _device_names(config: LocalityConfig) -> DeviceNames | None:
    return config.device_names


def _ready(conditions: Any, where: str) -> bool:
    """The Ready condition's status is "True"; a node reporting no Ready condition counts
    as ready (objects built by hand, simulators)."""
    for index, condition in enumerate(json_list(conditions, where)):
        condition = json_object(condition, f"{where}[{index}]", required=True)
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


_HARD_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def _blocking_taints(taints: Any, keys: tuple[str, ...], where: str) -> tuple[str, ...]:
    """Keys of the node's NoSchedule/NoExecute taints among `keys` (PreferNoSchedule
    only steers, so it never blocks)."""
    found: list[str] = []
    for index, taint in enumerate(json_list(taints, where)):
        taint = json_object(taint, f"{where}[{index}]", required=True)
        key, effect = taint.get("key"), taint.get("effect")
        # isinstance first: a malformed effect (a list) is not hashable for the set.
        hard = isinstance(effect, str) and effect in _HARD_EFFECTS
        if hard and isinstance(key, str) and key in keys and key not in found:
            found.append(key)
    return tuple(found)


def parse_node_topology(
    obj: Any, config: LocalityConfig, where: str = "nodeResourceTopology"
) -> NodeTopology:
    """A NodeResourceTopology (topology.node.k8s.io/v1alpha2) to the node's NUMA zones.

    Zones of type `Node` (NUMA nodes; a zone without a type counts as one) become
    `NumaZone`s with `available` CPU and GPUs (falling back to `allocatable` when a
    resource has no `available`) and their `capacity` (else `allocatable`); the GPUs
    are summed over `gpu_resources`. Other zone types are ignored. The object is named
    after its node. Zones come out in NUMA-id order (NFD names them `node-<id>`; other
    names keep their place after those), the order kubelet breaks ties in.

    The Topology Manager settings come from the `attributes` NFD's topology updater
    publishes (`topologyManagerPolicy`, `topologyManagerScope`), else from the
    deprecated `topologyPolicies` field (`SingleNUMANodePodLevel` ...), else the
    configured defaults; unknown values count as absent, as in scheduler-plugins'
    nodeconfig.
    """
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata = json_object(obj.get("metadata"), f"{where}.metadata", required=True)
    name = json_string(metadata.get("name"), f"{where}.metadata.name")
    zones_raw = obj.get("zones")
    if zones_raw is None:
        zones_raw = []
    if not isinstance(zones_raw, list):
        raise InputError(f"{where}.zones: expected a list")
    gpu_names = frozenset(config.gpu_resources)
    zones: list[NumaZone] = []
    gpu_reported = False
    for index, zone in enumerate(zones_raw):
        zone_where = f"{where}.zones[{index}]"
        if not isinstance(zone, Mapping):
            raise InputError(f"{zone_where}: expected an object")
        zone_type = zone.get("type", "Node")
        if zone_type not in ("Node", None):
            continue
        zone_name = json_string(zone.get("name"), f"{zone_where}.name")
        resources = zone.get("resources") or []
        if not isinstance(resources, list):
            raise InputError(f"{zone_where}.resources: expected a list")
        free = {"cpu": 0, "gpu": 0}
        capacity: dict[str, int | None] = {"cpu": None, "gpu": None}
        for r_index, resource in enumerate(resources):
            r_where = f"{zone_where}.resources[{r_index}]"
            if not isinstance(resource, Mapping):
                raise InputError(f"{r_where}: expected an object")
            resource_name = json_string(resource.get("name"), f"{r_where}.name")
            if resource_name == "cpu":
                dim = "cpu"
            elif resource_name in gpu_names:
                dim = "gpu"
                gpu_reported = True
            else:
                continue
            field = "available" if resource.get("available") is not None else "allocatable"
            raw = resource.get(field)
            if raw is None:
                raise InputError(f"{r_where}.available: missing (and no allocatable)")
            free[dim] += _milli(raw, f"{r_where}.{field}")
            cap_field = "capacity" if resource.get("capacity") is not None else "allocatable"
            cap_raw = resource.get(cap_field)
            if cap_raw is not None:
                capacity[dim] = (capacity[dim] or 0) + _milli(cap_raw, f"{r_where}.{cap_field}")
        zones.append(NumaZone(zone_name, free["cpu"], free["gpu"], capacity["cpu"],
                              capacity["gpu"]))
    zones.sort(key=_numa_id)
    policy, scope = _topology_manager(obj, config, where)
    return NodeTopology(name, tuple(zones), policy, scope, gpu_reported)


def _milli(raw: Any, where: str) -> int:
    return int(parse_resource_quantity(raw, where) * 1000)


_LEGACY_POLICIES: dict[str, tuple[TopologyManagerPolicy, TopologyManagerScope]] = {
    "SingleNUMANodePodLevel": (TopologyManagerPolicy.SINGLE_NUMA_NODE, TopologyManagerScope.POD),
    "SingleNUMANodeContainerLevel": (
        TopologyManagerPolicy.SINGLE_NUMA_NODE, TopologyManagerScope.CONTAINER),
    "BestEffortPodLevel": (TopologyManagerPolicy.BEST_EFFORT, TopologyManagerScope.POD),
    "BestEffortContainerLevel": (
        TopologyManagerPolicy.BEST_EFFORT, TopologyManagerScope.CONTAINER),
    "RestrictedPodLevel": (TopologyManagerPolicy.RESTRICTED, TopologyManagerScope.POD),
    "RestrictedContainerLevel": (
        TopologyManagerPolicy.RESTRICTED, TopologyManagerScope.CONTAINER),
}


def _topology_manager(
    obj: Mapping[str, Any], config: LocalityConfig, where: str
) -> tuple[TopologyManagerPolicy, TopologyManagerScope]:
    """The node's Topology Manager policy and scope (see `parse_node_topology`)."""
    policy, scope = config.numa_default_policy, config.numa_default_scope
    legacy = json_list(obj.get("topologyPolicies"), f"{where}.topologyPolicies")
    if legacy and isinstance(legacy[0], str) and legacy[0] in _LEGACY_POLICIES:
        # Deprecated since NRT v1alpha2; scheduler-plugins reads it before the attributes.
        policy, scope = _LEGACY_POLICIES[legacy[0]]
    for index, attribute in enumerate(json_list(obj.get("attributes"), f"{where}.attributes")):
        attribute = json_object(attribute, f"{where}.attributes[{index}]", required=True)
        name, value = attribute.get("name"), attribute.get("value")
        if not isinstance(value, str):
            continue  # not a value scheduler-plugins accepts either: the default stands
        if name == "topologyManagerPolicy" and value in _POLICY_VALUES:
            policy = TopologyManagerPolicy(value)
        elif name == "topologyManagerScope" and value in _SCOPE_VALUES:
            scope = TopologyManagerScope(value)
    return policy, scope


_POLICY_VALUES = frozenset(policy.value for policy in TopologyManagerPolicy)
_SCOPE_VALUES = frozenset(scope.value for scope in TopologyManagerScope)


def _numa_id(zone: NumaZone) -> int:
    prefix, _, number = zone.name.rpartition("-")
    if prefix == "node" and number.isdigit():
        return int(number)
    return 1 << 30  # unknown naming: after the numbered zones, in listed order (stable)


def json_object(value: Any, where: str, required: bool = False) -> Mapping[str, Any]:
    """`value` as a JSON object ({} when null and not required); InputError naming
    `where` otherwise. Shared by the parsers of the other kinds (`locality.dra`,
    `locality.podgroups`)."""
    if value is None:
        if required:
            raise InputError(f"{where}: missing")
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def json_string(value: Any, where: str, allow_empty: bool = False) -> str:
    """`value` as a (non-empty) string; InputError naming `where` otherwise."""
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

