"""KOD2's job weight: which elastic job gives room to which.

KOD2 (Jeong & Yu, KTCCS 2022) orders elastic PS/worker jobs by a weight, the sigmoid of
the job's minimum worker count over its resource request, so that jobs asking little
per worker go first, and raises the weight of a job that has waited past a starvation
limit. The paper leaves the request's units open; here they are explicit and
configurable:

    units  = cpu_cores / cpu_cores_per_unit + memory_GiB / memory_gib_per_unit
             (+ gpus / gpus_per_unit when gpus_per_unit is set)
    x      = minimum / units     (the job's whole request at its minimum size)
    weight = 1 / (1 + exp(-x)), plus `starvation_bonus` once it has waited
             `starvation_seconds`

With the defaults (1 core, 4 GiB, GPUs not counted, as in KOD2's CPU/memory form, 600 s,
bonus 1.0), the weight of a job that has not starved lies in (0.5, 1), and a starved job
outweighs every job that has not. A job whose request is zero gets weight 1 (the
sigmoid's limit).

Also the `admission.elastic` settings (`ElasticConfig`): KOD2's weight, scale-out's quiet
time, and where the worker plans are read.

Must not: read the clock (`waited_seconds` is passed), log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bucketing.resources import GIB, Resources
from common.errors import ConfigError
from common.fields import FieldReader
from locality.worker_plans import CONFIGMAP_NAME


@dataclass(frozen=True, slots=True)
class WeightConfig:
    """KOD2's weight settings (`admission.elastic.weight` in the extender's config)."""

    cpu_cores_per_unit: float = 1.0
    memory_gib_per_unit: float = 4.0
    gpus_per_unit: float | None = None
    """None: GPUs do not enter the weight (KOD2's form)."""
    starvation_seconds: float = 600.0
    starvation_bonus: float = 1.0

    def __post_init__(self) -> None:
        for name in ("cpu_cores_per_unit", "memory_gib_per_unit", "gpus_per_unit",
                     "starvation_seconds"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and value > 0):
                raise ConfigError(f"{name}: expected a number > 0, "
                                  f"got {value!r}")
        if not isinstance(self.starvation_bonus, int | float) or self.starvation_bonus < 0:
            raise ConfigError("starvation_bonus: expected a number "
                              f">= 0, got {self.starvation_bonus!r}")


WEIGHT_FIELDS = frozenset(("cpu_cores_per_unit", "memory_gib_per_unit", "gpus_per_unit",
                           "starvation_seconds", "starvation_bonus"))
"""`admission.elastic.weight`'s fields: WeightConfig's."""


def units(request: Resources, config: WeightConfig) -> float:
    """The request in KOD2's units."""
    total = (request.cpu_milli / 1000 / config.cpu_cores_per_unit
             + request.memory_bytes / GIB / config.memory_gib_per_unit)
    if config.gpus_per_unit is not None:
        total += request.gpu_milli / 1000 / config.gpus_per_unit
    return total


def weight(minimum: int, request: Resources, waited_seconds: float,
           config: WeightConfig) -> float:
    """The weight of a job of `minimum` workers whose whole request at that size is
    `request`, having waited `waited_seconds` (0 for a running job)."""
    size = units(request, config)
    base = 1.0 if size <= 0 else 1.0 / (1.0 + math.exp(-minimum / size))
    return base + (config.starvation_bonus if starved(waited_seconds, config) else 0.0)


def starved(waited_seconds: float, config: WeightConfig) -> bool:
    """Whether a job that has waited this long gets the starvation bonus."""
    return waited_seconds >= config.starvation_seconds


SCALE_OUT_AFTER_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class WorkerPlansConfig:
    """`admission.elastic.worker_plans`: where the admitter reads the overprovisioner's
    worker plans (`locality.worker_plans`)."""

    namespace: str = "headstart-placeholders"
    """The ConfigMap's namespace (the overprovisioner's placeholders' namespace). Another
    one needs the extender's Role in `manifests/base/extender-placeholders` moved too."""
    name: str = CONFIGMAP_NAME
    """The ConfigMap's name (the Role names it in `resourceNames`)."""
    refresh_seconds: float = 15.0
    """How often the admitter GETs it. A plan's `validUntil` bounds how long one read is
    used: a plan the overprovisioner stopped renewing is ignored once it expires."""

    @classmethod
    def from_mapping(cls, raw: Any, where: str) -> WorkerPlansConfig:
        """`where`: the file and path of the section, which errors name."""
        reader = FieldReader(where)
        raw = reader.mapping(raw, "")
        reader.known(raw, "", {"namespace", "name", "refresh_seconds"})
        defaults = cls()
        return cls(reader.string(raw, "namespace", "", defaults.namespace),
                   reader.string(raw, "name", "", defaults.name),
                   reader.as_number(raw.get("refresh_seconds", defaults.refresh_seconds),
                                    "refresh_seconds", low=1, unit="seconds"))


@dataclass(frozen=True, slots=True)
class ElasticConfig:
    """`admission.elastic` in the extender's config: resizing jobs that opted in
    (`locality.elastic`)."""

    enabled: bool = True
    """Resize elastic jobs: admit at a smaller size, scale in for a heavier waiting
    job, scale out into idle room. Off: elastic jobs are admitted at their current size
    like any other."""

    weight: WeightConfig = WeightConfig()
    scale_out_after_seconds: float = SCALE_OUT_AFTER_SECONDS
    """A gang grows only once it has been in its state (Running, at its size) this long,
    into room no waiting job could use (`growth`): DRAGON scales up after 60 s without a
    scheduling action, so a job scaled in is not grown back while the one it made room
    for is binding."""
    worker_plans: WorkerPlansConfig = WorkerPlansConfig()
    """Where the overprovisioner's worker plans are read (KALE's sizes: each planned
    gang grows only to its plan's size and is scaled in to it)."""

    @classmethod
    def from_mapping(cls, raw: Any, where: str) -> ElasticConfig:
        """`where`: the file and path of the section, which errors name."""
        reader = FieldReader(where)
        raw = reader.mapping(raw, "")
        reader.known(raw, "", {"enabled", "weight", "scale_out_after_seconds", "worker_plans"})
        enabled = reader.boolean(raw, "enabled", "", True)
        after = reader.as_number(raw.get("scale_out_after_seconds", SCALE_OUT_AFTER_SECONDS),
                                 "scale_out_after_seconds", low=0, unit="seconds")
        weights = reader.mapping(raw.get("weight"), "weight")
        reader.known(weights, "weight", WEIGHT_FIELDS)
        weight = WeightConfig(**{
            name: None if name == "gpus_per_unit" and value is None else reader.as_number(
                value, f"weight.{name}", low=0 if name == "starvation_bonus" else None,
                positive=name != "starvation_bonus")
            for name, value in weights.items()})
        plans = WorkerPlansConfig.from_mapping(raw.get("worker_plans"),
                                               f"{where}: worker_plans")
        return cls(enabled, weight, after, plans)
