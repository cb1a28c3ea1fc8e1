"""PodGroups: a gang's declared size, the job size before all its pods exist.

Decides how a PodGroup object becomes a size and how a pod learns it. Two APIs, both
namespaced, both with `spec.minMember` (int32; the least number of pods the gang
scheduler runs the group with):
- Volcano, `scheduling.volcano.sh/v1beta1` PodGroup; a pod names it with the
  annotation `scheduling.k8s.io/group-name` (volcano.sh/apis
  pkg/apis/scheduling/v1beta1 `KubeGroupNameAnnotationKey`);
- scheduler-plugins Coscheduling, `scheduling.x-k8s.io/v1alpha1` PodGroup; a pod names
  it with the label `scheduling.x-k8s.io/pod-group` (apis/scheduling/v1alpha1
  `PodGroupLabel`).
The job's size is the `headstart.io/job-size` annotation when set, else the
PodGroup's minMember (`locality.jobs.job_policy`): with it, the whole-job capacity
check sizes the job before its pods exist. minMember may be less than the pods a job
will have (an elastic job's minimum): then the check is a lower bound.

Must not: log, read the clock, keep state (the extender's resolver does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from common.errors import InputError
from locality.model import Pod
from locality.parse import (
    COSCHEDULING_PODGROUP_GROUP,
    VOLCANO_PODGROUP_GROUP,
    json_object,
    json_string,
)

POD_GROUP_APIS: tuple[tuple[str, str], ...] = (
    (VOLCANO_PODGROUP_GROUP, "v1beta1"),
    (COSCHEDULING_PODGROUP_GROUP, "v1alpha1"),
)
"""(API group, version) of each PodGroup API headstart reads; the plural is podgroups."""


@dataclass(frozen=True, slots=True)
class PodGroupSize:
    """One PodGroup's minMember, keyed the way `Pod.pod_group` names it."""

    api_group: str
    namespace: str
    name: str
    min_member: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.api_group, self.namespace, self.name)


def parse_pod_group(obj: Any, api_group: str, where: str = "podGroup") -> PodGroupSize:
    """A PodGroup of either API to its size (minMember 0 when absent: no size)."""
    obj = json_object(obj, where, required=True)
    metadata = json_object(obj.get("metadata"), f"{where}.metadata", required=True)
    name = json_string(metadata.get("name"), f"{where}.metadata.name")
    namespace = json_string(metadata.get("namespace", "default"), f"{where}.metadata.namespace")
    spec = json_object(obj.get("spec"), f"{where}.spec")
    min_member = spec.get("minMember", 0)
    if isinstance(min_member, bool) or not isinstance(min_member, int) or min_member < 0:
        raise InputError(f"{where}.spec.minMember: expected a non-negative integer, "
                         f"got {min_member!r}")
    return PodGroupSize(api_group, namespace, name, min_member)


def with_group_size(pod: Pod, sizes: Mapping[tuple[str, str, str], int]) -> Pod:
    """The pod with its PodGroup's minMember (None while the PodGroup is not seen)."""
    if pod.pod_group is None:
        return pod
    api_group, name = pod.pod_group
    size = sizes.get((api_group, pod.namespace, name))
    if size == pod.group_min_member:
        return pod
    return replace(pod, group_min_member=size)
