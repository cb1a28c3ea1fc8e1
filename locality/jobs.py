"""Which job a pod belongs to, its role there, and the job's placement policy.

Decides: job identity from the configured label pairs (first pair whose job key is on
the pod wins), the role from the pair's role label(s) (the first present; values
case-insensitive), and the policy from the pod's annotations. An invalid annotation
value falls back to the default and is reported in `JobPolicy.problems`; it never
raises. The job size is the `headstart.io/job-size` annotation, else the `minMember`
of the pod's PodGroup (when the extender has seen it).

The default label keys and role values, checked in the operators' sources:
- Kubeflow training-operator v1 (TFJob, PyTorchJob, MXJob, XGBoostJob, PaddleJob,
  MPIJob v1): `training.kubeflow.org/job-name`, `training.kubeflow.org/replica-type`
  with the lower-cased replica type (`ps`, `worker`, `chief`, `master`, `launcher`),
  and `training.kubeflow.org/job-role: master` on the master role
  (kubeflow/training-operator pkg/controller.v1/common/pod.go `createNewPod`).
- mpi-operator v2 (MPIJob v2beta1): `training.kubeflow.org/job-name` and
  `training.kubeflow.org/job-role: launcher|worker`, no replica-type label
  (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go `defaultLabels`).
- JobSet: `jobset.sigs.k8s.io/jobset-name` and `jobset.sigs.k8s.io/replicatedjob-name`
  (kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go). Kubeflow Trainer v2
  runs a TrainJob as a JobSet of the TrainJob's name (kubeflow/trainer
  pkg/runtime/framework/plugins/jobset) whose replicated jobs are `node` (the trainer
  nodes), `launcher` (MPI), `dataset-initializer` and `model-initializer`
  (pkg/constants), so TrainJob pods need no label of their own.
- Volcano Job: `volcano.sh/job-name`, `volcano.sh/task-spec`.
- LeaderWorkerSet (no configured pair: built in, after the pairs): each group is a job
  named `LWS-GROUP` from `leaderworkerset.sigs.k8s.io/name` and `group-index`; the pod
  of `worker-index` 0 is its leader (the coordinating worker), the others workers
  (kubernetes-sigs/lws site reference, labels and annotations).
- PodGroups: Volcano's pod annotation `scheduling.k8s.io/group-name`
  (volcano.sh/apis pkg/apis/scheduling/v1beta1 `KubeGroupNameAnnotationKey`),
  scheduler-plugins' pod label `scheduling.x-k8s.io/pod-group`
  (apis/scheduling/v1alpha1 `PodGroupLabel`).

Roles: `ps` (and parameter-server spellings) is the PS; `worker`, `workers` and `node`
(Trainer's trainer nodes) workers; `chief`, `master`, `leader`, `driver`, `head`
(a Ray cluster's) and `coordinator` the coordinating worker (the job's centre when it has no PS: a
PyTorchJob master, a JobSet leader); `launcher` the MPI launcher; anything else OTHER.

Must not: look at other pods or nodes.
"""

from __future__ import annotations

from collections.abc import Mapping

from locality.config import JobLabelKeys, LocalityConfig
from locality.model import JobIdentity, JobKey, JobPolicy, Locality, Packing, Pod, Role
from locality.owners import indexed_job, lws_group

_ROLE_ALIASES: dict[str, Role] = {
    "ps": Role.PS,
    "parameterserver": Role.PS,
    "parameter-server": Role.PS,
    "parameter_server": Role.PS,
    "worker": Role.WORKER,
    "workers": Role.WORKER,
    "node": Role.WORKER,
    "chief": Role.CHIEF,
    "master": Role.CHIEF,
    "leader": Role.CHIEF,
    "driver": Role.CHIEF,
    "head": Role.CHIEF,
    "coordinator": Role.CHIEF,
    "launcher": Role.LAUNCHER,
}


def parse_role(value: str | None) -> Role:
    """A role label value to a Role; unknown or missing values are OTHER."""
    if not value:
        return Role.OTHER
    return _ROLE_ALIASES.get(value.strip().lower(), Role.OTHER)


def job_key_of(pod: Pod, config: LocalityConfig) -> JobKey | None:
    """The pod's job, None when no configured job label is on it (or it is a placeholder)."""
    identity = identify(pod, config)
    return identity.key if identity is not None else None


def identify(pod: Pod, config: LocalityConfig) -> JobIdentity | None:
    """The pod's job and role, None for pods that belong to no job: the first of
    `config.job_labels` the pod carries, else the Indexed Job that controls it
    (`owners.indexed_job`; its pods are workers)."""
    if pod.is_placeholder:
        return None
    labels = pod.labels
    for keys in config.job_labels:
        name = labels.get(keys.job)
        if name:
            return JobIdentity(JobKey(pod.namespace, name), _role(labels, keys))
    group = lws_group(pod)
    if group is not None:
        return JobIdentity(JobKey(pod.namespace, group[0]),
                           Role.CHIEF if group[1] else Role.WORKER)
    name = indexed_job(pod)
    if name:
        return JobIdentity(JobKey(pod.namespace, name), Role.WORKER)
    return None


def role_of(pod: Pod, config: LocalityConfig) -> Role:
    """The role `identify` gives a pod known to be in a job, without building its
    identity: called for every pod of a job in every request."""
    labels = pod.labels
    for keys in config.job_labels:
        if labels.get(keys.job):
            return _role(labels, keys)
    group = lws_group(pod)
    if group is not None:
        return Role.CHIEF if group[1] else Role.WORKER
    return Role.WORKER if indexed_job(pod) else Role.OTHER


def _role(labels: Mapping[str, str], keys: JobLabelKeys) -> Role:
    for key in (keys.role,) if isinstance(keys.role, str) else keys.role:
        value = labels.get(key)
        if value:
            return _ROLE_ALIASES.get(value.strip().lower(), Role.OTHER)
    return Role.OTHER


def job_policy(pod: Pod, config: LocalityConfig) -> JobPolicy:
    """The policy from the pod's annotations, config defaults where absent or invalid."""
    annotations = pod.annotations
    problems: list[str] = []

    packing = config.default_packing
    raw = annotations.get(config.packing_annotation)
    if raw is not None:
        try:
            packing = Packing(raw.strip().lower())
        except ValueError:
            problems.append(
                f"annotation {config.packing_annotation}={raw!r} is not pack or spread; "
                f"using {packing.value}"
            )

    group = _locality(annotations.get(config.placement_group_annotation),
                      config.placement_group_annotation, config.default_placement_group, problems)
    numa = _locality(annotations.get(config.numa_annotation),
                     config.numa_annotation, config.default_numa, problems)

    job_size: int | None = None
    raw = annotations.get(config.job_size_annotation)
    if raw is not None:
        try:
            job_size = int(raw.strip())
        except ValueError:
            job_size = None
        if job_size is None or job_size < 1:
            problems.append(
                f"annotation {config.job_size_annotation}={raw!r} is not a positive integer; "
                "ignored"
            )
            job_size = None
    if job_size is None and pod.group_min_member is not None and pod.group_min_member > 0:
        job_size = pod.group_min_member
    if job_size is None and pod.owner_size is not None:
        job_size = pod.owner_size

    level: int | None = None
    raw = annotations.get(config.topology_level_annotation)
    if raw is not None:
        names = [entry.name for entry in config.topology_levels]
        wanted = raw.strip().lower()
        if wanted in names:
            level = names.index(wanted)
            if level == config.placement_group_level:
                level = None  # the placement-group level: the policy as before levels
        else:
            problems.append(
                f"annotation {config.topology_level_annotation}={raw!r} is not one of "
                f"{', '.join(names)}; using {names[config.placement_group_level]}"
            )

    return JobPolicy(packing, group, numa, job_size, tuple(problems), level)


def _locality(raw: str | None, key: str, default: Locality, problems: list[str]) -> Locality:
    if raw is None:
        return default
    try:
        return Locality(raw.strip().lower())
    except ValueError:
        problems.append(
            f"annotation {key}={raw!r} is not required, preferred or none; using {default.value}"
        )
        return default
