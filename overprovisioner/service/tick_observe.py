"""The first step of a tick: read everything the plan needs, once, into a frozen observation.

Decides what each reading's failure does (the tick goes on without that part, or
cannot plan at all):
- record: the demand source writes this tick's snapshot; a failure is logged and the
  tick goes on with the history it has (a gap is recorded as a gap by the store);
- known demand (when the source records it): the state at this tick; a failure plans
  without it;
- forecast: the model (`ServiceForecaster`, the model's lifecycle: fitted on the
  history the store holds, refitted on its cadence; the simulator runs the same object)
  on the unannounced history, the announced demand added back; no history yet, or a
  model that cannot forecast -> "ladder" (the cold-start ladder); a configured headroom
  -> "headroom", no forecast;
- the cluster: nodes, pods and headstart's placeholder objects (followers and dry-run
  read too). When it cannot be read the observation says so (`failure`) and the tick
  does not plan;
- planned growth (when a `WorkerPlanner` is given): the elastic jobs' worker plans
  (KALE; the worker planner is a controller of its own, which writes its plans when this
  replica leads), their growth added to the known nodes in each job's placement group;
  a failure plans without them;
- pinned demand (when the source records it): the pin window's counts and pinned series;
  a failure leaves every placeholder unpinned.

Must not: plan (planner.tick_decision does) or write placeholders (loop.py's apply).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from bucketing.catalog import Catalog
from common.errors import HeadstartError, InputError
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.planner.forecasting import BucketForecast, ServiceForecaster, first_tick
from overprovisioner.planner.known_plan import (
    growth_nodes,
    known_nodes,
    known_source_nodes,
    with_growth,
)
from overprovisioner.planner.tick_core import (
    PinnedWindow,
    TickMode,
    TickObservation,
    forecast_demand,
)
from overprovisioner.service.apply import Applier
from overprovisioner.service.metrics import Metrics
from overprovisioner.service.observe import ClusterReader, ClusterView
from overprovisioner.service.observed import Observed
from overprovisioner.service.ports import Bucket, DemandSource
from overprovisioner.service.worker_planner import WorkerPlanner
from predictor.live.known_recording import KnownState
from predictor.models.forecast import NotEnoughHistory

log = logging.getLogger("headstart.overprovisioner")


@dataclass(frozen=True)
class Observation:
    """One tick's reading. `inputs` is what the plan takes; `view` and `observed` are
    the cluster and headstart's objects as read (None when not read: no reader or
    applier, or `failure`); `errors`: the parts the tick goes on without; `failure`:
    why the cluster could not be read (the tick does not plan then)."""

    inputs: TickObservation
    model: str
    known: KnownState | None
    view: ClusterView | None
    observed: Observed | None
    errors: tuple[str, ...]
    failure: HeadstartError | None = None


class TickObserver:
    """Reads one tick (module docstring); `worker_planner` may be set after construction."""

    def __init__(self, config: OverprovisionerConfig, catalog: Catalog, demand: DemandSource,
                 metrics: Metrics, forecaster: ServiceForecaster, headroom: bool,
                 reader: ClusterReader | None, applier: Applier | None,
                 worker_planner: WorkerPlanner | None) -> None:
        self.config = config
        self.catalog = catalog
        self.demand = demand
        self.metrics = metrics
        self.forecaster = forecaster
        self.headroom = headroom
        self.reader = reader
        self.applier = applier
        self.worker_planner = worker_planner

    def observe(self, now_s: float, leader: bool, outage: bool = False) -> Observation:
        """This tick's reading; `outage`: ticks are failing (a failed record is logged
        at debug then, not once per tick)."""
        errors: list[str] = []
        try:
            self.demand.record(now_s)
        except Exception as error:  # the tick goes on with the history it has
            errors.append(f"record: {type(error).__name__}: {error}")
            (log.debug if outage else log.warning)(
                "recording demand failed: %s", error)
        known = self._known(now_s, errors)
        self.metrics.set_known(known_nodes(known), known_source_nodes(known),
                               known.values.pods if known else {})
        mode: TickMode
        if self.headroom:  # the configured headroom, not a forecast
            mode, forecasts, model = "headroom", {}, self.config.headroom
        else:
            mode, forecasts = self._forecast(now_s, errors, known)
            model = self.forecaster.model.name or self.config.forecast.model
        self.metrics.set_model(model, mode)
        inputs = TickObservation(now_s, mode, forecasts, known_nodes(known))
        try:
            view, observed = self._cluster()
        except HeadstartError as error:
            return Observation(inputs, model, known, None, None, tuple(errors), error)
        growth = self._growth(now_s, view, leader, errors)
        if growth:  # the known gauges with the planned growth, a source of its own
            self.metrics.set_known(
                with_growth(known_nodes(known), growth),
                {**known_source_nodes(known),
                 **{(b, g, "worker_plans"): v for (b, g), v in growth.items()}},
                known.values.pods if known else {})
        placeholders = dict(view.placeholders_running) if view is not None else {}
        placeholders.update(observed.replicas() if observed else {})
        inputs = replace(
            inputs, known=with_growth(known_nodes(known), growth),
            free=view.free_nodes if view is not None else {}, placeholders=placeholders,
            nodes=view.nodes if view is not None else {},
            rooms=view.rooms if view is not None else (),
            applied=observed.applied_requests(self.catalog.gpu_resource) if observed else {},
            pinned=self._pinned(now_s, errors))
        return Observation(inputs, model, known, view, observed, tuple(errors))

    def _known(self, now_s: float, errors: list[str]) -> KnownState | None:
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

    def _forecast(self, now_s: float, errors: list[str], known: KnownState | None
                  ) -> tuple[TickMode, dict[Bucket, BucketForecast]]:
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

    def _cluster(self) -> tuple[ClusterView | None, Observed | None]:
        """Nodes, pods and headstart's placeholder objects (read-only: followers and
        dry-run observe too). Raises ApiCallError when the cluster cannot be read."""
        view = None
        if self.reader is not None:
            view = self.reader.view(self.config.instance_types,
                                    self.config.placeholders.placement_group_label,
                                    self.catalog.gpu_resource)
        observed = self.applier.observe() if self.applier is not None else None
        return view, observed

    def _growth(self, now_s: float, view: ClusterView | None, leader: bool,
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

    def _pinned(self, now_s: float, errors: list[str]) -> PinnedWindow | None:
        """The pinned demand within the pin window; None when the source records none,
        the window holds none, or it cannot be read (then every placeholder is unpinned)."""
        source = self.demand.pinned
        if source is None:
            return None
        try:
            counts, history = source.read(now_s - self.config.placeholders.pin_window_s,
                                          now_s + self.config.tick_s)
        except InputError as error:  # no bucket counts in the window: nothing to split
            log.debug("no pinned split this tick: %s", error)
            return None
        except Exception as error:  # placeholders unpinned are still placeholders
            errors.append(f"pinned demand: {type(error).__name__}: {error}")
            log.exception("reading the pinned demand failed: placeholders stay unpinned")
            return None
        return PinnedWindow(counts, history)
