"""NodeTable: its columns equal a rebuild after changes, and the rules over them judge each
node on its own row."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bucketing.resources import Resources
from locality.columns import NodeTable
from locality.context import decision_context
from locality.filter import ReasonCode, filter_table, node_verdict
from locality.model import NodeState
from locality.numa import pod_numa_demand
from locality.placement import AssumedPlacements, assumption_for
from locality.reasons import UNKNOWN_NODE_REASON
from locality.score import score_nodes, score_table
from locality.topology import domains_of
from tests.locality.builders import CONFIG, make_node, make_pod, make_state

GROUPS = [None, "pg-a", "pg-b", "pg-c"]
LEVELS = [("block", ["b1", "b2"]), ("subblock", ["s1", "s2", "s3"]), ("nvlink", ["c1", "c2"])]
POLICIES = ["single-numa-node", "restricted", "best-effort", "none"]
MIG = "nvidia.com/mig-1g.5gb"


@st.composite
def clusters(draw):
    """Nodes with odd shapes (zero GPUs, zero memory, overcommitted), groups, NUMA
    zones, placeholders; a job with placed and pending pods; assumptions; a policy."""
    size = draw(st.integers(1, 12))
    states = []
    for index in range(size):
        name = f"n{index}"
        gpus = draw(st.sampled_from([0, 4, 8]))
        cpu = draw(st.sampled_from([0, 8, 96]))
        memory = draw(st.sampled_from([0, 64, 768]))
        used = [
            make_pod(f"bg{index}", gpus=draw(st.integers(0, 9)), cpu=draw(st.integers(0, 100)),
                     memory_gib=draw(st.integers(0, 800)))
        ]
        if draw(st.booleans()):
            used.append(make_pod(f"ph{index}", gpus=draw(st.integers(0, 4)), cpu=4,
                                 placeholder=True))
        zones = None
        if draw(st.booleans()):
            zones = [(draw(st.integers(0, 4)), draw(st.integers(0, 48)), 4, 48)
                     for _ in range(2)]
        group = draw(st.sampled_from(GROUPS))
        # Topology levels beside the placement group (a node may lack any of them).
        domains = [(level, draw(st.sampled_from(values)))
                   for level, values in LEVELS if draw(st.booleans())]
        if group is not None and domains:
            domains.insert(min(2, len(domains)), ("placement-group", group))
        mig = draw(st.sampled_from([0, 0, 7]))
        state = make_state(name, gpus=gpus, cpu=cpu, memory_gib=memory, group=group,
                           pods=used, zones=zones, domains=domains,
                           policy=draw(st.sampled_from(POLICIES)),
                           scope=draw(st.sampled_from(["pod", "container"])),
                           devices=[("nvidia.com/gpu", gpus)] + (
                               [(MIG, mig)] if mig else []))
        closed = draw(st.sampled_from([{}] * 7 + [
            {"unschedulable": True}, {"ready": False},
            {"blocking_taints": ("ToBeDeletedByClusterAutoscaler",)},
        ]))
        if closed:
            state = state.with_node(replace(state.node, **closed))
        states.append(state)
    names = [state.name for state in states]
    annotations = {
        "headstart.io/packing": draw(st.sampled_from(["pack", "spread"])),
        "headstart.io/placement-group": draw(st.sampled_from(["required", "preferred", "none"])),
        "headstart.io/numa": draw(st.sampled_from(["required", "preferred", "none"])),
    }
    level = draw(st.sampled_from([None, "nvlink", "block", "placement-group"]))
    if level is not None:
        annotations["headstart.io/topology-level"] = level
    shapes = [(0, 4, 8, 0), (1, 8, 32, 0), (2, 16, 64, 0), (0.5, 0.5, 0, 0), (0, 2, 8, 2)]
    job_pods = []
    for index in range(draw(st.integers(0, 10))):
        gpus, cpu, memory, slices = draw(st.sampled_from(shapes))
        node = draw(st.sampled_from([None, *names]))
        role = draw(st.sampled_from(["ps", "worker", "chief", "launcher", "evaluator"]))
        job_pods.append(make_pod(f"j{index}", gpus=gpus, cpu=cpu, memory_gib=memory, job="j",
                                 role=role, node=node, pinned=draw(st.booleans()),
                                 devices=_devices(gpus, slices)))
    gpus, cpu, memory, slices = draw(st.sampled_from(shapes))
    pod = replace(make_pod("me", gpus=gpus, cpu=cpu, memory_gib=memory, job="j",
                           role=draw(st.sampled_from(["ps", "worker", "chief"])),
                           pinned=draw(st.booleans()), devices=_devices(gpus, slices)),
                  annotations=annotations)
    assumed = AssumedPlacements()
    for other in job_pods:
        if other.node_name is None and draw(st.booleans()):
            assumed = assumed.assume(assumption_for(other, draw(st.sampled_from(names)),
                                                    0.0, CONFIG))
    candidates = draw(st.lists(st.sampled_from(names), unique=True))
    return states, [*job_pods, pod], pod, assumed, candidates


def _devices(gpus, slices):
    return ([("nvidia.com/gpu", gpus)] if gpus else []) + ([(MIG, slices)] if slices else [])


def contexts(states, job_pods, pod, assumed):
    by_name = {state.name: state for state in states}
    table = NodeTable(states)
    kwargs = dict(job_pods=job_pods, assumed=assumed, now=1.0, config=CONFIG)
    return (decision_context(pod, cluster=by_name, **kwargs),
            decision_context(pod, cluster=table, **kwargs), by_name, table)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_dict_cluster_and_a_table_give_the_same_context(case):
    # decision_context sizes groups over a NodeTable either way: the dict is put in one.
    states, job_pods, pod, assumed, _ = case
    from_dict, from_table, _, _ = contexts(states, job_pods, pod, assumed)
    assert from_table.group_fits == from_dict.group_fits
    assert from_table.preferred_groups == from_dict.preferred_groups
    assert from_table.home_group == from_dict.home_group
    assert from_table.targets == from_dict.targets
    assert from_table.required_fits == from_dict.required_fits


UNRESOLVABLE_CODES = {ReasonCode.PLACEMENT_GROUP, ReasonCode.NUMA}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_each_node_is_judged_on_its_own_row(case):
    """The rules run over columns: a verdict or score must not depend on the other rows,
    their order, or which candidates came with it. Judging each candidate alone (a table
    of that one node, `node_verdict` / `score_nodes`) and the whole table with its rows
    reversed must agree with the candidates judged together."""
    states, job_pods, pod, assumed, candidates = case
    _, context, by_name, table = contexts(states, job_pods, pod, assumed)
    result = filter_table(context, table, candidates)
    totals = score_table(context, table, candidates)
    reversed_table = NodeTable(reversed(states))
    assert filter_table(context, reversed_table, candidates) == result
    assert score_table(context, reversed_table, candidates) == totals
    assert set(result.passed) | result.failed.keys() | result.unresolvable.keys() == set(
        candidates)
    assert result.codes.keys() == result.failed.keys() | result.unresolvable.keys()
    for name, total in zip(candidates, totals, strict=True):
        reason, code, resolvable = node_verdict(context, by_name[name])
        if name in result.passed:
            assert reason is None
        else:
            assert (reason, code) == (
                result.failed.get(name) or result.unresolvable[name], result.codes[name])
            assert resolvable == (name in result.failed)
            assert (code in UNRESOLVABLE_CODES) == (not resolvable)
        assert score_nodes(context, [by_name[name]])[name].total == total
        assert 0 <= total <= 10


@settings(max_examples=50, deadline=None)
@given(clusters(), st.data())
def test_with_states_equals_a_rebuild(case, data):
    states, _, _, _, _ = case
    table = NodeTable(states)
    # Warm the NUMA memo: with_states carries it over, recomputing the changed rows.
    numa_shapes = [pod_numa_demand(1000, 0), pod_numa_demand(2000, 8000),
                   pod_numa_demand(4000, 0)]
    for shape in numa_shapes:
        table.numa_fits(shape)
    changed = []
    for state in data.draw(st.lists(st.sampled_from(states), max_size=4)):
        extra = make_pod("new", gpus=data.draw(st.integers(0, 2)), cpu=2)
        change = data.draw(st.sampled_from(["pod", "topology", "zones", "not-ready"]))
        if change == "pod":
            changed.append(state.with_pod(extra))
        elif change == "topology":
            changed.append(state.with_topology(None))
        elif change == "zones":
            zones = data.draw(st.sampled_from([[(0, 48), (2, 8)], [(4, 48), (4, 48)]]))
            changed.append(state.with_topology(make_state(state.name, zones=zones).topology))
        else:
            changed.append(state.with_node(replace(state.node, ready=False)))
    updated = table.with_states(changed)
    by_name = {state.name: state for state in states}
    by_name.update((state.name, state) for state in changed)
    rebuilt = NodeTable(by_name.values())
    for column in ("group_codes", "free_gpu", "free_cpu", "free_memory", "allocatable_gpu",
                   "holds_placeholders", "closed"):
        assert np.array_equal(getattr(updated, column), getattr(rebuilt, column)), column
    assert updated.topology_rows == rebuilt.topology_rows
    assert list(updated.values()) == list(rebuilt.values())
    for level, codes in rebuilt.level_codes.items():
        assert np.array_equal(updated.level_codes[level], codes), level
    for shape in numa_shapes:
        assert np.array_equal(updated.numa_fits(shape), rebuilt.numa_fits(shape)), shape


def test_with_states_leaves_the_old_table_alone():
    table = NodeTable([make_state("a"), make_state("b")])
    busy = table["a"].with_pod(make_pod("x", gpus=8, cpu=1))
    updated = table.with_states([busy])
    assert (table.free_gpu.tolist(), updated.free_gpu.tolist()) == ([8000, 8000], [0, 8000])


def test_new_node_and_new_group_rebuild():
    table = NodeTable([make_state("a", group="pg-a")])
    updated = table.with_states([make_state("b", group="pg-new")])
    assert (updated.names, updated.groups) == (("a", "b"), ("pg-a", "pg-new"))
    assert updated.without(["a"]).names == ("b",)


def test_unknown_candidate_names():
    table = NodeTable([make_state("a")])
    worker = make_pod("w", gpus=1, job="j", role="worker")
    context = decision_context(worker, job_pods=[worker], assumed=AssumedPlacements(),
                               cluster=table, now=0.0, config=CONFIG)
    result = filter_table(context, table, ["a", "ghost"])
    assert (result.passed, result.failed) == (("a",), {"ghost": UNKNOWN_NODE_REASON})
    assert score_table(context, table, ["ghost", "a"])[0] == 0
    # A pod of no job passes everywhere, known or not.
    plain = make_pod("plain")
    plain_context = decision_context(plain, job_pods=[], assumed=AssumedPlacements(),
                                     cluster=table, now=0.0, config=CONFIG)
    assert filter_table(plain_context, table, ["a", "ghost"]).passed == ("a", "ghost")


@st.composite
def grouped_nodes(draw):
    """Nodes in a few groups and blocks, some partly used, some closed."""
    states = []
    for index in range(draw(st.integers(1, 10))):
        group = draw(st.sampled_from(GROUPS))
        block = draw(st.sampled_from([None, "b1", "b2"]))
        used = draw(st.integers(0, 8))
        state = make_state(f"n{index}", gpus=8, cpu=64, group=group,
                           domains=[("block", block)] if block else [],
                           pods=[make_pod(f"bg{index}", gpus=used, cpu=used * 4)] if used else [])
        if draw(st.integers(0, 5)) == 0:
            state = state.with_node(replace(state.node, unschedulable=True))
        states.append(state)
    shapes = draw(st.lists(st.sampled_from(
        [Resources.of(1, 4, 16), Resources.of(2, 8, 32), Resources.of(0, 4, 8)]),
        min_size=1, max_size=3, unique=True))
    return states, tuple((shape, draw(st.integers(1, 12))) for shape in shapes)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grouped_nodes(), st.sampled_from([None, 1]), st.sampled_from([None, "block"]))
def test_each_group_is_sized_on_its_own_nodes(case, per_node, level):
    """Group sizing fills every group at once over sorted columns: each group's answer
    must be what a table of that group's nodes alone gives."""
    states, remaining = case
    fits = NodeTable(states).fit_job_into_groups(remaining, {}, per_node, level)
    for domain, fit in fits.items():
        alone = [s for s in states if (s.placement_group if level is None else dict(
            domains_of(s.node.domains, s.placement_group)).get(level)) == domain]
        assert NodeTable(alone).fit_job_into_groups(remaining, {}, per_node, level)[
            domain] == fit


@pytest.mark.parametrize("per_node", [None, 1], ids=["pack", "spread"])
def test_group_fit_example(per_node):
    # pg-a: two 8-GPU nodes, one with 3 GPUs used. 1 PS (CPU) + 12 one-GPU workers.
    # pack: workers 8 + 5 = 13 >= 12, then the PS -> 13 of 13.
    # spread: one pod per node -> 2 of 13.
    states = [make_state("a1", group="pg-a"),
              make_state("a2", group="pg-a", pods=[make_pod("x", gpus=3, cpu=1)])]
    remaining = ((Resources.of(1, 4, 16), 12), (Resources.of(0, 4, 8), 1))
    expected = 13 if per_node is None else 2
    fits = NodeTable(states).fit_job_into_groups(remaining, {}, per_node)
    assert fits["pg-a"].pods_that_fit == expected


def test_table_is_a_mapping_of_states():
    states = [make_state("a"), NodeState(make_node("b"))]
    table = NodeTable(states)
    assert dict(table) == {"a": states[0], "b": states[1]}
    assert "a" in table and "z" not in table and len(table) == 2
