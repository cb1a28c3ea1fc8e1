"""A node group whose nodes have LESS allocatable than headstart's catalog says.

The kwok provider's g5.12xlarge template (tests/e2e/data/kwok-provider.yaml) reports
184Gi (188416Mi) of allocatable memory, against 195043Mi in bucketing/catalogs/aws.yaml,
as a real kubelet's often is. The overprovisioner sizes its placeholder by
the fraction rule while no node of the type exists, then (overprovisioner/planner/sizing.py)
from a live node once one has been Ready for 60 s. Either way the placeholder must fit:
cluster-autoscaler scales up for it (TriggeredScaleUp, never NotTriggerScaleUp), it runs
on the new node, and neither /plan nor the placeholder_problem metric reports a
problem (e.g. too_big).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from bucketing.resources import parse_resource_quantity
from tests.e2e.headstart import Extender, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, phase
from tests.e2e.placeholders import LADDER_CONFIG, NAMESPACE, placeholder_pods

INSTANCE_TYPE = "g5.12xlarge"
TYPE_LABEL = "node.kubernetes.io/instance-type"
NODE_MEMORY = 184 * 1024**3  # the template's allocatable (kwok-provider.yaml)
LOGS = ["headstart-overprovisioner", "cluster-autoscaler", "headstart-scheduler"]


@pytest.fixture
def reduced(e2e_clusters):
    spec, port = headstart_cluster(autoscaler=True)
    cluster = e2e_clusters.start(spec, "allocatable")
    Extender(cluster, port=port).start().wait_ready()
    cluster.kube.ensure_namespace(NAMESPACE)
    settings = {**LADDER_CONFIG, "instance_types": [INSTANCE_TYPE],
                "limits": {"cost_cap_per_hour": None}}
    overprovisioner = Overprovisioner(cluster, settings).start()
    overprovisioner.wait_ready()
    yield cluster, overprovisioner
    cluster.stop()


def bucket(overprovisioner) -> dict[str, Any]:
    [entry] = [b for b in overprovisioner.plan()["buckets"]
               if b["instance_type"] == INSTANCE_TYPE]
    return entry


def problem_samples(overprovisioner) -> list[str]:
    """The placeholder_problem samples that are set (value not 0)."""
    return [line for line in overprovisioner.get("/metrics").text.splitlines()
            if line.startswith("headstart_overprovisioner_placeholder_problem{")
            and float(line.rsplit(" ", 1)[1]) != 0]


def memory_bytes(pod: dict[str, Any]) -> int:
    [container] = pod["spec"]["containers"]
    return int(parse_resource_quantity(container["resources"]["requests"]["memory"], "memory"))


def running_placeholder(kube) -> Any:
    pods = [p for p in placeholder_pods(kube, INSTANCE_TYPE)
            if not p["metadata"].get("deletionTimestamp")]
    running = [p for p in pods if phase(p) == "Running"]
    return running[0] if running and len(pods) == 1 else NotYet(
        [(p["metadata"]["name"], phase(p), bound_node(p)) for p in pods])


def test_placeholders_fit_nodes_below_the_catalog_before_and_after_sizing_from_them(
        reduced, e2e_timings):
    cluster, overprovisioner = reduced
    kube = cluster.kube
    started = time.monotonic()
    cluster.wait("the first plan", lambda: overprovisioner.plan(), 60, LOGS)
    entry = bucket(overprovisioner)
    assert (entry["request_source"], entry["problem"]) == ("fraction", None), entry

    first = cluster.wait("the g5.12xlarge placeholder running on a node CA launched",
                         lambda: running_placeholder(kube), 150, LOGS)
    first_running_s = time.monotonic() - started
    node = kube.get(f"/api/v1/nodes/{bound_node(first)}")
    assert node["metadata"]["labels"][TYPE_LABEL] == INSTANCE_TYPE
    assert node["metadata"]["annotations"]["cluster-autoscaler.kwok.nodegroup/name"] \
        == INSTANCE_TYPE
    assert memory_bytes(first) <= NODE_MEMORY
    refused = kube.list(f"/api/v1/namespaces/{NAMESPACE}/events",
                        field_selector="reason=NotTriggerScaleUp")
    assert not refused, [e["message"] for e in refused]
    triggered = kube.list(f"/api/v1/namespaces/{NAMESPACE}/events",
                          field_selector="reason=TriggeredScaleUp")
    assert any(INSTANCE_TYPE in e["message"] for e in triggered), triggered

    # Once the node has been Ready for 60 s it is the template: the placeholder is
    # re-sized from its allocatable, re-created, and still fits (on the same node: CA
    # waits 30 s before scaling up for a GPU pod, the scheduler needs well under that).
    def sized_from_node() -> Any:
        entry = bucket(overprovisioner)
        return (entry if entry["request_source"] == "nodes"
                else NotYet((entry["request_source"], entry["request_detail"])))

    entry = cluster.wait("the placeholder sized from the live node", sized_from_node, 150,
                         LOGS)
    resized_s = time.monotonic() - started

    def resized_running() -> Any:
        pod = running_placeholder(kube)
        if not pod:
            return pod
        return pod if pod["metadata"]["uid"] != first["metadata"]["uid"] else NotYet(
            "the first placeholder still runs")

    second = cluster.wait("the re-sized placeholder running", resized_running, 120, LOGS)
    assert memory_bytes(second) <= NODE_MEMORY
    assert memory_bytes(second) != memory_bytes(first), "the template did not change"
    nodes = [n["metadata"]["name"] for n in kube.list(
        "/api/v1/nodes", label_selector=f"{TYPE_LABEL}={INSTANCE_TYPE}")]
    assert nodes == [bound_node(first)] and bound_node(second) == bound_node(first), \
        (nodes, bound_node(second))
    entry = bucket(overprovisioner)
    assert (entry["problem"], entry["problem_detail"]) == (None, None), entry
    assert problem_samples(overprovisioner) == []
    assert not kube.list(f"/api/v1/namespaces/{NAMESPACE}/events",
                         field_selector="reason=NotTriggerScaleUp")
    e2e_timings.record("reduced allocatable (g5.12xlarge)",
                       first_placeholder_running=first_running_s,
                       sized_from_node=resized_s,
                       resized_placeholder_running=time.monotonic() - started)
