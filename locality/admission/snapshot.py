"""The room of each domain at one topology level: free node room and nodes to come.

Decides: which nodes make up a domain (their label value at the level; nodes without
one belong to none and are counted as unlabeled), the free room of each node that takes
new pods (allocatable less its bound real pods: capacity held by placeholders counts
as free, real pods preempt them), and how many nodes of which shape the autoscaler can
still add to the domain: per node group, its maxSize less its current size as
cluster-autoscaler's status reports them (`kube.autoscaler_status`; the source
`autoscaler-status`), else the config's `max_size` less the nodes of its instance type
the domain has now (the source `config`), each with the group's `allocatable` or,
unset, that of a node of the same instance type in the cluster, else the catalog's
(`shapes`). A group with none of these counts for nothing and is named in
`LevelRoom.notes`, as is a group with neither a size in CA's status nor a configured
`max_size`. A Karpenter NodePool's group (`nodepools`) adds what its limits leave
(`NodeGroup.can_add`, the source `nodepool`), whatever nodes exist.

The label key a domain is selected by is the first of the level's keys its nodes carry
with the domain's value (the level's first key for a domain only node groups name).

Each room keeps its nodes (labels, taints) beside their free room, and each node group a
template of the node it would add (its configured labels and taints, else a node of its
instance type, from its domain when there is one, relabelled into the group's domain,
else only the instance type and domain labels: `new_node_template`), so the packer
counts for a pod only the nodes it may use (`locality.constraints`). `capacity` is the
same nodes' allocatable, as if no pod ran: a job that does not fit a domain even then,
with every node its groups can add, never will (`assign`: inadmissible).

The level `cluster` (`CLUSTER_LEVEL`) is one domain of every node and every node group,
whatever their level: what a job released without a domain can use.

Must not: read the clock, log, count pods that are not bound (reservations are
`assign`'s to pack).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bucketing.resources import Resources
from kube.autoscaler_status import GroupSize
from locality.admission.config import NodeGroup
from locality.config import LocalityConfig
from locality.model import Node, NodeState
from locality.topology import domain_at, domains_of

CLUSTER_LEVEL = "cluster"
"""The widest level: one domain, `cluster`, of every node."""


@dataclass(frozen=True, slots=True)
class NewNodes:
    """Up to `count` nodes of `allocatable` that node group `group` can still add.
    source: where its size came from: `autoscaler-status`, `config` or `nodepool`."""

    group: str
    allocatable: Resources
    count: int
    source: str = "config"
    template: Node | None = None
    """The node it adds, as pods' constraints see it (None: no labels, no taints)."""
    at_most: int | None = None
    """Nodes it could add at most beyond those that exist (its maximum less the nodes
    seen: nodes being launched count here, not in `count`); None: `count`."""


@dataclass(frozen=True, slots=True)
class DomainRoom:
    """One domain: the free room of its nodes that take new pods, and nodes to come."""

    value: str
    label_key: str
    free: tuple[Resources, ...]
    new_nodes: tuple[NewNodes, ...] = ()
    nodes: tuple[Node, ...] = ()
    """The nodes of `free`, row for row."""

    @property
    def capacity(self) -> tuple[Resources, ...]:
        """The same nodes' allocatable (free as if no pod ran)."""
        return tuple(node.allocatable for node in self.nodes)


@dataclass(frozen=True, slots=True)
class LevelRoom:
    level: str
    domains: Mapping[str, DomainRoom]
    unlabeled: int = 0
    """Nodes with no domain at this level (they hold nothing for a job placed here)."""
    notes: tuple[str, ...] = ()


def level_room(
    nodes: Iterable[NodeState],
    level: str,
    locality: LocalityConfig,
    groups: Sequence[NodeGroup] = (),
    sizes: Mapping[str, GroupSize] | None = None,
    shapes: Mapping[str, Resources] | None = None,
) -> LevelRoom:
    """The room of every domain at `level`. sizes: node groups' sizes from CA's status,
    by name (None: not read). shapes: one node's allocatable by instance type, for a
    group with none configured and no node of its type (the built-in catalogs).
    Cost: O(nodes + groups)."""
    index = next((i for i, entry in enumerate(locality.topology_levels) if entry.name == level),
                 None)
    keys = locality.level_labels(index) if index is not None else ()
    cluster = level == CLUSTER_LEVEL
    free: dict[str, list[NodeState]] = {}
    key_of: dict[str, str] = {}
    count_of: dict[tuple[str, str], int] = {}  # (instance type, domain) -> nodes now
    sample_of: dict[tuple[str, str | None], Node] = {}  # (type, domain or None) -> a node
    unlabeled = 0
    for state in nodes:
        node = state.node
        value = CLUSTER_LEVEL if cluster else \
            domain_at(domains_of(node.domains, state.placement_group), level)
        if node.instance_type is not None:
            sample_of.setdefault((node.instance_type, None), node)
            if value is not None:
                sample_of.setdefault((node.instance_type, value), node)
        if value is None:
            unlabeled += 1
            continue
        rooms = free.setdefault(value, [])
        if value not in key_of:
            key_of[value] = next((k for k in keys if node.labels.get(k) == value),
                                 keys[0] if keys else level)
        if node.instance_type is not None:
            pair = (node.instance_type, value)
            count_of[pair] = count_of.get(pair, 0) + 1
        if node.takes_new_pods:
            rooms.append(state)
    new: dict[str, list[NewNodes]] = {}
    notes = []
    for group in groups:
        if group.level != level and not cluster:
            continue
        sample = sample_of.get((group.instance_type, group.domain)) or \
            sample_of.get((group.instance_type, None))
        shape = group.allocatable or (sample.allocatable if sample else None) or \
            (shapes or {}).get(group.instance_type)
        if shape is None:
            notes.append(f"node group {group.name}: no allocatable configured, no "
                         f"{group.instance_type} node to copy it from and no catalog entry; "
                         "not counted")
            continue
        domain = CLUSTER_LEVEL if cluster else group.domain
        have = count_of.get((group.instance_type, domain), 0)
        reported = (sizes or {}).get(group.name)
        if group.can_add is not None:  # a NodePool's limits: whatever exists already
            if group.can_add > 0:
                new.setdefault(domain, []).append(NewNodes(
                    group.name, shape, group.can_add, "nodepool",
                    new_node_template(group, shape, sample, locality, keys), group.can_add))
                free.setdefault(domain, [])
                key_of.setdefault(domain, keys[0] if keys else level)
            continue
        if reported is not None:
            maximum, current, source = reported.max_size, reported.current, "autoscaler-status"
        elif group.max_size is not None:
            maximum, current, source = group.max_size, have, "config"
        else:
            notes.append(f"node group {group.name}: cluster-autoscaler's status does not list "
                         "it and no max_size is configured; not counted")
            continue
        # Several groups of one type in one domain share the nodes seen: charge them
        # to the groups in order.
        taken = min(have, current, maximum)
        count_of[(group.instance_type, domain)] = have - taken
        if source == "config":
            current = taken
        if maximum - taken > 0:  # room now (count), or once launched nodes exist
            template = new_node_template(group, shape, sample, locality, keys)
            new.setdefault(domain, []).append(NewNodes(
                group.name, shape, max(0, maximum - current), source, template,
                maximum - taken))
            free.setdefault(domain, [])
            key_of.setdefault(domain, keys[0] if keys else level)
    domains = {
        value: DomainRoom(value, key_of[value], tuple(s.free for s in states),
                          tuple(new.get(value, ())), tuple(s.node for s in states))
        for value, states in sorted(free.items())
    }
    return LevelRoom(level, domains, unlabeled, tuple(notes))


def new_node_template(group: NodeGroup, shape: Resources, sample: Node | None,
                      locality: LocalityConfig, keys: Sequence[str]) -> Node:
    """The node `group` adds, as constraints see it. A group that configures `labels` or
    `taints` describes its template: those (the other half empty), with the domain
    label added when none of the level's keys is among them. Else a copy of
    `sample`, a node of its instance type (in its domain when there is one), with the
    group's domain set on the level's label keys (the first, and any other the sample
    carries); with no sample, no taints. The instance type label is always set."""
    if group.labels is not None or group.taints is not None:
        labels = dict(group.labels or {})
        taints = group.taints or ()
        if keys and not any(key in labels for key in keys):
            labels[keys[0]] = group.domain  # its nodes carry the domain they are in
    else:
        labels = dict(sample.labels) if sample is not None else {}
        for index, key in enumerate(keys):
            if index == 0 or key in labels:
                labels[key] = group.domain
        taints = sample.taints if sample is not None else ()
    labels.setdefault(locality.instance_type_label, group.instance_type)
    return Node(name=f"(a new {group.name} node)", labels=labels, allocatable=shape,
                instance_type=group.instance_type, taints=taints)
