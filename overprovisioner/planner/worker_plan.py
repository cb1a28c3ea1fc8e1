"""KALE's worker estimator applied to one elastic job: what it opted into, and its plan.

Decides:
- which owners ask for a worker plan: an elastic owner (`locality.elastic`: min-size and
  max-size annotations on an Indexed Job or a PyTorchJob) that also carries
  `headstart.io/sample-rate-query` (PromQL: the samples per second arriving for the
  job, e.g. a stream's ingest rate). The rest of its opt-in, on the owner too:
  `headstart.io/throughput-model` (`synchronous` or `asynchronous`, required),
  `headstart.io/global-batch` (M, required when synchronous), and either
  `headstart.io/throughput-thetas` (the model measured offline, comma-separated) or
  `headstart.io/throughput-query` (PromQL: the samples per second the job processes,
  from which the model is fitted at the sizes the job has run at); optionally KALE's
  fallback: `headstart.io/lag-query` (PromQL: how far behind the stream the job is, in
  seconds) with `headstart.io/max-lag-seconds`. Anything missing or malformed is a
  `problem` naming the annotation, and no plan;
- the plan (`decide`): the thetas given, else fitted from the recorded (workers,
  samples/s) pairs (`predictor.models.throughput.fit`: as many distinct sizes as the
  model has thetas); the least sufficient size for the rate observed last and for each
  forecast step, stabilized (rho, tau) from the size the job runs at, so the size for
  now is held through a dip shorter than tau like every later step; `size` is the
  stabilized size now, never below what the rate now needs (a rise is taken at once),
  `planned` the most over the horizon (never below `size`), valid for `valid_for_s`;
  KALE's
  fallback: while the job's lag is above its bound, the model under-sizes it whatever it
  says, so `size` is at least one worker more than it runs now (within its maximum);
- the growth to announce (`growth`): `planned - current` workers of the job's worker
  shape, in the placement group the job's workers run in.

Must not: read metrics or the clock, talk to the cluster, or log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bucketing.resources import ZERO, Resources, pod_effective_request
from common.errors import InputError
from kube.labels import GLOBAL_BATCH_ANNOTATION as GLOBAL_BATCH
from kube.labels import LAG_QUERY_ANNOTATION as LAG_QUERY
from kube.labels import MAX_LAG_ANNOTATION as MAX_LAG
from kube.labels import MAX_SIZE_ANNOTATION, MIN_SIZE_ANNOTATION
from kube.labels import SAMPLE_RATE_QUERY_ANNOTATION as SAMPLE_RATE_QUERY
from kube.labels import THROUGHPUT_MODEL_ANNOTATION as THROUGHPUT_MODEL
from kube.labels import THROUGHPUT_QUERY_ANNOTATION as THROUGHPUT_QUERY
from kube.labels import THROUGHPUT_THETAS_ANNOTATION as THROUGHPUT_THETAS
from kube.replicas import mapping, whole
from locality.elastic import PYTORCH_WORKER, ElasticOwner, elastic_owner
from locality.worker_plans import WorkerPlan
from predictor.models.stabilize import stabilize
from predictor.models.throughput import THETAS, ThroughputModel, fit, least_sufficient

MAX_QUERY_CHARS = 2_000


@dataclass(frozen=True)
class KaleJob:
    """An elastic owner that asked for a worker plan; `problem` says why none is made."""

    owner: ElasticOwner
    rate_query: str = ""
    throughput_query: str = ""
    mode: str = ""
    global_batch: float = 1.0
    thetas: tuple[float, ...] | None = None
    worker_request: Resources | None = None
    ready_workers: int = 0
    """Workers ready now (the owner's status): a throughput sample counts only when all
    `owner.size` are."""
    lag_query: str = ""
    max_lag_s: float | None = None
    problem: str | None = None

    @property
    def key(self) -> str:
        return f"{self.owner.kind}.{self.owner.namespace}.{self.owner.name}"


def kale_job(obj: Mapping[str, Any], kind: str, gpu_resource: str = "nvidia.com/gpu"
             ) -> KaleJob | None:
    """The owner as a job asking for a worker plan; None when it names no sample-rate
    query. Never raises on the object's content: a problem is returned."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if SAMPLE_RATE_QUERY not in annotations:
        return None
    owner = elastic_owner(obj, kind)
    if owner is None:
        owner = ElasticOwner(kind, str((obj.get("metadata") or {}).get("namespace") or
                                       "default"),
                             str((obj.get("metadata") or {}).get("name") or ""), 0, None)
        return KaleJob(owner, problem=(
            f"{owner.where}: {SAMPLE_RATE_QUERY} needs an elastic job (the "
            f"{MIN_SIZE_ANNOTATION} and {MAX_SIZE_ANNOTATION} annotations)"))
    if owner.problem is not None:
        return KaleJob(owner, problem=owner.problem)
    try:
        return _parse(obj, kind, owner, annotations, gpu_resource)
    except InputError as error:
        return KaleJob(owner, problem=str(error))


def _parse(obj: Mapping[str, Any], kind: str, owner: ElasticOwner,
           annotations: Mapping[str, Any], gpu_resource: str) -> KaleJob:
    where = owner.where
    rate_query = _query(annotations, SAMPLE_RATE_QUERY, where)
    mode = str(annotations.get(THROUGHPUT_MODEL, "")).strip()
    if mode not in THETAS:
        raise InputError(f"{where}: annotation {THROUGHPUT_MODEL}: expected one of "
                         f"{', '.join(THETAS)}, got {mode!r}")
    global_batch = 1.0
    if mode == "synchronous":
        global_batch = _positive(annotations.get(GLOBAL_BATCH), GLOBAL_BATCH, where)
    thetas = None
    if THROUGHPUT_THETAS in annotations:
        thetas = _thetas(annotations[THROUGHPUT_THETAS], mode, where)
        ThroughputModel(mode, thetas, global_batch)  # the model's own checks
        throughput_query = ""
    else:
        if THROUGHPUT_QUERY not in annotations:
            raise InputError(f"{where}: set {THROUGHPUT_THETAS} (the model measured "
                             f"offline) or {THROUGHPUT_QUERY} (to fit it from the job's "
                             "throughput at the sizes it runs at)")
        throughput_query = _query(annotations, THROUGHPUT_QUERY, where)
    request = worker_request(obj, kind, gpu_resource, where)
    lag_query, max_lag = "", None
    if LAG_QUERY in annotations or MAX_LAG in annotations:
        if LAG_QUERY not in annotations or MAX_LAG not in annotations:
            raise InputError(f"{where}: KALE's fallback needs both {LAG_QUERY} and {MAX_LAG}")
        lag_query = _query(annotations, LAG_QUERY, where)
        max_lag = _positive(annotations.get(MAX_LAG), MAX_LAG, where)
    return KaleJob(owner, rate_query, throughput_query, mode, global_batch, thetas, request,
                   _ready(obj.get("status"), kind), lag_query, max_lag)


def _query(annotations: Mapping[str, Any], key: str, where: str) -> str:
    text = str(annotations.get(key, "")).strip()
    if not text or len(text) > MAX_QUERY_CHARS:
        raise InputError(f"{where}: annotation {key}: expected a PromQL expression of 1 to "
                         f"{MAX_QUERY_CHARS} characters, got {len(text)}")
    return text


def _positive(raw: Any, key: str, where: str) -> float:
    try:
        value = float(str(raw).strip())
    except ValueError:
        value = float("nan")
    if not (np.isfinite(value) and value > 0):
        raise InputError(f"{where}: annotation {key}: expected a number > 0, got {raw!r}")
    return value


def _thetas(raw: Any, mode: str, where: str) -> tuple[float, ...]:
    parts = [part.strip() for part in str(raw).split(",")]
    try:
        values = tuple(float(part) for part in parts)
    except ValueError:
        values = ()
    if len(values) != THETAS[mode] or not all(np.isfinite(v) and v >= 0 for v in values):
        raise InputError(f"{where}: annotation {THROUGHPUT_THETAS}: the {mode} model takes "
                         f"{THETAS[mode]} numbers >= 0 separated by commas, got {raw!r}")
    return values


def template_request(template: Mapping[str, Any], gpu_resource: str, where: str
                     ) -> Resources:
    """One pod's effective request from an owner's pod template; InputError naming
    `where` when it does not parse."""
    try:
        return pod_effective_request({"spec": template.get("spec")}, gpu_resource)
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def worker_request(obj: Mapping[str, Any], kind: str, gpu_resource: str, where: str
                   ) -> Resources:
    """One worker's effective request from the owner's worker template (an Indexed
    Job's pod template, a PyTorchJob's Worker); InputError naming `where` when it does
    not parse."""
    spec = mapping(obj.get("spec"), f"{where}: spec")
    return template_request(_worker_template(spec, kind, where), gpu_resource,
                            f"{where}: worker template")


def request_at(obj: Mapping[str, Any], kind: str, owner: ElasticOwner, workers: int,
               gpu_resource: str) -> Resources:
    """The job's whole request with `workers` workers: that many of its worker template
    plus its other replicas as they are (a PyTorchJob's Master), as the admitter sums
    an elastic job's pods at a size (`locality.admission.resize.at_size`); KOD2's
    weight divides the job's minimum by this at its minimum."""
    where = owner.where
    worker = worker_request(obj, kind, gpu_resource, where)
    total = sum((worker for _ in range(workers)), ZERO)
    if kind == "PyTorchJob":
        spec = mapping(obj.get("spec"), f"{where}: spec")
        specs = mapping(spec.get("pytorchReplicaSpecs"), f"{where}: spec.pytorchReplicaSpecs")
        for role, replica in specs.items():
            if role == PYTORCH_WORKER:
                continue
            part = mapping(replica, f"{where}: spec.pytorchReplicaSpecs.{role}")
            template = mapping(part.get("template"), f"{where}: the {role} template")
            count = whole(part.get("replicas", 1),
                          f"{where}: spec.pytorchReplicaSpecs.{role}.replicas", 0)
            pod = template_request(template, gpu_resource, f"{where}: {role} template")
            total = sum((pod for _ in range(count)), total)
    return total


def _worker_template(spec: Mapping[str, Any], kind: str, where: str) -> Mapping[str, Any]:
    if kind == "PyTorchJob":
        specs = mapping(spec.get("pytorchReplicaSpecs"), f"{where}: spec.pytorchReplicaSpecs")
        worker = mapping(specs.get(PYTORCH_WORKER), f"{where}: spec.pytorchReplicaSpecs.Worker")
        return mapping(worker.get("template"), f"{where}: the Worker template")
    return mapping(spec.get("template"), f"{where}: spec.template")


def _ready(status: Any, kind: str) -> int:
    status = status if isinstance(status, Mapping) else {}
    if kind == "PyTorchJob":
        replicas = (status.get("replicaStatuses") or {}).get(PYTORCH_WORKER) or {}
        value = replicas.get("active", 0)
    else:
        value = status.get("ready", 0)
    return value if isinstance(value, int) and value >= 0 else 0


@dataclass(frozen=True)
class PlanSettings:
    """How a plan is made from a job's forecast (the config's `worker_plans`)."""

    rho: float = 1.0
    """Stabilization: a change of fewer than rho workers is not made (workers)."""
    tau_steps: int = 2
    """Stabilization: a lower size is taken only after tau forecast steps in a row (the
    step now included, judged against the size the job runs at)."""
    valid_for_s: float = 600.0
    """How long a plan steers the job without being renewed."""


def model_of(job: KaleJob, samples: Sequence[tuple[int, float]]) -> ThroughputModel:
    """The job's throughput model: the thetas it gave, else fitted from `samples`
    ((workers, samples/s) pairs). Raises InputError saying what is missing."""
    if job.thetas is not None:
        return ThroughputModel(job.mode, job.thetas, job.global_batch)
    if not samples:
        raise InputError(f"{job.owner.where}: no throughput sample yet (one is recorded per "
                         "tick while all its workers are ready)")
    workers, rates = zip(*samples, strict=True)
    return fit(job.mode, workers, rates, job.global_batch)


def decide(job: KaleJob, samples: Sequence[tuple[int, float]], rate_now: float,
           rate_forecast: Sequence[float], now_s: float, settings: PlanSettings,
           lag_s: float | None = None) -> WorkerPlan:
    """The job's plan (module docstring); `lag_s` the job's lag now when it set a lag
    query. Raises InputError when none can be made."""
    owner = job.owner
    assert owner.bounds is not None and job.problem is None
    model = model_of(job, samples)
    rates = [float(rate_now), *(float(r) for r in rate_forecast)]
    if not all(np.isfinite(rate) and rate >= 0 for rate in rates):
        raise InputError(f"{owner.where}: the sample rate is not a number >= 0 ({rates})")
    sizes = [least_sufficient(model, rate, owner.bounds.minimum, owner.bounds.maximum)
             for rate in rates]
    # The size it runs at leads the series, so the size for now is stabilized like each
    # later step: a dip in the rate for fewer than tau steps does not shrink it at once.
    # A rise is taken at once: a job short of workers falls behind its stream.
    path = stabilize(np.array([owner.size, *(s.workers for s in sizes)], dtype=np.float64),
                     rho=settings.rho, tau_ticks=settings.tau_steps)[1:].astype(int)
    size = max(int(path[0]), sizes[0].workers)
    planned = max(size, int(max(path)))
    short = " (short: even its maximum falls behind)" if any(s.short for s in sizes) else ""
    reason = (f"KALE: {rate_now:,.0f} samples/s now needs {size} workers, the forecast "
              f"peak {max(rates):,.0f} needs {planned}{short}; f({size}) = "
              f"{float(model.rate(np.array([size]))[0]):,.0f} samples/s")
    if job.max_lag_s is not None and lag_s is not None and lag_s > job.max_lag_s:
        floor = min(owner.bounds.maximum, owner.size + 1)
        if floor > size:
            size, planned = floor, max(planned, floor)
            reason = (f"KALE fallback: lag {lag_s:,.0f} s is above {job.max_lag_s:,.0f} s, "
                      f"one worker more than its {owner.size}; {reason}")
    return WorkerPlan(owner.kind, owner.namespace, owner.name, owner.uid, size, planned,
                      now_s, now_s + settings.valid_for_s, reason)


@dataclass(frozen=True)
class Growth:
    """Workers a plan adds beyond the job's current size, for the placeholders: in the
    placement group its workers run in ("" when not in one), needed now (`size` is above
    the current size) or later within the horizon."""

    key: str
    pods: int
    request: Resources
    group: str
    now: bool


def growth(job: KaleJob, plan: WorkerPlan, group: str) -> Growth | None:
    """The workers `plan.planned` adds to the job's current size; None when none."""
    assert job.worker_request is not None
    pods = plan.planned - job.owner.size
    if pods <= 0:
        return None
    return Growth(plan.key, pods, job.worker_request, group, plan.size > job.owner.size)
