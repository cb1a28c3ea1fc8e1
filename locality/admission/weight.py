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

Must not: read the clock (`waited_seconds` is passed), log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bucketing.resources import GIB, Resources
from common.errors import ConfigError


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
                raise ConfigError(f"admission.elastic.weight.{name}: expected a number > 0, "
                                  f"got {value!r}")
        if not isinstance(self.starvation_bonus, int | float) or self.starvation_bonus < 0:
            raise ConfigError("admission.elastic.weight.starvation_bonus: expected a number "
                              f">= 0, got {self.starvation_bonus!r}")


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
    starved = waited_seconds >= config.starvation_seconds
    return base + (config.starvation_bonus if starved else 0.0)
