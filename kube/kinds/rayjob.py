"""RayJob (`ray.io/v1`, KubeRay): a RayCluster made for one job, and the job's submitter.

The operator makes a RayCluster named `<rayjob>-<5 random characters>` from
`spec.rayClusterSpec` (its controller is the RayJob; the pods' is the RayCluster, and
they carry only the cluster's name), and, once every pod is Ready, a submitter Job of
the RayJob's name (`submissionMode: K8sJobMode`, the default): a later pod outside the
gang. Suspended through `spec.suspend`: the operator deletes the RayCluster and the
submitter and says `jobDeploymentStatus: Suspended`; on resume it makes a new
RayCluster. It refuses the suspension of one without `shutdownAfterJobFinishes: true`
or with `clusterSelector` by marking it ValidationFailed, for good: headstart never
suspends those (their cluster's gang is evicted instead). With `clusterSelector` and no
`rayClusterSpec` it runs on an existing RayCluster and declares no pods. `managedBy` is
immutable and names `ray.io/kuberay-operator` or MultiKueue. Its announced pods are its
cluster spec's while it is suspended; while it runs its pods are its RayCluster's,
which announces nothing.
"""

from collections.abc import Mapping
from typing import Any

from kube.kinds import ray
from kube.kinds.model import PodSet, WorkloadKind, status_in
from kube.replicas import mapping


def _pod_sets(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
    if spec.get("rayClusterSpec") is None and spec.get("clusterSelector"):
        return ()  # it runs on a RayCluster of its own: that one's pods are the gang
    return ray.cluster_pod_sets(mapping(spec.get("rayClusterSpec"), f"{where}.rayClusterSpec"),
                                f"{where}.rayClusterSpec", owned=False)


def _suspend_refused(spec: Mapping[str, Any]) -> str | None:
    """The operator's `ValidateRayJobSpec`: a suspended RayJob without
    `shutdownAfterJobFinishes: true`, or one on a selected cluster, is ValidationFailed
    for good, its cluster left running."""
    if spec.get("clusterSelector"):
        return "its spec.clusterSelector runs it on a RayCluster KubeRay cannot suspend for it"
    if spec.get("shutdownAfterJobFinishes") is not True:
        return ("its spec.shutdownAfterJobFinishes is not true: KubeRay fails such a RayJob "
                "when it is suspended")
    return None


RAYJOB = WorkloadKind(
    kind="RayJob", group=ray.GROUP, plural="rayjobs", versions=("v1",), pod_sets=_pod_sets,
    managers={"v1": ray.OPERATOR}, controls_pods=False, demand="pod-sets",
    demand_source="rayjobs",
    finished=status_in("jobDeploymentStatus", "Complete", "Failed", "ValidationFailed"),
    suspend_acknowledged=status_in("jobDeploymentStatus", "Suspended"),
    suspend_refused=_suspend_refused,
)
