"""The workload-kind registry: every kind of training workload headstart admits, one module each.

Adding a kind is one module here (a `WorkloadKind`), its line in `KINDS`, and its lines
in the manifests (the extender's ClusterRole: list and watch, patch where it is
suspendable; a ValidatingAdmissionPolicy bounding the patch and the Gang CRD's
`suspendedJobs` kinds; the overprovisioner's ClusterRole, where it announces demand):
tests/kube/test_kinds.py checks the manifests against `KINDS`. A kind announced by a
known-demand source of its own adds that source (`predictor.known`: its switch and
its place in the precedence).

Decides: which kinds exist and in which order a pod's labels are tried (first match
wins: a TrainJob's pods carry its JobSet's label). Must not: do I/O.
"""

from __future__ import annotations

from kube.kinds.job import JOB
from kube.kinds.jobset import JOBSET
from kube.kinds.leaderworkerset import LEADERWORKERSET
from kube.kinds.model import PodSet, WorkloadKind
from kube.kinds.mpijob import MPIJOB
from kube.kinds.pytorchjob import PYTORCHJOB
from kube.kinds.raycluster import RAYCLUSTER
from kube.kinds.rayjob import RAYJOB
from kube.kinds.tfjob import TFJOB
from kube.kinds.trainjob import TRAINJOB

KINDS: tuple[WorkloadKind, ...] = (
    JOBSET, PYTORCHJOB, TFJOB, MPIJOB, TRAINJOB, RAYCLUSTER, RAYJOB, LEADERWORKERSET, JOB,
)
BY_KIND: dict[str, WorkloadKind] = {kind.kind: kind for kind in KINDS}
SUSPENDABLE: dict[str, WorkloadKind] = {kind.kind: kind for kind in KINDS if kind.suspendable}
"""The kinds headstart suspends to evict a gang whole."""
POD_LABELS: tuple[str, ...] = tuple(dict.fromkeys(k.pod_label for k in KINDS if k.pod_label))
"""The labels naming a pod's owner, in the order they are tried."""
PART_LABELS: tuple[str, ...] = tuple(dict.fromkeys(
    label for kind in KINDS for label in kind.part_labels))
JOB_LABELS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(dict.fromkeys(
    (kind.pod_label, kind.roles) for kind in KINDS if kind.pod_label and kind.roles))
"""(label naming a pod's job, labels naming its role) of the kinds whose pods carry both."""
"""The labels naming a pod's part of its owner, in the order they are tried (a pod
carries one kind's)."""


def kind_of(name: str) -> WorkloadKind:
    """The registered kind `name`; KeyError names the kinds there are."""
    try:
        return BY_KIND[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a registered workload kind "
                       f"({', '.join(BY_KIND)})") from None


__all__ = ["BY_KIND", "JOB_LABELS", "KINDS", "PART_LABELS", "POD_LABELS", "SUSPENDABLE",
           "PodSet", "WorkloadKind", "kind_of"]
