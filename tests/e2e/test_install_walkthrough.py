"""The install docs' blocks, pasted whole into bash, applied to a real kube-apiserver
(1.36.2) by its administrator's kubectl: what a user's first hour runs.

A kubectl wrapper changes only what this machine cannot do: it reports the control
plane's minor when a scenario plays an older cluster (the API server here is 1.36),
applies scheduler-plugins' PodGroup CRD from the copy beside the binaries instead of
GitHub, and skips `rollout status` (nothing pulls images here). Every other call is the
real kubectl against the real API server.

- 1.36: the overlay with its MutatingAdmissionPolicy and the upstream kube-scheduler
  without Coscheduling; then the tuning block (the real `headstart buckets tune` on a
  one-day synthetic trace): the overprovisioner's ConfigMap, read back from the API,
  loads and passes the service's start-up checks.
- 1.33 with cert-manager (its CRDs as stand-ins): the gate webhook, its Certificates
  and the CA-injection annotation, the Certificates of mutual TLS between the scheduler
  and the extender, no policy, scheduler-plugins v0.33.5.
- 1.33 without cert-manager, then the docs' openssl block: the webhook's caBundle and
  the Secret its certificate lives in, the two Secrets of mutual TLS sharing one CA,
  and no Certificate asked of anyone.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.controlplane import DATA, ClusterSpec, pod_group_crd
from tests.manifests import checks
from tests.manifests.test_install_docs import (
    EXTENDER_IMAGE,
    IMAGE,
    buckets_block,
    headstart_command,
    install_block,
    self_signed_block,
)

CERT_MANAGER_CRDS = (DATA / "cert-manager-certificates-crd.yaml",
                     DATA / "cert-manager-issuers-crd.yaml")
WRAPPER = """#!/bin/sh
echo "$*" >> "$KUBECTL_CALLS"
case "$*" in
  "get --raw /version")
    if [ -n "$FAKE_MINOR" ]; then
      printf '{"major": "1", "minor": "%s"}\\n' "$FAKE_MINOR"; exit 0
    fi ;;
  *"rollout status"*) exit 0 ;;
  *raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/*)
    exec "$REAL_KUBECTL" apply --server-side -f "$PODGROUP_CRD" ;;
esac
exec "$REAL_KUBECTL" "$@"
"""


def bare_cluster(e2e_clusters, name: str, crds: tuple[Path, ...] = ()):
    """kube-apiserver and etcd only: nothing runs what the install creates."""
    return e2e_clusters.start(ClusterSpec(
        controller_manager=False, schedulers={}, kwok=False, anchor_node=False,
        kwok_node_lease_s=0, crds=crds), name)


def paste(cluster, root: Path, blocks: str, minor: str | None) -> str:
    """Run `blocks` with bash from `root` (a copy of the repository's manifests) as the
    cluster's administrator; returns the kubectl calls they made."""
    shutil.copytree(checks.MANIFESTS, root / "manifests")
    wrapper = root / "bin" / "kubectl"
    wrapper.parent.mkdir()
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    calls = root / "kubectl-calls"
    calls.touch()
    headstart = headstart_command(root / "headstart-bin").parent
    ran = subprocess.run(["bash", "-euc", blocks], cwd=root, capture_output=True, text=True,
                         timeout=300, env={
        "PATH": f"{wrapper.parent}:{headstart}:/usr/bin:/bin", "HOME": str(root),
        "KUBECONFIG": str(cluster.admin_kubeconfig), "REAL_KUBECTL": checks.kubectl(),
        "PODGROUP_CRD": str(pod_group_crd()), "KUBECTL_CALLS": str(calls),
        "FAKE_MINOR": minor or "", "IMAGE": IMAGE, "EXTENDER_IMAGE": EXTENDER_IMAGE})
    assert ran.returncode == 0, f"{ran.stdout}\n{ran.stderr}"
    return calls.read_text()


def names(cluster, path: str) -> list[str]:
    return sorted(item["metadata"]["name"] for item in cluster.kube.list(path))


ADMISSION = "/apis/admissionregistration.k8s.io/v1"


@pytest.mark.parametrize("doc", ["docs/install-eks.md", "docs/install-gke.md"],
                         ids=["eks", "gke"])
def test_on_1_36_the_policy_gates_and_the_tuned_config_starts(e2e_clusters, tmp_path, doc):
    from overprovisioner.config.catalog import config_warnings, resolve_catalog
    from overprovisioner.config.load import load_config

    cluster = bare_cluster(e2e_clusters, "walkthrough-136")
    headstart = headstart_command(tmp_path / "headstart-bin")
    trace = tmp_path / "trace.csv"
    subprocess.run([headstart, "trace", "synth", "--days", "1", "--out", str(trace)],
                   check=True, capture_output=True)
    tune = buckets_block(doc).replace("your-trace.csv", str(trace))
    calls = paste(cluster, tmp_path / "root", install_block(doc) + tune, None)
    assert "scheduler-plugins" not in calls  # no release for 1.36: no PodGroup CRD
    assert names(cluster, f"{ADMISSION}/mutatingadmissionpolicies") == [
        "headstart-placement-gate"]
    assert names(cluster, f"{ADMISSION}/mutatingwebhookconfigurations") == []
    scheduler = cluster.kube.get("/apis/apps/v1/namespaces/headstart/deployments/"
                                 "headstart-scheduler")
    assert scheduler["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "registry.k8s.io/kube-scheduler:v1.36.2"
    # The ConfigMap the Deployment mounts (the first apply's, with the overlay's own
    # list, stays beside it under its old hash suffix: `kubectl apply -k` does not prune).
    deployment = cluster.kube.get("/apis/apps/v1/namespaces/headstart/deployments/"
                                  "headstart-overprovisioner")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    [mounted_name] = [volume["configMap"]["name"] for volume in volumes
                      if (volume.get("configMap") or {}).get("name", "").startswith(
                          "headstart-overprovisioner-config")]
    configmap = cluster.kube.get(f"/api/v1/namespaces/headstart/configmaps/{mounted_name}")
    mounted = tmp_path / "etc-headstart"
    mounted.mkdir()
    for key, value in configmap["data"].items():
        (mounted / key).write_text(value)
    config = load_config(mounted / "config.yaml")
    catalog = resolve_catalog(config)  # the service's start-up check: no crash-loop
    tuned = yaml.safe_load((tmp_path / "root" / "my-cluster" / "buckets.yaml").read_text())
    assert list(config.instance_types) == tuned["buckets"]["instance_types"]
    print(json.dumps({"tuned": list(config.instance_types),
                      "warnings": list(config_warnings(config, catalog))}))


def test_before_1_36_with_cert_manager_the_webhook_gates(e2e_clusters, tmp_path):
    cluster = bare_cluster(e2e_clusters, "walkthrough-133-cm", crds=CERT_MANAGER_CRDS)
    calls = paste(cluster, tmp_path, install_block("docs/install-eks.md"), "33")
    assert "scheduler-plugins/v0.33.5" in calls
    assert cluster.kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                            "podgroups.scheduling.x-k8s.io")
    assert names(cluster, f"{ADMISSION}/mutatingadmissionpolicies") == []
    webhook = cluster.kube.get(f"{ADMISSION}/mutatingwebhookconfigurations/"
                               "headstart-placement-gate")
    assert webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
        "headstart/headstart-extender-gate"
    assert names(cluster, "/apis/cert-manager.io/v1/namespaces/headstart/certificates") == [
        "headstart-extender-gate", "headstart-extender-tls", "headstart-gate-ca",
        "headstart-scheduler-ca", "headstart-scheduler-tls"]
    deployment = cluster.kube.get("/apis/apps/v1/namespaces/headstart/deployments/"
                                  "headstart-extender")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--gate-webhook-port" in args


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_before_1_36_without_cert_manager_the_openssl_block_completes_it(e2e_clusters,
                                                                          tmp_path):
    cluster = bare_cluster(e2e_clusters, "walkthrough-133-ssl")
    doc = "docs/install-eks.md"
    paste(cluster, tmp_path, install_block(doc) + self_signed_block(doc), "33")
    webhook = cluster.kube.get(f"{ADMISSION}/mutatingwebhookconfigurations/"
                               "headstart-placement-gate")
    bundle = base64.b64decode(webhook["webhooks"][0]["clientConfig"]["caBundle"])
    assert bundle == (tmp_path / "my-cluster" / "gate-ca.crt").read_bytes()
    secret = cluster.kube.get("/api/v1/namespaces/headstart/secrets/headstart-extender-gate-tls")
    assert secret["type"] == "kubernetes.io/tls"
    assert base64.b64decode(secret["data"]["tls.crt"]) == \
        (tmp_path / "my-cluster" / "gate.crt").read_bytes()
    # Mutual TLS between the scheduler and the extender: both Secrets, one CA.
    ca = (tmp_path / "my-cluster" / "headstart-scheduler-ca.crt").read_bytes()
    for name in ("headstart-extender-tls", "headstart-scheduler-tls"):
        secret = cluster.kube.get(f"/api/v1/namespaces/headstart/secrets/{name}")
        assert secret["type"] == "kubernetes.io/tls"
        assert base64.b64decode(secret["data"]["ca.crt"]) == ca
