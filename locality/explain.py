"""Why a pod would go where: per node, passed or the reason, and the score terms.

The data behind `/explain?pod=NAMESPACE/NAME`. Runs the filter's rules and the score's
terms over one table of the nodes (`filter_table`, `score.breakdowns`), so what it shows
is what they decide.
Must not: do anything the filter and the score do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from locality.columns import NodeTable
from locality.context import DecisionContext
from locality.filter import ReasonCode, filter_table
from locality.model import NodeState
from locality.score import ScoreBreakdown, breakdowns


@dataclass(frozen=True, slots=True)
class NodeExplanation:
    """One node: passed, or the reason, its code (the metrics' `reason` label) and whether
    preemption could resolve it; the score."""

    name: str
    passed: bool
    reason: str | None
    code: ReasonCode | None
    resolvable: bool
    score: ScoreBreakdown


@dataclass(frozen=True, eq=False)
class Explanation:
    """A pod's job, role, policy and the job's placement, then every node's verdict.

    topology_level: the level a `required` policy holds the job to. topology_targets:
    what the score's topology term aims at, narrowest level first (level, domains).
    job_size: the declared size (annotation, PodGroup minMember or owner replicas), None if unknown.
    """

    pod: str
    job: str | None
    role: str | None
    packing: str
    placement_group_policy: str
    numa_policy: str
    policy_problems: tuple[str, ...]
    home_group: str | None
    placed_pods: int
    remaining_pods: int
    nodes: tuple[NodeExplanation, ...]
    topology_level: str = "placement-group"
    topology_targets: tuple[tuple[str, tuple[str, ...]], ...] = ()
    job_size: int | None = None

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict (score terms plus their total per node)."""
        data = asdict(self)
        data["policy_problems"] = list(self.policy_problems)
        data["topology_targets"] = [
            {"level": level, "domains": list(domains)} for level, domains in self.topology_targets
        ]
        data["nodes"] = [
            {**asdict(node), "score": {**asdict(node.score), "total": node.score.total}}
            for node in self.nodes
        ]
        return data


def explain(context: DecisionContext, nodes: Sequence[NodeState]) -> Explanation:
    """Every node's verdict and score terms, best first (passed nodes, then by total)."""
    table = NodeTable(nodes)  # once, for both the rules and the terms
    verdicts = filter_table(context, table, table.names)
    scores = breakdowns(context, table)
    rows = []
    for state in nodes:
        name = state.name
        failed = verdicts.failed.get(name)
        reason = failed if failed is not None else verdicts.unresolvable.get(name)
        rows.append(NodeExplanation(name, reason is None, reason, verdicts.codes.get(name),
                                    failed is not None or reason is None, scores[name]))
    rows.sort(key=lambda row: (not row.passed, -row.score.total, row.name))
    placement = context.placement
    identity = context.identity
    policy = context.policy
    return Explanation(
        pod=context.pod.full_name,
        job=str(identity.key) if identity else None,
        role=identity.role.value if identity else None,
        packing=policy.packing.value,
        placement_group_policy=policy.placement_group.value,
        numa_policy=policy.numa.value,
        policy_problems=policy.problems,
        home_group=context.home_group,
        placed_pods=placement.placed_pods if placement else 0,
        remaining_pods=placement.remaining_pods if placement else 0,
        nodes=tuple(rows),
        topology_level=context.required_level or "placement-group",
        topology_targets=tuple((level, tuple(sorted(domains)))
                               for level, domains in context.targets),
        job_size=policy.job_size,
    )
