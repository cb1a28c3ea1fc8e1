"""The certificates of mutual TLS and of the gate webhook (headstart/check/core/
certificates.py), found through the configs and mounts, each failure with its fix."""

from __future__ import annotations

from dataclasses import replace

import pytest

from headstart.check.core import certificates, certs
from headstart.check.core.configs import installed as installed_configs
from headstart.check.core.observed import Webhook, parse_workload
from headstart.check.core.result import Status
from tests.headstart.check.builders import (
    DAY,
    NOW,
    authority,
    installed,
    issued,
    mutual_tls,
    shipped,
    tls_secret,
    with_workload,
)

SERVICE = "headstart-extender.headstart.svc"


def with_secret(observed, name, data):
    return replace(observed, secrets={**observed.secrets, name: data})


def extender_result(observed):
    return certificates.extender_tls(observed, installed_configs(observed))


def test_the_shipped_mutual_tls_passes():
    observed = installed()
    for check in (certificates.extender_tls, certificates.scheduler_tls):
        result = check(observed, installed_configs(observed))
        assert result.status is Status.OK, result
    assert f"for {SERVICE}" in extender_result(observed).message


CA = authority()
OTHER_CA = authority("someone-elses-ca")


def server(**changes):
    arguments = {"dns": (SERVICE,), "usage": "serverAuth", **changes}
    return tls_secret(issued(CA, "headstart-extender", **arguments), CA)


@pytest.mark.parametrize(("data", "words"), [
    (None, "Secret headstart-extender-tls (mounted by Deployment headstart/headstart-extender) "
           "is missing: the pods wait in ContainerCreating"),
    ({"tls.crt": server()["tls.crt"]}, "Secret headstart-extender-tls has no key tls.key"),
    ({**server(), "tls.crt": b"not a certificate"}, "is not a PEM certificate"),
    ({**server(), "tls.key": authority().key}, "is not the private key of"),
    (server(not_after=NOW - DAY), "expired on 2027-01-14: the headstart-scheduler refuses it"),
    (server(not_before=NOW + DAY), "is not valid before 2027-01-16"),
    (server(dns=("headstart-extender.default.svc",)),
     "names headstart-extender.default.svc, not headstart-extender.headstart.svc"),
    (server(usage="clientAuth"), "is for clientAuth, not serverAuth"),
    (tls_secret(issued(OTHER_CA, "headstart-extender", (SERVICE,), "serverAuth"), CA),
     "is not signed by a CA in Secret headstart-scheduler-tls (ca.crt), which the "
     "headstart-scheduler trusts"),
], ids=["secret-missing", "key-missing", "not-pem", "wrong-key", "expired", "not-yet-valid",
        "wrong-host", "wrong-usage", "other-ca"])
def test_the_extenders_serving_certificate_fails(data, words):
    observed = installed(secrets={**mutual_tls(CA), "headstart-extender-tls": data})
    result = extender_result(observed)
    assert result.status is Status.FAIL and words in result.message, result
    assert "scheduler-tls-cert-manager" in result.fix and "openssl block" in result.fix


def test_a_certificate_close_to_its_end_warns():
    observed = installed(secrets={**mutual_tls(CA),
                                  "headstart-extender-tls": server(not_after=NOW + 5 * DAY)})
    result = extender_result(observed)
    assert result.status is Status.WARN and "in 5 days: nothing renewed it" in result.message


def test_the_schedulers_client_certificate_needs_client_auth_and_the_extenders_ca():
    secrets = mutual_tls(CA)
    for data, words in [
        (tls_secret(issued(CA, "headstart-scheduler", (), "serverAuth"), CA),
         "is for serverAuth, not clientAuth"),
        (tls_secret(issued(OTHER_CA, "headstart-scheduler", (), "clientAuth"), OTHER_CA),
         "not signed by a CA in Secret headstart-extender-tls (ca.crt), which the extender "
         "trusts"),
    ]:
        observed = installed(secrets={**secrets, "headstart-scheduler-tls": data})
        result = certificates.scheduler_tls(observed, installed_configs(observed))
        assert result.status is Status.FAIL and words in result.message, result


def test_without_cryptography_only_presence_is_checked(monkeypatch):
    monkeypatch.setattr(certs, "AVAILABLE", False)
    result = extender_result(installed())
    assert result.status is Status.SKIP and "pip install cryptography" in result.message
    missing = extender_result(installed(secrets={}))
    assert missing.status is Status.FAIL and "is missing" in missing.message


GATE = "headstart-extender-gate.headstart.svc"
GATE_CA = authority("headstart-gate-ca")


def webhook_install(bundle: bytes, gate_cert):
    """The extender of the gate-webhook component, with the gate's Secret."""
    extender = shipped("manifests/base/extender/deployment.yaml")
    patch = shipped("manifests/components/gate-webhook/extender-deployment.yaml")
    spec = extender["spec"]["template"]["spec"]
    container = spec["containers"][0]
    patched = patch["spec"]["template"]["spec"]
    container["args"] = patched["containers"][0]["args"]
    container["volumeMounts"] += patched["containers"][0]["volumeMounts"]
    spec["volumes"] += patched["volumes"]
    extender["metadata"]["namespace"] = "headstart"
    extender["status"] = {"conditions": [{"type": "Available", "status": "True"}]}
    observed = with_workload(installed(webhook=Webhook("headstart-placement-gate", bundle,
                                                       GATE)),
                             "extender", parse_workload(extender))
    return with_secret(observed, "headstart-extender-gate-tls", tls_secret(gate_cert))


@pytest.mark.parametrize(("bundle", "cert", "status", "words"), [
    (GATE_CA.cert, issued(GATE_CA, "gate", (GATE,)), Status.OK, f"for {GATE}"),
    (b"", issued(GATE_CA, "gate", (GATE,)), Status.FAIL, "has no caBundle"),
    (OTHER_CA.cert, issued(GATE_CA, "gate", (GATE,)), Status.FAIL,
     "not signed by a CA in MutatingWebhookConfiguration headstart-placement-gate caBundle"),
    (GATE_CA.cert, issued(GATE_CA, "gate", ("gate.example",)), Status.FAIL,
     f"not {GATE}, the name kube-apiserver calls it by"),
], ids=["valid", "no-bundle", "other-ca", "wrong-name"])
def test_the_gate_webhooks_certificate_against_its_ca_bundle(bundle, cert, status, words):
    observed = webhook_install(bundle, cert)
    result = certificates.gate_tls(observed, installed_configs(observed))
    assert result.status is status and words in result.message, result
    if status is Status.FAIL:
        assert "gate-webhook-cert-manager" in result.fix


def test_no_gate_webhook_no_gate_certificate():
    observed = installed()
    assert certificates.gate_tls(observed, installed_configs(observed)).status is Status.SKIP
