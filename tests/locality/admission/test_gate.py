"""Which created pods the gate webhook puts behind `headstart.io/placement`, and the patch.

The same table runs against the real kube-apiserver under the MutatingAdmissionPolicy
and under the webhook in tests/e2e/test_gate_webhook.py.
"""

from __future__ import annotations

import copy

import pytest

from locality.admission.gate import gate_patch, gates

SCHEDULERS = ("headstart-scheduler",)
PLACEHOLDER_NAMESPACES = ("headstart-placeholders",)  # as shipped


def make_pod(scheduler="headstart-scheduler", node=None, gate_names=(), labels=None,
             annotations=None, priority_class=None, owner=None):
    spec = {"schedulerName": scheduler, "containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    if gate_names:
        spec["schedulingGates"] = [{"name": name} for name in gate_names]
    if priority_class:
        spec["priorityClassName"] = priority_class
    metadata = {"labels": labels or {}, "annotations": annotations or {}}
    if owner:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": "o",
                                        "uid": "0d0c7a3e-0000-4000-8000-000000000001",
                                        "controller": True}]
    return {"metadata": metadata, "spec": spec}


PLACEHOLDER = {"headstart.io/placeholder": "true"}


def placeholder(**changes):
    """A placeholder as the overprovisioner's Deployment makes it, `changes` applied."""
    return make_pod(**{"labels": PLACEHOLDER, "priority_class": "headstart-placeholder",
                       "owner": "ReplicaSet", **changes})


# (id, pod, namespace it is created in, gated); tests/e2e/test_gate_webhook.py creates
# each of these on a real kube-apiserver under the policy and under the webhook.
CASES = [
    ("training-pod", make_pod(), "team", True),
    ("other-scheduler", make_pod(scheduler="default-scheduler"), "team", False),
    # Created bound: a gate would make the create invalid.
    ("created-bound", make_pod(node="node-1"), "team", False),
    ("gated-already", make_pod(gate_names=["headstart.io/placement"]), "team", False),
    ("other-gate", make_pod(gate_names=["example.com/other"]), "team", True),
    ("kueue-gate", make_pod(gate_names=["kueue.x-k8s.io/admission"]), "team", False),
    ("kueue-queue-label", make_pod(labels={"kueue.x-k8s.io/queue-name": "q"}), "team", False),
    ("kueue-annotation", make_pod(annotations={"kueue.x-k8s.io/workload": "w"}), "team",
     False),
    ("placeholder", placeholder(), "headstart-placeholders", False),
    # Anyone may write the label: a placeholder is also in the placeholders' namespace,
    # at the placeholder PriorityClass, and made by a ReplicaSet.
    ("forged-placeholder", placeholder(), "team", True),
    ("placeholder-label-only", make_pod(labels=PLACEHOLDER), "headstart-placeholders", True),
    ("placeholder-without-its-class", placeholder(priority_class=None),
     "headstart-placeholders", True),
    ("placeholder-made-by-hand", placeholder(owner=None), "headstart-placeholders", True),
    ("placeholder-of-a-statefulset", placeholder(owner="StatefulSet"),
     "headstart-placeholders", True),
    ("placeholder-label-false", placeholder(labels={"headstart.io/placeholder": "false"}),
     "headstart-placeholders", True),
]


@pytest.mark.parametrize(("pod", "namespace", "expected"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_gates_as_the_admission_policy_does(pod, namespace, expected):
    before = copy.deepcopy(pod)
    assert gates(pod, namespace, SCHEDULERS, PLACEHOLDER_NAMESPACES) is expected
    assert pod == before


def test_no_scheduler_names_leaves_the_scope_to_the_webhook_configuration():
    assert gates(make_pod(scheduler="anything"), "team", (), PLACEHOLDER_NAMESPACES)


def test_a_pod_without_metadata_or_spec_is_judged_not_crashed_on():
    assert not gates({}, "team", SCHEDULERS, PLACEHOLDER_NAMESPACES)
    assert gates({"spec": {"schedulerName": "headstart-scheduler"}}, "team", SCHEDULERS, ())


def test_the_patch_creates_the_list_or_appends_to_it():
    assert gate_patch(make_pod()) == [
        {"op": "add", "path": "/spec/schedulingGates",
         "value": [{"name": "headstart.io/placement"}]}]
    # Appending keeps the other gate: replacing the list would lift someone else's.
    assert gate_patch(make_pod(gate_names=["example.com/other"])) == [
        {"op": "add", "path": "/spec/schedulingGates/-",
         "value": {"name": "headstart.io/placement"}}]
