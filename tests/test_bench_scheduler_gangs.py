"""bench/bench_scheduler_gangs.py's gangs: what each mode's PodGroups and pods say, and the
check that a run's pods carried the gang rule (the cluster runs themselves need the
end-to-end binaries and are the benchmark, not a test)."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

from common.errors import InputError

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(
            "bench_scheduler_gangs", REPO / "bench" / "bench_scheduler_gangs.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_coscheduling_gangs_have_a_podgroup_of_their_size_and_labelled_pods(bench):
    groups, pods = bench.gang_pods("coscheduling", "ns", 4, 12)
    assert [body["metadata"]["name"] for _, body in groups] == ["g0000", "g0001", "g0002"]
    assert {body["spec"]["minMember"] for _, body in groups} == {4}
    assert {path for path, _ in groups} == {
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups"}
    assert Counter(p["metadata"]["labels"][bench.POD_GROUP_LABEL] for p in pods) == {
        "g0000": 4, "g0001": 4, "g0002": 4}
    assert {p["spec"]["schedulerName"] for p in pods} == {"bench-coscheduling"}


def test_headstart_gangs_are_bare_pods_the_admitter_must_group(bench):
    groups, pods = bench.gang_pods("headstart", "ns", 64, 128)
    assert groups == []
    assert len(pods) == 128
    assert all(bench.POD_GROUP_LABEL not in p["metadata"]["labels"] for p in pods)
    assert {p["metadata"]["annotations"][bench.JOB_SIZE] for p in pods} == {"64"}
    assert {p["spec"]["schedulerName"] for p in pods} == {"headstart-scheduler"}
    assert "schedulingGates" not in pods[0]["spec"]  # the shipped policy adds the gate


def test_in_tree_gangs_name_a_v1alpha2_podgroup_with_its_min_count(bench):
    groups, pods = bench.gang_pods("gang-scheduling", "ns", 4, 8)
    assert [(path, body["apiVersion"], body["spec"]) for path, body in groups] == [
        ("/apis/scheduling.k8s.io/v1alpha2/namespaces/ns/podgroups",
         "scheduling.k8s.io/v1alpha2", {"schedulingPolicy": {"gang": {"minCount": 4}}})] * 2
    assert [p["spec"]["schedulingGroup"]["podGroupName"] for p in pods] == \
        ["g0000"] * 4 + ["g0001"] * 4


def test_a_pod_bound_without_its_podgroup_is_named(bench):
    _, pods = bench.gang_pods("gang-scheduling", "ns", 4, 8)
    assert bench.gang_rule_missing("gang-scheduling", pods) == []
    del pods[5]["spec"]["schedulingGroup"]  # an API server without GenericWorkload drops it
    assert bench.gang_rule_missing("gang-scheduling", pods) == ["g0001-w-01"]
    _, bare = bench.gang_pods("headstart", "ns", 4, 4)
    assert bench.gang_rule_missing("headstart", bare) == [p["metadata"]["name"] for p in bare]


@pytest.mark.parametrize(("text", "choices", "message"), [
    ("4,x", None, "expected whole numbers"),
    ("0", None, "at least 1"),
    ("coscheduling,volcano", ("coscheduling", "headstart"), "unknown volcano"),
    (",", None, "empty list"),
])
def test_bad_lists_are_named(bench, text, choices, message):
    with pytest.raises(InputError, match=message):
        bench.parse_list(text, "--flag", choices)
