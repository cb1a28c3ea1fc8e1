"""SQLite demand history: the embedded default store the live recorder writes and forecasters read.

Decides: the on-disk schema and its version, what a gap looks like on disk, how a
tick re-written after a restart replaces (never duplicates) the first write, and how
old rows are dropped.

Schema (version 3):
  schema_version(version)                 one row; a newer version is refused
  meta(key PRIMARY KEY, value)            `tick_s`: the tick the file was created with
  ticks(tick PRIMARY KEY, observed)       one row per recorded tick; observed 0 = a gap
  samples(tick, series, value,            one row per tick per series
          PRIMARY KEY (tick, series))
  known(tick, source, series, value,      known demand due within the horizon, in nodes
        PRIMARY KEY (tick, source, series))  per bucket, per source and `total`
  announced(tick, series, value,          nodes of the demand whose pods were announced
            PRIMARY KEY (tick, series))   ahead (predictor.known.combine)
  announced_work(key PRIMARY KEY,         workloads counted as known ahead, from when
                 source, first_counted_s)
  throughput(owner, uid, tick, workers,   an elastic job's samples/s at its size, one
             rate, PRIMARY KEY (owner,    per tick while all its workers are ready
             uid, tick))                  (KALE's fit, overprovisioner.planner.worker_plan)
  job_profiles(uid PRIMARY KEY,           a finished training job's shape (JSON), the
               finished_s, profile)       history DLRover-RM's warm start reads
                                          (overprovisioner.planner.job_profile)
Older files are migrated in place when opened: the tables they lack (version 1: the
three known-demand tables; 1 and 2: `throughput`, `job_profiles`) are added, empty, and the version
becomes 3; their ticks read back as having no known and no announced demand.

`tick` is the tick number since the Unix epoch (time_s / tick_s, exact). Reading back:
a tick absent from `ticks` or recorded as a gap is a NaN row; an observed tick without
a sample for a series means 0 for it (the series had no demand then, e.g. a bucket in a
placement group that did not exist yet). Series named `total:<name>` are the totals
(gpus_running, ...); series named `pinned:...` the demand of pods pinned to a zone or
capacity type (predictor.history.pinning), read with `read_pinned` and never part of the
forecaster's series (files written before they existed simply have none); the others
are bucket counts (`bucket` or `bucket@group`). `write_tick` keeps the pinned series in
a table of their own (`pinned`), not in `samples`: an older headstart reading the file
reads every `samples` row as a bucket count, and would plan (and fail on) a bucket named
`pinned:...`; a table it does not know it never reads.

Writes use `INSERT ... ON CONFLICT DO UPDATE`, so writing a tick twice keeps one row
with the last value; a gap never overwrites an observed tick. Must not: decide what a
tick's values are (the recorder does) or read the clock (callers pass times).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from common.errors import ConfigError, InputError
from predictor.history.pinning import PINNED_PREFIX
from predictor.history.series import TOTAL_PREFIX, DemandSeries, make_series

SCHEMA_VERSION = 3
DAY_S = 86_400.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ticks (
    tick INTEGER PRIMARY KEY,
    observed INTEGER NOT NULL CHECK (observed IN (0, 1))
);
CREATE TABLE IF NOT EXISTS samples (
    tick INTEGER NOT NULL,
    series TEXT NOT NULL,
    value REAL NOT NULL CHECK (value >= 0),
    PRIMARY KEY (tick, series)
);
CREATE TABLE IF NOT EXISTS pinned (
    tick INTEGER NOT NULL,
    series TEXT NOT NULL,
    value REAL NOT NULL CHECK (value >= 0),
    PRIMARY KEY (tick, series)
);
CREATE TABLE IF NOT EXISTS known (
    tick INTEGER NOT NULL,
    source TEXT NOT NULL,
    series TEXT NOT NULL,
    value REAL NOT NULL CHECK (value >= 0),
    PRIMARY KEY (tick, source, series)
);
CREATE TABLE IF NOT EXISTS announced (
    tick INTEGER NOT NULL,
    series TEXT NOT NULL,
    value REAL NOT NULL CHECK (value >= 0),
    PRIMARY KEY (tick, series)
);
CREATE TABLE IF NOT EXISTS announced_work (
    key TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    first_counted_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS throughput (
    owner TEXT NOT NULL,
    uid TEXT NOT NULL,
    tick INTEGER NOT NULL,
    workers INTEGER NOT NULL CHECK (workers >= 1),
    rate REAL NOT NULL CHECK (rate >= 0),
    PRIMARY KEY (owner, uid, tick)
);
CREATE TABLE IF NOT EXISTS job_profiles (
    uid TEXT PRIMARY KEY,
    finished_s REAL NOT NULL,
    profile TEXT NOT NULL
);
"""
KNOWN_TOTAL = "total"


@dataclass(frozen=True)
class StoreConfig:
    """Where and how long demand history is kept."""

    path: str = "headstart-history.sqlite"
    """SQLite file, relative to the working directory unless absolute; created on first
    use, in a directory that must exist (never created: a typo must not make system
    directories, and a non-root user cannot)."""

    retention_days: float = 35.0
    """Ticks older than this many days before the newest write are deleted (the
    Transformer's training window is 30 days; keep a little more)."""


class HistoryStore:
    """One SQLite file of demand history at a fixed tick. Use from one thread at a time."""

    def __init__(self, path: str | Path, tick_s: float) -> None:
        if not (tick_s > 0 and math.isfinite(tick_s)):
            raise ConfigError(f"{path}: tick must be a positive number of seconds, got {tick_s}")
        self.path = Path(path)
        self.tick_s = float(tick_s)
        if not self.path.parent.is_dir():
            raise ConfigError(f"{self.path}: directory {self.path.parent} does not exist "
                              "(the history file is created, its directory is not)")
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._open()
        except sqlite3.DatabaseError as error:
            raise ConfigError(f"{self.path}: not a usable headstart history ({error})") from None
        except OSError as error:
            raise ConfigError(f"{self.path}: cannot open ({error.strerror})") from None

    def _open(self) -> None:
        with self._transaction():
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)
            row = self._db.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                self._db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] > SCHEMA_VERSION:
                raise ConfigError(
                    f"{self.path}: history schema version {row[0]} was written by a newer "
                    f"headstart; this one reads up to version {SCHEMA_VERSION}"
                )
            elif row[0] < SCHEMA_VERSION:  # the tables above were just added: migrated
                self._db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
            stored = self._db.execute("SELECT value FROM meta WHERE key = 'tick_s'").fetchone()
            if stored is None:
                self._db.execute("INSERT INTO meta VALUES ('tick_s', ?)", (repr(self.tick_s),))
            elif float(stored[0]) != self.tick_s:
                raise ConfigError(
                    f"{self.path}: history was recorded at a {float(stored[0]):g} s tick, "
                    f"configured tick is {self.tick_s:g} s; use another file"
                )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def tick_of(self, time_s: float) -> int:
        """The tick number of `time_s`, which must lie on the tick grid."""
        tick = round(time_s / self.tick_s)
        if abs(tick * self.tick_s - time_s) > 1e-6 * self.tick_s:
            raise InputError(f"{self.path}: time {time_s} is not on the {self.tick_s:g} s grid")
        return tick

    def write_tick(self, time_s: float, values: Mapping[str, float]) -> None:
        """Record an observed tick; re-writing the same tick replaces its values."""
        tick = self.tick_of(time_s)
        for series, value in values.items():
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"{self.path}: tick {time_s}: {series} = {value} is not a "
                                 "finite count >= 0")
        with self._transaction():
            self._db.execute(
                "INSERT INTO ticks VALUES (?, 1) ON CONFLICT(tick) DO UPDATE SET observed = 1",
                (tick,),
            )
            # A re-write is the whole tick: drop series the new snapshot no longer has.
            for table in ("samples", "pinned"):
                self._db.execute(f"DELETE FROM {table} WHERE tick = ?", (tick,))
                self._db.executemany(
                    f"INSERT INTO {table} VALUES (?, ?, ?) "
                    "ON CONFLICT(tick, series) DO UPDATE SET value = excluded.value",
                    [(tick, series, float(value)) for series, value in values.items()
                     if series.startswith(PINNED_PREFIX) == (table == "pinned")],
                )

    def write_gaps(self, from_s: float, to_s: float) -> int:
        """Record ticks from_s <= t < to_s as gaps (observed ticks stay); returns how many."""
        first, stop = self.tick_of(from_s), self.tick_of(to_s)
        if stop <= first:
            return 0
        with self._transaction():
            cursor = self._db.executemany(
                "INSERT INTO ticks VALUES (?, 0) ON CONFLICT(tick) DO NOTHING",
                [(tick,) for tick in range(first, stop)],
            )
        return cursor.rowcount

    def write_series(self, series: DemandSeries) -> tuple[int, int]:
        """Write a whole series (a backfill) into ticks not recorded yet; returns (observed
        ticks, gap ticks) written. A row with no value at all is a gap; an observed row's
        NaN cells are left out (read back as 0, as for any series absent at a tick)."""
        if series.tick_s != self.tick_s:
            raise InputError(f"{self.path}: cannot write a {series.tick_s:g} s series into "
                             f"a {self.tick_s:g} s history")
        counts = series.counts.to_numpy(dtype=np.float64)
        names = list(series.columns)
        values = counts
        if series.totals is not None:
            names += [TOTAL_PREFIX + str(c) for c in series.totals.columns]
            values = np.hstack([counts, series.totals.to_numpy(dtype=np.float64)])
        bad = ~np.isnan(values) & ~(np.isfinite(values) & (values >= 0))
        if bad.any():
            row, column = np.argwhere(bad)[0]
            raise InputError(f"{self.path}: {names[column]} = {values[row, column]} at "
                             f"{series.times[row]} is not a finite count >= 0")
        observed_rows = ~np.isnan(counts).all(axis=1)
        with self._transaction():
            recorded = {tick for (tick,) in self._db.execute("SELECT tick FROM ticks")}
            ticks = [self.tick_of(time_s) for time_s in series.times]
            fresh = [i for i, tick in enumerate(ticks) if tick not in recorded]
            self._db.executemany("INSERT INTO ticks VALUES (?, ?)",
                                 [(ticks[i], int(observed_rows[i])) for i in fresh])
            self._db.executemany(
                "INSERT INTO samples VALUES (?, ?, ?)",
                [(ticks[i], name, float(values[i, j])) for i in fresh if observed_rows[i]
                 for j, name in enumerate(names) if not np.isnan(values[i, j])],
            )
        observed = sum(1 for i in fresh if observed_rows[i])
        return observed, len(fresh) - observed

    def last_time(self) -> float | None:
        """Time of the newest recorded tick (observed or gap), None when empty."""
        row = self._db.execute("SELECT MAX(tick) FROM ticks").fetchone()
        return None if row[0] is None else row[0] * self.tick_s

    def delete_older_than(self, now_s: float, retention_days: float) -> int:
        """Drop ticks more than retention_days before now_s; returns how many ticks went."""
        cutoff = math.floor((now_s - retention_days * DAY_S) / self.tick_s)
        with self._transaction():
            self._db.execute("DELETE FROM samples WHERE tick < ?", (cutoff,))
            self._db.execute("DELETE FROM pinned WHERE tick < ?", (cutoff,))
            self._db.execute("DELETE FROM known WHERE tick < ?", (cutoff,))
            self._db.execute("DELETE FROM announced WHERE tick < ?", (cutoff,))
            self._db.execute("DELETE FROM throughput WHERE tick < ?", (cutoff,))
            self._db.execute("DELETE FROM job_profiles WHERE finished_s < ?",
                             (cutoff * self.tick_s,))
            self._db.execute("DELETE FROM announced_work WHERE first_counted_s < ?",
                             (cutoff * self.tick_s,))
            cursor = self._db.execute("DELETE FROM ticks WHERE tick < ?", (cutoff,))
        return cursor.rowcount

    def write_known(self, time_s: float, known: Mapping[str, Mapping[str, float]],
                    announced: Mapping[str, float]) -> None:
        """Record a tick's known demand (source or `total` -> series -> nodes) and its
        announced demand (series -> nodes); re-writing a tick replaces both."""
        tick = self.tick_of(time_s)
        rows = [(tick, source, series, float(value))
                for source, values in known.items() for series, value in values.items()]
        for _, source, series, value in rows:
            if not (math.isfinite(value) and value >= 0):
                raise InputError(f"{self.path}: tick {time_s}: known {source} {series} = "
                                 f"{value} is not a finite count >= 0")
        with self._transaction():
            self._db.execute("DELETE FROM known WHERE tick = ?", (tick,))
            self._db.execute("DELETE FROM announced WHERE tick = ?", (tick,))
            self._db.executemany("INSERT INTO known VALUES (?, ?, ?, ?)", rows)
            self._db.executemany("INSERT INTO announced VALUES (?, ?, ?)",
                                 [(tick, series, float(value))
                                  for series, value in announced.items() if value > 0])

    def remember_announced(self, work: Mapping[str, tuple[str, float]]) -> None:
        """Add workload keys counted as known ahead: key -> (source, first counted at)."""
        with self._transaction():
            self._db.executemany(
                "INSERT INTO announced_work VALUES (?, ?, ?) ON CONFLICT(key) DO NOTHING",
                [(key, source, float(first)) for key, (source, first) in work.items()],
            )

    def announced_work(self) -> dict[str, float]:
        """Workload key -> when it was first counted as known ahead (Unix seconds)."""
        return {key: first for key, first in self._db.execute(
            "SELECT key, first_counted_s FROM announced_work")}

    def read_announced(self, times: np.ndarray, columns: list[str]) -> np.ndarray:
        """(T, K) announced demand at tick `times` for bucket `columns` (0 where none)."""
        values = np.zeros((len(times), len(columns)))
        if not len(times):
            return values
        first, last = self.tick_of(float(times[0])), self.tick_of(float(times[-1]))
        index = {column: j for j, column in enumerate(columns)}
        for tick, series, value in self._db.execute(
            "SELECT tick, series, value FROM announced WHERE tick BETWEEN ? AND ?",
            (first, last),
        ):
            if series in index:
                values[tick - first, index[series]] = value
        return values

    def read_known(self, start_s: float | None = None, end_s: float | None = None
                   ) -> pd.DataFrame:
        """Known demand per tick: rows (time_s, source, series, value) in [start_s, end_s)."""
        first = -2**62 if start_s is None else math.ceil(start_s / self.tick_s)
        last = 2**62 if end_s is None else math.ceil(end_s / self.tick_s) - 1
        frame = pd.DataFrame(self._db.execute(
            "SELECT tick, source, series, value FROM known WHERE tick BETWEEN ? AND ? "
            "ORDER BY tick, source, series", (first, last)).fetchall(),
            columns=["tick", "source", "series", "value"])
        frame.insert(0, "time_s", frame.pop("tick") * self.tick_s)
        return frame

    def write_throughput(self, owner: str, uid: str, time_s: float, workers: int,
                         rate: float) -> None:
        """Record an elastic job's samples/s at `workers` (re-writing a tick replaces it)."""
        if not (workers >= 1 and math.isfinite(rate) and rate >= 0):
            raise InputError(f"{self.path}: throughput of {owner} at {time_s}: {workers} "
                             f"workers, {rate} samples/s is not a size >= 1 and a rate >= 0")
        with self._transaction():
            self._db.execute(
                "INSERT INTO throughput VALUES (?, ?, ?, ?, ?) ON CONFLICT(owner, uid, tick) "
                "DO UPDATE SET workers = excluded.workers, rate = excluded.rate",
                (owner, uid, self.tick_of(time_s), int(workers), float(rate)))

    def read_throughput(self, owner: str, uid: str) -> list[tuple[int, float]]:
        """The (workers, samples/s) pairs recorded for this very owner (uid), oldest first."""
        return [(int(w), float(r)) for w, r in self._db.execute(
            "SELECT workers, rate FROM throughput WHERE owner = ? AND uid = ? ORDER BY tick",
            (owner, uid))]

    def remember_job(self, uid: str, finished_s: float, profile: Mapping[str, object]
                     ) -> bool:
        """Keep a finished job's profile once (by uid); True when it was new."""
        with self._transaction():
            cursor = self._db.execute(
                "INSERT INTO job_profiles VALUES (?, ?, ?) ON CONFLICT(uid) DO NOTHING",
                (uid, float(finished_s), json.dumps(profile, sort_keys=True)))
        return cursor.rowcount == 1

    def job_uids(self) -> set[str]:
        return {uid for (uid,) in self._db.execute("SELECT uid FROM job_profiles")}

    def job_profiles(self, limit: int = 10_000) -> list[dict]:
        """The finished jobs' profiles, the most recent first."""
        return [json.loads(text) for (text,) in self._db.execute(
            "SELECT profile FROM job_profiles ORDER BY finished_s DESC LIMIT ?", (limit,))]

    def tick_count(self) -> tuple[int, int]:
        """(observed ticks, gap ticks) on disk."""
        rows = dict(self._db.execute("SELECT observed, COUNT(*) FROM ticks GROUP BY observed"))
        return rows.get(1, 0), rows.get(0, 0)

    def read_pinned(self, start_s: float, end_s: float) -> pd.DataFrame:
        """The pinned-demand series (`pinned:...` columns) of the ticks in [start_s, end_s),
        indexed by time_s: 0 on an observed tick without a sample, NaN on a gap or a tick
        not recorded. No column when no pod was pinned then (or the file predates them)."""
        first, last = math.ceil(start_s / self.tick_s), math.ceil(end_s / self.tick_s) - 1
        ticks = np.arange(first, last + 1)
        observed = np.zeros(len(ticks), dtype=bool)
        for tick, flag in self._db.execute(
            "SELECT tick, observed FROM ticks WHERE tick BETWEEN ? AND ?", (first, last)
        ):
            observed[tick - first] = bool(flag)
        samples = pd.DataFrame(self._db.execute(
            "SELECT tick, series, value FROM pinned WHERE tick BETWEEN ? AND ?",
            (first, last)).fetchall(), columns=["tick", "series", "value"])
        table = samples.pivot(index="tick", columns="series", values="value").reindex(ticks)
        table = table.fillna(0.0)
        table.loc[~observed, :] = np.nan
        table.index = pd.Index(ticks * self.tick_s, name="time_s")
        table.columns.name = None
        return table

    def read_series(self, start_s: float | None = None, end_s: float | None = None) -> DemandSeries:
        """The history in [start_s, end_s) (default: everything) as a DemandSeries."""
        bounds = self._db.execute("SELECT MIN(tick), MAX(tick) FROM ticks").fetchone()
        if bounds[0] is None:
            raise InputError(f"{self.path}: the history is empty")
        first = bounds[0] if start_s is None else max(bounds[0], math.ceil(start_s / self.tick_s))
        last = bounds[1] if end_s is None else min(bounds[1], math.ceil(end_s / self.tick_s) - 1)
        if last < first:
            raise InputError(f"{self.path}: no history between {start_s} and {end_s}")
        ticks = np.arange(first, last + 1)
        observed = np.zeros(len(ticks), dtype=bool)
        for tick, flag in self._db.execute(
            "SELECT tick, observed FROM ticks WHERE tick BETWEEN ? AND ?", (first, last)
        ):
            observed[tick - first] = bool(flag)
        samples = pd.DataFrame(
            self._db.execute(
                "SELECT tick, series, value FROM samples WHERE tick BETWEEN ? AND ?",
                (first, last),
            ).fetchall(),
            columns=["tick", "series", "value"],
        )
        table = samples.pivot(index="tick", columns="series", values="value").reindex(ticks)
        # Observed tick, no sample: the series had no demand then. Not observed: a gap.
        table = table.fillna(0.0)
        table.loc[~observed, :] = np.nan
        count_columns = sorted(c for c in table.columns
                               if not c.startswith((TOTAL_PREFIX, PINNED_PREFIX)))
        total_columns = sorted(c for c in table.columns if c.startswith(TOTAL_PREFIX))
        if not count_columns:
            raise InputError(f"{self.path}: the history has no bucket counts")
        totals = None
        if total_columns:
            totals = table[total_columns].rename(columns=lambda c: c[len(TOTAL_PREFIX):])
        return make_series(ticks * self.tick_s, count_columns,
                           table[count_columns].to_numpy(dtype=np.float64), self.tick_s,
                           totals, str(self.path))


def read_history(path: str | Path) -> DemandSeries:
    """The whole history of an existing store file, at the tick it was recorded with."""
    with open_existing(path) as store:
        return store.read_series()


def open_existing(path: str | Path) -> HistoryStore:
    """An existing store file at the tick it was recorded with. Checked read-only first:
    a file that is missing, not SQLite, of a newer schema or without a recorded tick is
    an error naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such history file")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            version = db.execute("SELECT version FROM schema_version").fetchone()
            tick = db.execute("SELECT value FROM meta WHERE key = 'tick_s'").fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError as error:
        raise InputError(f"{path}: not a headstart history ({error})") from None
    if version is None or tick is None:
        raise InputError(f"{path}: not a headstart history (no schema version or tick)")
    if version[0] > SCHEMA_VERSION:
        raise InputError(f"{path}: history schema version {version[0]} was written by a newer "
                         f"headstart; this one reads up to version {SCHEMA_VERSION}")
    return HistoryStore(path, float(tick[0]))


class _Transaction:
    """BEGIN IMMEDIATE .. COMMIT, rolled back on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")
