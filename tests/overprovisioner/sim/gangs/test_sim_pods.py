"""The replay's pod table: the pending pods it keeps apart are exactly what a scan of
every pod finds, in the same order, however pods are set, bound, gated and removed."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from overprovisioner.sim.gangs.pods import PodTable
from tests.locality.builders import make_pod

NAMES = [f"p{i}" for i in range(8)]
OPS = st.lists(st.tuples(st.sampled_from(["set", "gate", "bind", "pop"]),
                         st.sampled_from(NAMES)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_pending_is_what_a_full_scan_finds_in_the_same_order(ops):
    table, reference = PodTable(), {}
    for op, name in ops:
        versions = table.version
        if op == "pop":
            if name in reference:
                del reference[name]
                table.pop(name)
                assert table.version == versions + 1
            continue
        pod = reference.get(name) or make_pod(name)
        if op == "gate":
            pod = replace(pod, scheduling_gates=("g",))
        elif op == "bind":
            pod = replace(pod, scheduling_gates=(), node_name="n1")
        else:
            pod = replace(pod, scheduling_gates=(), node_name=None)
        reference[name] = pod
        table[name] = pod
        assert table.version == versions + 1
        assert list(table) == list(reference)
    scan = [n for n, p in reference.items() if not p.scheduling_gates and p.node_name is None]
    assert table.pending() == scan
    assert table.has_pending() == bool(scan)
