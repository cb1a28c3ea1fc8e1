"""One loop per tick: record demand, forecast, plan, apply (when leading and not in dry-run).

Decides: the order of a tick, what a failure of each step does, and the model's
lifecycle:
- record: the demand source writes this tick's snapshot; a failure is logged and the
  tick goes on with the history it has (a gap is recorded as a gap by the store);
- forecast: the configured model, refitted every `forecast.retrain_every`; a model
  file that cannot be loaded (corrupt, other buckets) falls back to seasonal naive with
  a warning and a metric; history shorter than the model needs -> the cold-start
  ladder (`forecast.cold_start_placeholders` per type) through the planner's "ladder"
  mode;
- plan: `plan.make_plan` (pure) on per-bucket observations: forecast (quantile), in use
  (the last recorded count: running plus pending pods, embedded), free whole nodes and
  placeholders from the cluster view;
- apply: only when this replica leads (asked again right before writing) and not in
  dry-run. Any failure to observe or
  write leaves the previous placeholders as they are; the tick is reported failed and
  the loop goes on at the next tick (never a crash loop).

Time: `tick(now_s)` is synchronous and takes the time as an argument; `run()` is the
async driver, with the clock and sleep injected, running `tick` in a worker thread
because the kubernetes client blocks.

Must not: build Kubernetes JSON (objects.py) or make API calls itself (apply.py,
observe.py do).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bucketing.catalog import Catalog
from bucketing.errors import ConfigError, HeadstartError, InputError
from overprovisioner.adjust import ForecastAdjuster
from overprovisioner.apply import Applier, ApplyResult, Observed, apply_plan
from overprovisioner.config import OverprovisionerConfig, make_plan_config
from overprovisioner.metrics import Metrics
from overprovisioner.objects import desired_objects, placeholder_name, priority_class
from overprovisioner.observe import ClusterReader, ClusterView, new_preemptions
from overprovisioner.plan import BucketObservation, Mode, Plan, make_plan
from predictor.fallback import FallbackConfig
from predictor.forecast import Forecast, Forecaster, NotEnoughHistory
from predictor.registry import make_forecaster
from predictor.series import DemandSeries, split_column

log = logging.getLogger("headstart.overprovisioner")
Bucket = tuple[str, str]


class DemandSource(Protocol):
    """Where demand history comes from (the recorder + SQLite store in the service)."""

    def record(self, now_s: float) -> None:
        """Write the snapshot of tick `now_s`."""
        ...

    def series(self, now_s: float) -> DemandSeries:
        """The recorded history up to and including `now_s`."""
        ...


# (model_path, series columns) -> a fitted forecaster, or None when no file exists yet;
# raises when the file is unusable or was trained for other columns.
ModelLoader = Callable[[str, Sequence[str]], Forecaster | None]
# (fitted forecaster, model_path, series columns) -> None; saves after each refit.
ModelSaver = Callable[[Forecaster, str, Sequence[str]], None]


@dataclass(frozen=True)
class BucketForecast:
    """point: point forecast at the horizon; quantile: what the plan uses (the forecast
    quantile after fallback and stabilization); in_use: the last recorded value (nodes
    running + pending pods occupy now); raw_quantile: the quantile before adjustment;
    reactive: the fallback has this series planning reactively."""

    point: float
    quantile: float
    in_use: float
    raw_quantile: float = 0.0
    reactive: bool = False


@dataclass(frozen=True)
class TickReport:
    """What one tick did; `/plan` serves the latest."""

    time_s: float
    ok: bool
    leader: bool
    dry_run: bool
    model: str
    mode: str
    plan: Plan | None
    forecasts: Mapping[Bucket, BucketForecast] = field(default_factory=dict)
    applied: ApplyResult | None = None
    errors: tuple[str, ...] = ()


@dataclass
class ModelState:
    """The forecaster in use, when it was fitted, and on which columns."""

    forecaster: Forecaster | None = None
    name: str = ""
    fitted_at: float = -math.inf
    columns: tuple[str, ...] = ()


class OverprovisionerLoop:
    """Ties the steps together; one instance per service, `tick` called once per tick."""

    def __init__(
        self,
        config: OverprovisionerConfig,
        catalog: Catalog,
        demand: DemandSource,
        metrics: Metrics,
        reader: ClusterReader | None = None,
        applier: Applier | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        load_model: ModelLoader | None = None,
        save_model: ModelSaver | None = None,
    ) -> None:
        self.config = config
        self.catalog = catalog
        self.demand = demand
        self.metrics = metrics
        self.reader = reader
        self.applier = applier
        self.is_leader = is_leader
        self.load_model = load_model
        self.save_model = save_model
        self.plan_config = make_plan_config(config)
        forecast = config.forecast
        self.adjuster = ForecastAdjuster(
            horizon_ticks=config.horizon_ticks,
            tau_ticks=max(0, math.ceil(forecast.stabilize_tau_s / config.tick_s - 1e-9)),
            rho=forecast.stabilize_rho,
            fallback=FallbackConfig(forecast.fallback_window_ticks,
                                    forecast.fallback_enter_mean_shortfall,
                                    forecast.fallback_exit_mean_shortfall),
        )
        self.model = ModelState()
        self.latest: TickReport | None = None
        self._events_seen: dict[str, int] = {}
        self._model_loaded = False  # model_path is read once, on the first tick
        self._wake: asyncio.Event | None = None
        self._event_loop: asyncio.AbstractEventLoop | None = None
        metrics.dry_run.set(1 if config.dry_run else 0)
        metrics.leader.set_function(lambda: 1.0 if self.is_leader() else 0.0)

    # -------------------------------------------------------------------- model
    def _initial_model(self, columns: Sequence[str]) -> ModelState:
        """The configured model, loaded from model_path when one is set (fitted), else
        unfitted. A file that cannot be used falls back to seasonal naive."""
        forecast = self.config.forecast
        if forecast.model_path and self.load_model is not None:
            try:
                return ModelState(self.load_model(forecast.model_path, columns), forecast.model)
            except ConfigError as error:  # trained for other buckets or another tick
                log.warning("model %s does not match this config (%s); fitting %s from the "
                            "history", forecast.model_path, error, forecast.model)
                self.metrics.model_fallbacks.labels("model_mismatch").inc()
                return ModelState(None, forecast.model)
            except (HeadstartError, OSError, ValueError) as error:
                log.warning("model %s unusable (%s); falling back to seasonal naive",
                            forecast.model_path, error)
                self.metrics.model_fallbacks.labels("corrupt_model").inc()
                return ModelState(None, "seasonal")
        return ModelState(None, forecast.model)

    def _fresh(self, name: str) -> Forecaster:
        if name in ("last", "seasonal", "seasonal_week"):
            # Residual quantiles are kept up to max_horizon steps: cover the horizon.
            return make_forecaster(name, int(self.config.tick_s),
                                   max_horizon=max(12, self.config.horizon_ticks))
        return make_forecaster(name, int(self.config.tick_s))

    def _ensure_model(self, series: DemandSeries, now_s: float) -> None:
        """Load once, then (re)fit when never fitted, due, or the columns changed."""
        columns = tuple(series.columns)
        if not self._model_loaded:
            self._model_loaded = True
            self.model = self._initial_model(columns)
            if self.model.forecaster is not None:  # a loaded model counts as fitted now
                self.model = ModelState(self.model.forecaster, self.model.name, now_s, columns)
        due = now_s - self.model.fitted_at >= self.config.forecast.retrain_every_s
        if self.model.forecaster is not None and not due and self.model.columns == columns:
            return
        name = self.model.name
        forecaster = self._fresh(name)
        history, first_tick = series.history(), self._first_tick(series)
        try:
            forecaster.fit(history, first_tick=first_tick)
        except NotEnoughHistory:
            raise
        except InputError as error:
            log.warning("fitting %s failed (%s); using last value", name, error)
            self.metrics.model_fallbacks.labels("fit_failed").inc()
            name, forecaster = "last", self._fresh("last")
            forecaster.fit(history, first_tick=first_tick)
        self.model = ModelState(forecaster, name, now_s, columns)
        if self.save_model is not None and self.config.forecast.model_path and (
            name == self.config.forecast.model
        ):
            try:
                self.save_model(forecaster, self.config.forecast.model_path, columns)
            except (HeadstartError, OSError) as error:
                log.warning("could not save the model to %s: %s",
                            self.config.forecast.model_path, error)

    def _first_tick(self, series: DemandSeries) -> int:
        return int(round(series.times[0] / series.tick_s)) if len(series) else 0

    def forecast(self, series: DemandSeries, now_s: float) -> dict[Bucket, BucketForecast]:
        """Per bucket (type, group): point and quantile forecast at the horizon.

        Raises NotEnoughHistory when the model cannot forecast yet (cold start).
        """
        self._ensure_model(series, now_s)
        assert self.model.forecaster is not None
        history = series.history()
        quantile = self.config.forecast.quantile
        first_tick = self._first_tick(series)
        try:
            result = self._predict(history, first_tick)
        except NotEnoughHistory:
            raise
        except InputError as error:
            # E.g. a loaded model that does not fit this history: refit once, then retry.
            log.warning("%s cannot forecast this history (%s); refitting", self.model.name,
                        error)
            self.model = ModelState(None, self.model.name)
            self._ensure_model(series, now_s)
            result = self._predict(history, first_tick)
        horizon = self.config.horizon_ticks
        steps = result.horizon_ticks
        ahead = np.stack([result.at(quantile, s) for s in range(1, steps + 1)])
        tick = int(round(now_s / self.config.tick_s))
        adjusted = self.adjuster.adjust(series.columns, tick, history[-1], ahead)
        point = result.at(None, horizon)
        last = _last_observed(history)
        forecasts: dict[Bucket, BucketForecast] = {}
        for index, column in enumerate(series.columns):
            bucket, group = split_column(column)
            if bucket not in self.catalog.names:
                continue  # a bucket recorded under an older config
            forecasts[(bucket, group or "")] = BucketForecast(
                point=float(point[index]),
                quantile=float(adjusted.planned[index]),
                in_use=float(last[index]),
                raw_quantile=float(ahead[horizon - 1, index]),
                reactive=adjusted.reactive[index],
            )
        return forecasts

    def _predict(self, history: np.ndarray, first_tick: int) -> Forecast:
        """The forecast for horizon + tau steps (for stabilization), or just the horizon
        when the model was fitted for fewer steps."""
        assert self.model.forecaster is not None
        quantiles = (self.config.forecast.quantile,)
        try:
            return self.model.forecaster.predict(history, self.adjuster.steps, quantiles,
                                                 first_tick=first_tick)
        except NotEnoughHistory:
            raise
        except InputError:
            return self.model.forecaster.predict(history, self.config.horizon_ticks, quantiles,
                                                 first_tick=first_tick)

    # --------------------------------------------------------------------- tick
    def observations(
        self, forecasts: Mapping[Bucket, BucketForecast], view: ClusterView | None,
        existing: Mapping[Bucket, int] | None = None,
    ) -> list[BucketObservation]:
        """One observation per bucket: configured groups, forecast columns, nodes seen.

        placeholders: the replicas headstart's objects ask for now (running or pending,
        which the planner keeps in their groups), else the placeholder pods on nodes."""
        existing = existing or {}
        buckets: set[Bucket] = set(forecasts)
        for name in self.config.instance_types:
            for group in self.plan_config.groups(name):
                buckets.add((name, group))
        if view is not None:
            buckets |= {b for b in view.nodes if b[0] in self.config.instance_types}
        observations = []
        for instance_type, group in sorted(buckets):
            forecast = forecasts.get((instance_type, group))
            observations.append(BucketObservation(
                instance_type=instance_type,
                placement_group=group,
                forecast=forecast.quantile if forecast else 0.0,
                in_use=math.ceil(forecast.in_use - 1e-9) if forecast else 0,
                free=view.free_nodes.get((instance_type, group), 0) if view else 0,
                placeholders=existing.get(
                    (instance_type, group),
                    view.placeholders_running.get((instance_type, group), 0) if view else 0,
                ),
            ))
        return observations

    def tick(self, now_s: float) -> TickReport:
        """Run one tick at time `now_s`; never raises for API or data faults."""
        errors: list[str] = []
        leader = bool(self.is_leader())
        try:
            self.demand.record(now_s)
        except Exception as error:  # the tick goes on with the history it has
            errors.append(f"record: {type(error).__name__}: {error}")
            log.warning("recording demand failed: %s", error)
        mode, forecasts = self._forecast_step(now_s, errors)
        model_name = self.model.name or self.config.forecast.model
        self.metrics.set_model(model_name, mode)
        try:
            view, observed = self._observe_step()
            plan = make_plan(
                self.observations(forecasts, view, observed.replicas() if observed else {}),
                self.plan_config, self.catalog, mode=mode,
                ladder={name: self.config.forecast.cold_start_placeholders
                        for name in self.config.instance_types},
                # A type whose forecast misses badly in any of its series acts reactively.
                bucket_modes={instance_type: "fallback"
                              for (instance_type, _), f in forecasts.items() if f.reactive},
            )
        except HeadstartError as error:
            return self._failed(now_s, leader, model_name, mode, forecasts,
                                [*errors, f"observe/plan: {error}"])
        self._export_plan(plan, forecasts, view)
        applied = None
        if leader and not self.config.dry_run and self.applier is not None:
            # Ask again: recording and forecasting (a refit) can outlast the Lease, and a
            # replica that lost it must not write over its successor's placeholders.
            leader = bool(self.is_leader())
            if leader:
                applied = self._apply_step(plan, observed, view, errors)
        ok = not errors
        report = TickReport(now_s, ok, leader, self.config.dry_run, model_name, mode, plan,
                            forecasts, applied, tuple(errors))
        self.metrics.ticks.labels("ok" if ok else "partial").inc()
        if ok:
            self.metrics.last_success.set(now_s)
        self.latest = report
        return report

    def _forecast_step(
        self, now_s: float, errors: list[str]
    ) -> tuple[Mode, dict[Bucket, BucketForecast]]:
        """("forecast", per-bucket forecasts), or ("ladder", {}) when there is none."""
        try:
            series = self.demand.series(now_s)
        except InputError as error:  # nothing recorded yet: a cold start, not a fault
            log.info("no usable history yet (%s): using the ladder", error)
            return "ladder", {}
        except Exception as error:  # an unreadable store must not stop the placeholders
            errors.append(f"history: {type(error).__name__}: {error}")
            log.exception("reading the history failed: using the ladder")
            self.metrics.model_fallbacks.labels("forecast_error").inc()
            return "ladder", {}
        try:
            return "forecast", self.forecast(series, now_s)
        except NotEnoughHistory as error:
            log.info("cold start (%s): using the ladder", error)
        except InputError as error:
            errors.append(f"forecast: {error}")
            log.warning("no forecast (%s): using the ladder", error)
        except Exception as error:  # a broken model must not stop the placeholders
            errors.append(f"forecast: {type(error).__name__}: {error}")
            log.exception("forecast failed: using the ladder")
            self.metrics.model_fallbacks.labels("forecast_error").inc()
        return "ladder", {}

    def _observe_step(self) -> tuple[ClusterView | None, Observed | None]:
        """Nodes, pods and headstart's placeholder objects (read-only: followers and
        dry-run observe too). Raises ApiCallError when the cluster cannot be read."""
        view = None
        if self.reader is not None:
            view = self.reader.view(self.config.instance_types,
                                    self.config.placeholders.placement_group_label)
        observed = self.applier.observe() if self.applier is not None else None
        return view, observed

    def _apply_step(self, plan: Plan, observed: Observed | None, view: ClusterView | None,
                    errors: list[str]) -> ApplyResult | None:
        assert self.applier is not None
        try:
            applied, observed = apply_plan(
                self.applier, lambda backend: self._desired(plan, backend),
                priority_class(self.config), observed,
            )
        except HeadstartError as error:
            log.error("apply failed, previous placeholders left in place: %s", error)
            errors.append(f"apply: {error}")
            return None
        if view is None or applied.backend == "capacitybuffer":
            # CapacityBuffer placeholders are simulated by CA, not pods: use their status.
            self.metrics.set_buckets(self.metrics.running, observed.running())
        for error in applied.errors:
            log.error("apply: %s", error)
            errors.append(str(error))
        self._count_hits(plan)
        return applied

    def _failed(self, now_s: float, leader: bool, model: str, mode: str,
                forecasts: Mapping[Bucket, BucketForecast], errors: list[str]) -> TickReport:
        for error in errors:
            log.error("tick failed, previous placeholders left in place: %s", error)
        self.metrics.ticks.labels("failed").inc()
        previous = self.latest.plan if self.latest else None
        report = TickReport(now_s, False, leader, self.config.dry_run, model, mode, previous,
                            forecasts, None, tuple(errors))
        self.latest = report
        return report

    def _desired(self, plan: Plan, backend: str) -> Sequence[Any]:
        grouped = self.config.limits.placement_groups
        # A type with configured groups never gets an ungrouped placeholder object.
        buckets = [b for b in plan.buckets
                   if b.placement_group or not grouped.get(b.instance_type)]
        return desired_objects(buckets, self.config, self.catalog, backend)

    def _export_plan(self, plan: Plan, forecasts: Mapping[Bucket, BucketForecast],
                     view: ClusterView | None) -> None:
        m = self.metrics
        m.set_buckets(m.forecast, {b: f.point for b, f in forecasts.items()})
        m.set_buckets(m.forecast_quantile, {b: f.quantile for b, f in forecasts.items()},
                      f"{self.config.forecast.quantile:g}")
        m.set_buckets(m.wanted, {(b.instance_type, b.placement_group): b.wanted
                                 for b in plan.buckets})
        if view is not None:
            m.set_buckets(m.running, view.placeholders_running)
        m.cost.set(plan.cost_per_hour)

    def _count_hits(self, plan: Plan) -> None:
        if self.reader is None:
            return
        try:
            events = self.reader.preemption_events(self.config.placeholders.namespace)
        except HeadstartError as error:
            log.warning("reading preemption events failed: %s", error)
            return
        names = {placeholder_name(b.instance_type, b.placement_group):
                 (b.instance_type, b.placement_group) for b in plan.buckets}
        hits, self._events_seen = new_preemptions(events, self._events_seen, names)
        for (instance_type, group), count in hits.items():
            self.metrics.hits.labels(instance_type, group).inc(count)
            self.metrics.pending_avoided.inc(count * self.config.horizon_ticks
                                             * self.config.tick_s)

    # ---------------------------------------------------------------------- run
    async def run(
        self,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[Any]],
        stop: asyncio.Event,
    ) -> None:
        """Tick on the tick grid (multiples of tick_s) until `stop` is set."""
        tick_s = self.config.tick_s
        self._wake = asyncio.Event()
        self._event_loop = asyncio.get_running_loop()
        while not stop.is_set():
            self._wake.clear()
            now = clock()
            tick_time = math.floor(now / tick_s) * tick_s
            try:
                await asyncio.to_thread(self.tick, tick_time)
            except Exception:  # a bug must not kill the service's only loop
                log.exception("tick at %s raised", tick_time)
                self.metrics.ticks.labels("failed").inc()
            wait = tick_time + tick_s - clock()
            if wait > 0:
                waits = [asyncio.ensure_future(sleep(wait)), asyncio.ensure_future(stop.wait()),
                         asyncio.ensure_future(self._wake.wait())]
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for task in waits:
                    task.cancel()

    def wake(self) -> None:
        """Run the next tick now (thread-safe): e.g. this replica just became the leader,
        so it applies the current plan instead of waiting up to a tick."""
        if self._event_loop is not None and self._wake is not None:
            self._event_loop.call_soon_threadsafe(self._wake.set)


def _last_observed(history: np.ndarray) -> np.ndarray:
    """Per column, the last non-NaN value (0 when a column was never observed)."""
    last = np.zeros(history.shape[1])
    for column in range(history.shape[1]):
        values = history[:, column]
        observed = values[~np.isnan(values)]
        if len(observed):
            last[column] = observed[-1]
    return last
