"""The overprovisioner (cold-start ladder) against a real cluster-autoscaler: its
placeholder Deployments make CA launch kwok nodes of the right instance type and
placement group and run there; its CapacityBuffers (backend auto, CA's CRDs installed)
make CA launch those nodes with no placeholder pod at all."""

from __future__ import annotations

import time

import pytest

from tests.e2e import installed
from tests.e2e.audit import accesses
from tests.e2e.headstart import Extender, Overprovisioner, headstart_cluster
from tests.e2e.kube import NotYet
from tests.e2e.objects import bound_node, phase, training_pod
from tests.e2e.placeholders import LADDER_CONFIG, NAMESPACE, placeholder_pods
from tests.manifests import checks

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
PLACEMENT_GROUP = "headstart.io/placement-group"


class ScaleUpRefused(AssertionError):
    """cluster-autoscaler said no node group can run the placeholder (NotTriggerScaleUp)."""


def start_cluster(e2e_clusters, name):
    """CA, and the headstart-scheduler with its extender (placeholders go through it)."""
    spec, port = headstart_cluster(autoscaler=True)
    cluster = e2e_clusters.start(spec, name)
    Extender(cluster, port=port).start().wait_ready()
    cluster.kube.ensure_namespace(NAMESPACE)
    return cluster


@pytest.fixture(scope="module")
def ladder(e2e_clusters):
    """A cluster with CA and an overprovisioner keeping 1 placeholder per type."""
    cluster = start_cluster(e2e_clusters, "overprovisioner")
    overprovisioner = Overprovisioner(cluster, LADDER_CONFIG)
    started = time.monotonic()
    overprovisioner.start().wait_ready()
    yield cluster, overprovisioner, started
    cluster.stop()


@pytest.mark.parametrize(
    ("instance_type", "group"),
    [
        ("m5.4xlarge", None),
        ("p4d.24xlarge", "pg-a"),
        # Allocatable below the catalog's: the placeholder must still fit (sized from the
        # fraction rule before a node exists, from the live node after).
        ("g5.12xlarge", None),
    ],
    ids=["cpu-type", "8-gpu-type-in-a-placement-group", "node-allocatable-below-catalog"],
)
def test_a_placeholder_makes_cluster_autoscaler_launch_a_node_of_its_type(
        ladder, instance_type, group, e2e_timings):
    cluster, overprovisioner, started = ladder
    kube = cluster.kube
    logs = ["headstart-overprovisioner", "cluster-autoscaler", "headstart-scheduler"]

    def placeholder_outcome():
        pods = [p for p in placeholder_pods(kube, instance_type)
                if not p["metadata"].get("deletionTimestamp")]
        if not pods:
            return NotYet("no placeholder pod yet")
        assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
        [pod] = pods
        if bound_node(pod):
            return pod
        name = pod["metadata"]["name"]
        refused = kube.events(NAMESPACE, name, reason="NotTriggerScaleUp")
        # CA's verdict is final for this pod shape: fail now rather than at the timeout.
        return refused[-1]["message"] if refused else NotYet(pod.get("status"))

    outcome = cluster.wait(f"the {instance_type} placeholder to be bound (or refused by CA)",
                           placeholder_outcome, 150, logs)
    if not isinstance(outcome, dict):
        raise ScaleUpRefused(f"cluster-autoscaler did not scale up for the {instance_type} "
                             f"placeholder: {outcome}")
    bound_s = time.monotonic() - started
    node = kube.get(f"/api/v1/nodes/{bound_node(outcome)}")
    labels = node["metadata"]["labels"]
    assert labels[INSTANCE_TYPE] == instance_type
    assert labels.get(PLACEMENT_GROUP) == group
    assert node["metadata"]["annotations"]["cluster-autoscaler.kwok.nodegroup/name"] \
        == instance_type, "the node was not made by cluster-autoscaler"
    name = outcome["metadata"]["name"]
    # The pod CA scaled up for may since have been replaced: once a node of the type
    # exists, the placeholder is re-sized from its allocatable (a new pod template).
    # CA records its event asynchronously, possibly after the pod is bound.
    deployment = "headstart-placeholder-" + instance_type.replace(".", "-")
    triggered = cluster.wait(
        f"cluster-autoscaler's TriggeredScaleUp event for a {deployment} pod",
        lambda: [e["message"] for e in kube.list(f"/api/v1/namespaces/{NAMESPACE}/events",
                                                 field_selector="reason=TriggeredScaleUp")
                 if e["involvedObject"]["name"].startswith(deployment)], 30, logs)
    assert instance_type in triggered[-1], triggered
    cluster.wait(f"the {instance_type} placeholder to run",
                 lambda: phase(kube.pod(NAMESPACE, name)) == "Running", 60, ["kwok"])
    e2e_timings.record(f"overprovisioner ladder: {instance_type} placeholder",
                       bound_since_overprovisioner_start=bound_s,
                       running_since_overprovisioner_start=time.monotonic() - started)


def test_a_deleted_placeholder_priority_class_is_created_again_by_the_overprovisioner(
        ladder, e2e_timings):
    """With its own token, through the shipped RBAC (create, no patch) and the
    ValidatingAdmissionPolicy headstart-overprovisioner-priority-class: the class is
    back within a few ticks, as the manifests ship it."""
    from overprovisioner.service.apply import FIELD_MANAGER

    cluster, _, _ = ladder
    path = "/apis/scheduling.k8s.io/v1/priorityclasses/headstart-placeholder"
    shipped = cluster.kube.get(path)
    cluster.kube.delete(path)
    deleted = time.monotonic()
    found = cluster.wait("the overprovisioner to create the PriorityClass again",
                         lambda: cluster.kube.get(path, missing_ok=True) or NotYet("absent"),
                         60, ["headstart-overprovisioner"])
    assert found["metadata"]["uid"] != shipped["metadata"]["uid"]
    assert (found["value"], found["preemptionPolicy"], found.get("globalDefault", False)) \
        == (shipped["value"], "Never", False)
    assert [m["manager"] for m in found["metadata"]["managedFields"]] == [FIELD_MANAGER]
    e2e_timings.record("overprovisioner: PriorityClass created again",
                       created_after_delete_s=time.monotonic() - deleted)


# ---- the CapacityBuffer backend ---------------------------------------------------------

@pytest.fixture(scope="module")
def buffers(e2e_clusters):
    """A cluster with CA and its CRDs, and an overprovisioner on `backend: auto`."""
    cluster = start_cluster(e2e_clusters, "capacitybuffers")
    settings = {**LADDER_CONFIG, "placeholders": {**LADDER_CONFIG["placeholders"],
                                                   "backend": "auto"}}
    overprovisioner = Overprovisioner(cluster, settings)
    started = time.monotonic()
    overprovisioner.start().wait_ready()
    yield cluster, overprovisioner, started
    cluster.stop()


@pytest.mark.parametrize(("instance_type", "group"),
                         [("m5.4xlarge", None), ("p4d.24xlarge", "pg-a")],
                         ids=["cpu-type", "8-gpu-type-in-a-placement-group"])
def test_a_capacity_buffer_makes_cluster_autoscaler_launch_a_node_of_its_type(
        buffers, instance_type, group, e2e_timings):
    cluster, overprovisioner, started = buffers
    kube = cluster.kube

    def node_of_type():
        nodes = [n for n in kube.list("/api/v1/nodes",
                                      label_selector=f"{INSTANCE_TYPE}={instance_type}")]
        return nodes[0] if nodes else NotYet(overprovisioner.plan().get("applied"))

    node = cluster.wait(f"a {instance_type} node for the buffer", node_of_type, 120,
                        ["headstart-overprovisioner", "cluster-autoscaler"])
    launched_s = time.monotonic() - started
    assert node["metadata"]["labels"].get(PLACEMENT_GROUP) == group
    assert node["metadata"]["annotations"]["cluster-autoscaler.kwok.nodegroup/name"] \
        == instance_type
    assert overprovisioner.plan()["applied"]["backend"] == "capacitybuffer"
    name = "headstart-placeholder-" + instance_type.replace(".", "-") + (f"-{group}"
                                                                         if group else "")
    buffer = kube.get(f"/apis/autoscaling.x-k8s.io/v1beta1/namespaces/{NAMESPACE}/"
                      f"capacitybuffers/{name}")
    conditions = {c["type"]: c for c in buffer["status"]["conditions"]}
    assert conditions["Provisioning"]["status"] == "True", conditions
    assert buffer["spec"] == {"podTemplateRef": {"name": name}, "replicas": 1,
                              "provisioningStrategy": "buffer.x-k8s.io/active-capacity"}
    assert kube.get(f"/api/v1/namespaces/{NAMESPACE}/podtemplates/{name}")
    e2e_timings.record(f"overprovisioner capacitybuffer: {instance_type}",
                       node_since_overprovisioner_start=launched_s)


def test_capacity_buffers_are_written_in_the_version_cluster_autoscaler_reads(buffers):
    """v1beta1: the CRD still serves the deprecated v1alpha1 (same schema, no conversion),
    so only the audit log tells which one headstart writes."""
    cluster, _, _ = buffers
    written = cluster.wait(
        "the overprovisioner's CapacityBuffer writes in the audit log",
        lambda: [w for w in cluster.writes()
                 if w.resource == "capacitybuffers"], 60, ["headstart-overprovisioner"])
    assert {w.api_version for w in written} == {"autoscaling.x-k8s.io/v1beta1"}, \
        "\n".join(map(str, written))


# ---- as installed: every call one the shipped Roles grant -------------------------------

def test_the_installed_processes_use_only_what_their_roles_grant(
        ladder, namespace, e2e_timings):
    """Runs after the placeholder scenarios on their cluster (placeholders created,
    re-sized from live nodes, the PriorityClass checked), plus one training pod the
    headstart-scheduler places through the extender's bind verb. Every request of each
    headstart process, read from kube-apiserver's audit log, must be one its
    ServiceAccount's shipped rules grant; none refused (the conftest checks that for
    every scenario)."""
    cluster, _, _ = ladder
    kube = cluster.kube
    kube.ensure_namespace(namespace)
    kube.create(f"/api/v1/namespaces/{namespace}/pods",
                training_pod("job-ps-0", namespace, job="job", role="ps", cpu="1"))
    cluster.wait("the training pod to be bound by the extender",
                 lambda: bound_node(kube.pod(namespace, "job-ps-0")), 120,
                 ["headstart-extender", "headstart-scheduler"])
    used: dict[str, set[tuple[str, str, str]]] = {}
    for access in accesses(cluster.audit_events(), cluster.credential_names):
        used.setdefault(access.user, set()).add(access.rbac())
    figures = {}
    for process, component in (("headstart-overprovisioner", "overprovisioner"),
                               ("headstart-extender", "extender")):
        rules = checks.granted(installed.rendered(), installed.service_account(component))
        calls = used.get(process, set())
        assert calls, f"the audit log shows no request by {process}"
        assert calls - rules == set(), (f"{process} made calls its shipped Roles do not "
                                        f"grant: {sorted(calls - rules)}")
        figures[f"{component}_calls"] = len(calls)
        figures[f"{component}_rules_unused"] = sorted(
            "/".join(rule) for rule in rules - calls)
    # The audit log names the request's verb: a server-side apply is `patch` even when it
    # creates (RBAC's `create` check inside it shows only as a 403, which the conftest
    # would have failed on).
    assert ("apps", "deployments", "patch") in used["headstart-overprovisioner"]
    assert ("", "pods/binding", "create") in used["headstart-extender"]
    e2e_timings.record("as installed: RBAC verbs used vs granted", **figures)
