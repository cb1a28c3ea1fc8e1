"""DLRover-RM's warm start applied to training owners: what a finished job leaves in the
history, and the worker plan a new job that opts in starts from.

Decides:
- a job's profile (`profile_of`, `predictor.models.warm_start.JobProfile`): the image of
  its (worker) pod template's first container, its namespace and labels, and per role
  its pod count and one pod's request (an Indexed or plain Job: one role, `worker`, of
  `parallelism` pods; a PyTorchJob: one role per replica type, `Master`, `Worker`, ...);
- when a job finished (`finished_s`): a Job's `Complete` condition, a PyTorchJob's
  `Succeeded`, True, at its lastTransitionTime. Failed jobs are not history to start
  from;
- which jobs ask (`WARM_START`, `headstart.io/warm-start: "true"` on an elastic owner)
  and get a plan (`warm_start_plan`): not finished and no pod ready yet (a job that runs
  is sized by its plan's expiry and KOD2/KALE from then on); the recommended count of its
  resized role (`worker` / `Worker`) within the owner's bounds. Per-role requests are
  recommended (`/plan`, the CLI) but never applied: headstart does not change pod
  templates.

Must not: read the store or the clock, talk to the cluster, log.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from common.errors import InputError
from kube.labels import WARM_START_ANNOTATION as WARM_START
from kube.replicas import mapping, whole
from locality.elastic import PYTORCH_WORKER, ElasticOwner
from locality.worker_plans import WorkerPlan
from overprovisioner.planner.worker_plan import template_request
from predictor.models.warm_start import (
    JobProfile,
    Recommendation,
    RoleShape,
    WarmStartConfig,
    recommend,
)

JOB_ROLE = "worker"
FINISHED = {"Job": "Complete", "PyTorchJob": "Succeeded"}
GIB = 2**30


def profile_of(obj: Mapping[str, Any], kind: str, gpu_resource: str = "nvidia.com/gpu"
               ) -> JobProfile:
    """The owner as the warm start compares it; InputError naming what does not parse."""
    metadata = mapping(obj.get("metadata"), f"{kind}: metadata")
    namespace = str(metadata.get("namespace") or "default")
    name = str(metadata.get("name") or "")
    where = f"{kind} {namespace}/{name}"
    spec = mapping(obj.get("spec"), f"{where}: spec")
    roles: dict[str, RoleShape] = {}
    image = ""
    if kind == "PyTorchJob":
        specs = mapping(spec.get("pytorchReplicaSpecs"), f"{where}: spec.pytorchReplicaSpecs")
        for role in sorted(specs, key=lambda r: (r != PYTORCH_WORKER, r)):
            part = mapping(specs[role], f"{where}: spec.pytorchReplicaSpecs.{role}")
            template = mapping(part.get("template"), f"{where}: {role} template")
            roles[role] = _shape(whole(part.get("replicas", 1), f"{where}: {role} replicas", 0),
                                 template, gpu_resource, f"{where}: {role}")
            image = image or _image(template)
    else:
        template = mapping(spec.get("template"), f"{where}: spec.template")
        roles[JOB_ROLE] = _shape(whole(spec.get("parallelism", 1), f"{where}: parallelism", 0),
                                 template, gpu_resource, where)
        image = _image(template)
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    return JobProfile(f"{kind}/{namespace}/{name}", image, namespace, labels, roles, roles,
                      finished_s(obj, kind) or 0.0)


def _shape(pods: int, template: Mapping[str, Any], gpu_resource: str, where: str
           ) -> RoleShape:
    request = template_request(template, gpu_resource, f"{where}: pod template")
    return RoleShape(pods, request.cpu_milli / 1000, request.memory_bytes / GIB,
                     request.gpu_milli / 1000)


def _image(template: Mapping[str, Any]) -> str:
    containers = (template.get("spec") or {}).get("containers") or [{}]
    first = containers[0] if isinstance(containers[0], Mapping) else {}
    return str(first.get("image") or "")


def finished_s(obj: Mapping[str, Any], kind: str) -> float | None:
    """When the job succeeded (Unix seconds), None while it has not."""
    wanted = FINISHED.get(kind)
    for condition in ((obj.get("status") or {}).get("conditions") or []):
        if isinstance(condition, Mapping) and condition.get("type") == wanted and \
                condition.get("status") == "True":
            stamp = condition.get("lastTransitionTime")
            try:
                return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
            except ValueError:
                return 0.0
    return None


def asks_for_warm_start(obj: Mapping[str, Any]) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(WARM_START, "")).strip().lower() == "true"


def not_started(obj: Mapping[str, Any], kind: str) -> bool:
    """Not finished and no pod ready yet (a PyTorchJob: no replica active)."""
    if finished_s(obj, kind) is not None:
        return False
    status = obj.get("status") or {}
    if kind == "PyTorchJob":
        return not any((replicas or {}).get("active") for replicas in
                       (status.get("replicaStatuses") or {}).values())
    return not status.get("ready")


def warm_start_plan(owner: ElasticOwner, profile: JobProfile, history: Sequence[JobProfile],
                    config: WarmStartConfig, now_s: float, valid_for_s: float
                    ) -> tuple[WorkerPlan | None, Recommendation]:
    """The plan a job that asked starts from (None, with the recommendation's reason,
    when no past job is alike enough or it recommends nothing for the resized role)."""
    assert owner.bounds is not None
    past = [p for p in history if p.name != profile.name]
    found = recommend(profile, past, config)
    role = PYTORCH_WORKER if owner.kind == "PyTorchJob" else JOB_ROLE
    shape = found.roles.get(role)
    if shape is None:
        return None, found
    size = owner.bounds.clamp(shape.pods)
    alike = ", ".join(f"{name} ({score:.2f})" for name, score in found.based_on[:3])
    reason = (f"DLRover-RM warm start: {shape.pods} {role}s from {len(found.based_on)} "
              f"similar finished job(s) ({alike})"
              + (f", kept within {owner.bounds.minimum}..{owner.bounds.maximum}"
                 if size != shape.pods else ""))
    return WorkerPlan(owner.kind, owner.namespace, owner.name, owner.uid, size, size, now_s,
                      now_s + valid_for_s, reason), found


def profile_json(profile: JobProfile) -> dict[str, Any]:
    """The profile as the store keeps it (and `profile_from_json` reads it back)."""
    return {"name": profile.name, "image": profile.image, "namespace": profile.namespace,
            "labels": dict(profile.labels), "finished": profile.finished_at,
            "roles": {role: [s.pods, s.cpu, s.memory_gib, s.gpus]
                      for role, s in profile.final.items()}}


def profile_from_json(body: Any, where: str = "profile") -> JobProfile:
    """A profile as `profile_json` wrote it; InputError naming `where` and the field that
    does not parse (a history row or line written by hand or by another version)."""
    if not isinstance(body, Mapping):
        raise InputError(f"{where}: expected a JSON object, got {type(body).__name__}")
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: name: expected a non-empty string, got {name!r}")
    texts = {key: body.get(key, "") for key in ("image", "namespace")}
    for key, value in texts.items():
        if not isinstance(value, str):
            raise InputError(f"{where}: {key}: expected a string, got {value!r}")
    labels = body.get("labels") or {}
    if not isinstance(labels, Mapping) or not all(
            isinstance(v, str) for v in labels.values()):
        raise InputError(f"{where}: labels: expected an object of strings, got {labels!r}")
    finished = body.get("finished", 0.0)
    if not _number(finished):
        raise InputError(f"{where}: finished: expected Unix seconds, got {finished!r}")
    raw_roles = body.get("roles") or {}
    if not isinstance(raw_roles, Mapping):
        raise InputError(f"{where}: roles: expected an object, got {raw_roles!r}")
    roles = {str(role): _role_shape(value, f"{where}: roles.{role}")
             for role, value in raw_roles.items()}
    return JobProfile(name, texts["image"], texts["namespace"],
                      {str(k): v for k, v in labels.items()}, roles, roles, float(finished))


def _role_shape(value: Any, where: str) -> RoleShape:
    shape = "[pods, cpu, memory_gib, gpus]"
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 4 or \
            not all(_number(v) and v >= 0 for v in value):
        raise InputError(f"{where}: expected {shape}, numbers >= 0, got {value!r}")
    if value[0] != int(value[0]):
        raise InputError(f"{where}: pods: expected a whole number, got {value[0]!r}")
    return RoleShape(int(value[0]), float(value[1]), float(value[2]), float(value[3]))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value)
