"""A pod's effective resource request and the resource vector every package uses.

Decides: what a pod asks the scheduler for (cpu, memory, GPUs), computed the way
kube-scheduler does (noderesources `computePodResourceRequest`): the app containers
summed, then the max with each init container, where restartable init containers
(native sidecars, `restartPolicy: Always`) keep running and add to what follows
them; pod-level `spec.resources` (PodLevelResources, beta and on by default since
Kubernetes 1.34) replaces that for the cpu and memory it sets; plus `spec.overhead`.
This is the one place that sum is written.

Devices: besides the GPU dimension (one or several whole-GPU resource names, summed),
a caller may ask for per-kind amounts of device resources (`DeviceNames`: whole GPUs of
each vendor, MIG slices such as `nvidia.com/mig-1g.5gb`); they go through the same sum
and max and land in `Resources.devices`, so a MIG slice is never mistaken for a whole
GPU and a pod asking for one fits only nodes that advertise that kind.

Must not: log, read the clock, or touch the API. Quantities are parsed with the
official kubernetes client's `parse_quantity`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
from kubernetes.utils.quantity import parse_quantity

from common.errors import ConfigError, InputError
from common.fields import FieldReader

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
GIB = 1024**3


Devices = tuple[tuple[str, int], ...]
"""Per-kind device amounts in thousandths, sorted by name, no zero entries."""

_NO_DEVICES: Devices = ()


@dataclass(frozen=True, slots=True, order=False)
class Resources:
    """A resource vector in integer units so sums never drift.

    gpu_milli: thousandths of a GPU (a whole `nvidia.com/gpu` is 1000; traces with
    GPU shares, like Alibaba's `gpu_milli`, use the fraction).
    devices: per-kind device amounts (thousandths), sorted by kind, only when the
    caller asked for them (`DeviceNames`); empty everywhere else. Whole-GPU kinds are
    in both `gpu_milli` (summed over vendors) and here; MIG slices only here.
    """

    gpu_milli: int = 0
    cpu_milli: int = 0
    memory_bytes: int = 0
    devices: Devices = _NO_DEVICES

    @classmethod
    def of(cls, gpus: float = 0, cpu: float = 0, memory_gib: float = 0) -> Resources:
        """Build from human units: GPUs, cores, GiB (handy in tests and catalogs)."""
        return cls(round(gpus * 1000), round(cpu * 1000), round(memory_gib * GIB))

    @property
    def gpus(self) -> float:
        return self.gpu_milli / 1000

    @property
    def cpus(self) -> float:
        return self.cpu_milli / 1000

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB

    def device(self, kind: str) -> int:
        """The amount of one device kind (thousandths), 0 when absent."""
        for name, amount in self.devices:
            if name == kind:
                return amount
        return 0

    def __add__(self, other: Resources) -> Resources:
        devices = self.devices
        if other.devices:
            devices = _combine(devices, other.devices, 1) if devices else other.devices
        return Resources(
            self.gpu_milli + other.gpu_milli,
            self.cpu_milli + other.cpu_milli,
            self.memory_bytes + other.memory_bytes,
            devices,
        )

    def __sub__(self, other: Resources) -> Resources:
        devices = self.devices
        if other.devices:
            devices = _combine(devices, other.devices, -1)
        return Resources(
            self.gpu_milli - other.gpu_milli,
            self.cpu_milli - other.cpu_milli,
            self.memory_bytes - other.memory_bytes,
            devices,
        )

    def max(self, other: Resources) -> Resources:
        """Element-wise maximum (how an init container combines with the app containers)."""
        devices = self.devices
        if other.devices or devices:
            merged = dict(devices)
            for name, amount in other.devices:
                merged[name] = max(merged.get(name, 0), amount)
            devices = device_tuple(merged.items())
        return Resources(
            max(self.gpu_milli, other.gpu_milli),
            max(self.cpu_milli, other.cpu_milli),
            max(self.memory_bytes, other.memory_bytes),
            devices,
        )

    def fits_in(self, capacity: Resources) -> bool:
        """True when every dimension (and every device kind) is at most the capacity's."""
        return (
            self.gpu_milli <= capacity.gpu_milli
            and self.cpu_milli <= capacity.cpu_milli
            and self.memory_bytes <= capacity.memory_bytes
            and all(amount <= capacity.device(kind) for kind, amount in self.devices)
        )

    def is_zero(self) -> bool:
        return (
            self.gpu_milli == 0 and self.cpu_milli == 0 and self.memory_bytes == 0
            and not self.devices
        )

    def as_vector(self) -> np.ndarray:
        """(GPUs, CPUs, memory GiB) in cost order, the order the embedding compares in."""
        return np.array([self.gpus, self.cpus, self.memory_gib], dtype=np.float64)


def device_tuple(items: Iterable[tuple[str, int]]) -> Devices:
    """Per-kind amounts as a `Devices` tuple: sorted by kind, zero amounts dropped."""
    return tuple(sorted((name, amount) for name, amount in items if amount != 0))


def _combine(left: Devices, right: Devices, sign: int) -> Devices:
    merged = dict(left)
    for name, amount in right:
        merged[name] = merged.get(name, 0) + sign * amount
    return device_tuple(merged.items())


@dataclass(frozen=True, slots=True)
class DeviceNames:
    """Which extended resources are devices whose kinds must be told apart.

    names: exact resource names (`nvidia.com/gpu`, `amd.com/gpu`). prefixes: name
    prefixes (`nvidia.com/mig-` for the MIG mixed strategy's `nvidia.com/mig-1g.5gb` ...).
    """

    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def matches(self, name: str) -> bool:
        return name in self.names or any(name.startswith(prefix) for prefix in self.prefixes)


ZERO = Resources()


def parse_resource_quantity(value: Any, where: str) -> Decimal:
    """Parse a Kubernetes quantity ("500m", "16Gi", 2) or raise InputError naming `where`."""
    try:
        quantity = parse_quantity(value)
    except (ValueError, TypeError, InvalidOperation) as error:
        raise InputError(f"{where}: {value!r} is not a Kubernetes quantity ({error})") from None
    if not quantity.is_finite():
        raise InputError(f"{where}: {value!r} is not a finite quantity")
    if quantity < 0:
        raise InputError(f"{where}: {value!r} is negative")
    return quantity


def read_resources(reader: FieldReader, raw: Any, path: str) -> Resources:
    """A config's `cpu`, `memory` and `gpus` quantities at `path` (None: none), as the
    catalog's `allocatable` and `daemonset_overhead` and the overprovisioner's overhead
    write them; errors name the source and the field."""
    body = reader.mapping(raw, path)
    reader.known(body, path, {"cpu", "memory", "gpus"})
    try:
        cpu = parse_resource_quantity(body.get("cpu", 0), f"{path}.cpu")
        memory = parse_resource_quantity(body.get("memory", 0), f"{path}.memory")
        gpus = parse_resource_quantity(body.get("gpus", 0), f"{path}.gpus")
    except InputError as error:
        raise ConfigError(f"{reader.source}: {error}") from None
    return Resources(int(gpus * 1000), int(cpu * 1000), int(memory))


def _milli(value: Any, where: str) -> int:
    """A quantity in thousandths, rounded up as the scheduler rounds a CPU request."""
    return int((parse_resource_quantity(value, where) * 1000).to_integral_value("ROUND_CEILING"))


def resources_from_list(
    resource_list: Any,
    gpu_resource: str | tuple[str, ...],
    where: str,
    devices: DeviceNames | None = None,
) -> Resources:
    """A ResourceList (`requests`, `limits`, `overhead`, a node's `allocatable`) in integer
    units, rounded up as the scheduler's MilliValue/Value do; absent names are 0.

    gpu_resource: the whole-GPU resource name, or several (their amounts are summed).
    devices: names whose amounts are also kept per kind (`Resources.devices`).
    """
    if resource_list is None:
        return ZERO
    if not isinstance(resource_list, Mapping):
        raise InputError(f"{where}: expected a map of resource names to quantities")
    cpu = resource_list.get("cpu")
    memory = resource_list.get("memory")
    gpu_names = (gpu_resource,) if isinstance(gpu_resource, str) else gpu_resource
    gpu_milli = 0
    for name in gpu_names:
        gpu = resource_list.get(name)
        if gpu is not None:
            gpu_milli += _milli(gpu, f"{where}.{name}")
    kinds: Devices = _NO_DEVICES
    if devices is not None:
        kinds = device_tuple(
            (str(name), _milli(value, f"{where}.{name}"))
            for name, value in resource_list.items()
            if isinstance(name, str) and devices.matches(name)
        )
    return Resources(
        gpu_milli=gpu_milli,
        cpu_milli=_milli(cpu, f"{where}.cpu") if cpu is not None else 0,
        memory_bytes=int(
            parse_resource_quantity(memory, f"{where}.memory").to_integral_value("ROUND_CEILING")
        )
        if memory is not None
        else 0,
        devices=kinds,
    )


def container_request(
    container: Mapping[str, Any],
    gpu_resource: str | tuple[str, ...] = DEFAULT_GPU_RESOURCE,
    where: str = "container",
    devices: DeviceNames | None = None,
) -> Resources:
    """A container's requests; like the scheduler, limits stand in for missing requests."""
    if not isinstance(container, Mapping):
        raise InputError(f"{where}: expected an object")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InputError(f"{where}.resources: expected an object")
    limits_raw = resources.get("limits")
    limits = resources_from_list(limits_raw, gpu_resource, f"{where}.resources.limits", devices)
    requests_raw = resources.get("requests") or {}
    requests = resources_from_list(
        requests_raw, gpu_resource, f"{where}.resources.requests", devices
    )
    # The API server defaults a missing request to the limit; do the same for objects
    # that never went through defaulting (traces, tests, dry-run manifests).
    if isinstance(requests_raw, Mapping):
        gpu_names = (gpu_resource,) if isinstance(gpu_resource, str) else gpu_resource
        gpu_milli = 0
        for name in gpu_names:
            if name in requests_raw:
                gpu_milli += resources_from_list(
                    {name: requests_raw[name]}, name, f"{where}.resources.requests"
                ).gpu_milli
            elif isinstance(limits_raw, Mapping) and name in limits_raw:
                gpu_milli += resources_from_list(
                    {name: limits_raw[name]}, name, f"{where}.resources.limits"
                ).gpu_milli
        kinds = requests.devices
        if limits.devices:
            merged = dict(kinds)
            for name, amount in limits.devices:
                if name not in requests_raw:
                    merged[name] = amount
            kinds = device_tuple(merged.items())
        requests = Resources(
            gpu_milli,
            requests.cpu_milli if "cpu" in requests_raw else limits.cpu_milli,
            requests.memory_bytes if "memory" in requests_raw else limits.memory_bytes,
            kinds,
        )
    return requests


def combine_containers(
    app: list[Resources], init: list[tuple[Resources, bool]]
) -> Resources:
    """A pod's total from its containers' amounts, the way kube-scheduler sums them:
    the app containers summed, then the max with each init container, where a
    restartable init container (a sidecar, `restartPolicy: Always`; the bool) runs
    beside everything started after it. Any per-container amounts combine this way
    (requests here; the CPUs a CPU manager pins, in `locality.parse`)."""
    total = ZERO
    for request in app:
        total = total + request
    sidecars = ZERO
    init_peak = ZERO
    for request, restartable in init:
        if restartable:
            sidecars = sidecars + request
            init_peak = init_peak.max(sidecars)
        else:
            init_peak = init_peak.max(sidecars + request)
    return (total + sidecars).max(init_peak)


def pod_effective_request(
    pod: Mapping[str, Any],
    gpu_resource: str | tuple[str, ...] = DEFAULT_GPU_RESOURCE,
    devices: DeviceNames | None = None,
) -> Resources:
    """What the scheduler reserves for `pod` (a Kubernetes Pod as JSON).

    gpu_resource: the whole-GPU resource name(s), summed into `gpu_milli`. devices:
    resource names also kept per kind in `Resources.devices` (None: none are).
    """
    if not isinstance(pod, Mapping):
        raise InputError("pod: expected a JSON object")
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError("pod.spec: missing or not an object")
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    if not isinstance(containers, list) or not isinstance(init_containers, list):
        raise InputError("pod.spec.containers/initContainers: expected lists")

    app = [
        container_request(container, gpu_resource, f"pod.spec.containers[{index}]", devices)
        for index, container in enumerate(containers)
    ]
    init = [
        (container_request(container, gpu_resource, f"pod.spec.initContainers[{index}]",
                           devices),
         isinstance(container, Mapping) and container.get("restartPolicy") == "Always")
        for index, container in enumerate(init_containers)
    ]
    effective = combine_containers(app, init)

    pod_level = spec.get("resources")
    if pod_level:
        # kube-scheduler takes the pod-level value for each supported resource it sets
        # (cpu, memory; never extended resources such as GPUs), containers otherwise.
        wanted = container_request({"resources": pod_level}, gpu_resource, "pod.spec")
        requests = pod_level.get("requests") or {}
        limits = pod_level.get("limits") or {}
        effective = Resources(
            effective.gpu_milli,
            wanted.cpu_milli if "cpu" in requests or "cpu" in limits else effective.cpu_milli,
            wanted.memory_bytes
            if "memory" in requests or "memory" in limits
            else effective.memory_bytes,
            effective.devices,
        )

    overhead = spec.get("overhead")
    if overhead:
        effective = effective + resources_from_list(overhead, gpu_resource, "pod.spec.overhead")
    return effective
