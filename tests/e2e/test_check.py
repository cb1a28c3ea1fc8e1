"""`headstart check` against a real kube-apiserver (1.36.2) holding headstart as the EKS
overlay installs it, and with one part missing or wrong at a time: each failure named,
with its fix.

The cluster is kube-apiserver and etcd with the real cluster-autoscaler (kwok provider,
node groups p4d-pg-a and p4d-pg-b: data/kwok-provider-two-groups.yaml), whose status
ConfigMap lists its groups. Installed as users install it: the rendered overlay's
objects applied by kubectl (installed.py: RBAC, the PriorityClass, ConfigMaps, the Gang
CRD, the placement gate's MutatingAdmissionPolicy), scheduler-plugins' PodGroup CRD, the
two Secrets of mutual TLS made by the install docs' openssl functions
(scheduler_tls.py), and the overlay's three Deployments. Nothing here runs Deployments
(no kube-controller-manager, no kubelet), so their status, a cluster-autoscaler
Deployment carrying the command line the real one runs with, the device plugin's
DaemonSet and a GPU node are written as the API would hold them on a running cluster.
What is real: discovery of what the API server serves, the CRDs, the gate objects,
cluster-autoscaler's own status, the certificates, and the ServiceAccounts' rights as
kube-apiserver's RBAC authorizer answers SubjectAccessReviews for them.

The scheduler image is set as docs/install-eks.md step 4 sets it, to scheduler-plugins'
release for the control plane's minor: v0.36.2 names the scheduler-plugins build the e2e
suite runs on 1.36.2 (it has no published tag).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube.autoscaler_status import parse_autoscaler_status
from tests.e2e import installed
from tests.e2e.controlplane import ClusterSpec, pod_group_crd
from tests.e2e.kube import NotYet
from tests.e2e.scheduler_tls import scheduler_pki
from tests.e2e.test_admission import AUTOSCALED, TWO_GROUPS
from tests.headstart.check.builders import authority, issued, load_pair, secret_object
from tests.manifests import checks

REPO = Path(__file__).resolve().parents[2]
NS = installed.NAMESPACE
SCHEDULER_IMAGE = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.36.2"
APPS = "/apis/apps/v1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
GPU_NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "gpu-1", "labels": {
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-a100",
        "node.kubernetes.io/instance-type": "p4d.24xlarge",
        "headstart.io/placement-group": "pg-a"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1152Gi"},
               "capacity": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1152Gi"},
               "conditions": [{"type": "Ready", "status": "True"}]},
}
DEVICE_PLUGIN = {
    "apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": {"namespace": "kube-system", "name": "nvdp-nvidia-device-plugin"},
    "spec": {"selector": {"matchLabels": {"app": "nvdp"}}, "template": {
        "metadata": {"labels": {"app": "nvdp"}},
        "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                  "effect": "NoSchedule"}],
                 "containers": [{"name": "nvidia-device-plugin-ctr",
                                 "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}}},
}


def plain(obj: dict[str, Any]) -> dict[str, Any]:
    """A rendered object without kustomize's origin annotation."""
    obj = copy.deepcopy(obj)
    annotations = obj["metadata"].get("annotations") or {}
    annotations.pop(checks.ORIGIN, None)
    if not annotations:
        obj["metadata"].pop("annotations", None)
    return obj


def rendered(kind: str, name: str) -> dict[str, Any]:
    found = installed.rendered().find(kind, name)
    assert found is not None, f"the EKS overlay renders no {kind} {name}"
    return plain(found)


def set_available(kube, path: str, available: bool = True) -> None:
    replicas = kube.get(path)["spec"].get("replicas", 1)
    kube.patch(f"{path}/status", {"status": {
        "replicas": replicas, "readyReplicas": replicas if available else 0,
        "availableReplicas": replicas if available else 0,
        "conditions": [{"type": "Available", "status": "True" if available else "False",
                        "reason": "MinimumReplicasAvailable" if available else
                        "MinimumReplicasUnavailable",
                        "message": "Deployment has minimum availability." if available else
                        "Deployment does not have minimum availability."}]}})


def autoscaler_deployment(cluster) -> dict[str, Any]:
    """cluster-autoscaler's Deployment as the cluster would hold it: the command line the
    cluster's cluster-autoscaler runs with."""
    argv = cluster.processes["cluster-autoscaler"].argv
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"namespace": "kube-system", "name": "cluster-autoscaler"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "ca"}}, "template": {
                "metadata": {"labels": {"app": "ca"}},
                "spec": {"containers": [{
                    "name": "cluster-autoscaler",
                    "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.36.0",
                    "command": ["./cluster-autoscaler"], "args": argv[1:]}]}}}}


def tls_secrets() -> dict[str, dict[str, bytes]]:
    pki = scheduler_pki()
    ca = pki.ca.read_bytes()
    return {"headstart-extender-tls": {"tls.crt": pki.server[0].read_bytes(),
                                       "tls.key": pki.server[1].read_bytes(), "ca.crt": ca},
            "headstart-scheduler-tls": {"tls.crt": pki.client[0].read_bytes(),
                                        "tls.key": pki.client[1].read_bytes(), "ca.crt": ca}}


def mounted_configmap(kube, component: str) -> str:
    """The name of the ConfigMap `component`'s Deployment mounts (kustomize's hash)."""
    deployment = kube.get(f"{APPS}/namespaces/{NS}/deployments/headstart-{component}")
    [name] = [v["configMap"]["name"] for v in deployment["spec"]["template"]["spec"]["volumes"]
              if "configMap" in v]
    return name


def extender_config(admission: dict[str, Any]) -> str:
    return yaml.safe_dump(installed.scenario_config("extender", {"admission": admission}, {}),
                          sort_keys=False)


def served(kube, group_version: str, resource: str) -> Any:
    found = kube.get(f"/apis/{group_version}", missing_ok=True)
    names = [r["name"] for r in (found or {}).get("resources") or ()]
    return resource in names or NotYet(names)


def groups_listed(cluster) -> Any:
    """cluster-autoscaler's status, once it lists its node groups (its first status says
    Initializing, with none)."""
    status = parse_autoscaler_status(cluster.kube.get(
        "/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status"))
    return sorted(status.groups or {}) or NotYet(status.detail)


def install(cluster) -> None:
    kube = cluster.kube
    cluster.wait("cluster-autoscaler listing its node groups", lambda: groups_listed(cluster),
                 120, ["cluster-autoscaler"])
    installed.install(cluster)
    cluster.install_crds([pod_group_crd()])
    for name, data in tls_secrets().items():
        kube.create(f"/api/v1/namespaces/{NS}/secrets", secret_object(NS, name, data))
    for component in ("scheduler", "extender", "overprovisioner"):
        deployment = rendered("Deployment", f"headstart-{component}")
        if component == "scheduler":
            deployment["spec"]["template"]["spec"]["containers"][0]["image"] = SCHEDULER_IMAGE
        kube.create(f"{APPS}/namespaces/{NS}/deployments", deployment)
        set_available(kube, f"{APPS}/namespaces/{NS}/deployments/headstart-{component}")
    # The extender's node groups, named after this cluster-autoscaler's (the overlay's name
    # the EKS example node groups).
    name = mounted_configmap(kube, "extender")
    kube.patch(f"/api/v1/namespaces/{NS}/configmaps/{name}",
               {"data": {"config.yaml": extender_config(AUTOSCALED)}})
    kube.create(f"{APPS}/namespaces/kube-system/deployments", autoscaler_deployment(cluster))
    set_available(kube, f"{APPS}/namespaces/kube-system/deployments/cluster-autoscaler")
    kube.create("/api/v1/nodes", GPU_NODE)
    kube.create(f"{APPS}/namespaces/kube-system/daemonsets", DEVICE_PLUGIN)
    kube.patch(f"{APPS}/namespaces/kube-system/daemonsets/nvdp-nvidia-device-plugin/status",
               {"status": {"desiredNumberScheduled": 1, "currentNumberScheduled": 1,
                           "numberReady": 1, "numberMisscheduled": 0}})


@pytest.fixture(scope="module")
def cluster(e2e_clusters):
    started = e2e_clusters.start(ClusterSpec(
        controller_manager=False, schedulers={}, kwok=False, anchor_node=False,
        kwok_node_lease_s=0, autoscaler=True, node_groups=TWO_GROUPS), "check")
    try:
        install(started)
        yield started
    finally:
        started.stop()


def run_check(cluster, *extra: str) -> tuple[int, dict[str, Any]]:
    ran = subprocess.run(
        [sys.executable, "-m", "headstart", "check", "--kubeconfig",
         str(cluster.admin_kubeconfig), "--output", "json", *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ran.returncode in (0, 1), f"exit {ran.returncode}: {ran.stderr}"
    return ran.returncode, json.loads(ran.stdout)


def failures(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in report["checks"] if c["status"] == "fail"}


def test_a_correct_install_passes_every_check(cluster, e2e_timings):
    started = time.monotonic()
    code, report = run_check(cluster)
    e2e_timings.record("headstart check (installed)", seconds=time.monotonic() - started)
    not_ok = {c["name"]: c for c in report["checks"] if c["status"] != "ok"}
    assert code == 0 and {n: c["status"] for n, c in not_ok.items()} == {
        "nodepools": "skip", "tls/gate-webhook": "skip"}, not_ok
    messages = {c["name"]: c["message"] for c in report["checks"]}
    assert "SubjectAccessReview" in messages["rights/headstart-extender"]
    assert "not checked" not in messages["rights/headstart-scheduler"]  # the cluster's roles
    assert "v0.36.2 (1.36) on a 1.36 control plane" in messages["scheduler-image"]
    assert "match cluster-autoscaler's 2 groups" in messages["node-groups"]
    assert "writes autoscaling.x-k8s.io/" in messages["capacity-buffers"]


def test_before_install_the_prerequisites_pass(cluster):
    code, report = run_check(cluster, "--pre-install")
    assert code == 0 and report["mode"] == "pre-install", report
    assert {c["name"]: c["status"] for c in report["checks"]
            if c["status"] != "ok"} == {"cert-manager": "warn"}


class Part:
    """One part of the install, broken and put back."""

    def __init__(self, name: str, expected: dict[str, tuple[str, str]],
                 break_it: Callable[[Any], None], restore: Callable[[Any], None]) -> None:
        self.name = name
        self.expected = expected
        """check name -> (words of its message, words of its fix)."""
        self.break_it = break_it
        self.restore = restore


def _recreate_crd(cluster, group_version: str, plural: str,
                  source: Callable[[], dict[str, Any]]) -> None:
    cluster.kube.create(CRDS, source())
    cluster.wait(f"{plural} served again", lambda: served(cluster.kube, group_version, plural),
                 60)


def _delete_crd(cluster, name: str, group_version: str, plural: str) -> None:
    cluster.kube.delete(f"{CRDS}/{name}")
    cluster.wait(f"{plural} no longer served", lambda: not served(
        cluster.kube, group_version, plural) or NotYet("still served"), 60)


def _replace_secret(cluster, name: str, data: dict[str, bytes]) -> None:
    cluster.kube.delete(f"/api/v1/namespaces/{NS}/secrets/{name}")
    cluster.kube.create(f"/api/v1/namespaces/{NS}/secrets", secret_object(NS, name, data))


def _patch_container(cluster, path: str, **fields: Any) -> None:
    deployment = cluster.kube.get(path)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container.update(fields)
    cluster.kube.request("PUT", path, deployment)


def _scheduler_ca() -> Any:
    pki = scheduler_pki()
    return load_pair(pki.ca, pki.folder / "headstart-scheduler-ca.key")


def _expired_extender_secret() -> dict[str, bytes]:
    now = time.time()
    pair = issued(_scheduler_ca(), "headstart-extender", ("headstart-extender.headstart.svc",),
                  "serverAuth", not_before=now - 400 * 86400, not_after=now - 86400)
    return {"tls.crt": pair.cert, "tls.key": pair.key, "ca.crt": scheduler_pki().ca.read_bytes()}


def _foreign_scheduler_secret() -> dict[str, bytes]:
    now = time.time()
    other = authority("someone-elses-ca", now=now)
    pair = issued(other, "headstart-scheduler", (), "clientAuth", now - 86400, now + 86400 * 30)
    return {"tls.crt": pair.cert, "tls.key": pair.key, "ca.crt": scheduler_pki().ca.read_bytes()}


CA_PATH = f"{APPS}/namespaces/kube-system/deployments/cluster-autoscaler"
SCHEDULER_PATH = f"{APPS}/namespaces/{NS}/deployments/headstart-scheduler"
EXTENDER_PATH = f"{APPS}/namespaces/{NS}/deployments/headstart-extender"
PC_PATH = "/apis/scheduling.k8s.io/v1/priorityclasses/headstart-placeholder"


def _cutoff(cluster, value: str) -> None:
    args = [a for a in cluster.processes["cluster-autoscaler"].argv[1:]
            if not a.startswith("--expendable-pods-priority-cutoff")]
    _patch_container(cluster, CA_PATH, args=[*args, f"--expendable-pods-priority-cutoff={value}"])


def _priority_class(cluster, value: int) -> None:
    cluster.kube.delete(PC_PATH)
    shipped = rendered("PriorityClass", "headstart-placeholder")
    cluster.wait("the PriorityClass gone", lambda: cluster.kube.get(PC_PATH, missing_ok=True)
                 is None, 30)
    cluster.kube.create("/apis/scheduling.k8s.io/v1/priorityclasses", {**shipped, "value": value})


def _extender_binding(cluster, bound: bool) -> None:
    """Delete or put back the extender's ClusterRoleBinding, and wait until kube-apiserver's
    authorizer (which watches bindings) answers accordingly."""
    if bound:
        cluster.kube.create(f"{RBAC}/clusterrolebindings",
                            rendered("ClusterRoleBinding", "headstart-extender"))
    else:
        cluster.kube.delete(f"{RBAC}/clusterrolebindings/headstart-extender")

    def answered() -> Any:
        review = cluster.kube.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": f"system:serviceaccount:{NS}:headstart-extender",
                     "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NS}",
                                "system:authenticated"],
                     "resourceAttributes": {"verb": "create", "resource": "pods",
                                            "subresource": "binding"}}})
        allowed = bool(review["status"].get("allowed"))
        return allowed == bound or NotYet(review["status"])

    cluster.wait(f"the authorizer to see the binding {'back' if bound else 'gone'}", answered,
                 30)


def _extender_admission(cluster, admission: dict[str, Any]) -> None:
    name = mounted_configmap(cluster.kube, "extender")
    cluster.kube.patch(f"/api/v1/namespaces/{NS}/configmaps/{name}",
                       {"data": {"config.yaml": extender_config(admission)}})


SHIPPED_EKS_ADMISSION = installed.shipped_config("extender")["admission"]

PARTS = [
    Part("podgroup-crd",
         {"podgroup-crd": ("is not served: Coscheduling never syncs",
                           "kubectl apply --server-side -f https://raw.githubusercontent.com/"
                           "kubernetes-sigs/scheduler-plugins/v0.36.2/manifests/crds/"
                           "scheduling.x-k8s.io_podgroups.yaml")},
         lambda c: _delete_crd(c, "podgroups.scheduling.x-k8s.io",
                               "scheduling.x-k8s.io/v1alpha1", "podgroups"),
         lambda c: _recreate_crd(c, "scheduling.x-k8s.io/v1alpha1", "podgroups",
                                 lambda: yaml.safe_load(pod_group_crd().read_text()))),
    Part("gang-crd",
         {"gang-crd": ("headstart.io/v1alpha1 gangs is not served",
                       "manifests/base/crds/gangs.headstart.io.yaml")},
         lambda c: _delete_crd(c, "gangs.headstart.io", "headstart.io/v1alpha1", "gangs"),
         lambda c: _recreate_crd(c, "headstart.io/v1alpha1", "gangs",
                                 lambda: rendered("CustomResourceDefinition",
                                                  "gangs.headstart.io"))),
    Part("placement-gate-binding",
         {"placement-gate": ("its binding is missing",
                             "manifests/base/admission/placement-gate.yaml")},
         lambda c: c.kube.delete(f"{ADMISSION}/mutatingadmissionpolicybindings/"
                                 "headstart-placement-gate"),
         lambda c: c.kube.create(f"{ADMISSION}/mutatingadmissionpolicybindings", rendered(
             "MutatingAdmissionPolicyBinding", "headstart-placement-gate"))),
    Part("expendable-cutoff",
         {"autoscaler-cutoff": ("--expendable-pods-priority-cutoff=0: it ignores them",
                                "--expendable-pods-priority-cutoff at most -5")},
         lambda c: _cutoff(c, "0"), lambda c: _cutoff(c, "-10")),
    Part("node-groups",
         {"node-groups": ("eks-g5-xlarge-pg-a-*, eks-p4d-24xlarge-pg-a-* match none of "
                          "cluster-autoscaler's groups (p4d-pg-a, p4d-pg-b)",
                          "cluster-autoscaler-status")},
         lambda c: _extender_admission(c, SHIPPED_EKS_ADMISSION),
         lambda c: _extender_admission(c, AUTOSCALED)),
    Part("expired-certificate",
         {"tls/extender": ("Secret headstart-extender-tls (tls.crt) expired on",
                           "scheduler-tls-cert-manager")},
         lambda c: _replace_secret(c, "headstart-extender-tls", _expired_extender_secret()),
         lambda c: _replace_secret(c, "headstart-extender-tls",
                                   tls_secrets()["headstart-extender-tls"])),
    Part("foreign-client-certificate",
         {"tls/scheduler": ("is not signed by a CA in Secret headstart-extender-tls (ca.crt), "
                            "which the extender trusts", "one CA")},
         lambda c: _replace_secret(c, "headstart-scheduler-tls", _foreign_scheduler_secret()),
         lambda c: _replace_secret(c, "headstart-scheduler-tls",
                                   tls_secrets()["headstart-scheduler-tls"])),
    Part("scheduler-image",
         {"scheduler-image": ("kube-scheduler:v0.34.7 is built for 1.34, more than one minor "
                              "older than the control plane (1.36)",
                              "scheduler-plugins release for 1.36")},
         lambda c: _patch_container(c, SCHEDULER_PATH, image=SCHEDULER_IMAGE.replace(
             "v0.36.2", "v0.34.7")),
         lambda c: _patch_container(c, SCHEDULER_PATH, image=SCHEDULER_IMAGE)),
    Part("extender-binding",
         {"rights/headstart-extender": ("shipped rights (SubjectAccessReview)",
                                        "manifests/base/extender/rbac.yaml")},
         lambda c: _extender_binding(c, False), lambda c: _extender_binding(c, True)),
    Part("device-plugin",
         {"device-plugin": ("no NVIDIA device plugin DaemonSet, and 1 GPU node(s) (gpu-1",
                            "helm upgrade --install nvdp")},
         lambda c: c.kube.delete(f"{APPS}/namespaces/kube-system/daemonsets/"
                                 "nvdp-nvidia-device-plugin"),
         lambda c: (c.kube.create(f"{APPS}/namespaces/kube-system/daemonsets", DEVICE_PLUGIN),
                    c.kube.patch(f"{APPS}/namespaces/kube-system/daemonsets/"
                                 "nvdp-nvidia-device-plugin/status",
                                 {"status": {"desiredNumberScheduled": 1, "numberReady": 1,
                                             "currentNumberScheduled": 1,
                                             "numberMisscheduled": 0}}))),
    Part("extender-unavailable",
         {"deployment/headstart-extender": ("0 of 2 replicas ready, not available (Deployment "
                                            "does not have minimum availability.",
                                            "describe deployment headstart-extender")},
         lambda c: set_available(c.kube, EXTENDER_PATH, False),
         lambda c: set_available(c.kube, EXTENDER_PATH)),
    Part("priority-class",
         {"placeholder-priority": ("has value -20 and preemptionPolicy Never; the "
                                   "overprovisioner needs -5", "kubectl delete priorityclass"),
          "autoscaler-cutoff": ("placeholders run at priority -20 (PriorityClass "
                                "headstart-placeholder)", "at most -20")},
         lambda c: _priority_class(c, -20), lambda c: _priority_class(c, -5)),
]


@pytest.mark.parametrize("part", PARTS, ids=[p.name for p in PARTS])
def test_each_part_missing_or_wrong_is_named_with_its_fix(cluster, part):
    part.break_it(cluster)
    try:
        code, report = run_check(cluster)
    finally:
        part.restore(cluster)
    found = failures(report)
    assert code == 1 and set(found) == set(part.expected), found
    for name, (message, fix) in part.expected.items():
        assert message in found[name]["message"], found[name]
        assert fix in found[name]["fix"], found[name]


def test_put_back_the_install_passes_again(cluster):
    code, report = run_check(cluster)
    assert code == 0 and failures(report) == {}, failures(report)


def test_a_kubeconfig_that_cannot_reach_the_cluster_is_one_line_and_exit_2(cluster):
    cluster.stop_apiserver()
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "headstart", "check", "--kubeconfig",
             str(cluster.admin_kubeconfig)], cwd=REPO, capture_output=True, text=True,
            timeout=120)
    finally:
        cluster.start_apiserver()
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr == (f"headstart check: error: cannot reach the Kubernetes API server "
                          f"{cluster.server}: Connection refused\n")

