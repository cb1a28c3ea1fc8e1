"""One loop per tick: record demand, forecast, plan, apply (when leading and not in dry-run).

Decides: the order of a tick and what a failure of each step does:
- record: the demand source writes this tick's snapshot; a failure is logged and the
  tick goes on with the history it has (a gap is recorded as a gap by the store);
- forecast: `ServiceForecaster` (forecasting.py: the model's lifecycle); history
  shorter than the model needs -> the cold-start ladder
  (`forecast.cold_start_placeholders` per type) through the planner's "ladder" mode;
- headroom (config `headroom` set): no forecast; the plan is that headroom's count per
  type (`planner.headroom.headroom_plan`, the simulator's peers' rule), mode "headroom";
- plan: `plan.make_plan` (pure) on per-bucket observations: forecast (quantile), in use
  (the last recorded count: running plus pending pods, embedded), free whole nodes and
  placeholders from the cluster view, and the known-ahead demand due within the horizon
  when the demand source records it (then the model forecasts only the unannounced
  demand: overprovisioner.planner.known_plan);
- worker plans (when a `WorkerPlanner` is given): KALE's plans for the elastic jobs
  that ask (overprovisioner.service.worker_planner; written by the leader), their
  planned growth added to the known nodes in each job's placement group
  (known_plan.growth_nodes); a failure plans without them;
- pin: the plan's placeholders of each (type, group) split over the zones and capacity
  types pods were pinned to within `placeholders.pin_window` (pinned_plan, when the
  demand source records pinned demand): a refinement of the plan, whose arithmetic
  stays per (type, group); a failure to read it leaves every placeholder unpinned;
- size: what one placeholder of each type requests (`sizing.size_placeholders`, pure:
  measured on live nodes, else the fraction rule);
- apply: only when this replica leads (asked again right before writing) and not in
  dry-run. Any failure to observe or write leaves the previous placeholders as they
  are; the tick is reported failed and the loop goes on at the next tick (never a
  crash loop);
- check: hits and the buckets whose placeholders cannot work (checks.py), on every
  replica (read-only).

Time: `tick(now_s)` is synchronous and takes the time as an argument; `run()` is the
async driver, with the clock and sleep injected, running `tick` in a worker thread
because the kubernetes client blocks. `wake(reason)` runs the next tick at once (from
any thread): when this replica wins the Lease, and `wake_debounced` a few seconds after
a placeholder pod is preempted, so the plan counts the node the real pod just took.

Must not: build Kubernetes JSON (objects.py) or make API calls itself (apply.py,
observe.py do).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from bucketing.catalog import Catalog
from common.errors import HeadstartError, InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.catalog import (
    capacity_type_label,
    config_warnings,
    make_plan_config,
)
from overprovisioner.planner.forecasting import (
    BucketForecast,
    ModelLoader,
    ModelSaver,
    ServiceForecaster,
    first_tick,
)
from overprovisioner.planner.headroom import headroom_plan
from overprovisioner.planner.known_plan import (
    growth_nodes,
    known_nodes,
    known_source_nodes,
    with_growth,
)
from overprovisioner.planner.pinned_plan import PlacedColumn, place_columns, split_from_history
from overprovisioner.planner.plan import BucketObservation, Mode, Plan
from overprovisioner.planner.sizing import size_placeholders
from overprovisioner.planner.tick_core import forecast_demand, observations, plan_tick
from overprovisioner.policy_names import parse_headroom
from overprovisioner.service.apply import Applier, ApplyResult, apply_plan
from overprovisioner.service.checks import PlaceholderChecks
from overprovisioner.service.daemon_thread import in_daemon_thread
from overprovisioner.service.expiry import shrink_to_floor
from overprovisioner.service.faults import FAULTS, collect_faults
from overprovisioner.service.metrics import Metrics
from overprovisioner.service.objects import desired_objects, placeholder_name, priority_class
from overprovisioner.service.observe import ClusterReader, ClusterView
from overprovisioner.service.observed import Observed
from overprovisioner.service.ports import Bucket, DemandSource, TickReport
from overprovisioner.service.worker_planner import WorkerPlanner
from predictor.live.known_recording import KnownState
from predictor.models.forecast import NotEnoughHistory

log = logging.getLogger("headstart.overprovisioner")

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
        lease_vacant: Callable[[], bool] = lambda: False,
        worker_planner: WorkerPlanner | None = None,
    ) -> None:
        self.config = config
        self.worker_planner = worker_planner
        self.catalog = catalog
        self.demand = demand
        self.metrics = metrics
        self.reader = reader
        self.applier = applier
        self.is_leader = is_leader
        self.lease_vacant = lease_vacant
        # headstart's placeholder objects as last observed: what the leader shrinks
        # when a tick cannot observe them any more (overprovisioner.service.expiry).
        self.last_objects: Mapping[Any, Mapping[str, Any]] = {}
        # This tick's failures as typed errors (faults.py sorts out the faults), and the
        # faults standing after the last tick (each is logged when it appears and clears).
        self._tick_errors: list[HeadstartError] = []
        self.faults: dict[str, str] = {}
        self._buffer_problem = ""
        self.plan_config = make_plan_config(config)
        # A headroom users run today, applied instead of the forecast (config.headroom).
        self.headroom = parse_headroom(config.headroom) if config.headroom else None
        # What the config allows but can never do (served in /plan; cli.py logs them).
        self.config_warnings = config_warnings(config, catalog)
        self.forecaster = ServiceForecaster(config, catalog, metrics, load_model, save_model)
        self.latest: TickReport | None = None
        # Consecutive failed ticks: an outage is logged once, at its first tick, and once
        # when a tick succeeds again, not on every tick in between.
        self.failed_ticks = 0
        self.checks = PlaceholderChecks(config, reader, metrics)
        self._wake: asyncio.Event | None = None
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self._debounce: asyncio.TimerHandle | None = None
        metrics.dry_run.set(1 if config.dry_run else 0)
        metrics.leader.set_function(lambda: 1.0 if self.is_leader() else 0.0)

    # --------------------------------------------------------------------- tick
    def observations(
        self, forecasts: Mapping[Bucket, BucketForecast], view: ClusterView | None,
        existing: Mapping[Bucket, int] | None = None,
        known: Mapping[Bucket, float] | None = None,
    ) -> list[BucketObservation]:
        """One observation per bucket (tick_core.observations) from the cluster view:
        placeholders are the replicas headstart's objects ask for now, else the
        placeholder pods on nodes."""
        placeholders = dict(view.placeholders_running) if view is not None else {}
        placeholders.update(existing or {})
        return observations(self.config, self.plan_config, forecasts, known or {},
                            view.free_nodes if view is not None else {}, placeholders,
                            view.nodes if view is not None else ())

    def tick(self, now_s: float) -> TickReport:
        """Run one tick at time `now_s`; never raises for API or data faults."""
        errors: list[str] = []
        self._tick_errors = []
        leader = bool(self.is_leader())
        try:
            self.demand.record(now_s)
        except Exception as error:  # the tick goes on with the history it has
            errors.append(f"record: {type(error).__name__}: {error}")
            (log.debug if self.failed_ticks else log.warning)("recording demand failed: %s",
                                                              error)
        known = self._known_step(now_s, errors)
        self.metrics.set_known(known_nodes(known), known_source_nodes(known),
                               known.values.pods if known else {})
        if self.headroom is not None:  # the configured headroom, not a forecast
            mode, forecasts, model_name = "headroom", {}, self.config.headroom
        else:
            mode, forecasts = self._forecast_step(now_s, errors, known)
            model_name = self.forecaster.model.name or self.config.forecast.model
        self.metrics.set_model(model_name, mode)
        try:
            view, observed = self._observe_step()
            sizes = size_placeholders(
                self.config, self.catalog, view.rooms if view else (), now_s,
                observed.applied_requests(self.catalog.gpu_resource) if observed else {},
            )
            existing = observed.replicas() if observed else {}
            growth = self._worker_step(now_s, view, leader, errors)
            if growth:  # the known gauges with the planned growth, a source of its own
                self.metrics.set_known(
                    with_growth(known_nodes(known), growth),
                    {**known_source_nodes(known),
                     **{(b, g, "worker_plans"): v for (b, g), v in growth.items()}},
                    known.values.pods if known else {})
            if self.headroom is not None:
                plan = headroom_plan(
                    self.headroom, self.config.instance_types, self.plan_config,
                    self.catalog, now_s, _nodes_per_type(view),
                    self.observations({}, view, existing))
            else:
                plan = plan_tick(
                    self.config, self.plan_config, self.catalog, mode, forecasts,
                    self.observations(forecasts, view, existing,
                                      with_growth(known_nodes(known), growth)))
        except HeadstartError as error:
            self._tick_errors.append(error)
            return self._failed(now_s, leader, model_name, mode, forecasts,
                                [*errors, f"observe/plan: {error}"])
        if observed is not None:
            self.last_objects = observed.objects
            self._buffer_problem = observed.capacity_buffer_problem
        columns = self._pin_step(now_s, plan, errors)
        self._export_plan(plan, forecasts, view, columns)
        requests = {name: size.request for name, size in sizes.items()}
        applied = None
        if leader and not self.config.dry_run and self.applier is not None:
            # Ask again: recording and forecasting (a refit) can outlast the Lease, and a
            # replica that lost it must not write over its successor's placeholders.
            leader = bool(self.is_leader())
            if leader:
                applied = self._apply_step(columns, requests, observed, view, errors, now_s)
        if applied is not None and observed is not None:
            self.last_objects = applied.objects_after(observed)
        expired = self._expiry_step(
            now_s, leader, observed.objects if observed is not None else {},
            (applied.renewed | applied.pruned_keys) if applied is not None else frozenset(),
            errors)
        checks = self.checks.run(
            now_s, [(b.instance_type, b.placement_group) for b in self._placed(plan)],
            requests, view, observed, count_hits=applied is not None,
            object_names={placeholder_name(c.instance_type, c.placement_group, c.pin): c.bucket
                          for c in columns},
        )
        ok = not errors
        faults = self._update_faults(checks.autoscaler.detail)
        report = TickReport(now_s, ok, leader, self.config.dry_run, model_name, mode, plan,
                            forecasts, applied, tuple(errors), known, sizes, checks, expired,
                            faults, columns)
        self.metrics.ticks.labels("ok" if ok else "partial").inc()
        if ok:
            self.metrics.last_success.set(now_s)
            if self.failed_ticks:
                log.info("ticks succeed again after %d failed", self.failed_ticks)
            self.failed_ticks = 0
        self.latest = report
        return report

    def _known_step(self, now_s: float, errors: list[str]) -> KnownState | None:
        """The known demand the source recorded at this tick (None: not recorded)."""
        known = self.demand.known
        if known is None:
            return None
        try:
            return known.state(now_s)
        except Exception as error:  # a broken source must not stop the placeholders
            errors.append(f"known demand: {type(error).__name__}: {error}")
            log.exception("reading the known demand failed: planning without it")
            return None

    def _worker_step(self, now_s: float, view: ClusterView | None, leader: bool,
                     errors: list[str]) -> dict[Bucket, float]:
        """Nodes of the elastic jobs' planned growth per (bucket, group); {} without a
        worker planner or when it fails (the placeholders are planned without it)."""
        if self.worker_planner is None:
            return {}
        try:
            result = self.worker_planner.step(now_s, view.rooms if view is not None else (),
                                              write=leader and not self.config.dry_run)
        except Exception as error:  # a broken planner must not stop the placeholders
            errors.append(f"worker plans: {type(error).__name__}: {error}")
            log.exception("worker plans failed: planning placeholders without them")
            return {}
        self.metrics.set_worker_plans(len(result.plans), len(result.problems))
        types = [self.catalog.get(name) for name in self.config.instance_types
                 if name in self.catalog.names]
        return growth_nodes(result.growths, types)

    def _forecast_step(
        self, now_s: float, errors: list[str], known: KnownState | None = None
    ) -> tuple[Mode, dict[Bucket, BucketForecast]]:
        """("forecast", per-bucket forecasts), or ("ladder", {}) when there is none.

        With known demand recorded, the model sees the unannounced history and the
        announced demand running now is added back (overprovisioner.planner.known_plan)."""
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
            source = self.demand.known
            announced = None if known is None or source is None else source.announced(series)
            return "forecast", forecast_demand(self.forecaster, series.history(),
                                               series.columns, first_tick(series), now_s,
                                               announced)
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

    def _pin_step(self, now_s: float, plan: Plan, errors: list[str]
                  ) -> tuple[PlacedColumn, ...]:
        """The placed buckets split over the zones and capacity types pods were pinned to
        within the pin window (pinned_plan); all unpinned when the source records no
        pinned demand or it cannot be read."""
        planned = [(b.instance_type, b.placement_group, b.wanted) for b in self._placed(plan)]
        source = self.demand.pinned
        if source is not None:
            window_s = self.config.placeholders.pin_window_s
            try:
                counts, history = source.read(now_s - window_s, now_s + self.config.tick_s)
                return split_from_history(planned, counts, history,
                                          capacity_type_label(self.config))
            except InputError as error:  # no bucket counts in the window: nothing to split
                log.debug("no pinned split this tick: %s", error)
            except Exception as error:  # placeholders unpinned are still placeholders
                errors.append(f"pinned demand: {type(error).__name__}: {error}")
                log.exception("reading the pinned demand failed: placeholders stay unpinned")
        return place_columns(planned, {}, {})

    def _observe_step(self) -> tuple[ClusterView | None, Observed | None]:
        """Nodes, pods and headstart's placeholder objects (read-only: followers and
        dry-run observe too). Raises ApiCallError when the cluster cannot be read."""
        view = None
        if self.reader is not None:
            view = self.reader.view(self.config.instance_types,
                                    self.config.placeholders.placement_group_label,
                                    self.catalog.gpu_resource)
        observed = self.applier.observe() if self.applier is not None else None
        return view, observed

    def _apply_step(self, columns: Sequence[PlacedColumn], requests: Mapping[str, Any],
                    observed: Observed | None,
                    view: ClusterView | None, errors: list[str], now_s: float
                    ) -> ApplyResult | None:
        assert self.applier is not None
        valid_until = now_s + self.config.placeholders.expire_after_s
        try:
            applied, observed = apply_plan(
                self.applier,
                lambda backend, buffer_api: desired_objects(
                    columns, self.config, self.catalog, backend, requests,
                    buffer_api or None, valid_until),
                priority_class(self.config), observed,
            )
        except HeadstartError as error:
            self._tick_errors.append(error)
            log.error("apply failed, previous placeholders left in place until they expire: "
                      "%s", error)
            errors.append(f"apply: {error}")
            return None
        if view is None or applied.backend == "capacitybuffer":
            # CapacityBuffer placeholders are simulated by CA, not pods: use their status.
            self.metrics.set_buckets(self.metrics.running, observed.running())
        self._tick_errors.extend(applied.errors)
        for error in applied.errors:
            log.error("apply: %s", error)
            errors.append(str(error))
        return applied

    def _expiry_step(self, now_s: float, leader: bool, objects: Mapping[Any, Mapping[str, Any]],
                     renewed: frozenset[Any], errors: list[str]) -> tuple[str, ...]:
        """The dead-man's switch (overprovisioner.service.expiry): scale headstart's objects whose
        `headstart.io/valid-until` has passed, and that this tick did not renew, down to
        the floor. The leader does it after its own writes (they failed, or the object's
        bucket did); a standby only while the Lease is held by nobody, so it never
        fights a live leader. Best effort: a write that fails is one more error."""
        if self.applier is None or self.config.dry_run or not objects:
            return ()
        if not leader and not self.lease_vacant():
            return ()
        floors = {name: self.plan_config.limits(name).min for name in self.config.instance_types}
        shrunk = []
        for key, replicas in sorted(shrink_to_floor(objects, now_s, floors, renewed).items(),
                                    key=lambda item: item[0][3]):
            try:
                shrunk.append(f"{self.applier.scale(key, replicas, objects[key].get('metadata'))}"
                              f" to {replicas}")
            except HeadstartError as error:
                self._tick_errors.append(error)
                errors.append(f"expire: {error}")
        if shrunk:
            by = "leader" if leader else "standby"
            self.metrics.expired.labels(by).inc(len(shrunk))
            log.warning("placeholders not renewed within %gs scaled to the floor by the %s: %s",
                        self.config.placeholders.expire_after_s, by, "; ".join(shrunk))
        return tuple(shrunk)

    def _update_faults(self, autoscaler_detail: str) -> dict[str, str]:
        """This tick's faults (faults.py): each logged once when it appears and once when
        it clears, and exported as headstart_overprovisioner_fault{fault}."""
        faults = collect_faults(self._tick_errors, self._buffer_problem, autoscaler_detail)
        for name, reason in faults.items():
            if name not in self.faults:
                log.error("fault %s: %s", name, reason)
        for name in self.faults.keys() - faults.keys():
            log.info("fault %s cleared", name)
        for name in FAULTS:
            self.metrics.fault.labels(name).set(1 if name in faults else 0)
        self.faults = faults
        return faults

    def _failed(self, now_s: float, leader: bool, model: str, mode: str,
                forecasts: Mapping[Bucket, BucketForecast], errors: list[str]) -> TickReport:
        # The tick could not observe: shrink what was last seen, once it has expired.
        expired = self._expiry_step(now_s, leader, self.last_objects, frozenset(), errors)
        said = log.debug if self.failed_ticks else log.error
        for error in errors:
            said("tick failed, previous placeholders left in place until they expire: %s%s",
                 error,
                 "" if self.failed_ticks else " (said once until a tick succeeds; "
                 "headstart_overprovisioner_ticks_total{result=\"failed\"} counts them)")
        self.failed_ticks += 1
        self.metrics.ticks.labels("failed").inc()
        previous = self.latest.plan if self.latest else None
        faults = self._update_faults(self.latest.checks.autoscaler.detail if self.latest
                                     else "")
        report = TickReport(now_s, False, leader, self.config.dry_run, model, mode, previous,
                            forecasts, None, tuple(errors), expired=expired, faults=faults)
        self.latest = report
        return report

    def _placed(self, plan: Plan) -> Sequence[Any]:
        """The plan's buckets that get placeholder objects: a type with configured
        groups never gets an ungrouped one."""
        grouped = self.config.limits.placement_groups
        return [b for b in plan.buckets if b.placement_group or not grouped.get(b.instance_type)]

    def _export_plan(self, plan: Plan, forecasts: Mapping[Bucket, BucketForecast],
                     view: ClusterView | None, columns: Sequence[PlacedColumn]) -> None:
        m = self.metrics
        m.set_buckets(m.forecast, {b: f.point for b, f in forecasts.items()})
        m.set_buckets(m.forecast_quantile, {b: f.quantile for b, f in forecasts.items()},
                      f"{self.config.forecast.quantile:g}")
        m.set_buckets(m.wanted, {(b.instance_type, b.placement_group): b.wanted
                                 for b in plan.buckets})
        m.set_pinned(m.wanted_pinned, {
            (c.instance_type, c.placement_group, c.pin.zone or "", c.pin.capacity_type or ""):
            c.wanted for c in columns})
        if view is not None:
            m.set_buckets(m.running, view.placeholders_running)
        m.cost.set(plan.cost_per_hour)

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
                # A daemon thread, not asyncio.to_thread: a tick stuck in API retries
                # must not keep a stopping process alive (daemon_thread.py).
                await in_daemon_thread(self.tick, tick_time, name="headstart-tick")
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

    def wake(self, reason: str = "leader") -> None:
        """Run the next tick now (thread-safe): e.g. this replica just became the leader,
        so it applies the current plan instead of waiting up to a tick."""
        if self._event_loop is not None and self._wake is not None:
            self.metrics.wakeups.labels(reason).inc()
            self._event_loop.call_soon_threadsafe(self._wake.set)

    def wake_debounced(self, reason: str = "preemption") -> None:
        """Run a tick `placeholders.wake_debounce` from the first call (thread-safe);
        calls until then join that one tick (a job's pods preempt several placeholders
        within a second or two)."""
        if self._event_loop is not None and self._wake is not None:
            self._event_loop.call_soon_threadsafe(self._arm_debounce, reason)

    def _arm_debounce(self, reason: str) -> None:
        if self._debounce is not None and not self._debounce.cancelled():
            return  # a wake-up is already on its way
        assert self._event_loop is not None

        def fire() -> None:
            self._debounce = None
            self.wake(reason)

        self._debounce = self._event_loop.call_later(
            self.config.placeholders.wake_debounce_s, fire)


def _nodes_per_type(view: ClusterView | None) -> dict[str, int]:
    """The registered nodes of each type, over its groups (what a proportional headroom
    counts, as cluster-proportional-autoscaler counts the nodes its labels select)."""
    nodes: dict[str, int] = {}
    for (instance_type, _), count in (view.nodes if view is not None else {}).items():
        nodes[instance_type] = nodes.get(instance_type, 0) + count
    return nodes
