"""What the Kubeflow training operator's kinds share (PyTorchJob, TFJob, MPIJob).

The training operator (`kubeflow.org/v1`; kubeflow/training-operator pkg/apis/kubeflow.org/v1)
keeps a job's replica specs in `spec.<kind>ReplicaSpecs` (replica type ->
`{replicas (default 1), template}`) and its `suspend` and `managedBy` in `spec.runPolicy`.
It labels every pod `training.kubeflow.org/job-name` and
`training.kubeflow.org/replica-type` (the type, lower-cased); mpi-operator v2 sets only
`training.kubeflow.org/job-role` (launcher, worker), which the training operator sets
too (`master` on a master), read after the replica type.

Must not: do I/O, log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube.kinds.model import PodSet, PodSetsReader, any_condition
from kube.replicas import kubeflow_replica_specs

GROUP = "kubeflow.org"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
PART_LABELS = (REPLICA_TYPE_LABEL, JOB_ROLE_LABEL)
TRAINING_OPERATOR = "kubeflow.org/training-operator"
"""The `runPolicy.managedBy` value by which the training operator reconciles a job."""
FINISHED = any_condition("Succeeded", "Failed")


def replica_spec_sets(field_name: str) -> PodSetsReader:
    """The pod sets of a kind whose replica specs are `spec.<field_name>`, all in stage 0."""
    def read(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
        return tuple(PodSet(s.replica_type, s.replicas, 0, s.template,
                            f"{where}.{field_name}.{s.replica_type}.template")
                     for s in kubeflow_replica_specs(spec, field_name, where))
    return read
