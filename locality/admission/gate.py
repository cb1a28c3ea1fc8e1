"""Which new pods are created behind the placement gate, and the patch that gates them.

Decides: for a pod being created, whether the admission webhook adds the
`headstart.io/placement` scheduling gate (`gates`), and the JSON Patch that adds it
(`gate_patch`). The same rule as the MutatingAdmissionPolicy of
manifests/base/admission (Kubernetes 1.36 and later), for the clusters before 1.36 that
run the webhook instead (manifests/components/gate-webhook); tests/e2e/test_gate_webhook.py
creates one table of pods under each and holds the outcomes equal. A pod is gated when
all of these hold:

- its `spec.schedulerName` is one of headstart's schedulers (empty: any, then the
  webhook configuration's own match condition is the only scope);
- it is not created bound (`spec.nodeName`: a gate would make the create invalid);
- it carries neither this gate nor one of another admitter (Kueue's);
- it is not one of headstart's placeholders (`locality.placeholders`: the label, in a
  placeholder namespace, at the placeholder PriorityClass, made by a ReplicaSet; anyone
  may write the label, no tenant may create pods there);
- it is not Kueue's (its annotations or its queue-name label): one admitter per pod.

Must not: talk to the API, log, or read anything but the pod and the arguments.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from locality.admission.config import FOREIGN_GATE_PREFIXES, GATE
from locality.placeholders import controller_kind, is_placeholder
from locality.suspension import KUEUE_QUEUE_LABEL

KUEUE_PREFIX = "kueue.x-k8s.io/"


def gates(
    pod: Mapping[str, Any],
    namespace: str,
    scheduler_names: Collection[str],
    placeholder_namespaces: Collection[str],
    gate: str = GATE,
    placeholder_priority_class: str = "headstart-placeholder",
) -> bool:
    """True when the pod being created in `namespace` must wait behind `gate`."""
    spec = pod.get("spec") or {}
    metadata = pod.get("metadata") or {}
    if scheduler_names and spec.get("schedulerName") not in scheduler_names:
        return False
    if spec.get("nodeName"):
        return False
    for existing in spec.get("schedulingGates") or ():
        name = str((existing or {}).get("name", ""))
        if name == gate or name.startswith(FOREIGN_GATE_PREFIXES):
            return False
    labels = metadata.get("labels") or {}
    if is_placeholder(labels, namespace, spec.get("priorityClassName"),
                      controller_kind(metadata.get("ownerReferences")),
                      namespaces=placeholder_namespaces,
                      priority_class=placeholder_priority_class):
        return False
    annotations = metadata.get("annotations") or {}
    if KUEUE_QUEUE_LABEL in labels or any(str(key).startswith(KUEUE_PREFIX)
                                          for key in annotations):
        return False
    return True


def gate_patch(pod: Mapping[str, Any], gate: str = GATE) -> list[dict[str, Any]]:
    """The JSON Patch (RFC 6902) that appends `gate` to the pod's scheduling gates."""
    if (pod.get("spec") or {}).get("schedulingGates"):
        return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": gate}}]
    return [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": gate}]}]
