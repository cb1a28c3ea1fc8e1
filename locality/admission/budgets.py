"""Whether PodDisruptionBudgets let a gang's pods be evicted all together.

The Eviction API takes one pod at a time: a gang evicted pod by pod can stop half way
when a budget runs out (429), leaving the rest bound and the job that waits for the room
waiting for ever. So the whole set is checked first, against each budget's
`status.disruptionsAllowed`, as the API server would charge it
(pkg/registry/core/pod/storage/eviction.go): a pod that is not running (pending,
finished, Terminating) is evicted without a budget; a pod two budgets select is
refused outright; with `unhealthyPodEvictionPolicy: AlwaysAllow` a pod that is not
Ready is not charged. Otherwise every selected pod of the set takes one of the budget's
allowed disruptions. (With the default `IfHealthyBudget`, the API server also lets an
un-Ready pod go while the budget is healthy; counting it here only makes the check
stricter: never half an eviction.)

Suspending an owner deletes its pods without asking budgets (as Kueue does), so only the
Eviction API's path is checked.

Must not: talk to the API, read the clock, log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from common.errors import InputError
from locality.constraints import Requirement
from locality.model import Pod

SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Budget:
    """A PodDisruptionBudget (policy/v1) as far as eviction needs it. selector: None
    selects no pod (a null selector), () every pod of its namespace (an empty one)."""

    namespace: str
    name: str
    selector: tuple[Requirement, ...] | None
    disruptions_allowed: int
    always_allow_unhealthy: bool = False

    def selects(self, pod: Pod) -> bool:
        return self.selector is not None and pod.namespace == self.namespace and all(
            requirement.matches(pod.labels) for requirement in self.selector)


def parse_budget(obj: Any, where: str = "podDisruptionBudget") -> Budget:
    """A PodDisruptionBudget object (as listed) to a `Budget`."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object")
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise InputError(f"{where}.metadata: name and namespace must be strings")
    allowed = status.get("disruptionsAllowed", 0)
    if isinstance(allowed, bool) or not isinstance(allowed, int):
        raise InputError(f"{where}.status.disruptionsAllowed: expected an integer, "
                         f"got {allowed!r}")
    return Budget(namespace, name, _selector(spec.get("selector"), f"{where}.spec.selector"),
                  allowed, spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow")


def _selector(raw: Any, where: str) -> tuple[Requirement, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a label selector object")
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise InputError(f"{where}.matchLabels: expected a map of strings")
    requirements = [Requirement(str(key), "In", (str(value),))
                    for key, value in sorted(labels.items())]
    for index, expression in enumerate(raw.get("matchExpressions") or ()):
        at = f"{where}.matchExpressions[{index}]"
        if not isinstance(expression, Mapping) or \
                expression.get("operator") not in SELECTOR_OPERATORS:
            operators = ", ".join(sorted(SELECTOR_OPERATORS))
            raise InputError(f"{at}: expected key, operator ({operators}) and values")
        requirements.append(Requirement(str(expression.get("key", "")),
                                        expression["operator"],
                                        tuple(str(v) for v in expression.get("values") or ())))
    return tuple(requirements)


def blocking(pods: Sequence[Pod], budgets: Iterable[Budget]) -> list[str]:
    """Why evicting all of `pods` through the Eviction API would be refused part way, a
    line per budget (empty: the budgets let every one go)."""
    budgets = list(budgets)
    refused: list[str] = []
    charged: dict[tuple[str, str], list[Pod]] = {}
    for pod in pods:
        if pod.node_name is None or pod.terminal or pod.deleting:
            continue  # not running: evicted without a budget
        selecting = [b for b in budgets if b.selects(pod)]
        if len(selecting) > 1:
            names = ", ".join(f"{b.namespace}/{b.name}" for b in selecting)
            refused.append(f"pod {pod.full_name} is selected by more than one "
                           f"PodDisruptionBudget ({names}): the API refuses to evict it")
            continue
        for budget in selecting:
            if budget.always_allow_unhealthy and not pod.ready:
                continue
            charged.setdefault((budget.namespace, budget.name), []).append(pod)
    for budget in budgets:
        taken = charged.get((budget.namespace, budget.name), [])
        if len(taken) > budget.disruptions_allowed:
            refused.append(
                f"PodDisruptionBudget {budget.namespace}/{budget.name} allows "
                f"{budget.disruptions_allowed} disruption(s) and {len(taken)} of the gang's "
                "pods are under it")
    return refused
