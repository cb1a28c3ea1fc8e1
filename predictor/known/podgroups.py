"""Known demand of gang-scheduling PodGroups with fewer pods than their minimum.

Two PodGroup APIs, the same fields (`spec.minMember`, `spec.minResources`, `status.phase`):
- coscheduling, `scheduling.x-k8s.io/v1alpha1` (kubernetes-sigs/scheduler-plugins
  apis/scheduling/v1alpha1/types.go); members carry the label
  `scheduling.x-k8s.io/pod-group: <name>`; finished phases `Finished`, `Failed`;
- Volcano, `scheduling.volcano.sh/v1beta1` (volcano-sh/apis
  pkg/apis/scheduling/v1beta1/types.go, labels.go); members carry the annotation
  `scheduling.k8s.io/group-name` (or `scheduling.volcano.sh/group-name`); finished phase
  `Completed`.
Missing members = minMember - the group's existing pods (any phase); they are expected
now (the gang cannot start without them). Their shape is minResources / minMember per
resource, rounded up: the API gives the group's total minimum, not a pod's, so this is
an average. A group without minResources is not counted (no shape to place).

Key: the group's controller owner when it has one (a PyTorchJob, a Volcano Job), so a
training job and its PodGroup count once (the kubeflow source wins); else the group.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, resources_from_list
from predictor.known.model import (
    COSCHEDULING_POD_GROUP,
    VOLCANO_POD_GROUP,
    KnownItem,
    Meta,
    PodCounts,
    item_key,
    open_object,
    whole,
)

FINISHED = {COSCHEDULING_POD_GROUP: ("Finished", "Failed"), VOLCANO_POD_GROUP: ("Completed",)}
API_VERSIONS = {COSCHEDULING_POD_GROUP: "scheduling.x-k8s.io/v1alpha1",
                VOLCANO_POD_GROUP: "scheduling.volcano.sh/v1beta1"}


@dataclass(frozen=True)
class PodGroup:
    """A PodGroup of either API; `group_type` is its `group/Kind`."""

    group_type: str
    meta: Meta
    min_member: int
    min_resources: Resources | None
    phase: str

    @property
    def own_key(self) -> str:
        return f"{self.group_type}/{self.meta.namespace}/{self.meta.name}"

    @property
    def key(self) -> str:
        return item_key(self.meta, API_VERSIONS[self.group_type], "PodGroup")


def parse_pod_group(obj: Mapping[str, Any], group_type: str, gpu_resource: str) -> PodGroup:
    meta, where, spec, status = open_object(obj, "podgroup")
    minimum = spec.get("minResources")
    return PodGroup(
        group_type=group_type,
        meta=meta,
        min_member=whole(spec.get("minMember"), f"{where}.spec.minMember", 0),
        min_resources=(resources_from_list(minimum, gpu_resource, f"{where}.spec.minResources")
                       if minimum else None),
        phase=str(status.get("phase") or ""),
    )


def per_member(total: Resources, members: int) -> Resources:
    """A group's minimum resources split evenly over its members, rounded up."""
    return Resources(math.ceil(total.gpu_milli / members), math.ceil(total.cpu_milli / members),
                     math.ceil(total.memory_bytes / members))


def pod_group_items(groups: Iterable[PodGroup], pods: PodCounts, now_s: float
                    ) -> list[KnownItem]:
    """One item per unfinished group with fewer pods than minMember and a minResources."""
    items = []
    for group in groups:
        if group.phase in FINISHED[group.group_type] or group.min_resources is None:
            continue
        existing = pods.of(group.own_key)
        missing = group.min_member - existing
        if missing <= 0:
            continue
        items.append(KnownItem(
            "podgroups", "PodGroup", group.meta.namespace, group.meta.name, group.key, missing,
            per_member(group.min_resources, group.min_member), now_s,
            f"{existing} of minMember {group.min_member} pods exist",
        ))
    return items
