"""PyTorchJob (`kubeflow.org/v1`, the Kubeflow training operator): replica types Master and Worker.

Suspended through `spec.runPolicy.suspend`: the operator deletes its pods and Services
(nothing counts toward its `backoffLimit`) and creates them again on resume. The only
kind besides the Indexed Job that headstart resizes (`locality.elastic`).
"""

from collections.abc import Mapping
from typing import Any

from common.errors import InputError
from kube.kinds import kubeflow
from kube.kinds.model import ElasticSize, Resizing, WorkloadKind
from kube.replicas import mapping, whole

REPLICA_SPECS = "pytorchReplicaSpecs"
WORKER = "Worker"
"""The replica type a resize changes; the Master, if any, is not resized."""


def _elastic_size(spec: Mapping[str, Any], where: str) -> ElasticSize:
    specs = mapping(spec.get(REPLICA_SPECS), f"{where}: spec.{REPLICA_SPECS}")
    worker = mapping(specs.get(WORKER), f"{where}: spec.{REPLICA_SPECS}.{WORKER}")
    if not worker:
        raise InputError(f"{where}: spec.{REPLICA_SPECS} has no {WORKER} to resize")
    size = whole(worker.get("replicas"), f"{where}: spec.{REPLICA_SPECS}.{WORKER}.replicas", 1)
    policy = mapping(spec.get("elasticPolicy"), f"{where}: spec.elasticPolicy")
    low = whole(policy.get("minReplicas"), f"{where}: spec.elasticPolicy.minReplicas", 1)
    high = policy.get("maxReplicas")
    high = None if high is None else whole(high, f"{where}: spec.elasticPolicy.maxReplicas", 0)
    others = sum(whole(mapping(replica, f"{where}: spec.{REPLICA_SPECS}.{name}").get("replicas"),
                       f"{where}: spec.{REPLICA_SPECS}.{name}.replicas", 1)
                 for name, replica in specs.items() if name != WORKER)
    return ElasticSize(size, others, low, high, "its elasticPolicy minReplicas..maxReplicas")


PYTORCHJOB = WorkloadKind(
    kind="PyTorchJob", group=kubeflow.GROUP, plural="pytorchjobs", versions=("v1",),
    pod_sets=kubeflow.replica_spec_sets(REPLICA_SPECS),
    pod_label=kubeflow.JOB_NAME_LABEL, part_labels=kubeflow.PART_LABELS,
    managers={"v1": kubeflow.TRAINING_OPERATOR}, suspend_in=("spec", "runPolicy"),
    demand="pod-sets", demand_source="kubeflow", finished=kubeflow.FINISHED,
    resizing=Resizing(_elastic_size,
                      lambda size: {REPLICA_SPECS: {WORKER: {"replicas": size}}}),
)
