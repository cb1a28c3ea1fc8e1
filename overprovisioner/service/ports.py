"""What the service loop reads demand from (`DemandSource` and the richer sources it
may be) and what one tick reports (`TickReport`, which `/plan` serves).

Decides nothing: the loop (loop.py) reads demand through one `DemandSource`, whose
optional parts (`known`, `pinned`) are None when not recorded, and fills a report per
tick; adapters (cli.py's recorder source, tests' fixed arrays) implement the protocols.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from overprovisioner.planner.forecasting import BucketForecast
from overprovisioner.planner.pinned_plan import PlacedColumn
from overprovisioner.planner.plan import Plan
from overprovisioner.planner.sizing import PlaceholderSize
from overprovisioner.service.apply import ApplyResult
from overprovisioner.service.checks import CheckReport
from predictor.history.series import DemandSeries
from predictor.live.known_recording import KnownState

Bucket = tuple[str, str]


class KnownDemand(Protocol):
    """Known-ahead demand as the recorder records it beside the observed demand."""

    def state(self, now_s: float) -> KnownState | None:
        """The known demand recorded at the tick of `now_s`, or None (that tick was a gap)."""
        ...

    def announced(self, series: DemandSeries) -> Any:
        """(T, K) announced demand aligned with `series`' ticks and columns."""
        ...


class PinnedDemand(Protocol):
    """Demand pinned to zones and capacity types, as the recorder records it
    (predictor.history.pinning)."""

    def read(self, start_s: float, end_s: float) -> tuple[Any, Any]:
        """(bucket counts, pinned series) of the ticks in [start_s, end_s), as DataFrames
        (HistoryStore.read_series(...).counts and read_pinned)."""
        ...


class DemandSource(Protocol):
    """Where demand history comes from (the recorder + SQLite store in the service).

    known, pinned: what else the source records, None when it does not (then the plan
    has no known demand to add, and every placeholder is unpinned)."""

    known: KnownDemand | None
    pinned: PinnedDemand | None

    def record(self, now_s: float) -> None:
        """Write the snapshot of tick `now_s`."""
        ...

    def series(self, now_s: float) -> DemandSeries:
        """The recorded history up to and including `now_s`."""
        ...


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
    known: KnownState | None = None
    sizes: Mapping[str, PlaceholderSize] = field(default_factory=dict)
    checks: CheckReport = field(default_factory=CheckReport)
    expired: tuple[str, ...] = ()
    faults: Mapping[str, str] = field(default_factory=dict)
    columns: tuple[PlacedColumn, ...] = ()
