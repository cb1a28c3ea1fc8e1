"""One extender request, from parsed `ExtenderArgs` to the locality core's answer.

Decides (adapter glue, no HTTP): which nodes the candidates are, the `DecisionContext`
for the pod, and what the extender knows about where a job's pods are. It knows only
what kube-scheduler tells it or the API shows: the node of every pod kube-scheduler
asks it to bind (recorded as an assumption the moment the bind call arrives, dropped
if the Binding cannot be created) and the bindings its watch sees. It never records
its own top-scored node: kube-scheduler adds its plugins' scores and breaks ties at
random, so that node is often not the one chosen, and pulling the job's next pod
toward it would split the job. With the bind verb, each answered pod of a job is
kept as pending (`extender.inflight`) until its bind arrives, so a request for the
job's next pod can wait for it (the waiting itself is the HTTP handler's).

With `nodeCacheCapable` (the recommended mode) the candidates are names and the core
runs over the cache's `NodeTable` (`filter_table`, `score_table`): a request costs one
dict lookup per name plus column arithmetic.
A name the cache does not know yet (a node just added, its watch event still on the
way) passes with the lowest score, unless the pod's placement-group policy is
`required`: then it fails as unresolvable (its group cannot be checked, and
preempting pods there would not change that). Without `nodeCacheCapable`, the
request's Node objects are the candidates: a node the cache knows keeps its cached
state (with its bound pods), an unknown one is parsed from the request with no pods,
and the core runs over a table of them (`filter_nodes`, `score_totals`).

Other jobs' pods still to place claim room on nodes (`locality.claims`): kept by
`extender.claims.ClaimsBook`, and handed to the context of each request less the
pod's own job's claims.

A context is reused between the filter and the prioritize call of the same pod while
the cache has not changed (the common case: the two calls come back to back).

Must not: decide placement itself (that is `locality`), or know about HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.cache import ClusterCache
from extender.claims import ClaimsBook
from extender.inflight import PendingBinds
from extender.wire import BindingArgs, ExtenderArgs, PreemptionArgs, Victims
from locality.config import LocalityConfig
from locality.context import DecisionContext, decision_context
from locality.explain import Explanation, explain
from locality.filter import FilterResult, ReasonCode, filter_nodes, filter_table
from locality.jobs import job_key_of
from locality.model import Locality, NodeState, Pod, node_state
from locality.parse import parse_node, parse_pod
from locality.placement import assumption_for
from locality.preempt_verb import gang_member, preemption_verdict
from locality.reasons import UNKNOWN_NODE_REASON
from locality.score import score_table, score_totals

UNKNOWN_NODE_REQUIRED_REASON = (
    f"{UNKNOWN_NODE_REASON}: its placement group cannot be checked (policy required)"
)


class Decider:
    """Runs filter, prioritize and explain against one cache (event-loop thread only)."""

    def __init__(
        self, cache: ClusterCache, config: LocalityConfig, pending: PendingBinds | None = None
    ) -> None:
        """pending: where answered pods wait for their bind; None when the extender does
        not bind (then it learns placements from its watch only)."""
        self.cache = cache
        self.config = config
        self.pending = pending
        # (pod uid, cache version) -> context; one entry is enough for filter->prioritize.
        self._memo: tuple[str, int, DecisionContext] | None = None
        # (uid, resourceVersion) -> Pod: the same object version parses the same.
        self._pod_memo: tuple[str, str, Pod] | None = None
        self.claims = ClaimsBook(cache, config)

    # ---- the verbs ---------------------------------------------------------------

    def filter(self, args: ExtenderArgs, now: float) -> FilterResult:
        pod = self.parse_pod(args.pod)
        context = self.context(pod, now)
        if args.node_names is not None:
            result = filter_table(context, self.cache.table(), args.node_names)
            if ReasonCode.UNKNOWN_NODE in result.codes.values():
                result = _unknown_nodes_judged(
                    result, args.node_names, context.policy.placement_group)
        else:
            result = filter_nodes(context, self._states_from_objects(args.nodes or ()))
        if len(result.passed) == 1 and context.identity is not None:
            # kube-scheduler skips prioritize with one feasible node: this was the answer.
            self._answered(pod, now)
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
            # Which node wins is kube-scheduler's choice (its plugins' scores added, ties
            # at random): the bind call will say. Until then the pod is pending.
            self._answered(pod, now)
        return hosts, scores

    def preempt(
        self, args: PreemptionArgs, now: float
    ) -> tuple[dict[str, Victims], dict[str, ReasonCode]]:
        """(the candidate nodes kept, with their victims unchanged; the codes of those
        dropped): `locality.preempt_verb`. A node the cache does not know is kept, unless
        the pod's placement-group policy is `required`, as the filter judges it."""
        pod = self.parse_pod(args.pod)
        context = self.context(pod, now)
        kept: dict[str, Victims] = {}
        dropped: dict[str, ReasonCode] = {}
        for node, victims in args.victims.items():
            known = self._victim_pods(node, victims)
            if gang_member(known, self.cache.gangs, self.config) is not None:
                dropped[node] = ReasonCode.GANG_MEMBER
                continue
            if context.identity is None:
                kept[node] = victims
                continue
            state = self.cache.nodes.get(node)
            if state is None:
                if context.policy.placement_group is Locality.REQUIRED:
                    dropped[node] = ReasonCode.UNKNOWN_NODE
                else:
                    kept[node] = victims
                continue
            _, code = preemption_verdict(context, state, known, len(victims.uids) - len(known))
            if code is None:
                kept[node] = victims
            else:
                dropped[node] = code
        return kept, dropped

    def _victim_pods(self, node: str, victims: Victims) -> list[Pod]:
        """The victims as the cache sees them on `node`, or as the request sent them."""
        if victims.pods is not None:
            return [parse_pod(raw, self.config, where=f"victim on {node}")
                    for raw in victims.pods]
        wanted = set(victims.uids)
        return [pod for pod in self.cache.pods_on_node(node) if pod.uid in wanted]

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
        job = job_key_of(pod, self.config)
        return decision_context(
            pod,
            job_pods=(),
            job_tally=cache.tally_of(job),
            assumed=cache.assumed,
            cluster=cache.table(),
            now=now,
            config=self.config,
            claimed=self.claims.others(job, now) if job is not None else {},
        )

    # ---- binds -------------------------------------------------------------------

    def _answered(self, pod: Pod, now: float) -> None:
        if self.pending is not None:
            job = job_key_of(pod, self.config)
            if job is not None:
                self.pending.answered(pod, job, now)

    def bind_wait_deadline(self, pod: Pod, now: float) -> float | None:
        """Until when a request for `pod` should wait for binds in flight
        (`PendingBinds.wait_deadline`); None: answer at once. Pods of no job never wait:
        their answer reads no placement."""
        if self.pending is None or job_key_of(pod, self.config) is None:
            return None
        return self.pending.wait_deadline(pod.uid, now)

    def bind_arrived(self, args: BindingArgs, now: float) -> None:
        """kube-scheduler chose `args.node` for the pod: its own decision, so trusted at
        once (until the watch shows the binding, or `bind_failed`). The pod is the one
        answered for, else the cache's (the pod watch may not have delivered it yet)."""
        entry = self.pending.bound(args.pod_uid, now) if self.pending is not None else None
        pod = entry.pod if entry is not None else None
        cached = self.cache.pod(args.pod_namespace, args.pod_name)
        if cached is not None and (not args.pod_uid or cached.uid == args.pod_uid):
            if cached.node_name is not None:
                return  # the watch shows it bound: the cache counts it already
            pod = pod or cached
        if pod is not None:
            self._assume(pod, args.node, now)

    def bind_failed(self, args: BindingArgs) -> None:
        """The Binding was not created: kube-scheduler forgets the pod and retries it."""
        if args.pod_uid:
            self.cache.set_assumed(self.cache.assumed.forget(args.pod_uid))

    def _assume(self, pod: Pod, node_name: str, now: float) -> None:
        assumption = assumption_for(pod, node_name, now, self.config)
        if assumption is not None:
            self.cache.set_assumed(self.cache.assumed.assume(assumption))

    def expire(self, now: float) -> None:
        self.cache.set_assumed(self.cache.assumed.expire(now))
        if self.pending is not None:
            self.pending.expire(now)


def _unknown_nodes_judged(
    result: FilterResult, names: Sequence[str], placement_group: Locality
) -> FilterResult:
    """Names the cache does not know yet: passed (kube-scheduler's own filters already
    admitted them; failing them as resolvable would send it preempting pods elsewhere
    for nothing), or unresolvable under a `required` placement-group policy."""
    unknown = {name for name, code in result.codes.items() if code is ReasonCode.UNKNOWN_NODE}
    failed = {name: reason for name, reason in result.failed.items() if name not in unknown}
    codes = {name: code for name, code in result.codes.items() if name not in unknown}
    if placement_group is Locality.REQUIRED:
        unresolvable = dict(result.unresolvable)
        for name in unknown:
            unresolvable[name] = UNKNOWN_NODE_REQUIRED_REASON
            codes[name] = ReasonCode.UNKNOWN_NODE
        return FilterResult(result.passed, failed, unresolvable, codes)
    keep = set(result.passed) | unknown
    passed = tuple(name for name in names if name in keep)
    return FilterResult(passed, failed, dict(result.unresolvable), codes)
