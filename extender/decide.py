"""One extender request, from parsed `ExtenderArgs` to the locality core's answer.

Decides (adapter glue, no HTTP): which nodes the candidates are, the `DecisionContext`
for the pod, and when to record an assumed placement: after prioritize for the
best-scored node, and after filter when exactly one node passes (kube-scheduler then
skips prioritize). The assumption is what makes a job's pods scheduled back to back
land together before any binding is visible.

With `nodeCacheCapable` (the recommended mode) the candidates are names and the
numpy path of the core runs over the cache's `NodeTable` (`filter_table`,
`score_table`): a request costs one dict lookup per name plus column arithmetic.
Names the cache does not know fail with a reason. Without it, the request's Node
objects are the candidates: a node the cache knows keeps its cached state (with its
bound pods), an unknown one is parsed from the request with no pods, and the per-node
path (`filter_nodes`, `score_totals`) runs over them.

A context is reused between the filter and the prioritize call of the same pod while
the cache has not changed (the common case: the two calls come back to back).

Must not: decide placement itself (that is `locality`), or know about HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress
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
from locality.score import score_totals
from locality.table import filter_table, score_table


class Decider:
    """Runs filter, prioritize and explain against one cache (event-loop thread only)."""

    def __init__(self, cache: ClusterCache, config: LocalityConfig) -> None:
        self.cache = cache
        self.config = config
        # (pod uid, cache version) -> context; one entry is enough for filter->prioritize.
        self._memo: tuple[str, int, DecisionContext] | None = None
        # (uid, resourceVersion) -> Pod: the same object version parses the same.
        self._pod_memo: tuple[str, str, Pod] | None = None

    # ---- the verbs ---------------------------------------------------------------

    def filter(self, args: ExtenderArgs, now: float) -> FilterResult:
        pod = self.parse_pod(args.pod)
        context = self.context(pod, now)
        if args.node_names is not None:
            result = filter_table(context, self.cache.table(), args.node_names)
        else:
            result = filter_nodes(context, self._states_from_objects(args.nodes or ()))
        if len(result.passed) == 1 and context.identity is not None:
            # kube-scheduler skips prioritize with one feasible node: this is the choice.
            self._assume(pod, result.passed[0], now)
        return result

    def prioritize(self, args: ExtenderArgs, now: float) -> tuple[Sequence[str], Sequence[int]]:
        """(hosts, scores 0..10) in request order; unknown nodes score 0."""
        pod = self.parse_pod(args.pod)
        context = self.context(pod, now)
        if args.node_names is not None:
            hosts: Sequence[str] = args.node_names
            scores: Sequence[int] = score_table(context, self.cache.table(), hosts)
        else:
            totals = score_totals(context, self._states_from_objects(args.nodes or ()))
            hosts = [name for name, _ in totals]
            scores = [total for _, total in totals]
        if context.identity is not None and scores:
            # The best score, ties to the smallest name (locality.score.best_node's rule,
            # in C-level builtins: this runs once per pod over every candidate).
            top = max(scores)
            if scores.count(top) == 1:
                best = hosts[scores.index(top)]
            else:
                best = min(compress(hosts, [score == top for score in scores]))
            self._assume(pod, best, now)
        return hosts, scores

    def parse_pod(self, raw: Mapping[str, Any]) -> Pod:
        """The request's Pod; filter and prioritize of one pod send the same version."""
        metadata = raw["metadata"]
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        memo = self._pod_memo
        if memo is not None and uid and version and memo[0] == uid and memo[1] == version:
            return self.cache.resolve_pod(memo[2])
        pod = parse_pod(raw, self.config, where="Pod")
        if isinstance(uid, str) and isinstance(version, str):
            self._pod_memo = (uid, version, pod)
        # DRA claims' GPUs and the PodGroup's size, as the cache's pods have them.
        return self.cache.resolve_pod(pod)

    def explain(self, pod: Pod, now: float) -> Explanation:
        """Every cached node's verdict and score terms for `pod` (records nothing)."""
        context = self._fresh_context(pod, now)
        nodes = sorted(self.cache.nodes.values(), key=lambda state: state.name)
        return explain(context, nodes)

    # ---- pieces ------------------------------------------------------------------

    def _states_from_objects(self, objects: Sequence[Mapping[str, Any]]) -> list[NodeState]:
        """nodeCacheCapable false: the request's nodes, with the cache's pods where it can.

        A node the cache knows keeps its cached state (the request's copy is the same
        object a moment apart); an unknown node is parsed from the request with no pods.
        """
        known = self.cache.nodes
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
            cluster=cache.table(),
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
