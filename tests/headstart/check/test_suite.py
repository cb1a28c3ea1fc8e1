"""Which checks run and on what (headstart/check/core/suite.py): a correct install passes
them all, an input that could not be read skips what needs it, and the exit status."""

from __future__ import annotations

from dataclasses import replace

import pytest

from headstart.check.core import suite
from headstart.check.core.observed import Version
from headstart.check.core.result import Status, exit_status, fail, ok, skip, warn
from kube.autoscaler_status import AutoscalerStatus
from tests.headstart.check.builders import installed, with_config

INSTALLED = ["kubernetes-version", "deployment/headstart-scheduler",
             "deployment/headstart-extender", "deployment/headstart-overprovisioner",
             "config/scheduler", "config/extender", "config/overprovisioner",
             "scheduler-image", "podgroup-crd", "placement-gate", "gang-crd", "autoscaler",
             "capacity-buffers", "placeholder-priority", "autoscaler-cutoff",
             "autoscaler-schedulers", "node-groups", "nodepools", "tls/extender",
             "tls/scheduler", "tls/gate-webhook", "device-plugin"]


def test_a_correct_install_passes_every_check():
    results = suite.after_install(installed())
    assert [r.name for r in results] == INSTALLED
    assert {r.name: r.status for r in results if r.status is not Status.OK} == {
        "nodepools": Status.SKIP, "tls/gate-webhook": Status.SKIP}
    assert exit_status(results) == 0


def test_before_install_only_the_prerequisites_run():
    results = suite.pre_install(installed())
    assert [r.name for r in results] == [
        "kubernetes-version", "placement-gate", "podgroup-crd", "cert-manager", "autoscaler",
        "autoscaler-cutoff", "autoscaler-schedulers", "capacity-buffers", "device-plugin"]


def test_an_empty_cluster_is_not_ready():
    empty = installed(headstart={}, autoscalers=(), autoscaler_status=AutoscalerStatus(),
                      device_plugins=(), nodes=(), served={}, version=Version(33, ""))
    results = {r.name: r for r in suite.pre_install(empty)}
    assert results["autoscaler"].status is Status.FAIL
    assert results["device-plugin"].status is Status.WARN
    assert results["podgroup-crd"].status is Status.WARN
    assert exit_status(results.values()) == 1


def test_what_could_not_be_read_is_skipped_with_the_reason():
    observed = replace(installed(), unread={"secrets": "HTTP 403 Forbidden",
                                            "rights": "may not create SubjectAccessReviews"})
    results = {r.name: r for r in suite.after_install(observed)}
    assert results["tls/extender"].status is Status.SKIP
    assert results["tls/extender"].message == "could not read secrets (HTTP 403 Forbidden)"
    assert results["rights"].message == "not checked: may not create SubjectAccessReviews"
    assert results["device-plugin"].status is Status.OK


def test_a_broken_config_fails_its_check_and_skips_those_that_need_it():
    results = {r.name: r for r in suite.after_install(with_config(
        installed(), "headstart-overprovisioner-config", "catalog: aws\n"))}
    assert results["config/overprovisioner"].status is Status.FAIL
    assert "list the bucket instance types" in results["config/overprovisioner"].message
    for name in ("capacity-buffers", "placeholder-priority", "autoscaler-cutoff", "nodepools"):
        assert results[name].status is Status.SKIP
        assert "see config/overprovisioner" in results[name].message


def test_every_warning_and_failure_carries_a_fix():
    with pytest.raises(ValueError, match="a fail needs a fix"):
        fail("x", "broken", "")


def test_any_failure_exits_1_and_warnings_do_not():
    assert exit_status([ok("a", "x"), warn("b", "x", "f"), skip("c", "x")]) == 0
    assert exit_status([ok("a", "x"), fail("b", "x", "f")]) == 1
