"""Which room of a domain scale-out may grow gangs into while jobs wait for room.

Decides: what a job waiting for room (`no_fit`, `held`, `preempting`, `resizing`,
`scaling_in`) claims: every node and node group its pods may use (`locality.constraints`,
judged as the packer judges them: a node by its labels and taints, a group by the node
it would add, `pack.may_use`) in the domains it could be admitted into: the one its pods
already carry, else every domain of its level that could ever hold it at the smallest
size it may be admitted at (`assign`'s test for `inadmissible`, per domain); a
`preferred` job may be widened or released anywhere, so it claims what its pods may use
in every domain. Scale-out grows gangs into the rest of their domain's room
(`growth_room`): a job that could never use that room, another domain's or nodes its
pods may not use, does not hold a gang back, while room it could use is left to it.
A gang below the size it grows to whose room a claim reaches (`contested`) is held
back: growth announced for it is not likely to be used while that job waits.

Must not: read the clock, log, mutate its inputs (rooms are copied).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from locality.admission.pack import Bins, may_use
from locality.admission.snapshot import DomainRoom
from locality.constraints import PodConstraints
from locality.model import Pod


@dataclass(frozen=True, slots=True)
class Claim:
    """A waiting job's claim on room: its pods' constraints, and the nodes and node
    groups of the domains it could be admitted into (None: of every domain)."""

    constraints: frozenset[PodConstraints]
    nodes: frozenset[str] | None
    groups: frozenset[str] | None


def claim_of(pods: Sequence[Pod], domains: Iterable[DomainRoom] | None) -> Claim:
    """The claim of a job of `pods` that could be admitted into `domains` (None: any)."""
    constraints = frozenset(pod.constraints for pod in pods)
    if domains is None:
        return Claim(constraints, None, None)
    domains = list(domains)
    return Claim(constraints, frozenset(node.name for room in domains for node in room.nodes),
                 frozenset(new.group for room in domains for new in room.new_nodes))


def growth_room(bins: Bins, claims: Sequence[Claim]) -> Bins:
    """A copy of one domain's room less what `claims` could use: their rows withheld,
    their node groups' nodes to come taken out."""
    names = [node.name for node in bins.nodes]
    copy = bins.copy()
    withheld = np.zeros(len(bins.room), dtype=bool) if bins.withheld is None else \
        np.r_[bins.withheld, np.zeros(len(bins.room) - len(bins.withheld), dtype=bool)]
    for claim in claims:
        if not _covers(claim, names, bins):
            continue
        rows = np.ones(len(bins.room), dtype=bool)
        if claim.nodes is not None:  # rows opened this round are the domain's: claimed
            rows[:len(names)] = [name in claim.nodes for name in names]
        for constraints in claim.constraints:
            allowed = bins.allowed(constraints)
            withheld |= rows if allowed is None else rows & allowed
        for entry in copy.pool:
            if (claim.groups is None or entry[0] in claim.groups) and \
                    any(may_use(constraints, entry[3]) for constraints in claim.constraints):
                entry[2] = 0
    copy.withheld = withheld if withheld.any() else None
    return copy


def contested(bins: Bins, room: Bins, constraints: PodConstraints) -> bool:
    """Whether `room` (`growth_room(bins, ...)`) withholds from pods with `constraints`
    any of `bins`' room they may use: a row, or a node group's nodes to come."""
    if room.withheld is not None:
        allowed = bins.allowed(constraints)
        usable = room.withheld if allowed is None else room.withheld & allowed[:len(room.withheld)]
        if usable.any():
            return True
    return any(entry[2] > 0 and kept[2] == 0 and may_use(constraints, entry[3])
               for entry, kept in zip(bins.pool, room.pool, strict=True))


def _covers(claim: Claim, names: Sequence[str], bins: Bins) -> bool:
    """Whether the claim reaches this domain at all (a node or a node group of it)."""
    if claim.nodes is None or claim.groups is None:
        return True
    return any(name in claim.nodes for name in names) or \
        any(entry[0] in claim.groups for entry in bins.pool)
