"""GPUs through Dynamic Resource Allocation (resource.k8s.io/v1, GA in Kubernetes 1.34).

Decides how DRA objects count as GPUs, so that a node whose GPUs are ResourceSlice
devices (and not in `status.allocatable`) does not look GPU-less, and a pod asking
for GPUs through a ResourceClaim does not look GPU-less either:

- A node's GPUs (`node_devices`): the devices of ResourceSlices with `spec.nodeName`
  (or, with `spec.perDeviceNodeSelection`, the device's `nodeName`) whose
  `spec.driver` is a configured `LocalityConfig.dra_gpus` driver and whose attributes
  match the configured ones (NVIDIA's: `type: gpu`, so MIG devices the same driver
  publishes are not counted as whole GPUs). Only the highest `spec.pool.generation`
  of each (driver, pool) counts, as the API asks consumers to do.
- A pod's GPUs (`claim_devices`): per ResourceClaim (or ResourceClaimTemplate while
  the claim is not generated yet), the devices its requests ask from a configured
  DeviceClass: `exactly.count` under allocationMode `ExactCount` (the default, count
  1); under `All` one device (how many the node has is not known here); of a
  `firstAvailable` list, the first subrequest (the one the scheduler tries first).
- The DRAExtendedResource feature (beta, on by default from Kubernetes 1.36) lets a
  pod ask `nvidia.com/gpu` in its container resources and get it from a DeviceClass
  whose `extendedResourceName` is that name: those requests are already in the
  pod's effective request, and the node's ResourceSlice devices count under the
  same resource name, so they meet (the claim kube-scheduler creates for them is not
  in `spec.resourceClaims`, so it is not counted twice).

Not modelled: DeviceClass CEL selectors (the configured driver and attributes stand
in for them), claim selectors and constraints, devices shared between claims
(`allowMultipleAllocations`, consumable capacity), claims shared by several pods
(each pod counts the claim's devices), network-attached devices (slices with a node
selector or `allNodes`), partitionable devices' counters, MIG through DRA (counted
only when configured as its own source), NUMA alignment of DRA devices (kubelet's
Topology Manager gets no hints for them).

Must not: log, read the clock, keep state (the extender's resolver does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bucketing.resources import Devices, Resources, device_tuple
from common.errors import InputError
from locality.config import DraGpuSource, LocalityConfig
from locality.model import Node, Pod
from locality.parse import json_object, json_string


@dataclass(frozen=True, slots=True)
class SliceDevices:
    """What one ResourceSlice contributes: per node, the GPU devices of each kind."""

    name: str
    driver: str
    pool: str
    generation: int
    devices_by_node: tuple[tuple[str, Devices], ...]


@dataclass(frozen=True, slots=True)
class ClaimDevices:
    """The GPU devices one ResourceClaim or ResourceClaimTemplate asks for.

    kind: "claim" or "template" (`Pod.claims` refers to them the same way).
    """

    namespace: str
    kind: str
    name: str
    devices: Devices

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.kind, self.name)


def parse_resource_slice(obj: Any, config: LocalityConfig,
                         where: str = "resourceSlice") -> SliceDevices:
    """A ResourceSlice to the GPU devices it gives each node (empty for other drivers)."""
    obj = json_object(obj, where)
    metadata = json_object(obj.get("metadata"), f"{where}.metadata")
    name = json_string(metadata.get("name"), f"{where}.metadata.name")
    spec = json_object(obj.get("spec"), f"{where}.spec")
    driver = json_string(spec.get("driver"), f"{where}.spec.driver")
    pool = json_object(spec.get("pool"), f"{where}.spec.pool")
    pool_name = json_string(pool.get("name"), f"{where}.spec.pool.name")
    generation = pool.get("generation", 0)
    if isinstance(generation, bool) or not isinstance(generation, int):
        raise InputError(f"{where}.spec.pool.generation: expected an integer, got {generation!r}")
    sources = [source for source in config.dra_gpus if source.driver == driver]
    counts: dict[str, dict[str, int]] = {}
    slice_node = spec.get("nodeName")
    per_device = spec.get("perDeviceNodeSelection") is True
    devices = spec.get("devices") or []
    if not isinstance(devices, list):
        raise InputError(f"{where}.spec.devices: expected a list")
    if sources and (isinstance(slice_node, str) and slice_node or per_device):
        for index, device in enumerate(devices):
            device = json_object(device, f"{where}.spec.devices[{index}]")
            node = device.get("nodeName") if per_device else slice_node
            if not isinstance(node, str) or not node:
                continue  # a device for a node selector or all nodes: not node-local
            attributes = device.get("attributes") or {}
            if not isinstance(attributes, Mapping):
                raise InputError(f"{where}.spec.devices[{index}].attributes: expected a map")
            for source in sources:
                if _attributes_match(attributes, source):
                    kinds = counts.setdefault(node, {})
                    kinds[source.resource] = kinds.get(source.resource, 0) + 1000
                    break
    by_node = tuple(sorted((node, device_tuple(kinds.items())) for node, kinds in counts.items()))
    return SliceDevices(name, driver, pool_name, generation, by_node)


def _attributes_match(attributes: Mapping[str, Any], source: DraGpuSource) -> bool:
    for key, wanted in source.attributes:
        value = attributes.get(key)
        if value is None and "/" not in key:
            value = attributes.get(f"{source.driver}/{key}")
        if not isinstance(value, Mapping) or _attribute_text(value) != wanted:
            return False
    return True


def _attribute_text(value: Mapping[str, Any]) -> str | None:
    """A DeviceAttribute's value as text (`string`, `int`, `bool`, `version`)."""
    for field in ("string", "version"):
        if isinstance(value.get(field), str):
            return value[field]
    if isinstance(value.get("bool"), bool):
        return "true" if value["bool"] else "false"
    if isinstance(value.get("int"), int):
        return str(value["int"])
    return None


def node_devices(slices: Iterable[SliceDevices]) -> dict[str, Devices]:
    """Per node, its GPU devices from all slices, the newest generation of each pool."""
    newest: dict[tuple[str, str], int] = {}
    slices = list(slices)
    for item in slices:
        key = (item.driver, item.pool)
        newest[key] = max(newest.get(key, item.generation), item.generation)
    totals: dict[str, dict[str, int]] = {}
    for item in slices:
        if item.generation != newest[(item.driver, item.pool)]:
            continue
        for node, devices in item.devices_by_node:
            kinds = totals.setdefault(node, {})
            for kind, amount in devices:
                kinds[kind] = kinds.get(kind, 0) + amount
    return {node: device_tuple(kinds.items()) for node, kinds in totals.items()}


def parse_resource_claim(obj: Any, config: LocalityConfig,
                         where: str = "resourceClaim") -> ClaimDevices:
    """A ResourceClaim to the GPU devices it requests."""
    obj = json_object(obj, where)
    namespace, name = _namespaced_name(obj, where)
    spec = json_object(obj.get("spec"), f"{where}.spec")
    return ClaimDevices(namespace, "claim", name, _requested(spec, config, f"{where}.spec"))


def parse_resource_claim_template(obj: Any, config: LocalityConfig,
                                  where: str = "resourceClaimTemplate") -> ClaimDevices:
    """A ResourceClaimTemplate (`spec.spec` is the claim's spec) to the GPU devices its
    claims will request."""
    obj = json_object(obj, where)
    namespace, name = _namespaced_name(obj, where)
    template = json_object(obj.get("spec"), f"{where}.spec")
    spec = json_object(template.get("spec"), f"{where}.spec.spec")
    return ClaimDevices(namespace, "template", name,
                        _requested(spec, config, f"{where}.spec.spec"))


def _requested(spec: Mapping[str, Any], config: LocalityConfig, where: str) -> Devices:
    kind_of = {cls: source.resource for source in config.dra_gpus
               for cls in source.device_classes}
    devices = json_object(spec.get("devices"), f"{where}.devices")
    requests = devices.get("requests") or []
    if not isinstance(requests, list):
        raise InputError(f"{where}.devices.requests: expected a list")
    totals: dict[str, int] = {}
    for index, request in enumerate(requests):
        request_where = f"{where}.devices.requests[{index}]"
        request = json_object(request, request_where)
        exact = request.get("exactly")
        if exact is None:
            options = request.get("firstAvailable") or []
            if not isinstance(options, list):
                raise InputError(f"{request_where}.firstAvailable: expected a list")
            if not options:
                continue
            exact, exact_where = options[0], f"{request_where}.firstAvailable[0]"
        else:
            exact_where = f"{request_where}.exactly"
        exact = json_object(exact, exact_where)
        kind = kind_of.get(exact.get("deviceClassName"))
        if kind is None:
            continue
        count = exact.get("count", 1)
        if exact.get("allocationMode") == "All":
            count = 1
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(f"{exact_where}.count: expected a non-negative integer, "
                             f"got {count!r}")
        totals[kind] = totals.get(kind, 0) + count * 1000
    return device_tuple(totals.items())


def with_claims(
    pod: Pod, claims: Mapping[tuple[str, str, str], Devices], config: LocalityConfig
) -> Pod:
    """The pod with the GPUs of its known claims added to its request; unknown claims
    (not seen yet) add nothing. Whole-GPU kinds count in `gpu_milli` too."""
    extra: dict[str, int] = {}
    for kind, name in pod.claims:
        for device_kind, amount in claims.get((pod.namespace, kind, name), ()):
            extra[device_kind] = extra.get(device_kind, 0) + amount
    if not extra:
        return pod
    return replace(pod, request=pod.request + _as_resources(extra, config))


def with_node_devices(node: Node, devices: Devices, config: LocalityConfig) -> Node:
    """The node with its DRA GPU devices added to its allocatable."""
    if not devices:
        return node
    return replace(node, allocatable=node.allocatable + _as_resources(dict(devices), config))


def _as_resources(kinds: Mapping[str, int], config: LocalityConfig) -> Resources:
    whole = set(config.gpu_resources)
    return Resources(
        gpu_milli=sum(amount for kind, amount in kinds.items() if kind in whole),
        devices=device_tuple(kinds.items()),
    )


def _namespaced_name(obj: Mapping[str, Any], where: str) -> tuple[str, str]:
    metadata = json_object(obj.get("metadata"), f"{where}.metadata")
    namespace = metadata.get("namespace", "default")
    return (json_string(namespace, f"{where}.metadata.namespace"),
            json_string(metadata.get("name"), f"{where}.metadata.name"))

