"""The checks catch real mistakes, and say where: each case breaks a copy of the
manifests in one place and expects a problem naming that file and field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.manifests import checks


def broken_copy(tmp_path: Path, relative: str, old: str, new: str) -> Path:
    copy = tmp_path / "manifests"
    shutil.copytree(checks.MANIFESTS, copy)
    target = copy / relative
    text = target.read_text()
    assert old in text, f"{relative} no longer contains {old!r}: update this test"
    target.write_text(text.replace(old, new, 1))
    return copy


CASES = [
    # (file, old text, new text, check, words the problem must contain)
    ("base/priorityclass.yaml", "value: -5", "value: 5", checks.consistency_problems,
     ["base/priorityclass.yaml", "PriorityClass/headstart-placeholder", "value"]),
    ("base/priorityclass.yaml", "value: -5", "value: -20", checks.consistency_problems,
     ["base/priorityclass.yaml", "cutoff"]),
    ("base/scheduler/scheduler-config.yaml", "svc:8888", "svc:8889", checks.consistency_problems,
     ["headstart-scheduler-config", "urlPrefix", "8889"]),
    ("base/extender/service.yaml", "name: headstart-extender\n", "name: headstart-extendr\n",
     checks.consistency_problems, ["urlPrefix", "no Service named headstart-extender"]),
    ("base/scheduler/scheduler-config.yaml", "weight: 10", "weight: 0",
     checks.scheduler_config_problems, ["config.yaml extenders.0.weight"]),
    ("base/scheduler/scheduler-config.yaml", "nodeCacheCapable: true", "nodeCacheCapabel: true",
     checks.scheduler_config_problems, ["nodeCacheCapabel"]),
    ("base/scheduler/scheduler-config.yaml", "httpTimeout: 5s", "httpTimeout: 30s",
     checks.docs_problems, ["docs/extender.md", "extenders[0].httpTimeout", "30s"]),
    ("base/scheduler/scheduler-config.yaml", "    preemptVerb: preempt\n", "",
     checks.consistency_problems, ["extenders[0].preemptVerb", "evicts pods on nodes"]),
    ("base/scheduler/scheduler-config.yaml", "defaultingType: List", "defaultingType: System",
     checks.consistency_problems, ["PodTopologySpread", "defaultingType List"]),
    ("base/scheduler/scheduler-config.yaml", "defaultingType: List", "defaultingType: Listed",
     checks.scheduler_config_problems, ["defaultingType", "Listed"]),
    ("base/extender/extender-config.yaml", "scheduler_http_timeout_seconds: 5",
     "scheduler_http_timeout_seconds: 4", checks.consistency_problems,
     ["scheduler_http_timeout_seconds", "httpTimeout 5s"]),
    ("base/extender/extender-config.yaml", "bind_scheduler_names: [headstart-scheduler]",
     "bind_scheduler_names: [other]", checks.consistency_problems,
     ["bind_scheduler_names", "lacks headstart-scheduler"]),
    ("base/scheduler/scheduler-config.yaml", "type: MostAllocated", "type: MostAlocated",
     checks.scheduler_config_problems, ["scoringStrategy.type", "MostAlocated"]),
    ("base/scheduler/scheduler-config.yaml", "type: MostAllocated", "type: LeastAllocated",
     checks.docs_problems, ["docs/extender.md", "profiles differ", "config.yaml profiles"]),
    ("base/scheduler/scheduler-config.yaml", "- name: cpu\n                weight: 1",
     "- name: cpu\n                weight: 2", checks.consistency_problems,
     ["headstart-scheduler-config", "NodeResourcesFit", "overprovisioner/sim/scheduler.py"]),
    # kube-scheduler defaults the strategy's type only when scoringStrategy is absent
    ("base/scheduler/scheduler-config.yaml", "type: MostAllocated", "# type: MostAllocated",
     checks.scheduler_config_problems, ["scoringStrategy", "'type' is a required property"]),
    ("base/extender/deployment.yaml", "readOnlyRootFilesystem: true",
     "readOnlyRootFilesystem: false", checks.security_problems,
     ["base/extender/deployment.yaml", "Deployment/headstart-extender", "readOnlyRootFilesystem"]),
    ("base/kustomization.yaml", 'newTag: "0.1.0"', "newTag: latest", checks.image_problems,
     ["Deployment/headstart-overprovisioner", "image", "not pinned"]),
    ("base/extender/deployment.yaml", "containerPort: 8888", "containerPort: 80",
     checks.consistency_problems,
     ["Deployment/headstart-extender", "8888"]),
    ("base/overprovisioner/deployment.yaml", "args: [overprovisioner, --config",
     "args: [overprovisoner, --config", checks.consistency_problems,
     ["Deployment/headstart-overprovisioner", "args", "not a valid command line"]),
    ("base/overprovisioner/pvc.yaml", "storage: 2Gi", "storage: [2Gi]", checks.schema_problems,
     ["base/overprovisioner/pvc.yaml", "spec.resources.requests.storage"]),
    ("overlays/eks/overprovisioner-config.yaml", "scheduler_name: headstart-scheduler",
     "scheduler_name: default-scheduler", checks.consistency_problems,
     ["headstart-overprovisioner-config", "placeholders.scheduler_name", "default-scheduler"]),
    # Placeholders elsewhere than the extender honours the label: their room not free.
    ("overlays/eks/overprovisioner-config.yaml", "  namespace: headstart-placeholders",
     "  namespace: placeholders", checks.consistency_problems,
     ["placeholders.namespace", "'placeholders'", "placeholder_namespaces"]),
    ("overlays/eks/overprovisioner-config.yaml", "quantile: 0.9", "quantile: 1.5",
     checks.headstart_config_problems, ["headstart-overprovisioner-config", "forecast.quantile"]),
    # The scheduler binds through the extender: bindVerb and bind_enabled go together.
    ("base/scheduler/scheduler-config.yaml", "bindVerb: bind", "# bindVerb: bind",
     checks.consistency_problems, ["headstart-extender-config", "bind_enabled", "bindVerb"]),
    # Mutual TLS: both sides agree, and each file is in a Secret its pod mounts.
    ("base/scheduler/scheduler-config.yaml", "urlPrefix: https://", "urlPrefix: http://",
     checks.consistency_problems,
     ["headstart-extender-config", "tls_cert_file", "https://", "enableHTTPS"]),
    ("base/scheduler/scheduler-config.yaml", "      caFile: /etc/headstart-scheduler-tls/ca.crt\n",
     "", checks.consistency_problems, ["tlsConfig.caFile", "insecure"]),
    ("base/scheduler/scheduler-config.yaml", "certFile: /etc/headstart-scheduler-tls/tls.crt",
     "certFile: /etc/headstart-tls/tls.crt", checks.consistency_problems,
     ["headstart-scheduler-config", "tlsConfig.certFile", "Deployment/headstart-scheduler"]),
    ("base/extender/extender-config.yaml", "tls_client_ca_file: /etc/headstart-tls/ca.crt\n",
     "", checks.consistency_problems, ["tlsConfig.certFile", "tls_client_ca_file"]),
    ("base/extender/deployment.yaml", "mountPath: /etc/headstart-tls",
     "mountPath: /etc/tls", checks.consistency_problems,
     ["headstart-extender-config", "tls_cert_file", "Deployment/headstart-extender"]),
    # Probes are served on the ops port only.
    ("base/extender/deployment.yaml", "path: /healthz\n              port: ops",
     "path: /healthz\n              port: https", checks.consistency_problems,
     ["Deployment/headstart-extender", "livenessProbe", "8889"]),
    # Without a quota for its class, GKE rejects the critical scheduler pods.
    ("base/scheduler/resourcequota.yaml", "values: [system-cluster-critical]",
     "values: [other]", checks.consistency_problems,
     ["Deployment/headstart-scheduler", "priorityClassName", "ResourceQuota"]),
]


@pytest.mark.parametrize(
    "relative, old, new, check, words", CASES,
    ids=[f"{c[0].split('/')[-1]}:{c[2].strip()[:24]}" for c in CASES],
)
def test_a_broken_manifest_is_reported_with_file_and_field(tmp_path, relative, old, new, check,
                                                          words):
    if relative == "base/extender/extender-config.yaml":
        # Each overlay ships its own extender config: the base's plus its node groups
        # (held equal by test_examples); break the copy the EKS overlay installs.
        relative = "overlays/eks/extender-config.yaml"
    manifests = broken_copy(tmp_path, relative, old, new)
    rendered = checks.render("eks", manifests, tmp_path)
    problems = check(rendered)
    assert problems, f"breaking {relative} went unnoticed"
    text = "\n".join(problems)
    for word in words:
        assert word in text, f"{word!r} missing from:\n{text}"


def test_an_overlay_that_does_not_render_names_the_overlay(tmp_path):
    manifests = broken_copy(tmp_path, "overlays/eks/kustomization.yaml", "../../base",
                            "../../nowhere")
    with pytest.raises(AssertionError, match="manifests/overlays/eks does not render"):
        checks.render("eks", manifests, tmp_path)
