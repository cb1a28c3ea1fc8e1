"""The node groups Karpenter's NodePools stand for: what each can still launch, where.

Decides, per NodePool (`karpenter.sh/v1`) and per instance type its requirements list
(`node.kubernetes.io/instance-type` In [...], or the template's label), one node group
named `POOL/TYPE`:
- its template: the pool's template labels, the single-valued `In` requirements (the
  label every node it launches carries), `karpenter.sh/nodepool` and the type; the
  template's taints (startup taints are lifted once the node is up, as Karpenter's own
  scheduling simulation assumes);
- its domain: the first topology level, `placement-group` first, one of whose keys that
  template fixes; none fixed: it adds nodes to the `cluster` level only;
- one node's room: a node of that type in the cluster (its allocatable), else the
  catalog's (`shapes`, the built-in aws and gcp catalogs);
- how many nodes it can add (`NodeGroup.can_add`): for each resource the pool limits
  (`cpu`, `memory`, a GPU resource, `nodes`), what is left of the limit (less
  `status.resources`) over one node's amount, the least of them; a pool without limits
  can add `UNLIMITED_NODES`. Karpenter counts capacity against limits, this counts
  allocatable: at most a node more than Karpenter would launch, near a limit.
A pool whose types are not listed (chosen by family, size or not at all), a type with
no node and no catalog entry, or a pool Karpenter does not report Ready is named in
`unknown`: what it can add is not known, so jobs it might serve are released rather than
held (`assign`).

Must not: do I/O, log, read the clock, raise on a malformed NodePool (it is named in
`unknown` with what is wrong).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, parse_resource_quantity
from common.errors import InputError
from locality.admission.config import NodeGroup
from locality.admission.snapshot import CLUSTER_LEVEL
from locality.config import LocalityConfig
from locality.model import Node
from locality.parse_constraints import node_taints

NODEPOOL_LABEL = "karpenter.sh/nodepool"
UNLIMITED_NODES = 1000
"""What a pool without limits can add, for the admitter's count: more than any job."""


@dataclass(frozen=True, slots=True)
class Discovered:
    groups: tuple[NodeGroup, ...]
    unknown: tuple[str, ...]
    """Pools (or pool/type pairs) whose room is not known, each with why."""


def nodepool_groups(pools: Sequence[Mapping[str, Any]], nodes: Iterable[Node],
                    locality: LocalityConfig, shapes: Mapping[str, Resources]) -> Discovered:
    """pools: NodePool objects as the API returns them. nodes: the cluster's nodes (a
    node of a type gives its room). shapes: allocatable by instance type (catalogs).
    Cost: O(pools x types + nodes)."""
    sample: dict[str, Resources] = {}
    used: dict[str, Resources] = {}
    counted: dict[str, int] = {}
    for node in nodes:
        if node.instance_type is not None:
            sample.setdefault(node.instance_type, node.allocatable)
        pool = node.labels.get(NODEPOOL_LABEL)
        if pool is not None:
            used[pool] = used.get(pool, Resources()) + node.allocatable
            counted[pool] = counted.get(pool, 0) + 1
    groups: list[NodeGroup] = []
    unknown: list[str] = []
    for index, pool in enumerate(pools):
        name = _name(pool, index)
        try:
            found, why = _pool(pool, name, locality, sample, shapes, used, counted)
        except InputError as error:
            unknown.append(f"NodePool {name}: {error}")
            continue
        groups.extend(found)
        unknown.extend(f"NodePool {name}: {reason}" for reason in why)
    return Discovered(tuple(groups), tuple(unknown))


def _name(pool: Mapping[str, Any], index: int) -> str:
    metadata = pool.get("metadata") if isinstance(pool, Mapping) else None
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) and name else f"#{index}"


def _pool(pool: Any, name: str, locality: LocalityConfig, sample: Mapping[str, Resources],
          shapes: Mapping[str, Resources], used: Mapping[str, Resources],
          counted: Mapping[str, int]) -> tuple[list[NodeGroup], list[str]]:
    where = f"NodePool {name}"
    spec = _mapping(pool.get("spec") if isinstance(pool, Mapping) else None, "spec")
    template = _mapping(spec.get("template"), "spec.template")
    metadata = _mapping(template.get("metadata"), "spec.template.metadata")
    pod_spec = _mapping(template.get("spec"), "spec.template.spec")
    status = _mapping(pool.get("status"), "status")
    if not _ready(status):
        return [], ["Karpenter does not report it Ready (its NodeClass may not be ready)"]
    labels = {str(k): str(v) for k, v in _mapping(metadata.get("labels"),
                                                 "spec.template.metadata.labels").items()}
    types: set[str] | None = None
    type_label = locality.instance_type_label
    requirements = pod_spec.get("requirements") or []
    if not isinstance(requirements, list):
        raise InputError("spec.template.spec.requirements: expected a list")
    for position, requirement in enumerate(requirements):
        at = f"spec.template.spec.requirements[{position}]"
        requirement = _mapping(requirement, at)
        key, operator = requirement.get("key"), requirement.get("operator")
        values = requirement.get("values") or []
        if not isinstance(key, str) or not isinstance(values, list):
            raise InputError(f"{at}: expected a key and a list of values")
        if operator != "In":
            continue
        if len(values) == 1:
            labels.setdefault(key, str(values[0]))
        if key == type_label:
            listed = {str(value) for value in values}
            types = listed if types is None else types & listed
    if type_label in labels:
        types = {labels[type_label]} if types is None else types & {labels[type_label]}
    if not types:
        return [], [f"its instance types are not listed ({type_label} In [...]): what "
                    "it launches is Karpenter's choice"]
    taints = node_taints(pod_spec.get("taints") or [], f"{where}: spec.template.spec.taints")
    labels[NODEPOOL_LABEL] = name
    level, domain = _domain(labels, locality)
    limits = _mapping(spec.get("limits"), "spec.limits")
    usage = _mapping(status.get("resources"), "status.resources") or None
    groups, why = [], []
    for instance_type in sorted(types):
        shape = sample.get(instance_type) or shapes.get(instance_type)
        if shape is None:
            why.append(f"no {instance_type} node and no catalog entry to size one")
            continue
        can_add = _can_add(limits, usage, shape, locality.gpu_resources,
                           used.get(name, Resources()), counted.get(name, 0))
        groups.append(NodeGroup(
            name=f"{name}/{instance_type}", instance_type=instance_type, domain=domain,
            level=level, allocatable=shape, labels={**labels, type_label: instance_type},
            taints=taints, can_add=can_add))
    return groups, why


def what_counts(pool: Any) -> tuple[Any, Any, Any, bool]:
    """The part of a NodePool its node groups are computed from: name, spec,
    `status.resources` and readiness. Two reads equal here give the same groups, so the
    admitter replans only when this changes, not on every status write (a condition's
    heartbeat, a resourceVersion)."""
    if not isinstance(pool, Mapping):
        return (None, None, None, False)
    metadata = pool.get("metadata")
    status = pool.get("status")
    status = status if isinstance(status, Mapping) else {}
    return (metadata.get("name") if isinstance(metadata, Mapping) else None,
            pool.get("spec"), status.get("resources"), _ready(status))


def _ready(status: Mapping[str, Any]) -> bool:
    """False only when the pool reports a Ready condition that is not True (a pool that
    reports none yet, as before Karpenter's first reconcile, counts)."""
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


def _domain(labels: Mapping[str, str], locality: LocalityConfig) -> tuple[str, str]:
    """The first level, placement-group first, whose label the template fixes."""
    order = [locality.placement_group_level] + [
        i for i in range(len(locality.topology_levels))
        if i != locality.placement_group_level]
    for index in order:
        for key in locality.level_labels(index):
            if key in labels:
                return locality.topology_levels[index].name, labels[key]
    return CLUSTER_LEVEL, CLUSTER_LEVEL


def _can_add(limits: Mapping[str, Any], usage: Mapping[str, Any] | None, shape: Resources,
             gpu_resources: Sequence[str], used: Resources, nodes: int) -> int:
    """Nodes of `shape` the pool's limits leave room for. usage: the pool's
    status.resources (None: the sum of its nodes' allocatable, `used`, and `nodes`)."""
    least = UNLIMITED_NODES
    for key, raw in limits.items():
        limit = parse_resource_quantity(raw, f"spec.limits.{key}")
        if key == "nodes":
            per_node, have = 1, _used(usage, key, nodes)
        elif key == "cpu":
            per_node, have = shape.cpu_milli / 1000, _used(usage, key, used.cpu_milli / 1000)
        elif key == "memory":
            per_node, have = shape.memory_bytes, _used(usage, key, used.memory_bytes)
        elif key in gpu_resources:
            per_node, have = shape.gpu_milli / 1000, _used(usage, key, used.gpu_milli / 1000)
        else:
            continue
        if per_node > 0:
            least = min(least, max(0, int((float(limit) - have) // per_node)))
    return least


def _used(usage: Mapping[str, Any] | None, key: str, fallback: float) -> float:
    if usage is None:
        return fallback
    raw = usage.get(key)
    return 0.0 if raw is None else float(parse_resource_quantity(raw, f"status.resources.{key}"))


def _mapping(raw: Any, where: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected an object")
    return raw

