"""TrainJob (`trainer.kubeflow.org/v1alpha1`, Kubeflow Trainer v2): run as a JobSet of its name.

The trainer builds a JobSet of the same name (kubeflow/trainer
pkg/runtime/framework/plugins/jobset), so its pods carry the JobSet's label and the
JobSet's replicated jobs (initializers, launcher, nodes) give the size; the TrainJob's
own `spec.trainer.numNodes` is read when its JobSet is not seen yet. Suspended through
`spec.suspend` (the trainer suspends its JobSet).
"""

from collections.abc import Mapping
from typing import Any

from kube.kinds import jobset
from kube.kinds.model import PodSet, WorkloadKind, any_condition
from kube.replicas import trainjob_num_nodes

NODE = "node"
"""The replicated job of the trainer nodes (pkg/constants `Node`)."""


def _pod_sets(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
    nodes = trainjob_num_nodes(spec, where)
    return () if nodes is None else (PodSet(NODE, nodes),)


TRAINJOB = WorkloadKind(
    kind="TrainJob", group="trainer.kubeflow.org", plural="trainjobs", versions=("v1alpha1",),
    pod_sets=_pod_sets, pod_label=jobset.NAME_LABEL, part_labels=(jobset.REPLICATED_JOB_LABEL,),
    managers={"v1alpha1": "trainer.kubeflow.org/trainjob-controller"}, controls_pods=False,
    sized_by=jobset.JOBSET.kind, demand="trainjob", demand_source="kubeflow",
    finished=any_condition("Complete", "Failed"),
)
