"""The room of each domain at one topology level: free node room and nodes to come.

Decides: which nodes make up a domain (their label value at the level; nodes without
one belong to none and are counted as unlabeled), the free room of each node that takes
new pods (allocatable less its bound real pods: capacity held by placeholders counts
as free, real pods preempt them), and how many nodes of which shape the autoscaler can
still add to the domain: per node group, its maxSize less its current size as
cluster-autoscaler's status reports them (`bucketing.autoscaler_status`; the source
`autoscaler-status`), else the config's `max_size` less the nodes of its instance type
the domain has now (the source `config`), each with the group's `allocatable` or,
unset, that of a node of the same instance type in the cluster. A group with neither
counts for nothing and is named in `LevelRoom.notes`, as is a group with neither a
size in CA's status nor a configured `max_size`.

The label key a domain is selected by is the first of the level's keys its nodes carry
with the domain's value (the level's first key for a domain only node groups name).

Must not: read the clock, log, count pods that are not bound (reservations are
`assign`'s to pack).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bucketing.autoscaler_status import GroupSize
from bucketing.resources import Resources
from locality.admission.config import NodeGroup
from locality.config import LocalityConfig
from locality.model import NodeState
from locality.topology import domain_at, domains_of


@dataclass(frozen=True, slots=True)
class NewNodes:
    """Up to `count` nodes of `allocatable` that node group `group` can still add.
    source: where its size came from: `autoscaler-status` or `config`."""

    group: str
    allocatable: Resources
    count: int
    source: str = "config"


@dataclass(frozen=True, slots=True)
class DomainRoom:
    """One domain: the free room of its nodes that take new pods, and nodes to come."""

    value: str
    label_key: str
    free: tuple[Resources, ...]
    new_nodes: tuple[NewNodes, ...] = ()


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
) -> LevelRoom:
    """The room of every domain at `level`. sizes: node groups' sizes from CA's status,
    by name (None: not read). Cost: O(nodes + groups)."""
    index = next((i for i, entry in enumerate(locality.topology_levels) if entry.name == level),
                 None)
    keys = locality.level_labels(index) if index is not None else ()
    free: dict[str, list[Resources]] = {}
    key_of: dict[str, str] = {}
    count_of: dict[tuple[str, str], int] = {}  # (instance type, domain) -> nodes now
    shape_of: dict[str, Resources] = {}  # instance type -> a node's allocatable
    unlabeled = 0
    for state in nodes:
        node = state.node
        if node.instance_type is not None:
            shape_of.setdefault(node.instance_type, node.allocatable)
        value = domain_at(domains_of(node.domains, state.placement_group), level)
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
            rooms.append(state.free)
    new: dict[str, list[NewNodes]] = {}
    notes = []
    for group in groups:
        if group.level != level:
            continue
        shape = group.allocatable or shape_of.get(group.instance_type)
        if shape is None:
            notes.append(f"node group {group.name}: no allocatable configured and no "
                         f"{group.instance_type} node to copy it from; not counted")
            continue
        have = count_of.get((group.instance_type, group.domain), 0)
        reported = (sizes or {}).get(group.name)
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
        count_of[(group.instance_type, group.domain)] = have - taken
        if source == "config":
            current = taken
        if maximum - current > 0:
            new.setdefault(group.domain, []).append(
                NewNodes(group.name, shape, maximum - current, source))
            free.setdefault(group.domain, [])
            key_of.setdefault(group.domain, keys[0] if keys else level)
    domains = {
        value: DomainRoom(value, key_of[value], tuple(rooms), tuple(new.get(value, ())))
        for value, rooms in sorted(free.items())
    }
    return LevelRoom(level, domains, unlabeled, tuple(notes))
