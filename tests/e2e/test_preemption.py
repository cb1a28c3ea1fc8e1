"""A training pod takes a placeholder's node, and nothing ping-pongs.

Deployment backend: the overprovisioner keeps one p4d.24xlarge placeholder (the
cold-start ladder); cluster-autoscaler launches its node. A training pod of the same
GPU shape (8 GPUs, schedulerName headstart-scheduler) preempts the placeholder and binds
to THAT node before any other p4d node exists. For the next 2 minutes every placeholder
binding (read from the pods, polled, and from the Scheduled events, which outlive the
pods) is on another node: a placeholder has `preemptionPolicy: Never` and the lowest
priority, and kube-scheduler reserves a nominated node for the preemptor against
lower-priority pods. The plan still wants 1 placeholder, so the Deployment's new pod
makes cluster-autoscaler launch a second node and runs there.

CapacityBuffer backend (cluster-autoscaler's v1beta1 controller and pod injection on):
there is no placeholder pod to preempt; the training pod binds to the node
cluster-autoscaler launched for the buffer, and cluster-autoscaler launches one more
node for the buffer, and no more, over the same 2 minutes.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.headstart import Extender, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, phase, training_pod
from tests.e2e.placeholders import LADDER_CONFIG, NAMESPACE, placeholder_pods

INSTANCE_TYPE = "p4d.24xlarge"
TYPE_LABEL = "node.kubernetes.io/instance-type"
WATCH_S = 120.0
LOGS = ["headstart-overprovisioner", "cluster-autoscaler", "headstart-scheduler",
        "headstart-extender"]
ONE_TYPE = {**LADDER_CONFIG, "instance_types": [INSTANCE_TYPE]}


def start(e2e_clusters, name: str, backend: str):
    spec, port = headstart_cluster(autoscaler=True)
    cluster = e2e_clusters.start(spec, name)
    Extender(cluster, port=port).start().wait_ready()
    cluster.kube.ensure_namespace(NAMESPACE)
    settings = {**ONE_TYPE, "placeholders": {**ONE_TYPE["placeholders"], "backend": backend}}
    overprovisioner = Overprovisioner(cluster, settings).start()
    overprovisioner.wait_ready()
    return cluster, overprovisioner


@pytest.fixture
def deployment_backend(e2e_clusters):
    cluster, overprovisioner = start(e2e_clusters, "preemption", "deployment")
    yield cluster, overprovisioner
    cluster.stop()


@pytest.fixture
def buffer_backend(e2e_clusters):
    cluster, overprovisioner = start(e2e_clusters, "preemption-buffers", "auto")
    yield cluster, overprovisioner
    cluster.stop()


def gpu_nodes(kube) -> list[str]:
    return sorted(n["metadata"]["name"]
                  for n in kube.list("/api/v1/nodes", label_selector=f"{TYPE_LABEL}="
                                                                     f"{INSTANCE_TYPE}"))


def trainer(namespace: str) -> dict[str, Any]:
    """One 8-GPU pod, a job of one: its declared size lets the job admitter lift the
    placement gate at once (a job of unknown size waits for more pods first, while the
    overprovisioner counts the gated pod as announced work)."""
    return training_pod("trainer-0", namespace, job="trainer", role="worker", gpus=8,
                        cpu="8", memory="32Gi", annotations={"headstart.io/job-size": "1"})


def create_and_wait_bound(cluster, namespace: str) -> tuple[str, float]:
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    created = time.monotonic()
    kube.create(f"/api/v1/namespaces/{namespace}/pods", trainer(namespace))
    node = cluster.wait("the training pod bound",
                        lambda: bound_node(kube.pod(namespace, "trainer-0")), 60, LOGS)
    return node, time.monotonic() - created


def type_totals(overprovisioner) -> tuple[str, int, list[str]]:
    """The plan's mode, and the p4d buckets' (ungrouped and pg-a) wanted placeholders,
    summed, and their problems. (Not `in_use`: at cold start /plan reports 0 there, as
    it is taken from the forecast, which the ladder has none of.)"""
    plan = overprovisioner.plan()
    buckets = [b for b in plan["buckets"] if b["instance_type"] == INSTANCE_TYPE]
    return (plan["mode"], sum(b["wanted"] for b in buckets),
            [b["problem"] for b in buckets if b["problem"]])


def counter(overprovisioner, name: str, **labels: str) -> float:
    """The sum of counter `name`'s samples (headstart_overprovisioner_<name>_total) whose
    labels include `labels`."""
    full = f"headstart_overprovisioner_{name}_total"
    return sum(sample.value
               for family in text_string_to_metric_families(overprovisioner.get("/metrics").text)
               for sample in family.samples
               if sample.name == full and labels.items() <= sample.labels.items())


def scheduled_events(kube) -> list[tuple[str, str]]:
    """(pod, message) of every Scheduled event in the placeholders' namespace."""
    return [(e["involvedObject"]["name"], e.get("message") or e.get("note") or "")
            for e in kube.list(f"/api/v1/namespaces/{NAMESPACE}/events",
                               field_selector="reason=Scheduled")]


def test_a_training_pod_preempts_a_placeholder_and_it_does_not_come_back(
        deployment_backend, namespace, e2e_timings):
    cluster, overprovisioner = deployment_backend
    kube = cluster.kube

    def placeholder_running() -> Any:
        pods = [p for p in placeholder_pods(kube, INSTANCE_TYPE) if phase(p) == "Running"]
        return pods[0] if pods else NotYet([p.get("status") for p in
                                            placeholder_pods(kube, INSTANCE_TYPE)])

    first = cluster.wait("the p4d placeholder running", placeholder_running, 150, LOGS)
    taken = bound_node(first)
    assert gpu_nodes(kube) == [taken]

    node, bind_s = create_and_wait_bound(cluster, namespace)
    assert node == taken, f"the training pod went to {node}, not the placeholder's {taken}"
    assert gpu_nodes(kube) == [taken], "a node was launched for the training pod"
    preempted = time.monotonic()
    assert not kube.events(namespace, "trainer-0", reason="TriggeredScaleUp")
    victims = kube.events(NAMESPACE, first["metadata"]["name"], reason="Preempted")
    assert victims, f"no Preempted event for {first['metadata']['name']}"

    # Two minutes: every placeholder binding is elsewhere; the training pod stays.
    bindings: dict[str, str] = {}
    replaced_on: str | None = None
    replaced_s = None
    while time.monotonic() - preempted < WATCH_S:
        for pod in placeholder_pods(kube, INSTANCE_TYPE):
            if bound_node(pod):
                bindings[pod["metadata"]["name"]] = bound_node(pod)
            if pod["metadata"]["uid"] != first["metadata"]["uid"] and phase(pod) == "Running" \
                    and replaced_on is None:
                replaced_on, replaced_s = bound_node(pod), time.monotonic() - preempted
        training = kube.pod(namespace, "trainer-0")
        assert bound_node(training) == taken and training["metadata"].get(
            "deletionTimestamp") is None, training
        time.sleep(0.5)
    bindings.pop(first["metadata"]["name"], None)
    assert taken not in bindings.values(), bindings
    events = [(pod, message) for pod, message in scheduled_events(kube)
              if pod != first["metadata"]["name"]]
    assert events and not [e for e in events if f"to {taken}" in e[1]], events
    assert phase(kube.pod(namespace, "trainer-0")) == "Running"

    # The plan still wants one placeholder: its new pod got a node of its own.
    assert replaced_on is not None and replaced_on != taken, bindings
    nodes = gpu_nodes(kube)
    assert nodes == sorted([taken, replaced_on]), nodes
    assert type_totals(overprovisioner) == ("ladder", 1, []), overprovisioner.plan()["buckets"]
    # headstart saw the hit (the Preempted event) and re-planned at once for it.
    assert counter(overprovisioner, "placeholder_preemptions",
                   instance_type=INSTANCE_TYPE, placement_group="pg-a") == 1
    assert counter(overprovisioner, "wakeups", reason="preemption") >= 1
    e2e_timings.record("preemption (Deployment placeholders)",
                       training_pod_created_to_bound=bind_s,
                       preempted_to_replacement_running_on_new_node=replaced_s,
                       watched=WATCH_S, placeholder_bindings_after=len(bindings))


def test_a_training_pod_takes_a_capacity_buffers_node_and_ca_adds_one_node(
        buffer_backend, namespace, e2e_timings):
    cluster, overprovisioner = buffer_backend
    kube = cluster.kube
    first = cluster.wait("a p4d node for the buffer", lambda: gpu_nodes(kube), 120, LOGS)
    assert len(first) == 1, first
    assert overprovisioner.plan()["applied"]["backend"] == "capacitybuffer"
    [taken] = first
    cluster.wait(f"{taken} Ready", lambda: any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in kube.get(f"/api/v1/nodes/{taken}")["status"].get("conditions") or []),
        30, ["kwok"])
    # headstart infers a buffer's node was taken from two observations (free, then
    # running a real pod): the pod comes once a tick has seen the node free.
    cluster.wait("the overprovisioner to see the buffer's node free", lambda: [
        b for b in overprovisioner.plan()["buckets"]
        if (b["instance_type"], b["placement_group"], b["free"]) == (INSTANCE_TYPE, "pg-a", 1)],
        30, LOGS)

    node, bind_s = create_and_wait_bound(cluster, namespace)
    assert node == taken, f"the training pod went to {node}, not the buffer's {taken}"
    bound = time.monotonic()

    second = cluster.wait("cluster-autoscaler to launch a node for the buffer again",
                          lambda: len(gpu_nodes(kube)) == 2 or NotYet(gpu_nodes(kube)),
                          90, LOGS)
    assert second
    relaunch_s = time.monotonic() - bound
    counts = set()
    while time.monotonic() - bound < WATCH_S:
        counts.add(len(gpu_nodes(kube)))
        training = kube.pod(namespace, "trainer-0")
        assert bound_node(training) == taken, training
        time.sleep(1.0)
    assert counts == {2}, f"p4d node counts seen over {WATCH_S:.0f} s: {sorted(counts)}"
    assert phase(kube.pod(namespace, "trainer-0")) == "Running"
    assert type_totals(overprovisioner) == ("ladder", 1, []), overprovisioner.plan()["buckets"]
    # headstart inferred the hit: a node free at one tick runs a real pod at the next.
    assert counter(overprovisioner, "buffer_nodes_taken",
                   instance_type=INSTANCE_TYPE, placement_group="pg-a") == 1
    e2e_timings.record("preemption (CapacityBuffer)",
                       training_pod_created_to_bound=bind_s,
                       bound_to_second_node=relaunch_s, watched=WATCH_S)
