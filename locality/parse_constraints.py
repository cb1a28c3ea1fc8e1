"""The edge for node constraints: a pod's `nodeSelector`, required node affinity and
tolerations, and a node's taints, from Kubernetes JSON to `locality.constraints`.

Malformed values raise `InputError` naming the field path
(`pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
.nodeSelectorTerms[0].matchExpressions[1].operator`). The API server validates these
fields, so such errors come only from hand-written requests.

Must not: log, read the clock, keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.errors import InputError
from common.fields import FieldReader
from locality.constraints import (
    HARD_TAINT_EFFECTS,
    LABEL_OPERATORS,
    NO_CONSTRAINTS,
    NODE_NAME_FIELD,
    PodConstraints,
    Requirement,
    Taint,
    Term,
    Toleration,
)

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_FIELDS = FieldReader("", InputError, mapping_noun="an object")
"""Request bodies: the paths name the object (`pod.spec...`), errors are InputErrors."""


def pod_constraints(spec: Mapping[str, Any], where: str) -> PodConstraints:
    """`spec` of a pod to its constraints (`where`: the path of the spec)."""
    selector = spec.get("nodeSelector")
    affinity = spec.get("affinity")
    tolerations = spec.get("tolerations")
    if not selector and not affinity and not tolerations:
        return NO_CONSTRAINTS
    pairs = []
    if selector is not None:
        for key, value in _FIELDS.mapping(selector, f"{where}.nodeSelector").items():
            pairs.append((str(key), _FIELDS.as_string(value, f"{where}.nodeSelector.{key}",
                                                      allow_empty=True)))
    return PodConstraints(tuple(sorted(pairs)), _terms(affinity, f"{where}.affinity"),
                          _tolerations(tolerations, f"{where}.tolerations"))


def node_taints(taints: Any, where: str) -> tuple[Taint, ...]:
    """The NoSchedule and NoExecute taints of a node's `spec.taints`."""
    found = []
    for index, raw in enumerate(json_list(taints, where)):
        path = f"{where}[{index}]"
        raw = _FIELDS.mapping(raw, path, optional=False)
        effect = raw.get("effect")
        if not isinstance(effect, str) or effect not in HARD_TAINT_EFFECTS:
            continue
        found.append(Taint(_FIELDS.as_string(raw.get("key"), f"{path}.key"),
                           _FIELDS.as_string(raw.get("value"), f"{path}.value",
                                             allow_empty=True), effect))
    return tuple(found)


def _terms(affinity: Any, where: str) -> tuple[Term, ...] | None:
    if affinity is None:
        return None
    node_affinity = _FIELDS.mapping(affinity, where).get("nodeAffinity")
    if node_affinity is None:
        return None
    required = _FIELDS.mapping(node_affinity, f"{where}.nodeAffinity").get(_REQUIRED)
    if required is None:
        return None
    path = f"{where}.nodeAffinity.{_REQUIRED}"
    terms = []
    for index, term in enumerate(json_list(_FIELDS.mapping(required, path)
                                           .get("nodeSelectorTerms"),
                                           f"{path}.nodeSelectorTerms")):
        at = f"{path}.nodeSelectorTerms[{index}]"
        term = _FIELDS.mapping(term, at, optional=False)
        terms.append(Term(_requirements(term.get("matchExpressions"), f"{at}.matchExpressions"),
                          _requirements(term.get("matchFields"), f"{at}.matchFields",
                                        fields=True)))
    return tuple(terms)


def _requirements(raw: Any, where: str, fields: bool = False) -> tuple[Requirement, ...]:
    found = []
    for index, entry in enumerate(json_list(raw, where)):
        at = f"{where}[{index}]"
        entry = _FIELDS.mapping(entry, at, optional=False)
        key = _FIELDS.as_string(entry.get("key"), f"{at}.key")
        if fields and key != NODE_NAME_FIELD:
            raise InputError(f"{at}.key: matchFields supports only {NODE_NAME_FIELD}, "
                             f"got {key!r}")
        operator = _FIELDS.as_choice(entry.get("operator"), f"{at}.operator",
                                     sorted(LABEL_OPERATORS))
        values = tuple(_FIELDS.as_string(value, f"{at}.values[{i}]", allow_empty=True)
                       for i, value in enumerate(json_list(entry.get("values"), f"{at}.values")))
        found.append(Requirement(key, operator, values))
    return tuple(found)


def _tolerations(raw: Any, where: str) -> tuple[Toleration, ...]:
    found = []
    for index, entry in enumerate(json_list(raw, where)):
        at = f"{where}[{index}]"
        entry = _FIELDS.mapping(entry, at, optional=False)
        operator = _FIELDS.as_choice(entry.get("operator") or "Equal", f"{at}.operator",
                                     ("Equal", "Exists"))
        found.append(Toleration(
            _FIELDS.as_string(entry.get("key"), f"{at}.key", allow_empty=True), operator,
            _FIELDS.as_string(entry.get("value"), f"{at}.value", allow_empty=True),
            _FIELDS.as_string(entry.get("effect"), f"{at}.effect", allow_empty=True)))
    return tuple(found)


def json_list(value: Any, where: str) -> list[Any]:
    """A JSON list at `where` (None: empty); anything else is an InputError naming it."""
    return _FIELDS.as_list(value, where)
