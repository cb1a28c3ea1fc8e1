"""What KubeRay's kinds share (RayCluster, RayJob; `ray.io/v1`, ray-project/kuberay ray-operator).

A RayClusterSpec holds `headGroupSpec` (one head pod of `template`) and
`workerGroupSpecs[]`, each `groupName` with `replicas` (CRD default 0) clamped to
`minReplicas` (default 0) .. `maxReplicas`, times `numOfHosts` (default 1) pods of
`template`; a group with `suspend: true` has none (controllers/ray/utils/util.go
`GetWorkerGroupDesiredReplicas`). The operator labels each pod `ray.io/cluster` (the
RayCluster's name), `ray.io/node-type` (head, worker) and `ray.io/group` (`headgroup` or
the worker group's name), and makes the RayCluster its controller
(controllers/ray/common/pod.go `labelPod`). The head and the workers are created in
one reconcile: one stage. `managedBy` other than the operator's makes it skip the object.

Must not: do I/O, log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.errors import InputError
from kube.kinds.model import PodSet
from kube.replicas import mapping, whole

GROUP = "ray.io"
CLUSTER_LABEL = "ray.io/cluster"
GROUP_LABEL = "ray.io/group"
NODE_TYPE_LABEL = "ray.io/node-type"
"""`head` (the job's coordinator) or `worker`."""
HEAD_GROUP = "headgroup"
OPERATOR = "ray.io/kuberay-operator"
"""The `managedBy` value by which the KubeRay operator reconciles an object."""


def cluster_pod_sets(spec: Mapping[str, Any], where: str, owned: bool = True
                     ) -> tuple[PodSet, ...]:
    """The head and worker groups of a RayClusterSpec at `where`."""
    if spec.get("headGroupSpec") is None:
        raise InputError(f"{where}.headGroupSpec: expected an object (the head group)")
    head = mapping(spec.get("headGroupSpec"), f"{where}.headGroupSpec")
    sets = [PodSet(HEAD_GROUP, 1, 0, head.get("template"), f"{where}.headGroupSpec.template",
                   owned)]
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        raise InputError(f"{where}.workerGroupSpecs: expected a list")
    for index, raw in enumerate(groups):
        path = f"{where}.workerGroupSpecs[{index}]"
        group = mapping(raw, path)
        name = group.get("groupName")
        if not isinstance(name, str) or not name:
            raise InputError(f"{path}.groupName: expected a name")
        low = whole(group.get("minReplicas"), f"{path}.minReplicas", 0)
        high = group.get("maxReplicas")
        replicas = whole(group.get("replicas"), f"{path}.replicas", 0)
        replicas = max(replicas, low)
        if high is not None:
            replicas = min(replicas, whole(high, f"{path}.maxReplicas", 0))
        hosts = whole(group.get("numOfHosts"), f"{path}.numOfHosts", 1)
        if group.get("suspend") is True:
            replicas = 0
        sets.append(PodSet(name, replicas * hosts, 0, group.get("template"), f"{path}.template",
                           owned))
    return tuple(sets)
