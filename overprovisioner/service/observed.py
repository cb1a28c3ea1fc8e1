"""headstart's placeholder objects as the overprovisioner last listed them, read per bucket.

Decides nothing: `Observed` answers what the objects ask for and run (replicas per
instance type and placement group, CapacityBuffers, the pod template's requests); the
Applier (`overprovisioner.service.apply`) lists them, the loop and the checks read them.

Must not: call the API, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, resources_from_list
from common.errors import HeadstartError
from overprovisioner.service.objects import (
    CAPACITY_BUFFERS,
    DEPLOYMENT,
    INSTANCE_TYPE_LABEL,
    PLACEMENT_GROUP_LABEL,
    POD_TEMPLATE,
    pin_of,
)


@dataclass(frozen=True)
class Observed:
    """headstart's placeholder objects as they are now, keyed like DesiredObject.key.

    capacity_buffer_api: the CapacityBuffer apiVersion the cluster serves (the
    preferred one, see CAPACITY_BUFFERS), "" when it serves none usable;
    capacity_buffer_problem: why a served CapacityBuffer API cannot be used ("" = none)."""

    objects: Mapping[tuple[str, str, str | None, str], Mapping[str, Any]]
    capacity_buffer_api: str = ""
    capacity_buffer_problem: str = ""

    @property
    def capacity_buffers_served(self) -> bool:
        return bool(self.capacity_buffer_api)

    def replicas(self) -> dict[tuple[str, str], int]:
        """Placeholders asked for now per (instance type, placement group): the
        spec.replicas of headstart's Deployments or CapacityBuffers."""
        return self._per_bucket((DEPLOYMENT, *CAPACITY_BUFFERS), "spec", "replicas")

    def buffers(self) -> dict[tuple[str, str], Mapping[str, Any]]:
        """headstart's CapacityBuffers as observed, per (instance type, group): the
        bucket's unpinned one, else one of its zone- or capacity-pinned ones."""
        result: dict[tuple[str, str], Mapping[str, Any]] = {}
        for (api_version, kind, _, _), obj in sorted(self.objects.items()):
            if (api_version, kind) in CAPACITY_BUFFERS:
                labels = obj["metadata"].get("labels") or {}
                key = (labels.get(INSTANCE_TYPE_LABEL, ""), labels.get(PLACEMENT_GROUP_LABEL, ""))
                if key not in result or not pin_of(obj):
                    result[key] = obj
        return result

    def buffer_replicas(self) -> dict[tuple[str, str], int]:
        """spec.replicas of headstart's CapacityBuffers per (instance type, group)."""
        return self._per_bucket(CAPACITY_BUFFERS, "spec", "replicas")

    def running(self) -> dict[tuple[str, str], int]:
        """Placeholders running per (instance type, placement group): ready Deployment
        replicas, or a CapacityBuffer's status.replicas."""
        running = self._per_bucket((DEPLOYMENT,), "status", "readyReplicas")
        for key, count in self._per_bucket(CAPACITY_BUFFERS, "status", "replicas").items():
            running[key] = running.get(key, 0) + count
        return running

    def _per_bucket(self, kinds: Iterable[tuple[str, str]], section: str, field_name: str
                    ) -> dict[tuple[str, str], int]:
        """obj[section][field_name] summed per (instance type, group) over `kinds`."""
        kinds = tuple(kinds)
        result: dict[tuple[str, str], int] = {}
        for (api_version, kind, _, _), obj in self.objects.items():
            if (api_version, kind) not in kinds:
                continue
            labels = obj["metadata"].get("labels") or {}
            key = (labels.get(INSTANCE_TYPE_LABEL, ""), labels.get(PLACEMENT_GROUP_LABEL, ""))
            count = int((obj.get(section) or {}).get(field_name) or 0)
            result[key] = result.get(key, 0) + count
        return result

    def applied_requests(self, gpu_resource: str) -> dict[str, Resources]:
        """Per instance type, what its placeholder pod template requests now (from a
        Deployment's or PodTemplate's first container; a template that cannot be read
        is left out, and sizing then measures afresh)."""
        result: dict[str, Resources] = {}
        for (api_version, kind, _, name), obj in sorted(self.objects.items()):
            if (api_version, kind) == DEPLOYMENT:
                template = (obj.get("spec") or {}).get("template") or {}
            elif (api_version, kind) == POD_TEMPLATE:
                template = obj.get("template") or {}
            else:
                continue
            labels = obj["metadata"].get("labels") or {}
            containers = (template.get("spec") or {}).get("containers") or []
            if not containers or not labels.get(INSTANCE_TYPE_LABEL):
                continue
            requests = (containers[0].get("resources") or {}).get("requests")
            try:
                request = resources_from_list(requests, gpu_resource, name)
            except HeadstartError:
                continue
            result.setdefault(labels[INSTANCE_TYPE_LABEL], request)
        return result
