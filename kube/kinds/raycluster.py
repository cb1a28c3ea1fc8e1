"""RayCluster (`ray.io/v1`, KubeRay): a head and worker groups, the controller of its pods.

Sized by its head and worker groups (`kube.kinds.ray`). Suspended through `spec.suspend`
(KubeRay >= 1.1): the operator deletes every pod and says `RayClusterSuspended` in its
conditions; it creates them again on resume. A RayCluster a RayJob made is suspended
through the RayJob, whose controller decides its cluster's suspension.
"""

from collections.abc import Mapping
from typing import Any

from kube.kinds import ray
from kube.kinds.model import PodSet, WorkloadKind, any_condition


def _pod_sets(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
    return ray.cluster_pod_sets(spec, where)


RAYCLUSTER = WorkloadKind(
    kind="RayCluster", group=ray.GROUP, plural="rayclusters", versions=("v1",),
    pod_sets=_pod_sets, pod_label=ray.CLUSTER_LABEL, part_labels=(ray.GROUP_LABEL,),
    role_labels=(ray.NODE_TYPE_LABEL,),
    managers={"v1": ray.OPERATOR}, suspend_acknowledged=any_condition("RayClusterSuspended"),
)
