"""What `headstart size weight` does: KOD2's weight of one elastic job, the number
the extender's admitter orders scale-in by (docs/extender.md, "KOD2's weight").

The weight, its units and its starvation rule are `locality.admission.weight`'s; the
job's request at its minimum is `overprovisioner.planner.worker_plan.request_at` (its
minimum of workers plus its other replicas, as the admitter sums an elastic gang).
Decides: where the minimum and the request come from (an elastic owner's manifest, or
`--minimum` with one worker's `--cpu`, `--memory`, `--gpus`), the weight settings from
flags named after `admission.elastic.weight`'s fields, and how the answer is shown.

Must not: read the cluster or the extender's config file.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bucketing.resources import Resources, parse_resource_quantity
from common.durations import parse_duration
from common.errors import ConfigError, InputError
from kube.labels import MIN_SIZE_ANNOTATION
from locality.admission.weight import WeightConfig, starved, units, weight
from locality.elastic import elastic_owner
from overprovisioner.jobsize.flags import number, whole
from overprovisioner.jobsize.manifest import read_job
from overprovisioner.planner.worker_plan import request_at

NUMBER_MODE = ("--minimum", "--cpu", "--memory")


def run(args: argparse.Namespace) -> int:
    answer = weigh(args)
    print(json.dumps(answer, indent=2) if args.json else text(answer))
    return 0


def weigh(args: argparse.Namespace) -> dict[str, Any]:
    """The answer as `--json` prints it (docs/predictor.md lists its keys)."""
    config = _config(args)
    waited = parse_duration(args.waited, "--waited", allow_zero=True)
    job, minimum, request = _job(args)
    settings = {"cpu_cores_per_unit": config.cpu_cores_per_unit,
                "memory_gib_per_unit": config.memory_gib_per_unit,
                "gpus_per_unit": config.gpus_per_unit,
                "starvation_seconds": config.starvation_seconds,
                "starvation_bonus": config.starvation_bonus}
    return {"job": job, "minimum": minimum, "settings": settings,
            "request": {"cpu": request.cpus, "memory_gib": request.memory_gib,
                        "gpus": request.gpus},
            "units": units(request, config), "waited_seconds": waited,
            "starved": starved(waited, config),
            # a job that has not waited is never starved (starvation_seconds > 0)
            "weight_unstarved": weight(minimum, request, 0.0, config),
            "weight": weight(minimum, request, waited, config)}


def _config(args: argparse.Namespace) -> WeightConfig:
    values: dict[str, Any] = {
        "cpu_cores_per_unit": number(args.cpu_cores_per_unit, "--cpu-cores-per-unit"),
        "memory_gib_per_unit": number(args.memory_gib_per_unit, "--memory-gib-per-unit"),
        "starvation_seconds": parse_duration(args.starvation, "--starvation"),
        "starvation_bonus": number(args.starvation_bonus, "--starvation-bonus"),
    }
    if args.gpus_per_unit is not None:
        values["gpus_per_unit"] = number(args.gpus_per_unit, "--gpus-per-unit")
    try:
        return WeightConfig(**values)
    except ConfigError as error:  # its fields are the flags, less the dashes
        raise InputError(f"--{str(error).replace('_', '-')}") from None


def _job(args: argparse.Namespace) -> tuple[str | None, int, Resources]:
    given = [flag for flag in (*NUMBER_MODE, "--gpus")
             if getattr(args, flag[2:]) is not None]
    if args.job is not None:
        if given:
            raise InputError(f"{', '.join(given)}: give JOB.yaml or these, not both")
        obj, kind = read_job(args.job)
        owner = elastic_owner(obj, kind)
        if owner is None:
            raise InputError(f"{args.job}: not an elastic job (no {MIN_SIZE_ANNOTATION} and "
                             "max-size annotations); for any job give --minimum, --cpu and "
                             "--memory instead")
        if owner.bounds is None:
            raise InputError(f"{args.job}: {owner.problem}")
        minimum = owner.bounds.minimum
        return owner.where, minimum, request_at(obj, kind, owner, minimum, args.gpu_resource)
    missing = [flag for flag in NUMBER_MODE if getattr(args, flag[2:]) is None]
    if missing:
        raise InputError(f"{', '.join(missing)}: missing; give JOB.yaml, or --minimum with "
                         "one worker's --cpu and --memory (and --gpus)")
    minimum = whole(args.minimum, "--minimum", 1)
    worker = Resources(
        gpu_milli=round(parse_resource_quantity(args.gpus or 0, "--gpus") * 1000),
        cpu_milli=round(parse_resource_quantity(args.cpu, "--cpu") * 1000),
        memory_bytes=int(parse_resource_quantity(args.memory, "--memory")))
    return None, minimum, Resources(worker.gpu_milli * minimum, worker.cpu_milli * minimum,
                                    worker.memory_bytes * minimum)


def text(answer: dict[str, Any]) -> str:
    request = answer["request"]
    minimum, size = answer["minimum"], answer["units"]
    ratio = f"sigmoid({minimum} / {size:g})" if size > 0 else "a request of 0 units"
    settings = answer["settings"]
    unit = (f"{settings['cpu_cores_per_unit']:g} core or {settings['memory_gib_per_unit']:g} "
            "GiB a unit, " + ("GPUs not counted" if settings["gpus_per_unit"] is None else
                              f"{settings['gpus_per_unit']:g} GPU a unit"))
    starving = (f"starved (at least {settings['starvation_seconds']:g} s): plus "
                f"{settings['starvation_bonus']:g}" if answer["starved"] else
                f"not starved (under {settings['starvation_seconds']:g} s)")
    head = f"{answer['job']}: " if answer["job"] else ""
    return (f"{head}KOD2 weight {answer['weight']:.4f}\n"
            f"  {minimum} workers at its minimum ask {request['cpu']:g} CPU, "
            f"{request['memory_gib']:g} GiB, {request['gpus']:g} GPU = {size:g} units "
            f"({unit})\n"
            f"  {ratio} = {answer['weight_unstarved']:.4f}; waited "
            f"{answer['waited_seconds']:g} s, {starving}")

