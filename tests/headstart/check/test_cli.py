"""`headstart check` end to end against the fake API server: the EKS overlay as kustomize
renders it, installed with its certificates, cluster-autoscaler and the device plugin;
JSON and text output, exit status 0, 1 and 2 (tests/fakekube.py serves no
SubjectAccessReview, so the rights are matched against the cluster's RBAC objects)."""

from __future__ import annotations

import copy
import json
import time

import pytest

from headstart.check.core.rights import expected
from headstart.check.shipped import read_shipped
from headstart.cli import main
from tests.fakekube import KIND_TO_PLURAL
from tests.headstart.check.builders import mutual_tls, secret_object
from tests.manifests import checks

NAMESPACE = "headstart"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return checks.render("eks", checks.MANIFESTS, tmp_path_factory.mktemp("render")).objects


def available(obj):
    obj = copy.deepcopy(obj)
    replicas = obj["spec"].get("replicas", 1)
    obj["status"] = {"replicas": replicas, "readyReplicas": replicas,
                     "conditions": [{"type": "Available", "status": "True"}]}
    return obj


@pytest.fixture
def cluster(fake_kube, rendered, tmp_path):
    """The fake API server with headstart installed as the EKS docs install it on 1.35."""
    fake_kube.version = {"major": "1", "minor": "35", "gitVersion": "v1.35.2-eks-1"}
    fake_kube.serve("scheduling.x-k8s.io/v1alpha1")
    for obj in rendered:
        if (obj["apiVersion"], obj["kind"]) in KIND_TO_PLURAL:
            fake_kube.create(available(obj) if obj["kind"] == "Deployment" else obj)
    for name, data in mutual_tls(now=time.time()).items():
        fake_kube.create(secret_object(NAMESPACE, name, data))
    fake_kube.create(available({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"namespace": "kube-system", "name": "cluster-autoscaler"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{
            "name": "aws-cluster-autoscaler",
            "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.1",
            "command": ["./cluster-autoscaler"],
            "args": ["--expendable-pods-priority-cutoff=-10",
                     "--nodes=0:4:eks-g5-xlarge-pg-a-1a2b",
                     "--nodes=0:1:eks-p4d-24xlarge-pg-a-3c4d"]}]}}}}))
    fake_kube.create({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"namespace": "kube-system", "name": "nvdp-nvidia-device-plugin"},
        "spec": {"template": {"spec": {"containers": [{
            "name": "nvidia-device-plugin-ctr",
            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}}},
        "status": {"desiredNumberScheduled": 0, "numberReady": 0}})
    return fake_kube.write_kubeconfig(tmp_path / "kubeconfig")


def run_json(kubeconfig, capsys, *extra):
    code = main(["check", "--kubeconfig", kubeconfig, "--output", "json", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_a_correct_install_passes_and_exits_0(cluster, capsys):
    code, report = run_json(cluster, capsys)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert code == 0 and report["ok"] and report["mode"] == "installed", [
        c for c in report["checks"] if c["status"] == "fail"]
    assert {n: s for n, s in statuses.items() if s != "ok"} == {
        "nodepools": "skip", "tls/gate-webhook": "skip"}
    rights = {c["name"]: c["message"] for c in report["checks"]
              if c["name"].startswith("rights/")}
    assert set(rights) == {"rights/headstart-extender", "rights/headstart-overprovisioner",
                           "rights/headstart-placeholder-expiry", "rights/headstart-scheduler"}
    assert "the cluster's RBAC objects" in rights["rights/headstart-extender"]
    assert "not checked: ClusterRole system:kube-scheduler" in rights["rights/headstart-scheduler"]
    assert report["counts"]["fail"] == 0


def test_a_missing_binding_fails_with_its_fix_and_exits_1(cluster, fake_kube, capsys):
    fake_kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "headstart-extender")
    code, report = run_json(cluster, capsys)
    [failed] = [c for c in report["checks"] if c["status"] == "fail"]
    assert code == 1 and not report["ok"]
    assert failed["name"] == "rights/headstart-extender"
    # Every right of its ClusterRole, none of its Roles' (their RoleBindings are there).
    wanted, _ = expected(*read_shipped(checks.MANIFESTS))
    extender = [e for e in wanted if e.account == "headstart/headstart-extender"]
    cluster_wide = [e for e in extender if e.access.namespace == ""]
    assert failed["message"].startswith(
        f"headstart/headstart-extender lacks {len(cluster_wide)} of its {len(extender)} shipped "
        "rights (the cluster's RBAC objects; SubjectAccessReview: HTTP 404 "
        "SubjectAccessReviews are not served): ")
    assert "manifests/base/extender/rbac.yaml" in failed["fix"]


def test_text_output_is_one_line_per_check_and_a_fix_under_each_failure(cluster, fake_kube,
                                                                        capsys):
    fake_kube.delete("v1", "Secret", "headstart-scheduler-tls", NAMESPACE)
    assert main(["check", "--kubeconfig", cluster]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("headstart check (installed) against http://127.0.0.1:")
    failing = [i for i, line in enumerate(lines) if line.startswith("FAIL")]
    assert [lines[i].split()[1] for i in failing] == ["tls/extender", "tls/scheduler"]
    for i in failing:
        assert lines[i + 1].strip().startswith("fix: with cert-manager add")
    assert lines[-1].endswith("2 fail, 2 skip")


def test_before_install_an_empty_cluster_fails_on_its_autoscaler(fake_kube, tmp_path, capsys):
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    code, report = run_json(kubeconfig, capsys, "--pre-install")
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert code == 1 and report["mode"] == "pre-install"
    assert statuses["autoscaler"] == "fail" and statuses["device-plugin"] == "warn"
    assert "rights/headstart-extender" not in statuses


def test_an_unreachable_cluster_is_one_line_and_exit_2(tmp_path, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    assert main(["check", "--kubeconfig", str(kubeconfig)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("headstart check: error: cannot reach the Kubernetes API server "
                            "https://127.0.0.1:1: Connection refused\n")


def test_a_manifests_folder_that_is_not_headstarts_is_bad_input(cluster, tmp_path, capsys):
    assert main(["check", "--kubeconfig", cluster, "--manifests", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not headstart's manifests folder" in err
