"""The JSON patch that writes a job's domain into one pod and lifts its gate.

Decides the patch, from the pod as the API server last returned it, shaped to what
kube-apiserver accepts on a gated pod (pkg/apis/core/validation ValidatePodUpdate,
KEP-3838): scheduling gates may only be removed; while the pod is gated (before this
update) its node affinity may be set when it has no required terms, and otherwise each
required term may only gain match expressions at its end; preferred terms are free.
So the domain is appended as `LABEL In [DOMAIN]` to every required term the pod has
(terms are ORed: narrowing each narrows the pod), or set as the only term when it has
none; under `preferred` it is appended as a preferred term of weight 100. A term with
neither expressions nor fields matches no node already and cannot gain any: it is left
as it is. The domain annotation (`LEVEL=DOMAIN`) goes in the same patch, so the record
and the affinity never disagree.

Labels asked for (the gang's PodGroup, `locality.admission.coscheduling`) are added
where the pod has no value for that key; a value it has is never changed.

`test` operations on the uid, the resourceVersion and the gate's position make the
patch apply only to the pod it was computed from: anything changed in between fails it
with 422 and the next round recomputes it.

Must not: do I/O, decide the domain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube.labels import DOMAIN_ANNOTATION
from locality.model import Locality

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
PREFERRED_WEIGHT = 100


def pointer_token(key: str) -> str:
    """A map key as a JSON Pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def ungate_patch(
    pod: Mapping[str, Any],
    gate: str,
    domain: tuple[str, str, str] | None = None,
    locality: Locality = Locality.REQUIRED,
    domain_annotation: str = DOMAIN_ANNOTATION,
    labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]] | None:
    """The operations, None when the pod no longer carries `gate`.

    domain: (label key, label value, annotation value `LEVEL=VALUE`), None to lift the
    gate only. locality: `required` writes a required term, `preferred` a preferred one.
    labels: set on the pod where it has none of that key (the gang's PodGroup).
    """
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    gates = [entry.get("name") for entry in spec.get("schedulingGates") or []]
    if gate not in gates:
        return None
    index = gates.index(gate)
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/uid", "value": metadata.get("uid")},
        {"op": "test", "path": "/metadata/resourceVersion",
         "value": metadata.get("resourceVersion")},
        {"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": gate},
        {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
    ]
    ops += _labels(metadata.get("labels"), labels or {})
    if domain is None:
        return ops
    key, value, record = domain
    if metadata.get("annotations") is None:
        ops.append({"op": "add", "path": "/metadata/annotations",
                    "value": {domain_annotation: record}})
    else:
        ops.append({"op": "add",
                    "path": f"/metadata/annotations/{pointer_token(domain_annotation)}",
                    "value": record})
    expression = {"key": key, "operator": "In", "values": [value]}
    if locality is Locality.REQUIRED:
        ops += _required(spec, expression)
    else:
        ops += _preferred(spec, expression)
    return ops


def label_patch(pod: Mapping[str, Any], gate: str, labels: Mapping[str, str]
                ) -> list[dict[str, Any]] | None:
    """The operations adding `labels` where the pod has none of that key, the gate kept;
    None when there is nothing to add or the pod no longer carries `gate`. Coscheduling
    counts a gang's members by its PodGroup label when the first of them is scheduled
    (scheduler-plugins' PreFilter lists the labelled pods): a member ungated while its
    siblings are still unlabelled is rejected, and nothing requeues it before a PodGroup
    or pod-add event, so every member is labelled before any is ungated."""
    metadata = pod.get("metadata") or {}
    gates = [entry.get("name") for entry in (pod.get("spec") or {}).get("schedulingGates") or []]
    ops = _labels(metadata.get("labels"), labels)
    if gate not in gates or not ops:
        return None
    return [{"op": "test", "path": "/metadata/uid", "value": metadata.get("uid")},
            {"op": "test", "path": "/metadata/resourceVersion",
             "value": metadata.get("resourceVersion")},
            *ops]


def _labels(current: Mapping[str, str] | None, wanted: Mapping[str, str]
            ) -> list[dict[str, Any]]:
    missing = {key: value for key, value in wanted.items() if key not in (current or {})}
    if not missing:
        return []
    if current is None:
        return [{"op": "add", "path": "/metadata/labels", "value": missing}]
    return [{"op": "add", "path": f"/metadata/labels/{pointer_token(key)}", "value": value}
            for key, value in sorted(missing.items())]


def _parents(spec: Mapping[str, Any], field: str, value: Any) -> list[dict[str, Any]] | None:
    """Ops creating the affinity objects down to `field` when one is missing, else None."""
    affinity = spec.get("affinity")
    if affinity is None:
        return [{"op": "add", "path": "/spec/affinity",
                 "value": {"nodeAffinity": {field: value}}}]
    if affinity.get("nodeAffinity") is None:
        return [{"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {field: value}}]
    if affinity["nodeAffinity"].get(field) is None:
        return [{"op": "add", "path": f"/spec/affinity/nodeAffinity/{field}", "value": value}]
    return None


def _required(spec: Mapping[str, Any], expression: dict[str, Any]) -> list[dict[str, Any]]:
    term = {"matchExpressions": [expression]}
    created = _parents(spec, REQUIRED, {"nodeSelectorTerms": [term]})
    if created is not None:
        return created
    terms = spec["affinity"]["nodeAffinity"][REQUIRED].get("nodeSelectorTerms") or []
    base = f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms"
    if not terms:
        return [{"op": "add", "path": base, "value": [term]}]
    ops = []
    for index, existing in enumerate(terms):
        if existing.get("matchExpressions"):
            ops.append({"op": "add", "path": f"{base}/{index}/matchExpressions/-",
                        "value": expression})
        elif existing.get("matchFields"):
            ops.append({"op": "add", "path": f"{base}/{index}/matchExpressions",
                        "value": [expression]})
    return ops


def _preferred(spec: Mapping[str, Any], expression: dict[str, Any]) -> list[dict[str, Any]]:
    term = {"weight": PREFERRED_WEIGHT, "preference": {"matchExpressions": [expression]}}
    created = _parents(spec, PREFERRED, [term])
    if created is not None:
        return created
    return [{"op": "add", "path": f"/spec/affinity/nodeAffinity/{PREFERRED}/-", "value": term}]
