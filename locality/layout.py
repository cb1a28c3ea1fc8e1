"""Where a job's placed pods are, summed per role, node, placement group and topology
domain: what the decision context reads about the job's placement.

Why: every filter and prioritize call asks where the pod's job is (its home group and
domains, the nodes of its centre and of its workers). Summing that from the job's
placed pods costs O(job's nodes) per request: for a job of 4,096 pods on 512 nodes,
most of the request's own work (bench/bench_job_size.py). A `JobLayout` holds the sums
and is changed by one placed pod at a time (`add`, O(levels)); the extender's cache
keeps one per job beside its running totals (`locality.tally`), and a request copies
it and adds its few corrections (the pod being scheduled, binds in flight).

The sums, over (node, role) -> placed pods:
- nodes: node -> pods; role_nodes: role -> node -> pods;
- role_groups: role -> placement group -> pods, and role_domains: role ->
  (level, domain) -> pods, over nodes the cluster knows (`Where` gives None for a node
  it does not), launchers left out (a launcher joins no collective, so it decides no
  home).

A layout reads each node's group and domains when a pod is added there; when a node's
labels change (or a node comes or goes) the owner rebuilds its layouts (`of`).

Must not: read the clock, log, look at other jobs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from locality.model import NodeState, Role
from locality.topology import Domains, domains_of

Where = Callable[[str], tuple[str | None, Domains] | None]
"""Node name -> (its placement group, its domains at every level), None when unknown."""


def place_of(state: NodeState) -> tuple[str | None, Domains]:
    """The node's placement group and its domains at every level."""
    group = state.placement_group
    return group, state.node.domains or domains_of((), group)


def where_in(cluster: Mapping[str, NodeState]) -> Where:
    """`Where` for a mapping of node states."""

    def where(node_name: str) -> tuple[str | None, Domains] | None:
        state = cluster.get(node_name)
        return None if state is None else place_of(state)

    return where


class JobLayout:
    """The sums of one job's placed pods (module docstring). Mutable: one owner. Plain
    dicts, not Counters: the simulator builds one per scheduling decision."""

    __slots__ = ("where", "nodes", "role_nodes", "role_groups", "role_domains")

    def __init__(self, where: Where) -> None:
        self.where = where
        self.nodes: dict[str, int] = {}
        self.role_nodes: dict[Role, dict[str, int]] = {}
        self.role_groups: dict[Role, dict[str, int]] = {}
        self.role_domains: dict[Role, dict[tuple[str, str], int]] = {}

    @classmethod
    def of(cls, placed_on: Iterable[tuple[tuple[str, Role], int]], where: Where) -> JobLayout:
        """The layout of `placed_on` ((node, role), pods) pairs: `add` for each, inlined
        (the simulator builds a layout for every scheduling decision)."""
        layout = cls(where)
        nodes, role_nodes = layout.nodes, layout.role_nodes
        role_groups, role_domains = layout.role_groups, layout.role_domains
        for (node_name, role), count in placed_on:
            if count <= 0:
                if count:
                    layout.add(node_name, role, count)
                continue
            nodes[node_name] = nodes.get(node_name, 0) + count
            of_role = role_nodes.get(role)
            if of_role is None:
                of_role = role_nodes[role] = {}
            of_role[node_name] = of_role.get(node_name, 0) + count
            if role is Role.LAUNCHER:
                continue
            found = where(node_name)
            if found is None:
                continue
            group, domains = found
            if group is not None:
                groups = role_groups.get(role)
                if groups is None:
                    groups = role_groups[role] = {}
                groups[group] = groups.get(group, 0) + count
            if domains:
                pairs = role_domains.get(role)
                if pairs is None:
                    pairs = role_domains[role] = {}
                for pair in domains:
                    pairs[pair] = pairs.get(pair, 0) + count
        return layout

    def copy(self) -> JobLayout:
        """An independent copy (C-level dict copies: O(job's nodes), no Python loop)."""
        other = JobLayout(self.where)
        other.nodes = self.nodes.copy()
        other.role_nodes = {role: c.copy() for role, c in self.role_nodes.items()}
        other.role_groups = {role: c.copy() for role, c in self.role_groups.items()}
        other.role_domains = {role: c.copy() for role, c in self.role_domains.items()}
        return other

    def add(self, node_name: str, role: Role, count: int) -> None:
        """`count` more (or, negative, fewer) pods of `role` on the node."""
        if not count:
            return
        bump(self.nodes, node_name, count)
        bump(_of_role(self.role_nodes, role), node_name, count)
        if role is Role.LAUNCHER:
            return
        found = self.where(node_name)
        if found is None:
            return
        group, domains = found
        if group is not None:
            bump(_of_role(self.role_groups, role), group, count)
        if domains:
            role_domains = _of_role(self.role_domains, role)
            for pair in domains:
                bump(role_domains, pair, count)

    def nodes_of(self, *roles: Role) -> frozenset[str]:
        """The nodes holding pods of any of `roles`."""
        if len(roles) == 1:
            return frozenset(self.role_nodes.get(roles[0], ()))
        found: set[str] = set()
        for role in roles:
            found.update(self.role_nodes.get(role, ()))
        return frozenset(found)

    def groups_of(self, roles: Iterable[Role] | None = None) -> Counter[str]:
        """Placement group -> pods of `roles` (None: every role but launchers)."""
        return _summed(self.role_groups, roles)

    def domains_of(self, roles: Iterable[Role] | None = None) -> Counter[tuple[str, str]]:
        """(level, domain) -> pods of `roles` (None: every role but launchers)."""
        return _summed(self.role_domains, roles)

    def sums(self) -> tuple:
        """Every sum, for comparing two layouts (tests)."""
        def plain(by_role: dict) -> dict:
            return {role: dict(c) for role, c in by_role.items() if c}
        return (dict(self.nodes), plain(self.role_nodes), plain(self.role_groups),
                plain(self.role_domains))


def _of_role(by_role: dict, role: Role) -> dict:
    counts = by_role.get(role)
    if counts is None:
        counts = by_role[role] = {}
    return counts


def _summed(by_role: Mapping[Role, dict], roles: Iterable[Role] | None) -> Counter:
    picked = by_role.keys() if roles is None else roles
    total: Counter = Counter()
    for role in picked:
        counts = by_role.get(role)
        if counts:
            total.update(counts)
    return total


def bump(counts: dict, key: object, count: int) -> None:
    """Add `count`, dropping the key at zero (a sum never keeps empty entries)."""
    value = counts.get(key, 0) + count
    if value:
        counts[key] = value
    else:
        del counts[key]
