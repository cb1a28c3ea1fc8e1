"""TFJob (`kubeflow.org/v1`, the training operator): replica types PS, Worker, Chief, Evaluator.

Suspended like a PyTorchJob, through `spec.runPolicy.suspend`.
"""

from kube.kinds import kubeflow
from kube.kinds.model import WorkloadKind

TFJOB = WorkloadKind(
    kind="TFJob", group=kubeflow.GROUP, plural="tfjobs", versions=("v1",),
    pod_sets=kubeflow.replica_spec_sets("tfReplicaSpecs"),
    pod_label=kubeflow.JOB_NAME_LABEL, part_labels=kubeflow.PART_LABELS,
    managers={"v1": kubeflow.TRAINING_OPERATOR}, suspend_in=("spec", "runPolicy"),
    demand="pod-sets", demand_source="kubeflow", finished=kubeflow.FINISHED,
)
