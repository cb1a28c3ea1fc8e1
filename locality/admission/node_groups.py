"""Which node groups the admitter counts on, and which it cannot account for.

Decides: the configured groups (`admission.autoscaler.node_groups`) with each name that
holds `*` or `?` matched against the groups cluster-autoscaler's status lists (one group
per match, sized by CA; a pattern that matches none is kept as written when it has a
`max_size` to count by, else dropped: it describes no group, as when Karpenter, not CA,
runs), then the groups found elsewhere (Karpenter NodePools: `nodepools`) whose
names the configuration does not already use. A group CA's status lists that no
configured name matches is `unaccounted`: its nodes' type and domain are unknown, so
whether a job that fits nothing known could run after a scale-up is unknown too, and
`assign` releases such a job to the autoscaler rather than hold it.

Must not: do I/O, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from kube.autoscaler_status import GroupSize
from locality.admission.config import NodeGroup


@dataclass(frozen=True, slots=True)
class Resolved:
    groups: tuple[NodeGroup, ...]
    unaccounted: tuple[str, ...]
    """Names in CA's status that no group matches, sorted."""


def is_pattern(name: str) -> bool:
    return any(mark in name for mark in "*?[")


def resolve(configured: Sequence[NodeGroup], sizes: Mapping[str, GroupSize] | None,
            discovered: Iterable[NodeGroup] = ()) -> Resolved:
    """configured: the config's groups, in order. sizes: CA's status by group name (None:
    not read). discovered: groups found in the API. Cost: O(configured x listed)."""
    listed = sorted(sizes or {})
    groups: list[NodeGroup] = []
    for group in configured:
        if not is_pattern(group.name):
            groups.append(group)
            continue
        matches = [name for name in listed if fnmatchcase(name, group.name)]
        groups.extend(replace(group, name=name) for name in matches)
        if not matches and group.max_size is not None:
            groups.append(group)
    names = {group.name for group in groups}
    for group in discovered:
        if group.name not in names:
            groups.append(group)
            names.add(group.name)
    return Resolved(tuple(groups), tuple(name for name in listed if name not in names))
