"""One loop per tick: observe -> decide (pure) -> apply (when leading and not in dry-run).

Decides: the order of a tick, and what a failure of the decision or of a write does:
- observe (tick_observe.py): the tick's frozen `Observation`: recorded demand, known
  demand, the model's forecast (or the ladder, or a configured headroom), the cluster,
  the elastic jobs' planned growth, pinned demand; each part's failure is handled there;
  a cluster that cannot be read fails the tick;
- decide (`planner.tick_decision.decide_tick`, pure, on the observation's
  `TickObservation`): the plan, one placeholder's size per type, the columns to write;
  a configuration that cannot be planned fails the tick;
- apply: only when this replica leads (asked again right before writing) and not in
  dry-run. Any failure to observe or write leaves the previous placeholders as they
  are; the tick is reported failed and the loop goes on at the next tick (never a
  crash loop);
- expire: the dead-man's switch (expiry.py) on what was observed, or last seen when the
  tick could not observe;
- check: hits and the buckets whose placeholders cannot work (checks.py), on every
  replica (read-only).

Time: `tick(now_s)` is synchronous and takes the time as an argument; `run()` is the
async driver, with the clock and sleep injected, running `tick` in a worker thread
because the kubernetes client blocks. `wake(reason)` runs the next tick at once (from
any thread): when this replica wins the Lease, and `wake_debounced` a few seconds after
a placeholder pod is preempted, so the plan counts the node the real pod just took.

Must not: build Kubernetes JSON (objects.py), plan (tick_decision.py) or make API
calls itself (apply.py, observe.py do).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from bucketing.catalog import Catalog
from common.errors import HeadstartError
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
)
from overprovisioner.planner.tick_core import TickObservation
from overprovisioner.planner.tick_decision import TickDecision, decide_tick, placed_buckets
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
from overprovisioner.service.tick_observe import Observation, TickObserver
from overprovisioner.service.worker_planner import WorkerPlanner

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
        self.catalog = catalog
        self.metrics = metrics
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
        self.forecaster = ServiceForecaster(config, catalog, metrics, load_model, save_model,
                                            warn=log.warning)
        self.observer = TickObserver(config, catalog, demand, metrics, self.forecaster,
                                     self.headroom is not None, reader, applier, worker_planner)
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
    def tick(self, now_s: float) -> TickReport:
        """Run one tick at time `now_s`: observe -> decide (pure) -> apply; never raises
        for API or data faults."""
        self._tick_errors = []
        leader = bool(self.is_leader())
        seen = self.observer.observe(now_s, leader, outage=self.failed_ticks > 0)
        errors = list(seen.errors)
        inputs = seen.inputs
        if seen.failure is not None:
            return self._fail(now_s, leader, seen, errors, seen.failure)
        try:
            decision = decide_tick(self.config, self.plan_config, self.catalog, inputs,
                                   self.headroom, capacity_type_label(self.config))
        except HeadstartError as error:
            return self._fail(now_s, leader, seen, errors, error)
        observed = seen.observed
        if observed is not None:
            self.last_objects = observed.objects
            self._buffer_problem = observed.capacity_buffer_problem
        self._export_plan(decision, inputs, seen.view)
        applied = None
        if leader and not self.config.dry_run and self.applier is not None:
            # Ask again: recording and forecasting (a refit) can outlast the Lease, and a
            # replica that lost it must not write over its successor's placeholders.
            leader = bool(self.is_leader())
            if leader:
                applied = self._apply_step(decision, observed, seen.view, errors, now_s)
        if applied is not None and observed is not None:
            self.last_objects = applied.objects_after(observed)
        expired = self._expiry_step(
            now_s, leader, observed.objects if observed is not None else {},
            (applied.renewed | applied.pruned_keys) if applied is not None else frozenset(),
            errors)
        checks = self.checks.run(
            now_s, [(b.instance_type, b.placement_group)
                    for b in placed_buckets(self.config, decision.plan)],
            decision.requests, seen.view, observed, count_hits=applied is not None,
            object_names={placeholder_name(c.instance_type, c.placement_group, c.pin): c.bucket
                          for c in decision.columns},
        )
        ok = not errors
        faults = self._update_faults(checks.autoscaler.detail)
        report = TickReport(now_s, ok, leader, self.config.dry_run, seen.model, inputs.mode,
                            decision.plan, inputs.forecasts, applied, tuple(errors), seen.known,
                            decision.sizes, checks, expired, faults, decision.columns)
        self.metrics.ticks.labels("ok" if ok else "partial").inc()
        if ok:
            self.metrics.last_success.set(now_s)
            if self.failed_ticks:
                log.info("ticks succeed again after %d failed", self.failed_ticks)
            self.failed_ticks = 0
        self.latest = report
        return report

    def _fail(self, now_s: float, leader: bool, seen: Observation, errors: list[str],
              error: HeadstartError) -> TickReport:
        self._tick_errors.append(error)
        return self._failed(now_s, leader, seen.model, seen.inputs.mode, seen.inputs.forecasts,
                            [*errors, f"observe/plan: {error}"])

    def _apply_step(self, decision: TickDecision, observed: Observed | None,
                    view: ClusterView | None, errors: list[str], now_s: float
                    ) -> ApplyResult | None:
        assert self.applier is not None
        valid_until = now_s + self.config.placeholders.expire_after_s
        try:
            applied, observed = apply_plan(
                self.applier,
                lambda backend, buffer_api: desired_objects(
                    decision.columns, self.config, self.catalog, backend, decision.requests,
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

    def _export_plan(self, decision: TickDecision, inputs: TickObservation,
                     view: ClusterView | None) -> None:
        m = self.metrics
        forecasts = inputs.forecasts
        m.set_buckets(m.forecast, {b: f.point for b, f in forecasts.items()})
        m.set_buckets(m.forecast_quantile, {b: f.quantile for b, f in forecasts.items()},
                      f"{self.config.forecast.quantile:g}")
        m.set_buckets(m.wanted, {(b.instance_type, b.placement_group): b.wanted
                                 for b in decision.plan.buckets})
        m.set_pinned(m.wanted_pinned, {
            (c.instance_type, c.placement_group, c.pin.zone or "", c.pin.capacity_type or ""):
            c.wanted for c in decision.columns})
        if view is not None:
            m.set_buckets(m.running, view.placeholders_running)
        m.cost.set(decision.plan.cost_per_hour)

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

