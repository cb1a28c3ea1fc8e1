"""Everything the filter and score need about one pod, computed once per request.

Decides: the job's home placement group (the coordinator's group, else the group
holding most of the job's placed pods) and its home domain at every topology level,
the nodes holding the pod's counterpart role and the job's other pods, which
placement groups and topology domains can still hold the job's remaining pods (only
while the job has no pod placed, so only its first pod pays for that scan), the
topology targets the score aims at (`locality.topology`), and which resource
dimensions count when measuring how idle a node is.

The job's centre: its PS pods; in a job without a PS (a PyTorchJob master and
workers, a JobSet leader and workers, TFJob chief and workers) its chief / master /
leader. Workers aim for the centre's node; the centre aims for the workers. An MPI
launcher joins no communication: it aims for the workers and never decides a home.

After this, `filter_nodes` and `score_nodes` do O(1) work per node: a few integer
comparisons, set and dict lookups.

Must not: read the clock (`now` is passed in), log, mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bucketing.resources import Resources
from locality.columns import GroupFit, NodeTable
from locality.config import LocalityConfig
from locality.jobs import identify, job_policy
from locality.layout import JobLayout, where_in
from locality.model import (
    JobIdentity,
    JobPolicy,
    Locality,
    NodeState,
    NodeTopology,
    Packing,
    Pod,
    Role,
)
from locality.numa import NumaDemand
from locality.placement import (
    AssumedPlacements,
    JobPlacement,
    add_requests,
    job_placement,
    placement_of_tally,
)
from locality.tally import JobTally
from locality.topology import (
    domains_of,
    homes,
    most_common,
    targets_from_holding,
    targets_from_homes,
)

_NO_EXTRA: Mapping[str, Resources] = {}
_NO_TOPOLOGIES: Mapping[str, NodeTopology] = {}
_DEFAULT_CONFIG = LocalityConfig()

Targets = tuple[tuple[str, frozenset[str]], ...]


@dataclass(frozen=True, eq=False)
class DecisionContext:
    """One pod's request, job, policy and the job's placement, digested for the node loop.

    identity is None for pods of no job: then every node passes and scores 0.
    extra_requested: requests of assumed placements per node (all jobs), not yet in
    the NodeStates. counterpart_nodes: nodes holding the pod's counterpart role (the
    job's centre for a worker or chief, its workers for the centre and a launcher, any
    job pod otherwise or when the counterpart is not placed yet). job_nodes: nodes
    holding any pod of the job.
    home_group: the placement group the job occupies, None before its first pod lands
    in a group. group_fits: per placement group, how much of the job's remaining
    demand it can hold, only while home_group is None and the policy is `required`
    (the filter reads it).
    targets: the topology score's targets, narrowest level first (`locality.topology`);
    empty under placement-group policy `none`.
    required_level: the topology level a `required` policy holds the job to when the
    pod names one (`headstart.io/topology-level`), None for the placement group.
    required_home / required_fits: the job's domain at that level, or (while it has
    none) what each domain there can hold.
    idle_dims: (gpu, cpu, memory) flags of the dimensions the job requests.
    assumed_topologies: for nodes with NUMA data and live assumptions of pods taking a
    zone (GPUs or pinned CPUs; all jobs), the node's zones after those pods took theirs
    (`NodeTopology.charged`, oldest assumption first); the NUMA rule and term read
    these instead of `NodeState.topology`. See `numa_topology`.
    preferred_groups: the groups of the narrowest target level for a job's first pod
    (kept for /explain and callers of the single-level API).
    expected_requested: extra_requested plus other jobs' claims (`locality.claims`):
    what each node is expected to hold beyond its bound pods. The idle term and the
    topology targets of a job's first pod read it; filters read extra_requested only
    (claims are soft).
    """

    pod: Pod
    identity: JobIdentity | None
    policy: JobPolicy
    placement: JobPlacement | None
    extra_requested: Mapping[str, Resources] = field(default_factory=dict)
    counterpart_nodes: frozenset[str] = frozenset()
    job_nodes: frozenset[str] = frozenset()
    home_group: str | None = None
    group_fits: Mapping[str, GroupFit] = field(default_factory=dict)
    preferred_groups: frozenset[str] = frozenset()
    idle_dims: tuple[bool, bool, bool] = (True, True, True)
    assumed_topologies: Mapping[str, NodeTopology] = field(default_factory=dict)
    targets: Targets = ()
    required_level: str | None = None
    required_home: str | None = None
    required_fits: Mapping[str, GroupFit] = field(default_factory=dict)
    expected_requested: Mapping[str, Resources] = field(default_factory=dict)

    def numa_topology(self, state: NodeState) -> NodeTopology | None:
        """The node's NUMA zones as the pod would find them: assumed placements charged."""
        charged = self.assumed_topologies.get(state.name)
        return charged if charged is not None else state.topology


def decision_context(
    pod: Pod,
    *,
    job_pods: Sequence[Pod],
    assumed: AssumedPlacements,
    cluster: Mapping[str, NodeState],
    now: float,
    config: LocalityConfig,
    claimed: Mapping[str, Resources] = _NO_EXTRA,
    job_tally: JobTally | None = None,
) -> DecisionContext:
    """The context for `pod`: identity, policy, placement (bound + assumed), groups.

    job_pods: the pods of the pod's job known to the cache (any phase; may include the
    pod itself; ignored when the pod has no job). job_tally: the same pods' running
    totals (`locality.tally`), kept by the caller: given, `job_pods` is not read and the
    cost no longer grows with the job's pods. cluster: every node the cache knows,
    by name (used to map the job's pods to groups, and to size groups for a job's first
    pod). now: seconds, the same clock as the assumptions' expiry. claimed: other
    jobs' claims per node (`locality.claims`), soft: see `DecisionContext`.
    """
    identity = identify(pod, config)
    policy = job_policy(pod, config)
    if identity is None:
        return DecisionContext(pod, None, policy, None)
    if job_tally is not None:
        placement = placement_of_tally(pod, identity.key, policy, job_tally, assumed, now,
                                       config)
    else:
        placement = job_placement(pod, identity.key, policy, job_pods, assumed, now, config)
    if not len(assumed):
        return build_context(pod, identity, policy, placement, cluster, claimed=claimed,
                             config=config)
    extra = assumed.requested_by_node(now, excluding=pod.uid)
    topologies: Mapping[str, NodeTopology] = _NO_TOPOLOGIES
    if pod.takes_numa_zone and policy.numa is not Locality.NONE:
        # Only pods with something to align, under a NUMA policy, read zones.
        topologies = topologies_after_assumed(
            assumed.numa_requests_by_node(now, excluding=pod.uid), cluster
        )
    return build_context(pod, identity, policy, placement, cluster, extra, topologies, claimed,
                         config=config)


def topologies_after_assumed(
    numa_requests_by_node: Mapping[str, list[NumaDemand]], cluster: Mapping[str, NodeState]
) -> dict[str, NodeTopology]:
    """Per node with NUMA data, its zones after the assumed pods took theirs.

    Why: the NodeResourceTopology object shows a zone free until NFD's topology
    updater republishes it (60 s by default), so without this two GPU pods steered
    back to back would both be judged to fit the same zone, while kubelet's
    single-numa-node policy admits only one of them there. Cost: O(live assumptions
    x zones).
    """
    charged: dict[str, NodeTopology] = {}
    for name, requests in numa_requests_by_node.items():
        state = cluster.get(name)
        if state is not None and state.topology is not None:
            topology = state.topology.charged(requests)
            if topology is not state.topology:
                charged[name] = topology
    return charged


def build_context(
    pod: Pod,
    identity: JobIdentity | None,
    policy: JobPolicy,
    placement: JobPlacement | None,
    cluster: Mapping[str, NodeState],
    extra_requested: Mapping[str, Resources] = _NO_EXTRA,
    assumed_topologies: Mapping[str, NodeTopology] = _NO_TOPOLOGIES,
    claimed: Mapping[str, Resources] = _NO_EXTRA,
    *,
    config: LocalityConfig = _DEFAULT_CONFIG,
) -> DecisionContext:
    """The lower-level constructor, for callers (the simulator) that track placement
    themselves. Cost: with a placement that carries its layout (the cache's), set
    operations over the job's nodes (C-level) and O(the job's domains); without, O(job's
    nodes x levels) to sum one; plus O(nodes in `cluster` x levels) when the job has no
    pod placed yet and the placement-group policy is not `none`."""
    if identity is None or placement is None:
        return DecisionContext(pod, None, policy, None)

    level_order = tuple(level.name for level in config.topology_levels)
    layout = placement.layout
    if layout is None:
        layout = JobLayout.of((placement.placed_on or {}).items(), where_in(cluster))
    has_ps = Role.PS in placement.roles or bool(layout.role_nodes.get(Role.PS))
    centre = Role.PS if has_ps else Role.CHIEF
    centre_nodes = layout.nodes_of(centre)
    # A chief beside a PS is one of the workers; without a PS it is the centre.
    worker_nodes = layout.nodes_of(Role.WORKER, Role.CHIEF) if has_ps else layout.nodes_of(
        Role.WORKER)
    job_nodes = frozenset(layout.nodes)

    if identity.role is centre or identity.role is Role.LAUNCHER:
        counterpart = worker_nodes or job_nodes
    elif identity.role in (Role.WORKER, Role.CHIEF):
        counterpart = centre_nodes or job_nodes
    else:
        counterpart = job_nodes

    # Launchers join no collective: they decide no home (the layout leaves them out).
    home_group = most_common(layout.groups_of((centre,))) or most_common(layout.groups_of())
    found_homes = homes(layout.domains_of(), layout.domains_of((centre,)), level_order)

    expected = add_requests(extra_requested, claimed) if claimed else extra_requested
    required = policy.placement_group is Locality.REQUIRED
    required_level = (
        level_order[policy.topology_level] if policy.topology_level is not None else None
    )
    fit = _sizer(cluster, placement.remaining)
    group_fits: dict[str, GroupFit] = {}
    if required and required_level is None and home_group is None:
        group_fits = fit(extra_requested, None)

    targets: Targets = ()
    preferred_groups: frozenset[str] = frozenset()
    required_fits: dict[str, GroupFit] = {}
    if policy.placement_group is not Locality.NONE:
        if found_homes:
            targets = targets_from_homes(found_homes, level_order)
        else:
            holding: dict[str, frozenset[str]] = {}
            for level in _levels_present(cluster, level_order):
                fits = fit(extra_requested, None, level)
                if level == required_level and required:
                    required_fits = fits
                held = frozenset(domain for domain, fit in fits.items() if fit.holds_job)
                if claimed and held:
                    # The required filter sizes domains on capacity; the preference also
                    # leaves other jobs' claims alone, and falls back to capacity when no
                    # domain has room for both.
                    unclaimed = fit(expected, None, level)
                    held = frozenset(
                        d for d, fit in unclaimed.items() if fit.holds_job) or held
                if policy.packing is Packing.SPREAD and held:
                    # Spread wants a node per pod: prefer domains with that many free nodes
                    # when any has them. The required filter still only asks for capacity.
                    spread_fits = fit(expected, 1, level)
                    held = frozenset(
                        d for d, fit in spread_fits.items() if fit.holds_job) or held
                holding[level] = held
            targets = targets_from_holding(holding, level_order)
            if targets:
                preferred_groups = targets[0][1]
    required_home = found_homes.get(required_level) if required_level is not None else None
    if required and required_level is not None and required_home is None and not required_fits:
        required_fits = fit(extra_requested, None, required_level)

    demand = pod.request
    for request, _count in placement.remaining:
        demand = demand + request
    idle_dims = (demand.gpu_milli > 0, demand.cpu_milli > 0, demand.memory_bytes > 0)

    return DecisionContext(
        pod, identity, policy, placement, extra_requested,
        counterpart, job_nodes, home_group, group_fits,
        preferred_groups, idle_dims, assumed_topologies, targets, required_level,
        required_home, required_fits, expected,
    )


def _levels_present(cluster: Mapping[str, NodeState], level_order: tuple[str, ...]) -> list[str]:
    """The levels some node has a domain at (a NodeTable knows; else one pass)."""
    columnar = getattr(cluster, "levels_present", None)
    if columnar is not None:
        return [level for level in level_order if level in columnar]
    present: set[str] = set()
    for state in cluster.values():
        for level, _ in domains_of(state.node.domains, state.placement_group):
            present.add(level)
    return [level for level in level_order if level in present]


def _sizer(
    cluster: Mapping[str, NodeState], remaining: tuple[tuple[Resources, int], ...]
) -> Callable[..., dict[str, GroupFit]]:
    """`NodeTable.fit_job_into_groups` for this job's remaining pods, the cluster put in
    a `NodeTable` once, on first use (the cache's cluster already is one)."""
    table = None

    def fit(extra_requested: Mapping[str, Resources], max_pods_per_node: int | None,
            level: str | None = None) -> dict[str, GroupFit]:
        nonlocal table
        if table is None:
            table = _as_table(cluster)
        return table.fit_job_into_groups(remaining, extra_requested, max_pods_per_node, level)

    return fit


def _as_table(cluster: Mapping[str, NodeState]) -> NodeTable:
    return cluster if isinstance(cluster, NodeTable) else NodeTable(cluster.values())
