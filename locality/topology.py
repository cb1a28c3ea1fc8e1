"""Topology levels: which domain a node is in at each level, where a job lives, and how
well a node keeps the job together.

Levels come from `LocalityConfig.topology_levels`, widest first (EKS network layers,
GKE block and sub-block, the placement group, the NVLink clique). A node's domain at a
level is the value of the first of the level's label keys it carries; a label key
listed by several levels belongs to the widest one (the placement-group list's GKE
fallback `cloud.google.com/gce-topology-block` is the block level's, so on GKE the
placement-group level is empty unless a placement-group label is set). Domain values
must identify a domain on their own: cloud labels do (network-node ids, block hashes,
clique ids); a home-made `rack-1` repeated in two blocks would merge the two racks.

The score's topology term follows Kueue's Topology Aware Scheduling, which admits a
job at the lowest (narrowest) level where one domain holds all of it, walking up when
none does. For a job with no pod placed yet, the target is the narrowest level where
some domain can hold the job's remaining pods (first-fit over the domain's nodes, as
`NodeTable.fit_job_into_groups`); for a placed job, its home domains (the
coordinator's, else the most populated) at each level where it has one. The term is
3 for a node in a target domain of the narrowest such level, 2 one level up, 1 further
up, 0 outside: a job's first pod never enters a domain too small for the rest when a
big enough one exists, at any level.

Must not: parse JSON, log, read the clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from locality.config import PLACEMENT_GROUP_LEVEL, LocalityConfig

Domains = tuple[tuple[str, str], ...]
"""(level name, domain) for the levels a node has a label of, widest first."""

TOPOLOGY_MAX = 3
"""The topology score term for a node in a target domain of the narrowest target level."""


@dataclass(frozen=True, slots=True)
class LevelKeys:
    """Each level's name and the label keys that are its own (deduplicated), widest first."""

    levels: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def of(cls, config: LocalityConfig) -> LevelKeys:
        seen: set[str] = set()
        levels = []
        for index, level in enumerate(config.topology_levels):
            keys = tuple(key for key in config.level_labels(index) if key not in seen)
            seen.update(keys)
            levels.append((level.name, keys))
        return cls(tuple(levels))


def node_domains(labels: Mapping[str, str], keys: LevelKeys) -> Domains:
    """The node's (level, domain) pairs, from its labels."""
    found = []
    for level, level_keys in keys.levels:
        for key in level_keys:
            value = labels.get(key)
            if value:
                found.append((level, value))
                break
    return tuple(found)


def domains_of(domains: Domains, placement_group: str | None) -> Domains:
    """A node's domains; a node built without them (tests, the simulator) has only its
    placement group."""
    if domains or placement_group is None:
        return domains
    return ((PLACEMENT_GROUP_LEVEL, placement_group),)


def domain_at(domains: Domains, level: str) -> str | None:
    for name, value in domains:
        if name == level:
            return value
    return None


def homes(
    pods: Mapping[tuple[str, str], int],
    coordinator_pods: Mapping[tuple[str, str], int],
    level_order: tuple[str, ...],
) -> dict[str, str]:
    """Per level, the job's home domain: the one holding its coordinator pods (PS, or a
    chief when the job has no PS) when they are placed, else the one holding most of
    its placed pods; ties go to the smallest name.

    pods, coordinator_pods: (level, domain) -> the job's placed pods there, all of them
    and its coordinators (`locality.layout.JobLayout.domains_of`).
    """
    best_centre: dict[str, tuple[int, str]] = {}
    best_all: dict[str, tuple[int, str]] = {}
    for (level, value), count in coordinator_pods.items():
        key = (-count, value)
        if count > 0 and (level not in best_centre or key < best_centre[level]):
            best_centre[level] = key
    for (level, value), count in pods.items():
        key = (-count, value)
        if count > 0 and (level not in best_all or key < best_all[level]):
            best_all[level] = key
    return {
        level: (best_centre.get(level) or best_all[level])[1]
        for level in level_order if level in best_all
    }


def most_common(counts: Counter[str]) -> str | None:
    if not counts:
        return None
    # Most pods first, then the name, so the choice does not depend on dict order.
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


def targets_from_homes(
    found: Mapping[str, str], level_order: tuple[str, ...]
) -> tuple[tuple[str, frozenset[str]], ...]:
    """The score's targets for a placed job: its home domain at each level, narrowest first."""
    return tuple(
        (level, frozenset((found[level],))) for level in reversed(level_order) if level in found
    )


def targets_from_holding(
    holding: Mapping[str, frozenset[str]], level_order: tuple[str, ...]
) -> tuple[tuple[str, frozenset[str]], ...]:
    """The score's targets for a job's first pod: the domains that can hold the job at
    each level where some can, narrowest first."""
    return tuple(
        (level, holding[level]) for level in reversed(level_order) if holding.get(level)
    )
