"""Which nodes a pod may ever run on: its node selector, required node affinity and
tolerations, judged against a node's name, labels and taints.

The rules are kube-scheduler's filter plugins NodeAffinity (`spec.nodeSelector`: every
pair must be a label of the node; `requiredDuringSchedulingIgnoredDuringExecution`: the
node matches at least one term, a term when all its expressions and fields match, an
empty term matches nothing; operators In, NotIn, Exists, DoesNotExist, Gt, Lt, where
NotIn and DoesNotExist match a node without the label and Gt/Lt compare integers;
`matchFields` knows only `metadata.name`) and TaintToleration (every NoSchedule and
NoExecute taint of the node must be tolerated; PreferNoSchedule only steers). A
toleration tolerates a taint when its effect is empty or the taint's, and with operator
Exists its key is empty or the taint's, with Equal (the default) key and value are the
taint's (k8s.io/api core/v1 toleration.go `ToleratesTaint`).

Used where headstart decides on room kube-scheduler has not filtered yet: the job
admitter's domain search counts only the nodes (and the autoscaler's node templates)
each pod could use. kube-scheduler still runs the same plugins when it places the pods.

Must not: parse JSON (`locality.parse_constraints` does), log, read the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

HARD_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
NODE_NAME_FIELD = "metadata.name"


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint that keeps pods off (NoSchedule or NoExecute)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value else \
            f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration (`operator` Equal or Exists; `effect` "" tolerates every effect)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `matchExpressions` (or `matchFields`) entry."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        match self.operator:
            case "In":
                return present and value in self.values
            case "NotIn":
                return not present or value not in self.values
            case "Exists":
                return present
            case "DoesNotExist":
                return not present
            case "Gt" | "Lt":
                if not present or len(self.values) != 1:
                    return False
                try:
                    have, bound = int(value), int(self.values[0])
                except ValueError:
                    return False
                return have > bound if self.operator == "Gt" else have < bound
        return False

    def __str__(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        return f"{self.key} {self.operator} ({','.join(self.values)})"


@dataclass(frozen=True, slots=True)
class Term:
    """A `nodeSelectorTerms` entry: all its expressions and fields must match."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if not self.expressions and not self.fields:
            return False
        return (all(r.matches(labels) for r in self.expressions)
                and all(r.matches({NODE_NAME_FIELD: name}) for r in self.fields))


@dataclass(frozen=True, slots=True)
class PodConstraints:
    """What a pod asks of the node it runs on. terms: the required node affinity's
    terms, None when the pod has none (every node matches)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    terms: tuple[Term, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()

    def refusal(self, name: str, labels: Mapping[str, str],
                taints: tuple[Taint, ...]) -> str | None:
        """Why a node with these name, labels and taints can never take the pod; None
        when it can (room aside)."""
        for key, value in self.node_selector:
            if labels.get(key) != value:
                return f"nodeSelector {key}={value} does not match"
        if self.terms is not None and not any(t.matches(name, labels) for t in self.terms):
            return "required node affinity matches none of its terms"
        for taint in taints:
            if taint.effect in HARD_TAINT_EFFECTS and \
                    not any(t.tolerates(taint) for t in self.tolerations):
                return f"taint {taint} not tolerated"
        return None

    @property
    def is_empty(self) -> bool:
        """No selector, no affinity, no toleration: only an untainted node takes it."""
        return not self.node_selector and self.terms is None and not self.tolerations


NO_CONSTRAINTS = PodConstraints()
