"""A pod's effective resource request and the resource vector every package uses.

Decides: what a pod asks the scheduler for (cpu, memory, GPUs), computed the way
kube-scheduler does (noderesources `computePodResourceRequest`): the app containers
summed, then the max with each init container, where restartable init containers
(native sidecars, `restartPolicy: Always`) keep running and add to what follows
them; pod-level `spec.resources` (PodLevelResources, beta and on by default since
Kubernetes 1.34) replaces that for the cpu and memory it sets; plus `spec.overhead`.
This is the one place that sum is written.

Must not: log, read the clock, or touch the API. Quantities are parsed with the
official kubernetes client's `parse_quantity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
from kubernetes.utils.quantity import parse_quantity

from bucketing.errors import InputError

DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
GIB = 1024**3


@dataclass(frozen=True, slots=True, order=False)
class Resources:
    """A resource vector in integer units so sums never drift.

    gpu_milli: thousandths of a GPU (a whole `nvidia.com/gpu` is 1000; traces with
    GPU shares, like Alibaba's `gpu_milli`, use the fraction).
    """

    gpu_milli: int = 0
    cpu_milli: int = 0
    memory_bytes: int = 0

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

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            self.gpu_milli + other.gpu_milli,
            self.cpu_milli + other.cpu_milli,
            self.memory_bytes + other.memory_bytes,
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            self.gpu_milli - other.gpu_milli,
            self.cpu_milli - other.cpu_milli,
            self.memory_bytes - other.memory_bytes,
        )

    def max(self, other: Resources) -> Resources:
        """Element-wise maximum (how an init container combines with the app containers)."""
        return Resources(
            max(self.gpu_milli, other.gpu_milli),
            max(self.cpu_milli, other.cpu_milli),
            max(self.memory_bytes, other.memory_bytes),
        )

    def fits_in(self, capacity: Resources) -> bool:
        """True when every dimension is at most the capacity's."""
        return (
            self.gpu_milli <= capacity.gpu_milli
            and self.cpu_milli <= capacity.cpu_milli
            and self.memory_bytes <= capacity.memory_bytes
        )

    def is_zero(self) -> bool:
        return self.gpu_milli == 0 and self.cpu_milli == 0 and self.memory_bytes == 0

    def as_vector(self) -> np.ndarray:
        """(GPUs, CPUs, memory GiB) in cost order, the order the embedding compares in."""
        return np.array([self.gpus, self.cpus, self.memory_gib], dtype=np.float64)


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


def _milli(value: Any, where: str) -> int:
    """A quantity in thousandths, rounded up as the scheduler rounds a CPU request."""
    return int((parse_resource_quantity(value, where) * 1000).to_integral_value("ROUND_CEILING"))


def resources_from_list(resource_list: Any, gpu_resource: str, where: str) -> Resources:
    """A ResourceList (`requests`, `limits`, `overhead`, a node's `allocatable`) in integer
    units, rounded up as the scheduler's MilliValue/Value do; absent names are 0."""
    if resource_list is None:
        return ZERO
    if not isinstance(resource_list, Mapping):
        raise InputError(f"{where}: expected a map of resource names to quantities")
    cpu = resource_list.get("cpu")
    memory = resource_list.get("memory")
    gpu = resource_list.get(gpu_resource)
    return Resources(
        gpu_milli=_milli(gpu, f"{where}.{gpu_resource}") if gpu is not None else 0,
        cpu_milli=_milli(cpu, f"{where}.cpu") if cpu is not None else 0,
        memory_bytes=int(
            parse_resource_quantity(memory, f"{where}.memory").to_integral_value("ROUND_CEILING")
        )
        if memory is not None
        else 0,
    )


def container_request(
    container: Mapping[str, Any], gpu_resource: str = DEFAULT_GPU_RESOURCE, where: str = "container"
) -> Resources:
    """A container's requests; like the scheduler, limits stand in for missing requests."""
    if not isinstance(container, Mapping):
        raise InputError(f"{where}: expected an object")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InputError(f"{where}.resources: expected an object")
    limits = resources_from_list(
        resources.get("limits"), gpu_resource, f"{where}.resources.limits"
    )
    requests_raw = resources.get("requests") or {}
    requests = resources_from_list(requests_raw, gpu_resource, f"{where}.resources.requests")
    # The API server defaults a missing request to the limit; do the same for objects
    # that never went through defaulting (traces, tests, dry-run manifests).
    if isinstance(requests_raw, Mapping):
        requests = Resources(
            requests.gpu_milli if gpu_resource in requests_raw else limits.gpu_milli,
            requests.cpu_milli if "cpu" in requests_raw else limits.cpu_milli,
            requests.memory_bytes if "memory" in requests_raw else limits.memory_bytes,
        )
    return requests


def pod_effective_request(
    pod: Mapping[str, Any], gpu_resource: str = DEFAULT_GPU_RESOURCE
) -> Resources:
    """What the scheduler reserves for `pod` (a Kubernetes Pod as JSON)."""
    if not isinstance(pod, Mapping):
        raise InputError("pod: expected a JSON object")
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError("pod.spec: missing or not an object")
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    if not isinstance(containers, list) or not isinstance(init_containers, list):
        raise InputError("pod.spec.containers/initContainers: expected lists")

    total = ZERO
    for index, container in enumerate(containers):
        total = total + container_request(container, gpu_resource, f"pod.spec.containers[{index}]")

    # Sidecars (restartable init containers) run beside everything started after them.
    sidecars = ZERO
    init_peak = ZERO
    for index, container in enumerate(init_containers):
        request = container_request(container, gpu_resource, f"pod.spec.initContainers[{index}]")
        if container.get("restartPolicy") == "Always":
            sidecars = sidecars + request
            init_peak = init_peak.max(sidecars)
        else:
            init_peak = init_peak.max(sidecars + request)
    effective = (total + sidecars).max(init_peak)

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
        )

    overhead = spec.get("overhead")
    if overhead:
        effective = effective + resources_from_list(overhead, gpu_resource, "pod.spec.overhead")
    return effective
