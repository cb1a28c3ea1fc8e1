"""One extender request, from parsed `ExtenderArgs` to the locality core's answer.

Decides (adapter glue, no HTTP): which `NodeState`s the candidates are (from the cache
with `nodeCacheCapable`, names the cache does not know fail with a reason; from the
request's Node objects otherwise, with the cache's bound-pod requests when it knows
the node), the `DecisionContext` for the pod, and when to record an assumed placement:
after prioritize for the best-scored node, and after filter when exactly one node
passes (kube-scheduler then skips prioritize). The assumption is what makes a job's
pods scheduled back to back land together before any binding is visible.

A context is reused between the filter and the prioritize call of the same pod while
the cache has not changed (the common case: the two calls come back to back).

Must not: decide placement itself (that is `locality`), or know about HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.cache import ClusterCache
from extender.wire import ExtenderArgs
from locality.config import LocalityConfig
from locality.context import DecisionContext, decision_context
from locality.explain import Explanation, explain
from locality.filter import FilterResult, filter_nodes
from locality.jobs import job_key_of
from locality.model import NodeState, Pod, node_state
from locality.parse import parse_node, parse_pod
from locality.placement import assumption_for
from locality.score import best_node, score_totals

UNKNOWN_NODE_REASON = (
    "node is not in headstart's cluster cache yet (its node watch may lag); "
    "the extender cannot judge it"
)


@dataclass(frozen=True, eq=False)
class Candidates:
    """The request's nodes as states, and the names the cache does not know."""

    states: list[NodeState]
    unknown: list[str]


@dataclass(frozen=True, eq=False)
class FilterAnswer:
    result: FilterResult
    unknown: list[str]


class Decider:
    """Runs filter, prioritize and explain against one cache (event-loop thread only)."""

    def __init__(self, cache: ClusterCache, config: LocalityConfig) -> None:
        self.cache = cache
        self.config = config
        # (pod uid, cache version) -> context; one entry is enough for filter->prioritize.
        self._memo: tuple[str, int, DecisionContext] | None = None

    # ---- the verbs ---------------------------------------------------------------

    def filter(self, args: ExtenderArgs, now: float) -> FilterAnswer:
        pod = parse_pod(args.pod, self.config, where="Pod")
        candidates = self.candidates(args)
        context = self.context(pod, now)
        result = filter_nodes(context, candidates.states)
        if len(result.passed) == 1 and context.identity is not None:
            # kube-scheduler skips prioritize with one feasible node: this is the choice.
            self._assume(pod, result.passed[0], now)
        return FilterAnswer(result, candidates.unknown)

    def prioritize(self, args: ExtenderArgs, now: float) -> tuple[list[str], list[int]]:
        """(hosts, scores) in request order; unknown nodes score 0."""
        pod = parse_pod(args.pod, self.config, where="Pod")
        candidates = self.candidates(args)
        context = self.context(pod, now)
        totals = score_totals(context, candidates.states)
        if context.identity is not None:
            best = best_node(totals)
            if best is not None:
                self._assume(pod, best, now)
        hosts = [name for name, _ in totals]
        scores = [total for _, total in totals]
        if candidates.unknown:
            hosts.extend(candidates.unknown)
            scores.extend([0] * len(candidates.unknown))
        return hosts, scores

    def explain(self, pod: Pod, now: float) -> Explanation:
        """Every cached node's verdict and score terms for `pod` (records nothing)."""
        context = self._fresh_context(pod, now)
        nodes = sorted(self.cache.nodes.values(), key=lambda state: state.name)
        return explain(context, nodes)

    # ---- pieces ------------------------------------------------------------------

    def candidates(self, args: ExtenderArgs) -> Candidates:
        known = self.cache.nodes
        if args.node_names is not None:
            states = []
            unknown = []
            for name in args.node_names:
                state = known.get(name)
                if state is None:
                    unknown.append(name)
                else:
                    states.append(state)
            return Candidates(states, unknown)
        return Candidates(self._states_from_objects(args.nodes or (), known), [])

    def _states_from_objects(
        self, objects: Sequence[Mapping[str, Any]], known: Mapping[str, NodeState]
    ) -> list[NodeState]:
        """nodeCacheCapable false: the request's nodes, with the cache's pods where it can.

        A node the cache knows keeps its cached state (the request's copy is the same
        object a moment apart); an unknown node is parsed from the request with no pods.
        """
        states = []
        for index, obj in enumerate(objects):
            name = obj["metadata"]["name"]
            state = known.get(name)
            if state is None:
                state = node_state(parse_node(obj, self.config, where=f"Nodes.items[{index}]"))
            states.append(state)
        return states

    def context(self, pod: Pod, now: float) -> DecisionContext:
        memo = self._memo
        version = self.cache.version
        if memo is not None and memo[0] == pod.uid and memo[1] == version and pod.uid:
            return memo[2]
        context = self._fresh_context(pod, now)
        self._memo = (pod.uid, version, context)
        return context

    def _fresh_context(self, pod: Pod, now: float) -> DecisionContext:
        cache = self.cache
        return decision_context(
            pod,
            job_pods=cache.pods_of_job(job_key_of(pod, self.config)),
            assumed=cache.assumed,
            cluster=cache.nodes,
            now=now,
            config=self.config,
        )

    def _assume(self, pod: Pod, node_name: str, now: float) -> None:
        assumption = assumption_for(pod, node_name, now, self.config)
        if assumption is not None:
            self.cache.set_assumed(self.cache.assumed.assume(assumption))

    def record_binding(self, pod: Pod, node_name: str, now: float) -> None:
        """The bind verb placed `pod` on `node_name`: trust it until the watch shows it."""
        self._assume(pod, node_name, now)

    def expire(self, now: float) -> None:
        self.cache.set_assumed(self.cache.assumed.expire(now))
