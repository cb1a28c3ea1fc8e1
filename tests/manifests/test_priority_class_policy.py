"""The shipped ValidatingAdmissionPolicy `headstart-overprovisioner-priority-class`, in a
CEL interpreter (as tests/manifests/test_job_edits_policy.py): the PriorityClass the
overprovisioner creates passes, every other one it could create is refused.
tests/e2e/test_extender_edits.py runs it in kube-apiserver."""

from __future__ import annotations

import pytest

from overprovisioner.config import OverprovisionerConfig
from overprovisioner.service.objects import priority_class
from tests.manifests.test_job_edits_policy import refusals

POLICY = "headstart-overprovisioner-priority-class"


def created(**changes):
    body = dict(priority_class(OverprovisionerConfig()).body)
    body.update(changes)
    return body


def test_the_class_the_overprovisioner_creates_passes():
    body = created()
    assert body["metadata"]["name"] == "headstart-placeholder"
    assert refusals(None, body, POLICY) == []


@pytest.mark.parametrize(("changes", "message"), [
    ({"metadata": {"name": "everyone"}}, "only the PriorityClass headstart-placeholder"),
    ({"globalDefault": True}, "may not create a global default"),
    ({"value": 1000}, "only below 0"),
    ({"value": 0}, "only below 0"),
    ({"preemptionPolicy": "PreemptLowerPriority"}, "preemptionPolicy Never"),
], ids=["another-name", "global-default", "high-value", "zero", "preempting"])
def test_any_other_class_is_refused(changes, message):
    found = refusals(None, created(**changes), POLICY)
    assert any(message in m for m in found), found
