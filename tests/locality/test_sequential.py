"""A job's pods scheduled back to back with no watch event in between.

The loop below plays kube-scheduler: filter, score the passed nodes, take the best
(ties by name), and the extender records the choice as an assumption. The cache is
never updated, so only the assumptions tell later pods where the earlier ones went.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from locality.columns import NodeTable
from locality.context import decision_context
from locality.filter import filter_nodes, filter_table
from locality.placement import AssumedPlacements, assumption_for
from locality.score import best_node, score_table, score_totals
from tests.locality.builders import CONFIG, make_pod, make_state

BACKGROUND = make_pod("background", cpu=40, gpus=4, memory_gib=300)


def cluster(groups: dict[str, int], busy_every: int = 3):
    """8-GPU nodes per group; every `busy_every`-th node runs a half-node background pod."""
    states = {}
    for group, count in groups.items():
        for index in range(count):
            name = f"{group}-{index:02d}"
            pods = [BACKGROUND] if index % busy_every == 0 else []
            states[name] = make_state(name, group=group, pods=pods)
    return states


def job(size: int, **policy):
    ps = make_pod("j-ps-0", cpu=4, memory_gib=8, job="j", role="PS", **policy)
    workers = [
        make_pod(f"j-worker-{i}", cpu=8, gpus=1, memory_gib=32, job="j", role="Worker", **policy)
        for i in range(size)
    ]
    return [ps, *workers]


def schedule_back_to_back(pods, states, use_assumptions=True, columnar=False):
    """Place each pod in turn; return {pod name: node}. Node states never change.

    columnar: keep one NodeTable and call filter_table / score_table on it instead.
    """
    assumed = AssumedPlacements()
    nodes = list(states.values())
    table = NodeTable(nodes)
    names = [state.name for state in nodes]
    where = {}
    for step, pod in enumerate(pods):
        now = float(step)  # a pod per second, well inside the 30 s expiry
        context = decision_context(
            pod, job_pods=pods, assumed=assumed, cluster=table if columnar else states,
            now=now, config=CONFIG,
        )
        if columnar:
            result = filter_table(context, table, names)
            scores = score_table(context, table, result.passed)
            totals = list(zip(result.passed, scores, strict=True))
        else:
            result = filter_nodes(context, nodes)
            totals = score_totals(context, [states[name] for name in result.passed])
        assert totals, f"{pod.name}: no node passed: {result.unresolvable or result.failed}"
        chosen = best_node(totals)
        where[pod.name] = chosen
        if use_assumptions:
            assumed = assumed.assume(assumption_for(pod, chosen, now, CONFIG))
    return where


PATHS = pytest.mark.parametrize("columnar", [False, True], ids=["states", "node-table"])


@PATHS
def test_pack_puts_ps_and_16_workers_on_two_nodes_in_one_group(columnar):
    states = cluster({"pg-a": 10, "pg-b": 20})
    where = schedule_back_to_back(job(16), states, columnar=columnar)
    per_node = Counter(where.values())
    # 16 one-GPU workers on 8-GPU nodes need ceil(16 / 8) = 2 nodes; the PS (no GPU)
    # joins the first: PS + 8 workers there, 8 workers on the second.
    assert len(per_node) == 2
    assert sorted(per_node.values()) == [8, 9]
    assert per_node[where["j-ps-0"]] == 9
    assert len({states[node].placement_group for node in per_node}) == 1
    # The PS went to an idle node (index not divisible by 3: no background pod).
    assert int(where["j-ps-0"][-2:]) % 3 != 0


def test_without_assumptions_every_pod_sees_an_empty_job_and_piles_onto_one_node():
    # The control: the cache alone (no binding visible yet) cannot keep the job
    # together, it just sends every pod to the same "best" node, far past its 8 GPUs.
    states = cluster({"pg-a": 10, "pg-b": 20})
    where = schedule_back_to_back(job(16), states, use_assumptions=False)
    assert len(set(where.values())) == 1


@PATHS
def test_spread_puts_each_pod_on_its_own_node_in_one_group(columnar):
    states = cluster({"pg-a": 10, "pg-b": 20})
    where = schedule_back_to_back(job(16, packing="spread"), states, columnar=columnar)
    assert len(set(where.values())) == 17
    # Under spread a group must have a node per pod: pg-a (10 nodes) cannot hold 17,
    # so the job starts in pg-b (20 nodes) and stays there.
    assert {states[node].placement_group for node in where.values()} == {"pg-b"}


@PATHS
@pytest.mark.parametrize("group_policy", ["preferred", "required"])
def test_first_pod_does_not_lock_the_job_into_a_group_too_small(group_policy, columnar):
    # pg-a: one empty node, the most idle in the cluster, first by name, but 8 GPUs
    # cannot hold 16 workers. pg-b: four nodes, the 0th half busy. The PS must start
    # the job in pg-b, and the whole job stays there.
    states = cluster({"pg-a": 1, "pg-b": 4}, busy_every=4)
    states["pg-a-00"] = make_state("pg-a-00", group="pg-a")
    where = schedule_back_to_back(job(16, group=group_policy), states, columnar=columnar)
    assert {states[node].placement_group for node in where.values()} == {"pg-b"}
    assert len(set(where.values())) == 2


def test_required_job_too_big_for_every_group_is_unresolvable_everywhere():
    states = cluster({"pg-a": 1, "pg-b": 1})
    states["pg-b-00"] = make_state("pg-b-00", group="pg-b")
    pods = job(16, group="required")
    context = decision_context(
        pods[0], job_pods=pods, assumed=AssumedPlacements(), cluster=states, now=0.0,
        config=CONFIG,
    )
    result = filter_nodes(context, list(states.values()))
    assert result.passed == ()
    # pg-a-00 has a background pod (4 GPUs used): 4 workers fit after the PS... the
    # first-fit counts PS (CPU only) + 4 = 5 pods of 17; the empty pg-b-00: 1 + 8 = 9.
    assert result.unresolvable == {
        "pg-a-00": "placement group pg-a can hold 5 of the job's 17 remaining pods "
        "(policy required)",
        "pg-b-00": "placement group pg-b can hold 9 of the job's 17 remaining pods "
        "(policy required)",
    }


def test_bindings_arriving_midway_change_nothing():
    # The same job, but every 4th pod the watch delivers the bindings so far: the node
    # states gain the pods and the assumptions are dropped (observe). Bound and
    # assumed capacity must never be counted twice, so the placement is the same.
    states = cluster({"pg-a": 10, "pg-b": 20})
    pods = job(16)
    expected = schedule_back_to_back(pods, dict(states))
    assumed = AssumedPlacements()
    known = {pod.uid: pod for pod in pods}
    where = {}
    for step, pod in enumerate(pods):
        now = float(step)
        context = decision_context(pod, job_pods=list(known.values()), assumed=assumed,
                                   cluster=states, now=now, config=CONFIG)
        result = filter_nodes(context, list(states.values()))
        chosen = best_node(score_totals(context, [states[n] for n in result.passed]))
        where[pod.name] = chosen
        assumed = assumed.assume(assumption_for(pod, chosen, now, CONFIG))
        if step % 4 == 3:
            for placed in pods[: step + 1]:
                if known[placed.uid].node_name is None:
                    bound = replace(placed, node_name=where[placed.name])
                    known[placed.uid] = bound
                    states[bound.node_name] = states[bound.node_name].with_pod(bound)
                    assumed = assumed.observe(bound)
    assert where == expected
    # 17 pods; bindings arrived after pods 4, 8, 12 and 16: only the 17th is still assumed.
    assert len(assumed) == 1
