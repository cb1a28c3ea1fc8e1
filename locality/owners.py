"""A job's declared size from the object that owns its pods: a training job or a JobSet.

Decides how an owner object becomes a size and how a pod learns it. The counts are read
by `kube.replicas` (the same reading the overprovisioner's known-demand sources
use); this module adds which pods an owner sizes and how a staged JobSet is counted:
- Kubeflow training-operator jobs (`kubeflow.org/v1` PyTorchJob, TFJob, MPIJob): the
  operator labels every pod `training.kubeflow.org/job-name: <job>` (pkg/controller.v1/
  common GenLabels); the size is the sum of `replicas` over the replica specs (an MPIJob
  of training-operator v1 creates its launcher with the workers, so it counts too);
- mpi-operator v2 MPIJobs (`kubeflow.org/v2beta1`, the same `mpiReplicaSpecs` of
  `Launcher` and `Worker`): pods labelled `training.kubeflow.org/job-name` and
  `training.kubeflow.org/job-role: launcher|worker`. With `launcherCreationPolicy:
  WaitForWorkersReady` the launcher is created only once every worker is Ready, so it
  is a later stage (the workers' size is the workers alone); with `AtStartup` (the
  default) it is created with them and counts. One cluster serves one of v1 and
  v2beta1 (one CRD, `mpijobs.kubeflow.org`); both are watched, the other is absent;
- JobSets (`jobset.x-k8s.io/v1alpha2`): the JobSet controller labels every pod
  `jobset.sigs.k8s.io/jobset-name` and `jobset.sigs.k8s.io/replicatedjob-name`; a
  replicated job has `replicas` Jobs of min(parallelism, completions) pods each. A
  replicated job with `dependsOn` is created only once the ones it depends on are Ready
  or Complete, so its pods cannot wait for theirs nor the reverse: a pod's size is the
  pods of the replicated jobs in its stage and the stages before it (stage 0: no
  dependsOn; else one more than the latest stage it depends on). The earlier stages'
  pods still exist (succeeded or running) and count as known pods;
- Indexed Jobs (`batch/v1`, `completionMode: Indexed`): the Job controller marks each
  pod with its index (`batch.kubernetes.io/job-completion-index`) and a controller
  owner reference to the Job; with `completions` = `parallelism` every pod runs at once:
  a gang of `parallelism` pods. Any other Job declares no size;
- TrainJobs (`trainer.kubeflow.org/v1alpha1`): the trainer builds a JobSet of the same
  name (kubeflow/trainer pkg/runtime/framework/plugins/jobset), so the pods carry the
  JobSet's label and the JobSet's replicated jobs (initializers, launcher, nodes) give
  the size. A TrainJob seen without its JobSet makes its pods wait for the JobSet.
- LeaderWorkerSets (`leaderworkerset.x-k8s.io/v1`): each group (pod label
  `leaderworkerset.sigs.k8s.io/group-index`) is a gang of `leaderWorkerTemplate.size`
  pods, its leader (`worker-index` 0) and the workers. With `startupPolicy: LeaderReady`
  the controller creates the workers only once the leader is Ready, so the leader is a
  stage of its own (it is admitted alone and the workers join its domain); with
  `LeaderCreated` (the default) the group is one stage.
An owner whose counts do not parse gives no size and says why (`OwnerSize.problem`):
its pods wait with that reason rather than be sized by a guess.

Must not: log, read the clock, keep state (the extender's resolver does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from common.errors import InputError
from kube.replicas import (
    KUBEFLOW_REPLICA_SPECS,
    jobset_replicated_jobs,
    kubeflow_replica_specs,
    mapping,
    trainjob_num_nodes,
    whole,
)
from locality.elastic import ElasticOwner, elastic_owner
from locality.model import Pod
from locality.parse import json_object, json_string
from locality.suspension import JobSuspension, job_suspension, suspendable

KUBEFLOW_JOB_LABEL = "training.kubeflow.org/job-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"

KUBEFLOW = "kubeflow"
JOBSET = "jobset"
BATCH = "batch"
LWS = "lws"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
"""Set by the Job controller on every pod of an Indexed Job (and only there)."""


@dataclass(frozen=True, slots=True)
class OwnerApi:
    group: str
    version: str
    plural: str
    kind: str
    family: str
    """Which pod label names it: `kubeflow` (training.kubeflow.org/job-name) or `jobset`
    (jobset.sigs.k8s.io/jobset-name, which a TrainJob's pods carry too)."""
    versioned: bool = False
    """Its watch is named with the version (`mpijobs.v2beta1.kubeflow.org`): another
    version of the same resource is watched too."""

    @property
    def watch_name(self) -> str:
        if self.versioned:
            return f"{self.plural}.{self.version}.{self.group}"
        return f"{self.plural}.{self.group}"


OWNER_APIS: tuple[OwnerApi, ...] = (
    OwnerApi("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", KUBEFLOW),
    OwnerApi("kubeflow.org", "v1", "tfjobs", "TFJob", KUBEFLOW),
    OwnerApi("kubeflow.org", "v1", "mpijobs", "MPIJob", KUBEFLOW),
    OwnerApi("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", KUBEFLOW, versioned=True),
    OwnerApi("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", JOBSET),
    OwnerApi("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", JOBSET),
    OwnerApi("batch", "v1", "jobs", "Job", BATCH),
    OwnerApi("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", LWS),
)
_FAMILY = {api.kind: api.family for api in OWNER_APIS}
KUBEFLOW_PART_LABELS = ("training.kubeflow.org/replica-type", "training.kubeflow.org/job-role")

OwnerKey = tuple[str, str, str]  # (family, namespace, name)


@dataclass(frozen=True, slots=True)
class SizePart:
    """Pods of one replica type or replicated job, and the stage they start in."""

    name: str
    pods: int
    stage: int = 0


@dataclass(frozen=True, slots=True)
class OwnerSize:
    """What one owner object declares: its parts, or why they cannot be read."""

    kind: str
    namespace: str
    name: str
    parts: tuple[SizePart, ...] = ()
    problem: str | None = None
    version: str = ""
    elastic: ElasticOwner | None = None
    """The owner as an elastic job, when it opted in (`locality.elastic`)."""
    suspension: JobSuspension | None = None
    """A batch/v1 Job's suspension (`locality.suspension`); None for other kinds."""

    @property
    def key(self) -> OwnerKey:
        return (_FAMILY[self.kind], self.namespace, self.name)

    @property
    def source(self) -> str:
        """The API it was listed from (`MPIJob/v2beta1`): each watch replaces its own."""
        return f"{self.kind}/{self.version}"

    def size_for(self, part: str | None) -> int:
        """Pods of the stages up to `part`'s (all stages when `part` is unknown);
        Kubeflow's replica types match the pods' lower-case labels."""
        part = (part or "").lower()
        stage = next((p.stage for p in self.parts if p.name.lower() == part),
                     max((p.stage for p in self.parts), default=0))
        return sum(p.pods for p in self.parts if p.stage <= stage)


def parse_owner(obj: Any, kind: str, where: str | None = None, version: str = "") -> OwnerSize:
    """An owner object of `kind` (one of OWNER_APIS) listed from API `version`. Bad
    metadata raises `InputError` (the watch skips the object); counts that do not parse
    become `problem`."""
    where = where or kind
    obj = json_object(obj, where, required=True)
    metadata = json_object(obj.get("metadata"), f"{where}.metadata", required=True)
    name = json_string(metadata.get("name"), f"{where}.metadata.name")
    namespace = json_string(metadata.get("namespace", "default"), f"{where}.metadata.namespace")
    where = f"{kind} {namespace}/{name}"
    elastic = elastic_owner(obj, kind)
    suspension = job_suspension(obj, kind, version) if suspendable(kind, version) else None
    try:
        spec = mapping(obj.get("spec"), f"{where}: spec")
        parts = _parts(spec, kind, f"{where}: spec", version)
    except InputError as error:
        return OwnerSize(kind, namespace, name, problem=str(error), version=version,
                         elastic=elastic, suspension=suspension)
    return OwnerSize(kind, namespace, name, parts, version=version, elastic=elastic,
                     suspension=suspension)


def _parts(spec: Mapping[str, Any], kind: str, where: str, version: str = ""
           ) -> tuple[SizePart, ...]:
    if kind in KUBEFLOW_REPLICA_SPECS:
        later = ""
        if kind == "MPIJob" and version == "v2beta1":
            policy = spec.get("launcherCreationPolicy", "AtStartup")
            if policy not in ("AtStartup", "WaitForWorkersReady"):
                raise InputError(f"{where}.launcherCreationPolicy: expected AtStartup or "
                                 f"WaitForWorkersReady, got {policy!r}")
            later = "Launcher" if policy == "WaitForWorkersReady" else ""
        return tuple(SizePart(s.replica_type, s.replicas, int(s.replica_type == later))
                     for s in kubeflow_replica_specs(spec, kind, where))
    if kind == "LeaderWorkerSet":
        template = mapping(spec.get("leaderWorkerTemplate"), f"{where}.leaderWorkerTemplate")
        size = whole(template.get("size"), f"{where}.leaderWorkerTemplate.size", 1)
        policy = spec.get("startupPolicy", "LeaderCreated")
        if policy not in ("LeaderCreated", "LeaderReady"):
            raise InputError(f"{where}.startupPolicy: expected LeaderCreated or LeaderReady, "
                             f"got {policy!r}")
        if size < 1:
            raise InputError(f"{where}.leaderWorkerTemplate.size: expected at least 1")
        workers = (SizePart("worker", size - 1, int(policy == "LeaderReady")),) \
            if size > 1 else ()
        return (SizePart("leader", 1), *workers)
    if kind == "TrainJob":
        nodes = trainjob_num_nodes(spec, where)
        return () if nodes is None else (SizePart("node", nodes),)
    if kind == "Job":
        parallelism = whole(spec.get("parallelism"), f"{where}.parallelism", 1)
        completions = spec.get("completions")
        if spec.get("completionMode") == "Indexed" and completions is not None and \
                whole(completions, f"{where}.completions", 1) == parallelism:
            return (SizePart("", parallelism),)
        return ()  # not a gang: its pods declare no size (they settle)
    replicated = jobset_replicated_jobs(spec, where)
    depends = {job.name: job.depends_on for job in replicated}
    stages: dict[str, int] = {}

    def stage(name: str, seen: tuple[str, ...]) -> int:
        if name in stages:
            return stages[name]
        if name in seen or name not in depends:
            raise InputError(f"{where}.replicatedJobs: dependsOn "
                             f"{'cycles through' if name in seen else 'names unknown'} {name!r}")
        stages[name] = 1 + max((stage(d, (*seen, name)) for d in depends[name]), default=-1)
        return stages[name]

    return tuple(SizePart(job.name, job.pods, stage(job.name, ())) for job in replicated)


def owner_of(pod: Pod) -> OwnerKey | None:
    """The owner a pod's labels name (an Indexed Job: its controller), None when none."""
    name = pod.labels.get(JOBSET_NAME_LABEL)
    if name:
        return (JOBSET, pod.namespace, name)
    name = pod.labels.get(KUBEFLOW_JOB_LABEL)
    if name:
        return (KUBEFLOW, pod.namespace, name)
    name = pod.labels.get(LWS_NAME_LABEL)
    if name:
        return (LWS, pod.namespace, name)
    name = indexed_job(pod)
    if name:
        return (BATCH, pod.namespace, name)
    return None


def lws_group(pod: Pod) -> tuple[str, bool] | None:
    """(the job name of the pod's LeaderWorkerSet group, whether it is the group's
    leader), None for a pod of no LeaderWorkerSet. Each group (`group-index`) of a
    LeaderWorkerSet is its own gang: `NAME-GROUP`."""
    name = pod.labels.get(LWS_NAME_LABEL)
    group = pod.labels.get(LWS_GROUP_LABEL)
    if not name or group is None:
        return None
    return f"{name}-{group}", pod.labels.get(LWS_WORKER_INDEX_LABEL, "0") == "0"


def indexed_job(pod: Pod) -> str | None:
    """The Indexed batch/v1 Job that controls the pod, None when none."""
    if pod.controller is not None and pod.controller[0] == "Job" and \
            INDEX_ANNOTATION in pod.annotations:
        return pod.controller[1]
    return None


def with_owner_size(pod: Pod, owners: Mapping[OwnerKey, Mapping[str, OwnerSize]]) -> Pod:
    """The pod with the size its owner declares (`Pod.owner_size`), or why the owner
    gives none yet (`Pod.owner_wait`). Both None when the pod names no owner or its
    owner is not seen (then the job declares no size here)."""
    key = owner_of(pod)
    listed = (owners.get(key) or {}) if key else {}
    size, wait = _size(pod, listed) if key else (None, None)
    elastic = next((owner.elastic for owner in listed.values() if owner.elastic), None)
    if size == pod.owner_size and wait == pod.owner_wait and elastic == pod.elastic:
        return pod
    return replace(pod, owner_size=size, owner_wait=wait, elastic=elastic)


def _size(pod: Pod, listed: Mapping[str, OwnerSize]) -> tuple[int | None, str | None]:
    # By kind: an MPIJob served at two versions is one object.
    seen = {owner.kind: owner for owner in listed.values()}
    if not seen:
        return None, None
    if "JobSet" in seen or "TrainJob" in seen:
        owner = seen.get("JobSet")
        if owner is None:
            trainjob = seen["TrainJob"]
            return None, (f"its TrainJob {trainjob.namespace}/{trainjob.name} is seen but not "
                          "the JobSet it creates, whose replicatedJobs give the job's size")
    else:
        if len(seen) > 1:
            kinds = " and ".join(sorted(seen))
            first = next(iter(seen.values()))
            return None, (f"{kinds} are both named {first.namespace}/{first.name}: its pods' "
                          f"label {KUBEFLOW_JOB_LABEL} cannot tell which one sizes the job")
        owner = next(iter(seen.values()))
    if owner.problem is not None:
        return None, f"its owner's replica counts do not parse: {owner.problem}"
    part = pod.labels.get(REPLICATED_JOB_LABEL) or next(
        (pod.labels[label] for label in KUBEFLOW_PART_LABELS if pod.labels.get(label)), None)
    group = lws_group(pod)
    if group is not None:
        part = "leader" if group[1] else "worker"
    size = owner.size_for(part)
    return (size, None) if size > 0 else (None, None)
