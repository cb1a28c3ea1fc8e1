"""Everything the per-node filter and score need about one pod, computed once per request.

Decides: the job's home placement group (the PS's group, else the group holding most
of the job's placed pods), the nodes holding the pod's counterpart role and the job's
other pods, which placement groups can still hold the job's remaining pods (only while
the job has no home group, so only its first pod pays for that scan), and which
resource dimensions count when measuring how idle a node is.

After this, `filter_nodes` and `score_nodes` do O(1) work per node: a few integer
comparisons, two set lookups, one dict lookup.

Must not: read the clock (`now` is passed in), log, mutate its inputs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from bucketing.resources import Resources
from locality.config import LocalityConfig
from locality.jobs import identify, job_policy
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
from locality.placement import AssumedPlacements, JobPlacement, add_requests, job_placement

_NO_EXTRA: Mapping[str, Resources] = {}
_NO_TOPOLOGIES: Mapping[str, NodeTopology] = {}


@dataclass(frozen=True, slots=True)
class GroupFit:
    """How many of the job's remaining pods a placement group can hold (first-fit)."""

    group: str
    pods_that_fit: int
    pods_needed: int

    @property
    def holds_job(self) -> bool:
        return self.pods_that_fit >= self.pods_needed


@dataclass(frozen=True, eq=False)
class DecisionContext:
    """One pod's request, job, policy and the job's placement, digested for the node loop.

    identity is None for pods of no job: then every node passes and scores 0.
    extra_requested: requests of assumed placements per node (all jobs), not yet in
    the NodeStates. counterpart_nodes: nodes holding the pod's counterpart role (the
    PS for a worker or chief, the workers and chief for a PS, any job pod otherwise or
    when the counterpart is not placed yet). job_nodes: nodes holding any pod of the job.
    home_group: the group the job occupies, None before its first pod lands in a group.
    group_fits: per placement group, how much of the job's remaining demand it can hold
    (capacity), only while home_group is None and the policy is not `none`; the
    `required` filter reads it. preferred_groups: the groups the score's group term
    favours while there is no home group: those that hold the job, and for `spread`
    jobs, among them the ones with a free node per pod when any has.
    idle_dims: (gpu, cpu, memory) flags of the dimensions the job requests.
    assumed_topologies: for nodes with NUMA data and live assumptions of pods taking a
    zone (GPUs or pinned CPUs; all jobs), the node's zones after those pods took theirs
    (`NodeTopology.charged`, the zone `NodeTopology.zone_for` picks, oldest assumption
    first); the NUMA rule and term read these instead of `NodeState.topology`. See
    `numa_topology`.
    expected_requested: extra_requested plus other jobs' claims (`locality.claims`):
    what each node is expected to hold beyond its bound pods. The idle term and
    preferred_groups read it; filters read extra_requested only (claims are soft).
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
    expected_requested: Mapping[str, Resources] = field(default_factory=dict)

    def numa_topology(self, state: NodeState) -> NodeTopology | None:
        """The node's NUMA zones as the pod would find them: assumed placements charged."""
        charged = self.assumed_topologies.get(state.name)
        return charged if charged is not None else state.topology

    @cached_property
    def node_scorer(self) -> Callable[[NodeState], tuple[int, int, int, int]]:
        """`locality.score.node_scorer(self)`, built once per context (a pure function of
        the context, kept beside it)."""
        from locality.score import node_scorer  # score imports this module

        return node_scorer(self)


def decision_context(
    pod: Pod,
    *,
    job_pods: Iterable[Pod],
    assumed: AssumedPlacements,
    cluster: Mapping[str, NodeState],
    now: float,
    config: LocalityConfig,
    claimed: Mapping[str, Resources] = _NO_EXTRA,
) -> DecisionContext:
    """The context for `pod`: identity, policy, placement (bound + assumed), groups.

    job_pods: the pods of the pod's job known to the cache (any phase; may include the
    pod itself; ignored when the pod has no job). cluster: every node the cache knows,
    by name (used to map the job's pods to groups, and to size groups for a job's first
    pod). now: seconds, the same clock as the assumptions' expiry. claimed: other
    jobs' claims per node (`locality.claims`), soft: see `DecisionContext`.
    """
    identity = identify(pod, config)
    policy = job_policy(pod, config)
    if identity is None:
        return DecisionContext(pod, None, policy, None)
    placement = job_placement(pod, identity.key, policy, job_pods, assumed, now, config)
    if not len(assumed):
        return build_context(pod, identity, policy, placement, cluster, claimed=claimed)
    extra = assumed.requested_by_node(now, excluding=pod.uid)
    topologies: Mapping[str, NodeTopology] = _NO_TOPOLOGIES
    if pod.request.gpu_milli > 0 and policy.numa is not Locality.NONE:
        # Only GPU pods under a NUMA policy read zones (filter rule 3, score term).
        topologies = topologies_after_assumed(
            assumed.numa_requests_by_node(now, excluding=pod.uid), cluster
        )
    return build_context(pod, identity, policy, placement, cluster, extra, topologies, claimed)


def topologies_after_assumed(
    numa_requests_by_node: Mapping[str, list[Resources]], cluster: Mapping[str, NodeState]
) -> dict[str, NodeTopology]:
    """Per node with NUMA data, its zones after the assumed GPU pods took theirs.

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
) -> DecisionContext:
    """The lower-level constructor, for callers (the simulator) that track placement
    themselves. Cost: O(job pods), plus O(nodes in `cluster`) when the job has no home
    group yet and the placement-group policy is not `none`."""
    if identity is None or placement is None:
        return DecisionContext(pod, None, policy, None)

    ps_nodes: set[str] = set()
    worker_nodes: set[str] = set()
    job_nodes: set[str] = set()
    ps_groups: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    for placed in placement.placed:
        job_nodes.add(placed.node_name)
        state = cluster.get(placed.node_name)
        group = state.placement_group if state is not None else None
        if placed.role is Role.PS:
            ps_nodes.add(placed.node_name)
            if group is not None:
                ps_groups[group] += 1
        elif placed.role in (Role.WORKER, Role.CHIEF):
            worker_nodes.add(placed.node_name)
        if group is not None:
            groups[group] += 1

    if identity.role is Role.PS:
        counterpart = worker_nodes or job_nodes
    elif identity.role in (Role.WORKER, Role.CHIEF):
        counterpart = ps_nodes or job_nodes
    else:
        counterpart = job_nodes

    home_group = _most_common(ps_groups) or _most_common(groups)

    expected = add_requests(extra_requested, claimed) if claimed else extra_requested
    group_fits: dict[str, GroupFit] = {}
    preferred_groups: frozenset[str] = frozenset()
    if home_group is None and policy.placement_group is not Locality.NONE:
        # The required filter sizes groups on capacity; the preference also leaves other
        # jobs' claims alone, and falls back to capacity when no group has room for both.
        group_fits = _fit(cluster, placement, extra_requested, None)
        preferred_groups = frozenset(g for g, fit in group_fits.items() if fit.holds_job)
        if claimed and preferred_groups:
            unclaimed = _fit(cluster, placement, expected, None)
            preferred_groups = frozenset(
                g for g, fit in unclaimed.items() if fit.holds_job) or preferred_groups
        if policy.packing is Packing.SPREAD and preferred_groups:
            # Spread wants a node per pod: prefer groups with that many free nodes when
            # any has them. The required filter still only asks for capacity.
            spread_fits = _fit(cluster, placement, expected, 1)
            roomy = frozenset(g for g, fit in spread_fits.items() if fit.holds_job)
            preferred_groups = roomy or preferred_groups

    demand = pod.request
    for request, _count in placement.remaining:
        demand = demand + request
    idle_dims = (demand.gpu_milli > 0, demand.cpu_milli > 0, demand.memory_bytes > 0)

    return DecisionContext(
        pod, identity, policy, placement, extra_requested,
        frozenset(counterpart), frozenset(job_nodes), home_group, group_fits,
        preferred_groups, idle_dims, assumed_topologies, expected,
    )


def _fit(
    cluster: Mapping[str, NodeState],
    placement: JobPlacement,
    extra_requested: Mapping[str, Resources],
    max_pods_per_node: int | None,
) -> dict[str, GroupFit]:
    # A NodeTable (locality.table) does the same greedy with numpy.
    columnar = getattr(cluster, "fit_job_into_groups", None)
    if columnar is not None:
        return columnar(placement.remaining, extra_requested, max_pods_per_node)
    return fit_job_into_groups(
        placement.remaining, cluster.values(), extra_requested, max_pods_per_node
    )


def _most_common(counts: Counter[str]) -> str | None:
    if not counts:
        return None
    # Most pods first, then the name, so the choice does not depend on dict order.
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


def fit_job_into_groups(
    remaining: tuple[tuple[Resources, int], ...],
    nodes: Iterable[NodeState],
    extra_requested: Mapping[str, Resources] = _NO_EXTRA,
    max_pods_per_node: int | None = None,
) -> dict[str, GroupFit]:
    """Per placement group, how many of `remaining` fit, first-fit, largest requests first.

    Each request shape in turn (the largest GPU request first) fills the group's nodes
    in their order, then the next shape takes what is left. Free capacity counts
    placeholders as free (real pods preempt them) and subtracts assumed placements; a
    dimension a shape does not request is not checked. max_pods_per_node: 1 for
    `spread` jobs (a node takes one pod of the job). Greedy packing can miss a packing
    a search would find (it is conservative), never the reverse. Nodes without a group
    and nodes that take no new pods (`Node.takes_new_pods`: cordoned, not Ready,
    tainted away) hold nothing. `NodeTable.fit_job_into_groups` computes the
    same with numpy. Cost: O(nodes x request shapes).
    """
    needed = sum(count for _, count in remaining)
    room_per_node = max_pods_per_node if max_pods_per_node is not None else needed
    rows_by_group: dict[str, list[list[int]]] = {}
    for state in nodes:
        group = state.placement_group
        if group is None:
            continue
        rows = rows_by_group.setdefault(group, [])
        if not state.node.takes_new_pods:
            continue
        row = [state.free_gpu_milli, state.free_cpu_milli, state.free_memory_bytes, room_per_node]
        extra = extra_requested.get(state.name)
        if extra is not None:
            row[0] -= extra.gpu_milli
            row[1] -= extra.cpu_milli
            row[2] -= extra.memory_bytes
        rows.append(row)
    fits: dict[str, GroupFit] = {}
    for group, rows in rows_by_group.items():
        fitted = 0
        for request, count in remaining:
            left = count
            for row in rows:
                if left == 0:
                    break
                copies = _copies_that_fit(request, row, min(left, row[3]))
                if copies:
                    row[0] -= copies * request.gpu_milli
                    row[1] -= copies * request.cpu_milli
                    row[2] -= copies * request.memory_bytes
                    row[3] -= copies
                    left -= copies
            fitted += count - left
        fits[group] = GroupFit(group, fitted, needed)
    return fits


def _copies_that_fit(request: Resources, row: list[int], at_most: int) -> int:
    copies = at_most
    if request.gpu_milli > 0:
        copies = min(copies, max(row[0], 0) // request.gpu_milli)
    if request.cpu_milli > 0:
        copies = min(copies, max(row[1], 0) // request.cpu_milli)
    if request.memory_bytes > 0:
        copies = min(copies, max(row[2], 0) // request.memory_bytes)
    return copies
