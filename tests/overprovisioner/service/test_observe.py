"""Cluster view and hit counting (pure): free nodes, placement groups, preemption events."""

from __future__ import annotations

import pytest

from bucketing.resources import Resources
from overprovisioner.service.observe import (
    buffer_nodes_taken,
    cluster_view,
    live_pod_view,
    new_preemptions,
    parse_node,
    parse_pod,
)


def node(name, instance_type="g5.xlarge", group=None, ready=True, cordoned=False,
         group_key="headstart.io/placement-group", taints=()):
    labels = {"node.kubernetes.io/instance-type": instance_type}
    if group:
        labels[group_key] = group
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": cordoned,
                     "taints": [{"key": k, "effect": e} for k, e in taints]},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name, node_name="", placeholder=False, daemonset=False):
    metadata = {"name": name, "namespace": "ml", "labels": {}}
    if placeholder:
        metadata["labels"]["headstart.io/placeholder"] = "true"
    if daemonset:
        metadata["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvidia-device-plugin"}]
    return {"metadata": metadata, "spec": {"nodeName": node_name}}


@pytest.mark.parametrize(
    "labels_group_key, configured, expected",
    [("headstart.io/placement-group", "headstart.io/placement-group", "pg-a"),
     ("cloud.google.com/gke-placement-group", "cloud.google.com/gke-placement-group", "pg-a"),
     # A group under another key than the configured one is no group here: a placeholder
     # selects its group with the configured key, and `headstart.io/placement-group: pg-a`
     # would match no node (pending forever, and CA has no template with that label).
     ("cloud.google.com/gke-placement-group", "headstart.io/placement-group", ""),
     ("topology.k8s.aws/network-node-layer-3", "headstart.io/placement-group", "")],
    ids=["headstart", "gke-configured", "gke-not-configured", "aws-topology-not-configured"],
)
def test_node_group_only_from_the_key_placeholders_select_on(labels_group_key, configured,
                                                             expected) -> None:
    parsed = parse_node(node("n", group="pg-a", group_key=labels_group_key), configured)
    assert parsed.placement_group == expected


def test_free_nodes_hold_only_daemonset_pods() -> None:
    nodes = [parse_node(n, "headstart.io/placement-group") for n in (
        node("idle", group="pg-a"),             # free: only a daemonset pod
        node("busy", group="pg-a"),             # a real pod
        node("held", group="pg-a"),             # a placeholder
        node("notready", group="pg-a", ready=False),
        node("cordoned", group="pg-a", cordoned=True),
        # cluster-autoscaler is deleting it: idle, but not capacity to plan with
        node("draining", group="pg-a", taints=[("ToBeDeletedByClusterAutoscaler", "NoSchedule")]),
        # a soft scale-down candidate still takes pods
        node("candidate", group="pg-a",
             taints=[("DeletionCandidateOfClusterAutoscaler", "PreferNoSchedule")]),
        node("other-type", instance_type="m5.large"),
    )]
    pods = [parse_pod(p) for p in (
        pod("ds-1", "idle", daemonset=True),
        pod("train-0", "busy"),
        pod("headstart-placeholder-g5-xlarge-pg-a-abc-1", "held", placeholder=True),
        pod("headstart-placeholder-g5-xlarge-pg-a-abc-2", "", placeholder=True),
    )]
    view = cluster_view(nodes, pods, ["g5.xlarge"])
    # 7 g5 nodes in pg-a; free = idle and candidate (notready, cordoned and draining
    # do not count; busy and held run pods).
    assert view.nodes == {("g5.xlarge", "pg-a"): 7}
    assert view.free_nodes == {("g5.xlarge", "pg-a"): 2}
    assert view.placeholders_running == {("g5.xlarge", "pg-a"): 1}
    assert view.placeholders_pending == 1


def event(uid, pod_name, count=1, reason="Preempted"):
    return {"metadata": {"uid": uid}, "reason": reason, "count": count,
            "involvedObject": {"kind": "Pod", "name": pod_name}}


NAMES = {
    "headstart-placeholder-g5-xlarge": ("g5.xlarge", ""),
    "headstart-placeholder-g5-xlarge-pg-a": ("g5.xlarge", "pg-a"),
}


def test_hits_by_longest_name_and_counted_once() -> None:
    events = [
        event("e1", "headstart-placeholder-g5-xlarge-pg-a-7d9f-abcde"),  # pg-a, not ""
        event("e2", "headstart-placeholder-g5-xlarge-7d9f-fghij", count=2),
        event("e3", "train-0"),                                          # not a placeholder
        event("e4", "headstart-placeholder-g5-xlarge-7d9f-zzzzz", reason="Scheduled"),
    ]
    hits, seen = new_preemptions(events, {}, NAMES)
    assert hits == {("g5.xlarge", "pg-a"): 1, ("g5.xlarge", ""): 2}
    # Same events again, e2's count grew by one: only that one is new.
    events[1] = event("e2", "headstart-placeholder-g5-xlarge-7d9f-fghij", count=3)
    hits, _ = new_preemptions(events, seen, NAMES)
    assert hits == {("g5.xlarge", ""): 1}



@pytest.mark.parametrize(
    "group, length",
    [("compact-placement-group-7", 60),  # "headstart-placeholder-" 22 + 12 + 1 + 25
     ("gke-training-pool-compact-placement-7", 63)],  # over 63: cut to 54 + "-" + 8 hex
    ids=["60-chars", "hashed-63-chars"],
)
def test_hits_on_pods_of_a_long_deployment_name(group, length) -> None:
    # Its ReplicaSet is NAME-<hash>, and the API server cuts a generated pod name's base
    # to 58 characters before the 5 random ones: the pod name holds only NAME[:58].
    from overprovisioner.service.objects import placeholder_name

    name = placeholder_name("p4d.24xlarge", group)
    assert len(name) == length
    pod_name = f"{name}-5f6d7c8b9a-"[:58] + "x7k2p"
    names = {name: ("p4d.24xlarge", group),
             "headstart-placeholder-p4d-24xlarge": ("p4d.24xlarge", "")}
    hits, _ = new_preemptions([event("e1", pod_name)], {}, names)
    assert hits == {("p4d.24xlarge", group): 1}


def sized_node(name, ready_at="2023-11-14T20:00:00Z", cpu="3920m", memory="15000Mi", gpus="1"):
    body = node(name)
    body["status"]["allocatable"] = {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpus}
    body["status"]["conditions"][0]["lastTransitionTime"] = ready_at
    return body


def daemon_pod(name, node_name, cpu, memory):
    body = pod(name, node_name, daemonset=True)
    body["spec"]["containers"] = [{"name": "c", "resources": {"requests": {
        "cpu": cpu, "memory": memory}}}]
    return body


def test_rooms_hold_allocatable_and_daemonset_requests() -> None:
    nodes = [parse_node(n, "headstart.io/placement-group") for n in (sized_node("a"),
                                                                       sized_node("b"))]
    pods = [parse_pod(p) for p in (
        daemon_pod("ds-1", "a", "100m", "200Mi"),
        daemon_pod("ds-2", "a", "150m", "300Mi"),
        pod("train-0", "b"),  # a real pod's request is demand, not the node's overhead
    )]
    view = cluster_view(nodes, pods, ["g5.xlarge"])
    by_name = {r.name: r for r in view.rooms}
    # a: two DaemonSet pods, 100m + 150m = 250m and 200Mi + 300Mi = 500Mi.
    assert by_name["a"].daemon_requests == Resources(0, 250, 500 * 1024**2)
    assert by_name["a"].allocatable == Resources(1000, 3920, 15000 * 1024**2)
    assert by_name["b"].daemon_requests == Resources()
    # 2023-11-14T20:00:00Z = 1_700_000_000 - 2h13m20s = 1_699_992_000.
    assert by_name["a"].ready_since_s == 1_699_992_000
    assert view.free_node_names == {("g5.xlarge", ""): frozenset({"a"})}
    assert view.real_pod_nodes == frozenset({"b"})


@pytest.mark.parametrize(
    "free_before, real_now, replicas, expected",
    [
        # a and b were free; a real pod took a: one buffer node taken.
        ({("g5.xlarge", ""): frozenset({"a", "b"})}, {"a"}, {("g5.xlarge", ""): 2},
         {("g5.xlarge", ""): 1}),
        # Two taken but the buffer held only one of them: capped at its replicas.
        ({("g5.xlarge", ""): frozenset({"a", "b"})}, {"a", "b"}, {("g5.xlarge", ""): 1},
         {("g5.xlarge", ""): 1}),
        # No buffer for the bucket: free nodes taken are not buffer hits.
        ({("g5.xlarge", ""): frozenset({"a"})}, {"a"}, {}, {}),
        # A real pod on a node that was not free before: not a hit.
        ({("g5.xlarge", ""): frozenset({"a"})}, {"c"}, {("g5.xlarge", ""): 1}, {}),
    ],
    ids=["one-taken", "capped-at-replicas", "no-buffer", "other-node"],
)
def test_buffer_nodes_taken(free_before, real_now, replicas, expected) -> None:
    assert buffer_nodes_taken(free_before, frozenset(real_now), replicas) == expected


def _reader_with_cache(fake_kube, informer):
    import numpy as np

    from kube.retry import RetryPolicy
    from overprovisioner.service.apply import KubeApi
    from overprovisioner.service.observe import ClusterReader, PodCache

    api = KubeApi(fake_kube.api_client(), 5.0)
    return ClusterReader(api, RetryPolicy(2, 0.001, 0.002), np.random.default_rng(0),
                         lambda s: None, pod_cache=PodCache(informer, 600.0, lambda: 1000.0))


class StubInformer:
    def __init__(self, pods, fresh):
        self._pods, self._fresh = pods, fresh

    def fresh(self, now_s, max_stale_s):
        return self._fresh

    def items(self):
        return {f"default/{p.name}": p for p in self._pods}


@pytest.mark.parametrize("fresh, lists", [(True, 0), (False, 1)],
                         ids=["cache-fresh-no-list", "cache-stale-lists"])
def test_pods_come_from_the_informer_cache_while_it_is_fresh(fake_kube, fresh, lists) -> None:
    fake_kube.create({**node("n1"), "apiVersion": "v1", "kind": "Node"})
    cached = [live_pod_view(pod("real", "n1"))]
    reader = _reader_with_cache(fake_kube, StubInformer(cached, fresh))
    view = reader.view(["g5.xlarge"], "headstart.io/placement-group")
    assert sum(1 for m, p, _ in fake_kube.requests if m == "GET" and p == "/api/v1/pods") == lists
    # fresh: the cached real pod makes n1 busy; stale: the (empty) listed cluster leaves it free
    assert view.free_nodes.get(("g5.xlarge", ""), 0) == (0 if fresh else 1)


@pytest.mark.parametrize("phase, kept", [("Running", True), ("Pending", True),
                                         ("Succeeded", False), ("Failed", False)])
def test_the_pod_cache_drops_finished_pods(phase, kept) -> None:
    body = pod("p", "n1")
    body["status"] = {"phase": phase}
    assert (live_pod_view(body) is not None) is kept
