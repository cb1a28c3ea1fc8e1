"""The checks of what the API server serves (headstart/check/core/apis.py): the version,
the placement gate, the Gang CRD, CapacityBuffers, cert-manager; each failure with its
fix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from headstart.check.core import apis
from headstart.check.core.configs import installed as installed_configs
from headstart.check.core.observed import Version, Webhook, parse_workload
from headstart.check.core.result import Status
from overprovisioner.config import PlaceholderConfig
from tests.headstart.check.builders import ALL_SERVED, autoscaler, installed, with_workload

WITHOUT_POLICIES = {**ALL_SERVED, "admissionregistration.k8s.io/v1": frozenset({
    "mutatingwebhookconfigurations"})}
BUFFERS = {**ALL_SERVED, "autoscaling.x-k8s.io/v1beta1": frozenset({"capacitybuffers"})}


@pytest.mark.parametrize(("minor", "status", "words"), [
    (29, Status.FAIL, "needs 1.30 or later"),
    (30, Status.OK, "control plane 1.30"),
    (36, Status.OK, "control plane 1.36"),
    (37, Status.WARN, "newer than 1.36"),
], ids=["too-old", "oldest", "newest", "untested"])
def test_the_control_planes_minor_against_the_supported_releases(minor, status, words):
    result = apis.kubernetes_version(installed(version=Version(minor, f"v1.{minor}.1")))
    assert result.status is status and words in result.message
    assert (result.fix != "") == (status is not Status.OK)


def test_before_install_the_gate_follows_what_the_control_plane_serves():
    assert "the overlay's policy" in apis.gate_api(installed()).message
    older = apis.gate_api(installed(served=WITHOUT_POLICIES, version=Version(33, "v1.33.5")))
    assert older.status is Status.OK and "gate webhook" in older.message


WEBHOOK = Webhook("headstart-placement-gate", b"-----BEGIN CERTIFICATE-----",
                  "headstart-extender-gate.headstart.svc")
WEBHOOK_EXTENDER = {"kind": "Deployment", "metadata": {"namespace": "headstart",
                                                        "name": "headstart-extender"},
                    "spec": {"template": {"spec": {"containers": [{
                        "name": "extender", "image": "x",
                        "args": ["extender", "--gate-webhook-port", "9443"]}]}}},
                    "status": {"conditions": [{"type": "Available", "status": "True"}]}}


@pytest.mark.parametrize(("changes", "status", "words", "fix"), [
    ({}, Status.OK, "Policy and its binding are installed", ""),
    ({"gate_policy_binding": False}, Status.FAIL, "its binding is missing",
     "placement-gate.yaml"),
    ({"gate_policy": False, "gate_policy_binding": False}, Status.FAIL,
     "the policy is missing", "kubectl apply -k my-cluster"),
    ({"served": WITHOUT_POLICIES, "gate_policy": False, "gate_policy_binding": False},
     Status.FAIL, "no gate webhook is installed", "components/gate-webhook"),
    ({"served": WITHOUT_POLICIES, "webhook": replace(WEBHOOK, ca_bundle=b"")}, Status.FAIL,
     "has no caBundle", "gate-webhook-cert-manager"),
    ({"served": WITHOUT_POLICIES, "webhook": WEBHOOK}, Status.FAIL,
     "does not serve the webhook", "components/gate-webhook"),
], ids=["policy", "no-binding", "no-policy", "neither", "webhook-without-ca",
        "extender-not-serving"])
def test_the_installed_gate(changes, status, words, fix):
    observed = installed(**changes)
    result = apis.gate(observed, installed_configs(observed))
    assert result.status is status and words in result.message
    assert fix in result.fix


def test_a_webhook_the_extender_serves_passes():
    observed = with_workload(installed(served=WITHOUT_POLICIES, webhook=WEBHOOK), "extender",
                             parse_workload(WEBHOOK_EXTENDER))
    result = apis.gate(observed, installed_configs(observed))
    assert result.status is Status.OK and "headstart-extender-gate.headstart.svc" in \
        result.message


def test_the_gang_crd():
    assert apis.gang_crd(installed()).status is Status.OK
    missing = apis.gang_crd(installed(served={k: v for k, v in ALL_SERVED.items()
                                              if k != "headstart.io/v1alpha1"}))
    assert missing.status is Status.FAIL and "admits no job" in missing.message
    assert "gangs.headstart.io.yaml" in missing.fix


FLAGS = ("--capacity-buffer-controller-enabled=true", "--capacity-buffer-pod-injection-enabled")


@pytest.mark.parametrize(("backend", "served", "cas", "status", "words", "fix"), [
    ("deployment", BUFFERS, (), Status.SKIP, "balloon Deployments", ""),
    ("capacitybuffer", ALL_SERVED, (), Status.FAIL, "no CapacityBuffer API is served",
     "install the CapacityBuffer CRD"),
    ("auto", ALL_SERVED, (), Status.OK, "placeholders are balloon Deployments", ""),
    ("auto", BUFFERS, (autoscaler(),), Status.FAIL,
     "without --capacity-buffer-controller-enabled and --capacity-buffer-pod-injection-enabled",
     "placeholders.backend: deployment"),
    ("auto", BUFFERS, (autoscaler(FLAGS[0]),), Status.FAIL,
     "without --capacity-buffer-pod-injection-enabled:", "add both flags"),
    ("auto", BUFFERS, (autoscaler(*FLAGS),), Status.OK, "runs with both buffer flags", ""),
    ("auto", BUFFERS, (), Status.OK, "writes autoscaling.x-k8s.io/v1beta1 CapacityBuffers", ""),
], ids=["deployments", "buffers-not-served", "auto-without-api", "ca-without-flags",
        "ca-with-one-flag", "ca-with-flags", "karpenter"])
def test_capacity_buffers_when_configured(backend, served, cas, status, words, fix):
    result = apis.capacity_buffers(installed(served=served), PlaceholderConfig(backend=backend),
                                   cas)
    assert result.status is status and words in result.message
    assert fix in result.fix


def test_cert_manager_before_install():
    with_it = installed(served={**ALL_SERVED, "cert-manager.io/v1": frozenset({"certificates"})})
    assert apis.cert_manager(with_it).status is Status.OK
    without = apis.cert_manager(installed())
    assert without.status is Status.WARN and "openssl block" in without.fix
