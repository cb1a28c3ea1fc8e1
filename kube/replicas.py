"""Replica-count field readers the workload kinds share (`kube.kinds`): counts read once.

Read through `kube.kinds` by the overprovisioner's known-demand sources (pods announced
before they exist) and by the extender's job admitter (a job's declared size). It lives
in `kube`, below both, because `locality` and `predictor` may not import each other.

Field names and defaults:
- training-operator replica specs: replica type -> `{replicas (default 1), template}`;
- a Job's pods at once: min(`parallelism` (default 1), `completions` - succeeded)
  (completions unset: `parallelism`);
- a JobSet's `spec.replicatedJobs[]` (kubernetes-sigs/jobset api/jobset/v1alpha2/
  jobset_types.go), each `replicas` (default 1) Jobs of `template` (a JobTemplateSpec)
  and `dependsOn`;
- a TrainJob's `spec.trainer.numNodes` (kubeflow/trainer pkg/apis/trainer/v1alpha1/
  trainjob_types.go), None when its runtime sizes it.

Must not: do I/O, log; a malformed count raises `InputError` naming the field path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.errors import InputError


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    """An object field; {} when absent."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected an object")
    return value


def whole(value: Any, where: str, default: int) -> int:
    """A non-negative whole number field; `default` when absent."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: expected a whole number >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica type of a training-operator job: its count and raw pod template."""

    replica_type: str
    replicas: int
    template: Any


def kubeflow_replica_specs(spec: Mapping[str, Any], field_name: str, where: str
                           ) -> tuple[ReplicaSpec, ...]:
    """The replica specs of a training-operator job's `spec.<field_name>`
    (`pytorchReplicaSpecs`, ...), by replica type."""
    specs = []
    for replica_type, raw in mapping(spec.get(field_name), f"{where}.{field_name}").items():
        path = f"{where}.{field_name}.{replica_type}"
        raw = mapping(raw, path)
        count = whole(raw.get("replicas"), f"{path}.replicas", 1)
        specs.append(ReplicaSpec(str(replica_type), count, raw.get("template")))
    return tuple(sorted(specs, key=lambda s: s.replica_type))


def job_spec_pods(spec: Mapping[str, Any], succeeded: int, where: str) -> int:
    """Pods a Job runs at once: parallelism (default 1), capped by completions left."""
    parallelism = whole(spec.get("parallelism"), f"{where}.parallelism", 1)
    completions = spec.get("completions")
    if completions is None:
        return parallelism
    left = whole(completions, f"{where}.completions", 1) - succeeded
    return max(0, min(parallelism, left))


@dataclass(frozen=True)
class ReplicatedJobSpec:
    """One `replicatedJobs[]` entry: `replicas` Jobs of `pods_per_job` pods each."""

    name: str
    replicas: int
    pods_per_job: int
    depends_on: tuple[str, ...]
    job_spec: Mapping[str, Any]

    @property
    def pods(self) -> int:
        return self.replicas * self.pods_per_job


def jobset_replicated_jobs(spec: Mapping[str, Any], where: str) -> tuple[ReplicatedJobSpec, ...]:
    """The replicated jobs of a JobSet `spec`, in order."""
    replicated = []
    raw_list = spec.get("replicatedJobs") or []
    if not isinstance(raw_list, list):
        raise InputError(f"{where}.replicatedJobs: expected a list")
    for index, raw in enumerate(raw_list):
        path = f"{where}.replicatedJobs[{index}]"
        raw = mapping(raw, path)
        template = mapping(raw.get("template"), f"{path}.template")
        job_spec = mapping(template.get("spec"), f"{path}.template.spec")
        depends = raw.get("dependsOn") or []
        if not isinstance(depends, list):
            raise InputError(f"{path}.dependsOn: expected a list")
        replicated.append(ReplicatedJobSpec(
            name=str(raw.get("name", "")),
            replicas=whole(raw.get("replicas"), f"{path}.replicas", 1),
            pods_per_job=job_spec_pods(job_spec, 0, f"{path}.template.spec"),
            depends_on=tuple(str(mapping(entry, f"{path}.dependsOn[{i}]").get("name", ""))
                             for i, entry in enumerate(depends)),
            job_spec=job_spec,
        ))
    return tuple(replicated)


def trainjob_num_nodes(spec: Mapping[str, Any], where: str) -> int | None:
    """A TrainJob's `spec.trainer.numNodes`; None when unset (its runtime decides)."""
    trainer = mapping(spec.get("trainer"), f"{where}.trainer")
    if trainer.get("numNodes") is None:
        return None
    return whole(trainer["numNodes"], f"{where}.trainer.numNodes", 1)
