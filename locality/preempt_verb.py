"""Which of kube-scheduler's preemption candidates the extender accepts (the preempt verb).

Why: kube-scheduler's preemption asks only extenders with a `preemptVerb`
(`ProcessPreemption`; pkg/scheduler/framework/preemption `callExtenders`), and a
filter extender is skipped when no node passed the scheduler's own plugins, which is
exactly when preemption runs. Without this, DefaultPreemption may evict pods
(placeholders included) on a node the extender's filter then rejects for the pod:
evictions for nothing.

Rule: a candidate node is kept when the extender's filter (`locality.filter.node_verdict`)
passes the pod there with the victims gone; otherwise it is dropped with the filter's
reason. Victims the extender does not know (not in its cache yet) free nothing here; a
node failing only for room (resolvable) with such a victim is kept, since
kube-scheduler's dry run counted what they free. Kept nodes keep their victims
unchanged: which pods to evict on a node is the scheduler's choice (priorities, PDBs).

NUMA: the node's published zones do not say which zone a victim holds. When a victim
takes a zone (GPUs or pinned CPUs), the node is judged against its zones' capacity
(everything free): a node whose zones could never hold the pod (an 8-GPU pod under
`single-numa-node` on 4-GPU zones) is dropped, any other kept. That is lenient on
purpose: dropping a node whose victims would free the right zone would leave the pod
unplaceable. (Until NFD republishes the zones, the extender's filter may still fail
the pod there, for up to the updater's interval.)

Gangs: a candidate whose victims include a member of a gang headstart admitted (its
record Admitted, Running or Recovering) is dropped (`gang_member`), whoever the
preemptor is: DefaultPreemption chooses victims node by node and would leave the rest
of that gang holding its GPUs. Gangs are preempted whole by the admitter
(`locality.admission.gang_preemption`), before their room is counted for the job that needs it.

Must not: read the clock, log, mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from locality.admission.record import GangRecord, is_member
from locality.config import LocalityConfig
from locality.context import DecisionContext
from locality.filter import ReasonCode, node_verdict
from locality.jobs import job_key_of
from locality.model import JobKey, NodeState, Pod
from locality.numa import NodeTopology


def preemption_verdict(
    context: DecisionContext, state: NodeState, victims: Sequence[Pod], unknown_victims: int
) -> tuple[str | None, ReasonCode | None]:
    """(None, None) to keep the candidate node `state`, else (reason, code) to drop it.

    victims: the victims the extender knows (from its cache, or parsed from the
    request); unknown_victims: how many others kube-scheduler named."""
    after = state
    for victim in victims:
        after = after.without_pod(victim)
    if after.topology is not None and any(v.takes_numa_zone for v in victims):
        after = after.with_topology(emptied(after.topology))
        if state.name in context.assumed_topologies:
            # Judge the emptied zones, not the ones charged with assumptions.
            context = replace(context, assumed_topologies={
                name: topology for name, topology in context.assumed_topologies.items()
                if name != state.name})
    reason, code, resolvable = node_verdict(context, after)
    if reason is None or (resolvable and unknown_victims):
        return None, None
    return reason, code


def gang_member(victims: Sequence[Pod], gangs: Mapping[JobKey, GangRecord],
                locality: LocalityConfig) -> JobKey | None:
    """The gang (an admitted record's job) one of `victims` is a member of, None when
    no victim is in one."""
    for victim in victims:
        if not is_member(victim) or victim.terminal:
            continue
        key = job_key_of(victim, locality)
        record = gangs.get(key) if key is not None else None
        if record is not None and record.state.holds_domain:
            return key
    return None


def emptied(topology: NodeTopology) -> NodeTopology:
    """The node's zones with everything free (each zone's capacity)."""
    return replace(topology, zones=tuple(
        replace(zone, cpu_free_milli=zone.cpu_capacity, gpu_free_milli=zone.gpu_capacity)
        for zone in topology.zones))
