"""Which pods are headstart's placeholders: one rule for the extender's model
(locality.parse), the placement gate (locality.admission.gate, the webhook) and, in CEL,
the shipped MutatingAdmissionPolicy (manifests/base/admission/placement-gate.yaml).

A placeholder's room counts as free for training pods, and the gate leaves it alone.
The label `headstart.io/placeholder` is anyone's to write, so a placeholder is a pod that
carries it with the value "true" AND lives in a placeholders' namespace (where no tenant
may create pods) AND runs at the placeholder PriorityClass AND is controlled by a
ReplicaSet (the overprovisioner's Deployments make them): a label alone, or a pod made
by hand, is an ordinary pod.

Must not: read anything but the pod's fields it is given.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kube.labels import PLACEHOLDER_LABEL

PLACEHOLDER_OWNER_KIND = "ReplicaSet"


def controller_kind(references: Any) -> str | None:
    """The kind of the owner reference marked `controller: true`, if any."""
    for reference in references if isinstance(references, list) else ():
        if isinstance(reference, Mapping) and reference.get("controller") is True:
            return str(reference.get("kind") or "")
    return None


def is_placeholder(labels: Mapping[str, Any], namespace: str, priority_class_name: Any,
                   owner_kind: str | None, *, namespaces: Collection[str],
                   priority_class: str, label: str = PLACEHOLDER_LABEL) -> bool:
    """The pod (its labels, namespace, `spec.priorityClassName`, controlling owner's
    kind) is one of headstart's placeholders."""
    return (labels.get(label) == "true" and namespace in namespaces
            and priority_class_name == priority_class
            and owner_kind == PLACEHOLDER_OWNER_KIND)
