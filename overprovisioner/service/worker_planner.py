"""Adapter: each tick, KALE's worker plans for the elastic jobs that ask, written to the
API, and their planned growth handed to the plan as known demand.

Per tick (`WorkerPlanner.step`):
1. list Indexed Jobs and PyTorchJobs in every namespace (a kind the cluster does not
   serve is skipped); the owners that ask for a plan are typed by
   `overprovisioner.planner.worker_plan.kale_job`;
2. per job, from Prometheus (`forecast.prometheus_url`): its throughput at this tick,
   recorded in the history store as (size, samples/s) while all its workers are ready;
   its lag now, when it names a lag query (KALE's fallback);
   its sample rate over `worker_plans.history` at the tick, forecast to the horizon
   with the configured forecaster at `worker_plans.quantile` (too short a history:
   the rate now alone); then `worker_plan.decide`;
3. its placement group: the group of the nodes most of its bound pods run on;
3b. DLRover-RM's warm start: every finished Job or PyTorchJob is kept once in the
   history store (`job_profile.profile_of`); an elastic job that asks
   (`headstart.io/warm-start: "true"`) and has not started gets a plan of the worker
   count its most similar finished jobs ended with (`job_profile.warm_start_plan`),
   unless it has a KALE plan; the workers that plan adds to the job's size now are
   growth too (in no placement group: the job has none before it is admitted), so the
   nodes for the larger size come with the job's own;
4. leader and not dry-run: every plan of this tick written to the ConfigMap
   `worker_plans.configmap` in the placeholders' namespace by server-side apply (a job
   without a plan this tick has none there: the extender sizes it by KOD2 alone, and a
   plan not renewed expires by its `validUntil`). With no plan now and none written
   before, nothing is written: a cluster without such jobs never gets the ConfigMap.

Failures: one job's problem (an annotation, a query that fails or returns no single
series, too few sizes to fit) is that job's: logged once per distinct text, counted,
the others go on. Listing the owners failing leaves this tick without plans (the
ConfigMap is left as it is; its plans expire on their own).

Must not: decide a size (the planner's pure core does) or resize a job (the extender's
admitter does, reading the ConfigMap).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from kubernetes.client.exceptions import ApiException

from common.errors import HeadstartError, InputError
from kube.kinds import KINDS
from kube.kinds.job import JOB_NAME_LABEL
from kube.labels import MIN_SIZE_ANNOTATION
from kube.retry import RetryPolicy
from locality.elastic import elastic_owner
from locality.worker_plans import WorkerPlan, encode, plan_key
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.planner.job_profile import (
    WARM_START,
    asks_for_warm_start,
    finished_s,
    not_started,
    profile_from_json,
    profile_json,
    profile_of,
    warm_start_plan,
)
from overprovisioner.planner.sizing import NodeRoom
from overprovisioner.planner.worker_plan import (
    Growth,
    KaleJob,
    PlanSettings,
    decide,
    growth,
    kale_job,
    worker_request,
)
from overprovisioner.service.apply import APPLY_CONTENT_TYPE, FIELD_MANAGER, KubeApi
from overprovisioner.service.errors import ErrorClass, call_with_retry
from overprovisioner.service.objects import headstart_labels
from predictor.live.prometheus import PrometheusConfig, PrometheusError, fetch_range, samples
from predictor.live.store import HistoryStore
from predictor.models.forecast import NotEnoughHistory, forward_fill
from predictor.models.registry import make_forecaster
from predictor.models.warm_start import WarmStartConfig

log = logging.getLogger("headstart.overprovisioner.worker_plans")

# (kind, list path, pod label naming the job): the kinds headstart resizes (`kube.kinds`).
OWNERS = tuple(
    (kind.kind, f"/apis/{kind.api_version()}/{kind.plural}", kind.pod_label or JOB_NAME_LABEL)
    for kind in KINDS if kind.resizing)


@dataclass
class StepResult:
    """What one tick planned: the plans, the growth per job, and each job's problem."""

    plans: list[WorkerPlan] = field(default_factory=list)
    growths: list[Growth] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    written: bool = False


class PrometheusReader:
    """Range queries at the tick (asyncio.run: the tick runs in a worker thread)."""

    def __init__(self, url: str, timeout_s: float = 30.0) -> None:
        self.config = PrometheusConfig(url=url, timeout_s=timeout_s)

    def series(self, query: str, start_s: float, end_s: float, tick_s: float) -> np.ndarray:
        """The query's one series on the tick grid from start_s to end_s (NaN where it has
        no value). PrometheusError when it returns no series or several."""
        import aiohttp

        times = start_s + tick_s * np.arange(int((end_s - start_s) // tick_s) + 1)

        async def fetch() -> list[Mapping[str, Any]]:
            async with aiohttp.ClientSession() as session:
                return await fetch_range(session, self.config, query, times, tick_s)

        result = asyncio.run(fetch())
        if len(result) != 1:
            raise PrometheusError(
                f"prometheus: {query}: expected one series, got {len(result)}"
                + (" (aggregate it, e.g. with sum())" if result else ""))
        values = np.full(len(times), np.nan)
        ticks, numbers = samples(result[0], times, tick_s, query)
        values[ticks] = numbers
        return values


class WorkerPlanner:
    """One per service; `step(now_s, rooms, write)` once per tick."""

    def __init__(self, config: OverprovisionerConfig, api: KubeApi, store: HistoryStore | None,
                 prometheus: PrometheusReader | None, rng: np.random.Generator,
                 sleep: Callable[[float], None], gpu_resource: str = "nvidia.com/gpu",
                 on_error: Callable[[ErrorClass, BaseException], None] | None = None) -> None:
        self.config = config
        self.gpu_resource = gpu_resource
        self.api = api
        self.store = store
        self.prometheus = prometheus
        self.rng = rng
        self.sleep = sleep
        self.on_error = on_error
        settings = config.worker_plans
        self.settings = PlanSettings(settings.stabilize_rho,
                                     max(0, round(settings.stabilize_tau_s / config.tick_s)),
                                     settings.valid_for_s)
        self.horizon_ticks = max(1, math.ceil(config.horizon_s / config.tick_s))
        self.policy = RetryPolicy(config.api.max_attempts, config.api.backoff_base_s,
                                  config.api.backoff_max_s)
        self._served: dict[str, bool] = {}
        self._said: set[str] = set()
        self._wrote_plans = False
        self.latest = StepResult()
        self.warm_start = WarmStartConfig(settings.warm_start_k, settings.warm_start_alpha,
                                          settings.warm_start_min_similarity)

    def _get(self, what: str, path: str, query: Sequence[tuple[str, str]] = ()
             ) -> dict[str, Any] | None:
        def call() -> dict[str, Any] | None:
            try:
                return self.api.request("GET", path, query=query)
            except ApiException as error:
                if error.status == 404:
                    return None
                raise
        return call_with_retry(what, call, self.policy, self.rng, self.sleep, self.on_error)

    def owners(self) -> list[tuple[str, dict[str, Any]]]:
        """(kind, object) of every Job and PyTorchJob (kinds not served are skipped)."""
        out = []
        for kind, path, _ in OWNERS:
            if self._served.get(kind) is False:
                continue
            body = self._get(f"list {kind}s", path)
            self._served[kind] = body is not None
            out += [(kind, obj) for obj in (body or {}).get("items") or []]
        return out

    def _remember_finished(self, owners: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """Keep each finished job's profile once (the warm start's history)."""
        if self.store is None:
            return 0
        known = self.store.job_uids()
        added = 0
        for kind, obj in owners:
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            done = finished_s(obj, kind)
            if not uid or uid in known or done is None:
                continue
            try:
                profile = profile_of(obj, kind, self.gpu_resource)
            except InputError as error:
                log.debug("not kept for the warm start: %s", error)
                continue
            added += self.store.remember_job(uid, done, profile_json(profile))
        return added

    def _warm_starts(self, owners: Sequence[tuple[str, dict[str, Any]]], now_s: float,
                     result: StepResult) -> None:
        """Plans for the elastic jobs that ask for a warm start and have not started;
        a job with a KALE plan keeps that one."""
        planned = {plan.key for plan in result.plans} | set(result.problems)
        history = None
        for kind, obj in owners:
            if not asks_for_warm_start(obj) or not not_started(obj, kind):
                continue
            owner = elastic_owner(obj, kind)
            meta = obj.get("metadata") or {}
            key = plan_key(kind, str(meta.get("namespace") or "default"), str(meta.get("name")))
            if key in planned:
                continue
            if owner is None or owner.bounds is None:
                result.problems[key] = (owner.problem if owner is not None else
                                        f"{kind} {key}: {WARM_START} needs an elastic job "
                                        f"(the {MIN_SIZE_ANNOTATION} and max-size annotations)")
                continue
            if history is None:
                history = [profile_from_json(body) for body in self.store.job_profiles()] \
                    if self.store is not None else []
            try:
                profile = profile_of(obj, kind, self.gpu_resource)
            except InputError as error:
                result.problems[key] = str(error)
                continue
            plan, found = warm_start_plan(owner, profile, history, self.warm_start, now_s,
                                          self.config.worker_plans.valid_for_s)
            if plan is None:
                why = found.reason or "the similar jobs have no worker role"
                result.problems[key] = f"{owner.where}: warm start: {why}"
                continue
            result.plans.append(plan)
            if plan.size > owner.size:  # its extra workers, wherever it is admitted
                request = worker_request(obj, kind, self.gpu_resource, owner.where)
                result.growths.append(Growth(plan.key, plan.size - owner.size, request, "",
                                             True))

    def step(self, now_s: float, rooms: Sequence[NodeRoom], write: bool) -> StepResult:
        """Plan every job that asks; write the plans when `write` (leader, not dry-run)."""
        result = StepResult()
        if not self.config.worker_plans.enabled:
            self.latest = result
            return result
        try:
            owners = self.owners()
        except HeadstartError as error:
            log.warning("worker plans: cannot list elastic jobs (%s): none this tick", error)
            self.latest = result
            return result
        self._remember_finished(owners)
        jobs = [job for kind, obj in owners
                if (job := kale_job(obj, kind, self.gpu_resource)) is not None]
        groups = {room.name: room.placement_group for room in rooms}
        for job in jobs:
            try:
                plan = self._plan(job, now_s)
            except HeadstartError as error:  # InputError, PrometheusError, ApiCallError
                result.problems[job.key] = str(error)
                continue
            result.plans.append(plan)
            extra = growth(job, plan, self._group(job, groups))
            if extra is not None:
                result.growths.append(extra)
        self._warm_starts(owners, now_s, result)
        for key, problem in result.problems.items():
            if problem not in self._said:
                log.warning("worker plan of %s: %s", key, problem)
        self._said = set(result.problems.values())
        # No plan now and none written before: nothing to write (a cluster without such
        # jobs never gets the ConfigMap); plans that stop being made are cleared once.
        if write and (result.plans or self._wrote_plans):
            result.written = self._write(result.plans)
            self._wrote_plans = bool(result.plans) or not result.written
        self.latest = result
        return result

    def _plan(self, job: KaleJob, now_s: float) -> WorkerPlan:
        if job.problem is not None:
            raise InputError(job.problem)
        if self.prometheus is None:
            raise InputError(f"{job.owner.where}: asks for a worker plan, but the "
                             "overprovisioner has no forecast.prometheus_url to read its "
                             "sample rate from")
        tick = self.config.tick_s
        owner = job.owner
        if job.throughput_query and self.store is not None:
            rate = self.prometheus.series(job.throughput_query, now_s, now_s, tick)[-1]
            if job.ready_workers == owner.size and math.isfinite(rate):
                self.store.write_throughput(job.key, owner.uid, now_s, owner.size, float(rate))
        samples_seen = (self.store.read_throughput(job.key, owner.uid)
                        if self.store is not None else [])
        history = self.prometheus.series(
            job.rate_query, now_s - self.config.worker_plans.history_s, now_s, tick)
        if np.isnan(history).all():
            raise InputError(f"{owner.where}: {job.rate_query}: no sample rate recorded in "
                             "the history window")
        history = forward_fill(history[:, None])
        history = history[~np.isnan(history[:, 0])]
        lag = None
        if job.lag_query:
            lag = float(self.prometheus.series(job.lag_query, now_s, now_s, tick)[-1])
            if not math.isfinite(lag):
                raise InputError(f"{owner.where}: {job.lag_query}: no lag value now")
        return decide(job, samples_seen, float(history[-1, 0]), self._forecast(history),
                      now_s, self.settings, lag)

    def _forecast(self, history: np.ndarray) -> list[float]:
        """The rate's forecast at the quantile for each step to the horizon; [] when the
        history is too short for the model (the plan then follows the rate now)."""
        quantile = self.config.worker_plans.quantile
        model = make_forecaster(self.config.forecast.model, int(self.config.tick_s))
        try:
            model.fit(history)
            forecast = model.predict(history, self.horizon_ticks, (quantile,))
        except NotEnoughHistory:
            return []
        return [float(forecast.at(quantile, step)[0])
                for step in range(1, self.horizon_ticks + 1)]

    def _group(self, job: KaleJob, groups: Mapping[str, str]) -> str:
        label = next(label for kind, _, label in OWNERS if kind == job.owner.kind)
        body = self._get(f"list pods of {job.owner.where}",
                         f"/api/v1/namespaces/{job.owner.namespace}/pods",
                         [("labelSelector", f"{label}={job.owner.name}")]) or {}
        nodes = Counter(groups.get(str((pod.get("spec") or {}).get("nodeName") or ""), "")
                        for pod in body.get("items") or []
                        if (pod.get("spec") or {}).get("nodeName"))
        return nodes.most_common(1)[0][0] if nodes else ""

    def _write(self, plans: Sequence[WorkerPlan]) -> bool:
        namespace = self.config.placeholders.namespace
        name = self.config.worker_plans.configmap
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace,
                             "labels": headstart_labels()},
                "data": encode(plans)}
        try:
            call_with_retry(
                f"apply configmap {namespace}/{name}",
                lambda: self.api.request(
                    "PATCH", f"/api/v1/namespaces/{namespace}/configmaps/{name}",
                    query=[("fieldManager", FIELD_MANAGER), ("force", "true")], body=body,
                    content_type=APPLY_CONTENT_TYPE),
                self.policy, self.rng, self.sleep, self.on_error)
        except HeadstartError as error:
            log.warning("worker plans: cannot write %s/%s (%s)", namespace, name, error)
            return False
        return True
