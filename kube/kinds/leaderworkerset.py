"""LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`): each group is a gang of a leader and workers.

Each group (pod label `leaderworkerset.sigs.k8s.io/group-index`) is a gang of
`leaderWorkerTemplate.size` pods, its leader (`worker-index` 0) and the workers. With
`startupPolicy: LeaderReady` the controller creates the workers only once the leader is
Ready, so the leader is a stage of its own; with `LeaderCreated` (the default) the group
is one stage. headstart does not suspend it and reads no announced demand from it.
"""

from collections.abc import Mapping
from typing import Any

from common.errors import InputError
from kube.kinds.model import PodSet, WorkloadKind
from kube.replicas import mapping, whole

NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER = "leader"
WORKER = "worker"


def _pod_sets(spec: Mapping[str, Any], where: str, version: str) -> tuple[PodSet, ...]:
    template = mapping(spec.get("leaderWorkerTemplate"), f"{where}.leaderWorkerTemplate")
    size = whole(template.get("size"), f"{where}.leaderWorkerTemplate.size", 1)
    policy = spec.get("startupPolicy", "LeaderCreated")
    if policy not in ("LeaderCreated", "LeaderReady"):
        raise InputError(f"{where}.startupPolicy: expected LeaderCreated or LeaderReady, "
                         f"got {policy!r}")
    if size < 1:
        raise InputError(f"{where}.leaderWorkerTemplate.size: expected at least 1")
    workers = (PodSet(WORKER, size - 1, int(policy == "LeaderReady")),) if size > 1 else ()
    return (PodSet(LEADER, 1), *workers)


def group_of(labels: Mapping[str, str]) -> tuple[str, bool] | None:
    """(the job name of a pod's group, `NAME-GROUP`, whether the pod is its leader), None
    for a pod of no LeaderWorkerSet."""
    name = labels.get(NAME_LABEL)
    group = labels.get(GROUP_LABEL)
    if not name or group is None:
        return None
    return f"{name}-{group}", labels.get(WORKER_INDEX_LABEL, "0") == "0"


LEADERWORKERSET = WorkloadKind(
    kind="LeaderWorkerSet", group="leaderworkerset.x-k8s.io", plural="leaderworkersets",
    versions=("v1",), pod_sets=_pod_sets, pod_label=NAME_LABEL, role_labels=(),
    controls_pods=False,
)
