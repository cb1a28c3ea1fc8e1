"""Known demand of Kubeflow training jobs whose pods are not all created.

Training-operator jobs (`kubeflow.org/v1` PyTorchJob, TFJob, MPIJob; field names from
kubeflow/training-operator release-1.9 pkg/apis/kubeflow.org/v1): `spec.<kind>ReplicaSpecs`
(`pytorchReplicaSpecs`, `tfReplicaSpecs`, `mpiReplicaSpecs`) maps a replica type
(Master, Worker, PS, Chief, Evaluator, Launcher) to `{replicas (default 1), template}`;
`spec.runPolicy.suspend`; conditions `Succeeded`, `Failed`, `Suspended`. The operator
labels each pod `training.kubeflow.org/replica-type` with the type lower-cased and makes
the job its controller owner (pkg/controller.v1/common/pod.go, job_controller.go
`GenLabels`), so the pods that exist are counted per (job, replica type) and the rest
are known demand, expected now (the operator is creating them). A suspended job announces
all its replicas, expected now while suspended for at most the window, or, one headstart's
admitter suspended (label `headstart.io/suspended`), when the admitter resumes it.

mpi-operator v2 MPIJobs (`kubeflow.org/v2beta1`, the same `mpiReplicaSpecs`): the
workers are pods the MPIJob controls, labelled `training.kubeflow.org/job-role: worker`
(no replica-type label; `predictor.known.model.pod_ref` reads either); the launcher is a
batch Job's pod, whose controller is that Job, so it cannot be matched to the MPIJob:
while the job runs only its workers are counted as missing (a suspended one announces
every replica, the launcher too).

TrainJob (`trainer.kubeflow.org/v1alpha1`, kubeflow/trainer
pkg/apis/trainer/v1alpha1/trainjob_types.go): `spec.trainer.numNodes` pods of
`spec.trainer.resourcesPerNode`, `spec.suspend`, conditions `Complete`, `Failed`,
`Suspended`. Its pods belong to the JobSet of the same name (the trainer's jobset plugin
builds `JobSet(trainJob.Name, ...)`) in replicated job `node` (pkg/constants `Node`).
A TrainJob that leaves numNodes or resourcesPerNode to its TrainingRuntime is not
counted (runtimes are not read); with the jobsets source on, its JobSet covers it.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, container_request
from kube.kinds import WorkloadKind
from kube.kinds.trainjob import NODE as TRAINJOB_NODE_ROLE
from kube.replicas import trainjob_num_nodes
from predictor.known.model import (
    JOBSET,
    KnownItem,
    Meta,
    PodCounts,
    condition_since,
    condition_true,
    headstart_resume_time,
    mapping,
    open_object,
    suspended_until,
    template_request,
    workload_key,
)


@dataclass(frozen=True)
class Replicas:
    replica_type: str
    replicas: int
    request: Resources


@dataclass(frozen=True)
class TrainingJob:
    """A training-operator job or a TrainJob, as far as its demand goes."""

    kind: str
    meta: Meta
    key: str
    suspended: bool
    suspended_since_s: float | None
    finished: bool
    replicas: tuple[Replicas, ...]
    uncounted: frozenset[str] = frozenset()  # replica types whose pods cannot be matched
    resumed_at_s: float | None = None
    """When headstart's admitter resumes it (its `headstart.io/suspended` label)."""
    source: str = "kubeflow"
    """The known-demand source that reads it (its kind's `demand_source`)."""


def parse_training_job(obj: Mapping[str, Any], workload: WorkloadKind,
                       gpu_resource: str) -> TrainingJob:
    """An object of a kind the registry reads by its pod sets (`demand: pod-sets`): a
    PyTorchJob, TFJob or MPIJob (kubeflow.org/v1, or v2beta1 for an MPIJob), ..."""
    meta, where, spec, status = open_object(obj, workload.kind)
    version = str(obj.get("apiVersion", "")).rpartition("/")[2] or workload.versions[0]
    sets = workload.pod_sets(spec, f"{where}.spec", version)
    holder = spec
    for step in workload.suspend_in[1:]:
        holder = mapping(holder.get(step), f"{where}.spec.{step}")
    return TrainingJob(
        kind=workload.kind, meta=meta,
        key=workload_key(workload.group, workload.kind, meta.namespace, meta.name),
        suspended=holder.get("suspend") is True,
        suspended_since_s=condition_since(status, "Suspended", where) or meta.created_s,
        finished=workload.finished(status),
        replicas=tuple(Replicas(s.name, s.pods, template_request(s.template, gpu_resource,
                                                                 s.template_at))
                       for s in sets),
        uncounted=frozenset(s.name for s in sets if not s.owned),
        resumed_at_s=headstart_resume_time(meta),
        source=workload.demand_source,
    )


def parse_trainjob(obj: Mapping[str, Any], gpu_resource: str) -> TrainingJob:
    """A TrainJob (trainer.kubeflow.org/v1alpha1); no replicas when the runtime sizes it."""
    meta, where, spec, status = open_object(obj, "TrainJob")
    trainer = mapping(spec.get("trainer"), f"{where}.spec.trainer")
    num_nodes = trainjob_num_nodes(spec, f"{where}.spec")
    replicas: tuple[Replicas, ...] = ()
    if num_nodes is not None and trainer.get("resourcesPerNode") is not None:
        resources = mapping(trainer["resourcesPerNode"], f"{where}.spec.trainer.resourcesPerNode")
        request = container_request({"resources": resources}, gpu_resource,
                                    f"{where}.spec.trainer.resourcesPerNode")
        replicas = (Replicas(TRAINJOB_NODE_ROLE, num_nodes, request),)
    return TrainingJob(
        kind="TrainJob", meta=meta, key=f"{JOBSET}/{meta.namespace}/{meta.name}",
        suspended=spec.get("suspend") is True,
        suspended_since_s=condition_since(status, "Suspended", where) or meta.created_s,
        finished=condition_true(status, "Complete") or condition_true(status, "Failed"),
        replicas=replicas,
        resumed_at_s=headstart_resume_time(meta),
    )


def training_items(jobs: Iterable[TrainingJob], pods: PodCounts, now_s: float,
                   window_s: float) -> list[KnownItem]:
    """Per job and replica type: the pods not created yet (all of them when suspended)."""
    items = []
    for job in jobs:
        if job.finished:
            continue
        if job.suspended:
            expected, reason = suspended_until(job.meta, job.kind, job.suspended_since_s,
                                               job.resumed_at_s, now_s, window_s)
        else:
            expected, reason = now_s, "pods not all created yet"
        for replicas in job.replicas:
            if not job.suspended and replicas.replica_type in job.uncounted:
                continue
            existing = 0 if job.suspended else pods.of(job.key, replicas.replica_type.lower())
            missing = replicas.replicas - existing
            if missing > 0:
                items.append(KnownItem(
                    job.source, job.kind, job.meta.namespace, job.meta.name, job.key, missing,
                    replicas.request, expected, f"{replicas.replica_type}: {reason}",
                ))
    return items
