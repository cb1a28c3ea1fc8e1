"""The autoscaler's checks (headstart/check/core/autoscaler.py): one is there, it counts
the placeholders (expendable cutoff, allowed schedulers), and their PriorityClass."""

from __future__ import annotations

import pytest

from headstart.check.core import autoscaler
from headstart.check.core.observed import PriorityClass
from headstart.check.core.result import Status
from kube.autoscaler_status import AutoscalerStatus
from tests.headstart.check.builders import (
    autoscaler as ca,
)
from tests.headstart.check.builders import (
    autoscaler_status,
    device_plugin,
    installed,
    karpenter_pools,
)

POOLS = karpenter_pools()


def test_cluster_autoscaler_is_told_by_its_image_or_command():
    assert autoscaler.is_cluster_autoscaler(ca())
    assert not autoscaler.is_cluster_autoscaler(device_plugin())


@pytest.mark.parametrize(("changes", "status", "words"), [
    ({}, Status.OK, "cluster-autoscaler (Deployment kube-system/cluster-autoscaler)"),
    ({"autoscalers": (ca(available=False),)}, Status.FAIL, "is not available"),
    ({"autoscalers": ()}, Status.OK, "outside the cluster's Deployments"),
    ({"autoscalers": (), "autoscaler_status": AutoscalerStatus(), "nodepools": POOLS},
     Status.OK, "Karpenter NodePools g5-xlarge-pg-a"),
    ({"autoscalers": (), "autoscaler_status": AutoscalerStatus()}, Status.FAIL,
     "nothing launches nodes"),
], ids=["deployment", "unavailable", "managed", "karpenter", "none"])
def test_an_autoscaler_is_there(changes, status, words):
    result = autoscaler.autoscaler(installed(**changes))
    assert result.status is status and words in result.message
    if status is Status.FAIL:
        assert result.fix


@pytest.mark.parametrize(("args", "priority", "configured", "status", "words", "fix"), [
    ((), -5, -10, Status.OK, "at or above", ""),
    (("--expendable-pods-priority-cutoff=0",), -5, -10, Status.FAIL,
     "below Deployment kube-system/cluster-autoscaler's --expendable-pods-priority-cutoff=0: "
     "it ignores them", "--expendable-pods-priority-cutoff at most -5"),
    (("--expendable-pods-priority-cutoff", "-4"), -5, -10, Status.FAIL,
     "--expendable-pods-priority-cutoff=-4", "at most -5"),
    (("--v=2",), -5, -10, Status.OK, "at or above", ""),
    (("--v=2",), -11, -11, Status.FAIL, "--expendable-pods-priority-cutoff=-10 (default)",
     "at most -11"),
    (("--expendable-pods-priority-cutoff=-20",), -5, -10, Status.WARN,
     "expendable_pods_priority_cutoff says -10", "expendable_pods_priority_cutoff: -20"),
    (("--expendable-pods-priority-cutoff=low",), -5, -10, Status.FAIL, "is not an integer",
     "-10 by default"),
], ids=["shipped-values", "cutoff-above", "cutoff-as-two-args", "default", "below-default",
        "configs-disagree", "not-an-integer"])
def test_placeholders_are_at_or_above_the_expendable_cutoff(args, priority, configured, status,
                                                            words, fix):
    observed = installed(autoscalers=(ca(*args),) if args else (ca(),))
    result = autoscaler.autoscaler_cutoff(observed, priority, "PriorityClass x", configured)
    assert result.status is status and words in result.message
    assert fix in result.fix


def test_the_cutoff_is_not_judged_without_cluster_autoscalers_flags():
    managed = installed(autoscalers=())
    assert autoscaler.autoscaler_cutoff(managed, -5, "x", -10).status is Status.SKIP
    karpenter = installed(autoscalers=(), autoscaler_status=AutoscalerStatus(), nodepools=POOLS)
    result = autoscaler.autoscaler_cutoff(karpenter, -5, "x", -10)
    assert result.status is Status.SKIP and "Karpenter has no expendable cutoff" in result.message


def test_the_placeholders_priority_is_their_priority_class_else_the_config():
    assert autoscaler.placeholder_priority_value(installed(), "headstart-placeholder", -7) == \
        (-5, "PriorityClass headstart-placeholder")
    assert autoscaler.placeholder_priority_value(installed(priority_classes={}),
                                                 "headstart-placeholder", -7) == \
        (-7, "placeholders.priority_class_value")


@pytest.mark.parametrize(("args", "status"), [
    ((), Status.OK),
    (("--allowed-scheduler-names=default-scheduler,headstart-scheduler",), Status.OK),
    (("--allowed-scheduler-names=default-scheduler",), Status.FAIL),
], ids=["unset", "named", "left-out"])
def test_cluster_autoscaler_considers_the_placeholders_scheduler(args, status):
    result = autoscaler.autoscaler_schedulers(installed(autoscalers=(ca(*args) if args else
                                                                     ca(),)),
                                              "headstart-scheduler")
    assert result.status is status
    if status is Status.FAIL:
        assert "never for placeholders" in result.message
        assert "add headstart-scheduler to --allowed-scheduler-names" in result.fix


@pytest.mark.parametrize(("classes", "status", "words"), [
    ({"headstart-placeholder": PriorityClass(-5, "Never")}, Status.OK, "value -5"),
    ({}, Status.WARN, "creates it again"),
    ({"headstart-placeholder": PriorityClass(-3, "Never")}, Status.FAIL, "needs -5 and Never"),
    ({"headstart-placeholder": PriorityClass(-5, "PreemptLowerPriority")}, Status.FAIL,
     "preemptionPolicy PreemptLowerPriority"),
], ids=["shipped", "missing", "other-value", "preempting"])
def test_the_placeholders_priority_class(classes, status, words):
    result = autoscaler.placeholder_priority_class(installed(priority_classes=classes),
                                                   "headstart-placeholder", -5)
    assert result.status is status and words in result.message
    if status is Status.FAIL:
        assert "kubectl delete priorityclass headstart-placeholder" in result.fix


def test_a_status_configmap_alone_shows_cluster_autoscaler_runs():
    observed = installed(autoscalers=(), autoscaler_status=autoscaler_status("g"))
    assert "Running" in autoscaler.autoscaler(observed).message
