"""The inter-pod rules of a pod that the job admitter models, and the first one it does
not: required pod (anti-)affinity, topology spread, host ports.

The admitter chooses a domain by packing a job's pods onto nodes
(`locality.admission.pack`); kube-scheduler then enforces every rule of the pod spec.
A rule the packing ignores would let a job be admitted into a domain where it cannot
bind, and evicted only after the bind timeout. So each rule is either modelled or named
at once:

- modelled as at most N of the job's pods on one node (`PodRules.per_node`):
  - required pod anti-affinity with `topologyKey: kubernetes.io/hostname` whose label
    selector matches the pod itself (so its siblings): 1 per node;
  - a container `hostPort`: two pods of the job cannot share a node: 1 per node;
  - `topologySpreadConstraints` on `kubernetes.io/hostname` with `whenUnsatisfiable:
    DoNotSchedule` whose selector matches the pod itself: `maxSkew` per node (with more
    nodes in the domain than pods, the least loaded node holds none of them, so no node
    may hold more than `maxSkew`);
- not modelled (`PodRules.unmodelled`, the field path named): required pod affinity,
  anti-affinity or spread whose selector does not match the pod (a rule about other
  pods), or on another topology key (a zone spread), or a `matchLabelKeys` /
  `namespaceSelector` refinement. `ScheduleAnyway` spreads and preferred terms only
  steer: ignored.

What is not modelled either, and not refused (every pod has it): the node's `pods`
allocatable, and host ports taken by other jobs' pods.

Must not: log, read the clock, keep state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.errors import InputError
from locality.constraints import Requirement

HOSTNAME = "kubernetes.io/hostname"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class PodRules:
    """per_node: at most this many of the pod's job on one node (None: no limit).
    unmodelled: the first rule the admitter does not model, as `path: what`."""

    per_node: int | None = None
    unmodelled: str | None = None


NO_RULES = PodRules()


def pod_rules(spec: Mapping[str, Any], labels: Mapping[str, str], where: str) -> PodRules:
    """The rules of a pod `spec` with these `labels` (`where`: the spec's path)."""
    affinity = spec.get("affinity") or {}
    spreads = spec.get("topologySpreadConstraints")
    ports = _host_ports(spec, where)
    if not isinstance(affinity, Mapping):
        raise InputError(f"{where}.affinity: expected an object")
    if not spreads and not ports and not affinity.get("podAffinity") and \
            not affinity.get("podAntiAffinity"):
        return NO_RULES
    limits: list[int] = [1] if ports else []
    required = _terms(affinity.get("podAffinity"), f"{where}.affinity.podAffinity")
    if required:
        return PodRules(None, f"{where}.affinity.podAffinity.{_REQUIRED}[0]: required pod "
                              "affinity")
    path = f"{where}.affinity.podAntiAffinity"
    for index, term in enumerate(_terms(affinity.get("podAntiAffinity"), path)):
        at = f"{path}.{_REQUIRED}[{index}]"
        why = _own(term, labels, at)
        if why is None and term.get("topologyKey") != HOSTNAME:
            why = f"topologyKey {term.get('topologyKey')!r} (only {HOSTNAME} is modelled)"
        if why is not None:
            return PodRules(None, f"{at}: pod anti-affinity: {why}")
        limits.append(1)
    for index, spread in enumerate(spreads or ()):
        at = f"{where}.topologySpreadConstraints[{index}]"
        if not isinstance(spread, Mapping):
            raise InputError(f"{at}: expected an object")
        if spread.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue  # ScheduleAnyway only steers
        why = _own(spread, labels, at)
        if why is None and spread.get("topologyKey") != HOSTNAME:
            why = f"topologyKey {spread.get('topologyKey')!r} (only {HOSTNAME} is modelled)"
        skew = spread.get("maxSkew", 1)
        if why is None and (isinstance(skew, bool) or not isinstance(skew, int) or skew < 1):
            raise InputError(f"{at}.maxSkew: expected a positive integer, got {skew!r}")
        if why is not None:
            return PodRules(None, f"{at}: topology spread: {why}")
        limits.append(skew)
    return PodRules(min(limits) if limits else None, None)


def _terms(rules: Any, where: str) -> list[Mapping[str, Any]]:
    if rules is None:
        return []
    if not isinstance(rules, Mapping):
        raise InputError(f"{where}: expected an object")
    terms = rules.get(_REQUIRED) or []
    if not isinstance(terms, list) or not all(isinstance(t, Mapping) for t in terms):
        raise InputError(f"{where}.{_REQUIRED}: expected a list of objects")
    return terms


def _own(rule: Mapping[str, Any], labels: Mapping[str, str], where: str) -> str | None:
    """Why the rule is about other pods than the pod's own job (None: its label
    selector matches the pod itself, and nothing widens it)."""
    for refinement in ("namespaces", "namespaceSelector", "matchLabelKeys",
                       "mismatchLabelKeys"):
        if rule.get(refinement):
            return f"{refinement} is set"
    selector = rule.get("labelSelector")
    if selector is None:
        return "no labelSelector"
    if not isinstance(selector, Mapping):
        raise InputError(f"{where}.labelSelector: expected an object")
    requirements = [Requirement(str(k), "In", (str(v),))
                    for k, v in (selector.get("matchLabels") or {}).items()]
    for index, expression in enumerate(selector.get("matchExpressions") or ()):
        if not isinstance(expression, Mapping) or \
                expression.get("operator") not in _SELECTOR_OPERATORS:
            raise InputError(f"{where}.labelSelector.matchExpressions[{index}]: expected "
                             "key, operator (In, NotIn, Exists, DoesNotExist) and values")
        requirements.append(Requirement(str(expression.get("key", "")), expression["operator"],
                                        tuple(str(v) for v in expression.get("values") or ())))
    if not requirements or not all(r.matches(labels) for r in requirements):
        return "its labelSelector does not select the pod's own job"
    return None


def _host_ports(spec: Mapping[str, Any], where: str) -> bool:
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(kind) or ()):
            if not isinstance(container, Mapping):
                raise InputError(f"{where}.{kind}[{index}]: expected an object")
            for port in container.get("ports") or ():
                if isinstance(port, Mapping) and port.get("hostPort"):
                    return True
    return False
