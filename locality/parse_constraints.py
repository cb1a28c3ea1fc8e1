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


def pod_constraints(spec: Mapping[str, Any], where: str) -> PodConstraints:
    """`spec` of a pod to its constraints (`where`: the path of the spec)."""
    selector = spec.get("nodeSelector")
    affinity = spec.get("affinity")
    tolerations = spec.get("tolerations")
    if not selector and not affinity and not tolerations:
        return NO_CONSTRAINTS
    pairs = []
    if selector is not None:
        if not isinstance(selector, Mapping):
            raise InputError(f"{where}.nodeSelector: expected an object")
        for key, value in selector.items():
            if not isinstance(value, str):
                raise InputError(f"{where}.nodeSelector.{key}: expected a string")
            pairs.append((str(key), value))
    return PodConstraints(tuple(sorted(pairs)), _terms(affinity, f"{where}.affinity"),
                          _tolerations(tolerations, f"{where}.tolerations"))


def node_taints(taints: Any, where: str) -> tuple[Taint, ...]:
    """The NoSchedule and NoExecute taints of a node's `spec.taints`."""
    found = []
    for index, raw in enumerate(json_list(taints, where)):
        path = f"{where}[{index}]"
        if not isinstance(raw, Mapping):
            raise InputError(f"{path}: expected an object")
        effect = raw.get("effect")
        if not isinstance(effect, str) or effect not in HARD_TAINT_EFFECTS:
            continue
        found.append(Taint(_string(raw.get("key"), f"{path}.key"),
                           _string(raw.get("value", ""), f"{path}.value", empty=True), effect))
    return tuple(found)


def _terms(affinity: Any, where: str) -> tuple[Term, ...] | None:
    if affinity is None:
        return None
    if not isinstance(affinity, Mapping):
        raise InputError(f"{where}: expected an object")
    node_affinity = affinity.get("nodeAffinity")
    if node_affinity is None:
        return None
    if not isinstance(node_affinity, Mapping):
        raise InputError(f"{where}.nodeAffinity: expected an object")
    required = node_affinity.get(_REQUIRED)
    if required is None:
        return None
    path = f"{where}.nodeAffinity.{_REQUIRED}"
    if not isinstance(required, Mapping):
        raise InputError(f"{path}: expected an object")
    terms = []
    for index, term in enumerate(json_list(required.get("nodeSelectorTerms"),
                                       f"{path}.nodeSelectorTerms")):
        at = f"{path}.nodeSelectorTerms[{index}]"
        if not isinstance(term, Mapping):
            raise InputError(f"{at}: expected an object")
        terms.append(Term(_requirements(term.get("matchExpressions"), f"{at}.matchExpressions"),
                          _requirements(term.get("matchFields"), f"{at}.matchFields",
                                        fields=True)))
    return tuple(terms)


def _requirements(raw: Any, where: str, fields: bool = False) -> tuple[Requirement, ...]:
    found = []
    for index, entry in enumerate(json_list(raw, where)):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise InputError(f"{at}: expected an object")
        key = _string(entry.get("key"), f"{at}.key")
        if fields and key != NODE_NAME_FIELD:
            raise InputError(f"{at}.key: matchFields supports only {NODE_NAME_FIELD}, "
                             f"got {key!r}")
        operator = entry.get("operator")
        if operator not in LABEL_OPERATORS:
            raise InputError(f"{at}.operator: expected one of "
                             f"{', '.join(sorted(LABEL_OPERATORS))}, got {operator!r}")
        values = tuple(_string(value, f"{at}.values[{i}]", empty=True)
                       for i, value in enumerate(json_list(entry.get("values"), f"{at}.values")))
        found.append(Requirement(key, operator, values))
    return tuple(found)


def _tolerations(raw: Any, where: str) -> tuple[Toleration, ...]:
    found = []
    for index, entry in enumerate(json_list(raw, where)):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            raise InputError(f"{at}: expected an object")
        operator = entry.get("operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise InputError(f"{at}.operator: expected Equal or Exists, got {operator!r}")
        found.append(Toleration(
            _string(entry.get("key", ""), f"{at}.key", empty=True), operator,
            _string(entry.get("value", ""), f"{at}.value", empty=True),
            _string(entry.get("effect", ""), f"{at}.effect", empty=True)))
    return tuple(found)


def _string(value: Any, where: str, empty: bool = False) -> str:
    if value is None and empty:
        return ""
    if not isinstance(value, str) or (not value and not empty):
        raise InputError(f"{where}: expected a{'' if empty else ' non-empty'} string, "
                         f"got {value!r}")
    return value


def json_list(value: Any, where: str) -> list[Any]:
    """A JSON list at `where` (None: empty); anything else is an InputError naming it."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a list, got {type(value).__name__}")
    return value
