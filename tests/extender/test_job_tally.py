"""The cache's per-job running totals (`locality.tally`) and layout (`locality.layout`)
against a rebuild, after random sequences of pod and node events: the placement a
request reads from them is the one the per-pod walk gives (the walk this replaced is
kept below as the oracle), and the layout is the one summed afresh."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from bucketing.resources import Resources
from extender.cache import ClusterCache
from locality.config import LocalityConfig
from locality.context import decision_context
from locality.jobs import role_of
from locality.layout import JobLayout, where_in
from locality.model import JobKey, JobPolicy, Pod
from locality.parse import parse_node, parse_pod
from locality.placement import (
    AssumedPlacements,
    Assumption,
    job_placement,
    placement_of_tally,
    unseen_request,
    worker_requests,
)
from locality.tally import JobTally
from tests.extender.builders import make_node, make_pod

LOCALITY = LocalityConfig()
JOB = JobKey("team", "j")
NODES = ("a", "b", "c")
ROLES = ("ps", "worker", "chief", "launcher", None)
PHASES = ("Pending", "Running", "Succeeded", "Failed")


def reference_placement(pod, job, policy, job_pods, assumed, now, config):
    """The per-pod walk `job_placement` did before the tally (O(job pods)): the oracle."""
    placed, remaining = Counter(), Counter()
    seen, roles = {pod.uid}, {role_of(pod, config)}
    live = {a.uid: a for a in assumed.for_job(job, now)}
    for other in job_pods:
        if other.uid in seen:
            continue
        if other.terminal:
            if other.succeeded:
                seen.add(other.uid)
            continue
        seen.add(other.uid)
        role = role_of(other, config)
        roles.add(role)
        if other.node_name is not None:
            placed[(other.node_name, role)] += 1
        elif other.uid in live:
            placed[(live[other.uid].node_name, live[other.uid].role)] += 1
        else:
            remaining[other.request] += 1
    for uid, a in live.items():
        if uid not in seen:
            seen.add(uid)
            roles.add(a.role)
            placed[(a.node_name, a.role)] += 1
    remaining[pod.request] += 1
    if policy.job_size is not None and policy.job_size > len(seen):
        workers = worker_requests(pod, job_pods, live.values(), config)
        remaining[unseen_request(pod, workers)] += policy.job_size - len(seen)
    return dict(placed), dict(remaining), frozenset(roles)


def pod_of(index: int, role, phase: str, node, gpus: int, nominated) -> Pod:
    raw = make_pod(f"p-{index}", gpus=gpus, job="j", role=role, node=node, phase=phase)
    if nominated is not None and node is None:
        raw["status"]["nominatedNodeName"] = nominated
    return parse_pod(raw, LOCALITY)


events = st.lists(st.tuples(
    st.sampled_from(("apply", "apply", "apply", "delete", "relist", "node")),
    st.integers(0, 7),  # which pod (by name)
    st.sampled_from(ROLES), st.sampled_from(PHASES),
    st.sampled_from((None, None, *NODES)), st.integers(0, 2),
    st.sampled_from((None, None, *NODES)),  # nominatedNodeName
), max_size=40)
assumptions = st.lists(st.tuples(st.integers(0, 9), st.sampled_from(NODES),
                                 st.sampled_from(("worker", "ps")), st.booleans()), max_size=5)


@settings(max_examples=300, deadline=None)
@given(events=events, assumed=assumptions, scheduled=st.integers(0, 9),
       job_size=st.sampled_from((None, 3, 12)))
def test_the_tally_after_any_events_gives_the_placement_of_a_rebuild(
        events, assumed, scheduled, job_size):
    cache = ClusterCache(LOCALITY)
    cache.replace_nodes([parse_node(make_node(name), LOCALITY) for name in NODES])
    cache.replace_pods([])
    for kind, index, role, phase, node, gpus, nominated in events:
        pod = pod_of(index, role, phase, node, gpus, nominated)
        if kind == "node":  # a node relabelled into another group, or gone
            name = NODES[index % len(NODES)]
            if gpus == 2:
                cache.delete_node(name)
            else:
                cache.apply_node(parse_node(make_node(name, group=f"g{gpus}"), LOCALITY))
            # The layout kept so far is read between events, as requests do.
            cache.tally_of(JOB)
        elif kind == "apply":
            cache.apply_pod(pod)
        elif kind == "delete":
            cache.delete_pod(pod)
        else:  # a relist: the pods known, this one changed
            others = [p for p in cache.pods_of_job(JOB) if p.name != pod.name]
            cache.replace_pods([*others, pod])
    pods = cache.pods_of_job(JOB)
    tally = cache.tally_of(JOB)
    assert tally.totals() == JobTally.of(pods, LOCALITY).totals()
    where = where_in(cache.nodes)
    if pods:
        assert tally.layout.sums() == JobLayout.of(tally.on_node.items(), where).sums()

    # Assumptions of known and unknown pods (uids p-8, p-9 the cache never saw).
    store = cache.assumed
    for index, node, role, stale in assumed:
        request = Resources(1000, 1000, 2**30)
        store = store.assume(Assumption(JOB, f"uid-team-p-{index}", f"p-{index}",
                                        role_of(pod_of(index, role, "Pending", None, 1, None),
                                                LOCALITY), node, request,
                                        -1.0 if stale else 100.0))
    pod = pod_of(scheduled, "worker", "Pending", None, 1, None)
    policy = JobPolicy(job_size=job_size)
    incremental = placement_of_tally(pod, JOB, policy, tally, store, 0.0, LOCALITY)
    rebuilt = job_placement(pod, JOB, policy, pods, store, 0.0, LOCALITY)
    oracle = reference_placement(pod, JOB, policy, pods, store, 0.0, LOCALITY)
    for placement in (incremental, rebuilt):
        assert (dict(placement.placed_on), dict(placement.remaining), placement.roles) == oracle
    if pods:  # the request's layout: the tally's, corrected as placed_on is
        assert incremental.layout.sums() == JobLayout.of(oracle[0].items(), where).sums()
    # And the context a request builds from the kept layout is the one a rebuild gives.
    kept = decision_context(pod, job_pods=(), job_tally=tally, assumed=store,
                            cluster=cache.nodes, now=0.0, config=LOCALITY)
    fresh = decision_context(pod, job_pods=pods, assumed=store, cluster=cache.nodes,
                             now=0.0, config=LOCALITY)
    assert (kept.counterpart_nodes, kept.job_nodes, kept.home_group, kept.targets) == (
        fresh.counterpart_nodes, fresh.job_nodes, fresh.home_group, fresh.targets)
    # The listed pods are the counted ones.
    assert Counter((p.node_name, p.role) for p in rebuilt.placed) == Counter(rebuilt.placed_on)


def test_remaining_shapes_are_ordered_by_gpu_cpu_memory_then_devices():
    # Two shapes tie on GPU, CPU and memory and differ in device kind: the order no
    # longer depends on which pod came first.
    tally = JobTally(LOCALITY)
    shapes = [Resources(1000, 1000, 1, (("vendor-b.com/gpu", 1000),)),
              Resources(1000, 1000, 1, (("vendor-a.com/gpu", 1000),))]
    for index, shape in enumerate(shapes):
        tally.add(replace(pod_of(index, "worker", "Pending", None, 1, None), request=shape))
    pod = pod_of(5, "ps", "Pending", None, 0, None)
    placement = placement_of_tally(pod, JOB, JobPolicy(), tally, AssumedPlacements(), 0.0,
                                   LOCALITY)
    assert [shape.devices for shape, _ in placement.remaining[:2]] == [
        (("vendor-a.com/gpu", 1000),), (("vendor-b.com/gpu", 1000),)]
