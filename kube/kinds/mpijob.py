"""MPIJob, as the training operator's (`kubeflow.org/v1`) or mpi-operator's (`v2beta1`).

One CRD (`mpijobs.kubeflow.org`): a cluster serves one of the two versions; both are
read, the other is absent. `spec.mpiReplicaSpecs` holds `Launcher` and `Worker`.
- v1: the training operator creates the launcher with the workers: one stage.
- v2beta1 (kubeflow/mpi-operator): pods labelled `training.kubeflow.org/job-role:
  launcher|worker`. With `launcherCreationPolicy: WaitForWorkersReady` the launcher is
  created only once every worker is Ready, so it is a later stage; with `AtStartup`
  (the default) it is created with them. Suspended through `spec.runPolicy.suspend`
  (its `managedBy` `kubeflow.org/mpi-operator` or unset): mpi-operator deletes the
  workers and suspends its launcher Job.
"""

from collections.abc import Mapping
from typing import Any

from common.errors import InputError
from kube.kinds import kubeflow
from kube.kinds.model import PodSet, WorkloadKind

_REPLICA_SETS = kubeflow.replica_spec_sets("mpiReplicaSpecs")
LAUNCHER = "Launcher"


def _pod_sets(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
    later = ""
    if version == "v2beta1":
        policy = spec.get("launcherCreationPolicy", "AtStartup")
        if policy not in ("AtStartup", "WaitForWorkersReady"):
            raise InputError(f"{where}.launcherCreationPolicy: expected AtStartup or "
                             f"WaitForWorkersReady, got {policy!r}")
        later = LAUNCHER if policy == "WaitForWorkersReady" else ""
    return tuple(PodSet(s.name, s.pods, int(s.name == later), s.template, s.template_at,
                        owned=not (version == "v2beta1" and s.name == LAUNCHER))
                 for s in _REPLICA_SETS(spec, where, version))


MPIJOB = WorkloadKind(
    kind="MPIJob", group=kubeflow.GROUP, plural="mpijobs", versions=("v1", "v2beta1"),
    pod_sets=_pod_sets, pod_label=kubeflow.JOB_NAME_LABEL, part_labels=kubeflow.PART_LABELS,
    managers={"v1": kubeflow.TRAINING_OPERATOR, "v2beta1": "kubeflow.org/mpi-operator"},
    suspend_in=("spec", "runPolicy"), demand="pod-sets", demand_source="kubeflow",
    finished=kubeflow.FINISHED,
)
