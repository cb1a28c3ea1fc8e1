"""SQLite history (predictor.live.store) on real files: idempotence, gaps, retention, schema."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from common.errors import ConfigError, InputError
from predictor.live.store import SCHEMA_VERSION, HistoryStore

TICK = 300.0
T0 = 1_700_000_100.0  # on the 300-s grid: 1_700_000_100 / 300 = 5_666_667


@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.sqlite", TICK) as history:
        yield history


def test_a_missing_directory_is_refused_not_created(tmp_path):
    path = tmp_path / "var" / "lib" / "headstart" / "history.sqlite"
    with pytest.raises(ConfigError, match=rf"^{path}: directory {path.parent} does not exist"):
        HistoryStore(path, TICK)
    assert not (tmp_path / "var").exists()


def test_round_trip_with_a_gap_and_a_late_series(store):
    store.write_tick(T0, {"g4dn.xlarge": 2, "total:gpus_running": 2})
    store.write_gaps(T0 + TICK, T0 + 2 * TICK)
    store.write_tick(T0 + 2 * TICK, {"g4dn.xlarge": 3, "p4d@pg-a": 1})
    series = store.read_series()
    assert series.times.tolist() == [T0, T0 + TICK, T0 + 2 * TICK]
    assert series.columns == ["g4dn.xlarge", "p4d@pg-a"]
    # row 1 is a gap (NaN, never 0); p4d@pg-a had no demand at the observed tick 0 -> 0
    np.testing.assert_array_equal(series.history(), [[2, 0], [np.nan, np.nan], [3, 1]])
    assert series.totals.columns.tolist() == ["gpus_running"]
    assert series.totals["gpus_running"].iloc[0] == 2


def test_rewriting_a_tick_replaces_it(store, tmp_path):
    store.write_tick(T0, {"a": 1, "b": 5})
    store.write_tick(T0, {"a": 4})  # a restart re-writes the tick from a fresh snapshot
    assert store.tick_count() == (1, 0)
    assert store.read_series().history().tolist() == [[4.0]]
    rows = sqlite3.connect(store.path).execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert rows == 1


def test_gap_never_overwrites_an_observed_tick(store):
    store.write_tick(T0, {"a": 1})
    # ticks T0 .. T0 + 2 ticks as gaps: T0 stays observed, 2 new gap rows
    assert store.write_gaps(T0, T0 + 3 * TICK) == 2
    assert store.read_series().history()[:, 0].tolist()[0] == 1.0
    assert store.tick_count() == (1, 2)


def test_reopening_continues_the_same_file(tmp_path):
    path = tmp_path / "history.sqlite"
    with HistoryStore(path, TICK) as first:
        first.write_tick(T0, {"a": 1})
    with HistoryStore(path, TICK) as second:
        assert second.last_time() == T0
        second.write_tick(T0 + TICK, {"a": 2})
        assert second.read_series().history()[:, 0].tolist() == [1.0, 2.0]


def test_retention_drops_old_ticks(store):
    for i in range(5):
        store.write_tick(T0 + i * 86_400, {"a": i})
    # now = T0 + 4 days, keep 2 days -> ticks before T0 + 2 days go: days 0 and 1
    assert store.delete_older_than(T0 + 4 * 86_400, 2) == 2
    assert store.read_series().times[0] == T0 + 2 * 86_400


def test_read_window(store):
    for i in range(4):
        store.write_tick(T0 + i * TICK, {"a": i})
    # [T0 + 1 tick, T0 + 3 ticks) -> ticks 1 and 2
    assert store.read_series(T0 + TICK, T0 + 3 * TICK).history()[:, 0].tolist() == [1.0, 2.0]


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "history.sqlite"
    HistoryStore(path, TICK).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(ConfigError, match="newer headstart"):
        HistoryStore(path, TICK)


def test_other_tick_is_refused(tmp_path):
    path = tmp_path / "history.sqlite"
    HistoryStore(path, TICK).close()
    with pytest.raises(ConfigError, match="300 s tick, configured tick is 60 s"):
        HistoryStore(path, 60)


def test_not_a_database_is_a_config_error(tmp_path):
    path = tmp_path / "history.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="not a usable headstart history"):
        HistoryStore(path, TICK)


@pytest.mark.parametrize(
    "time_s, values, message",
    [
        (T0 + 1, {"a": 1}, "not on the 300 s grid"),
        (T0, {"a": -1}, "not a finite count"),
        (T0, {"a": float("nan")}, "not a finite count"),
    ],
    ids=["off-grid", "negative", "nan"],
)
def test_bad_writes_are_refused_and_leave_nothing(store, time_s, values, message):
    with pytest.raises(InputError, match=message):
        store.write_tick(time_s, values)
    assert store.tick_count() == (0, 0)


def test_empty_history_is_an_input_error(store):
    with pytest.raises(InputError, match="empty"):
        store.read_series()


def test_a_backfilled_series_fills_only_ticks_not_recorded(store):
    import pandas as pd

    from predictor.history.series import make_series

    store.write_tick(T0 + 2 * TICK, {"g5.xlarge": 9})  # recorded live: never overwritten
    times = T0 + TICK * np.arange(4)
    totals = pd.DataFrame({"gpus_running": [1.0, np.nan, 5.0, 6.0]})
    backfill = make_series(times, ["g5.xlarge"], np.array([[1.0], [np.nan], [5.0], [6.0]]),
                           TICK, totals)
    # ticks 0 and 3 observed, tick 1 a gap, tick 2 already recorded
    assert store.write_series(backfill) == (2, 1)
    series = store.read_series()
    np.testing.assert_array_equal(series.history(), [[1], [np.nan], [9], [6]])
    assert series.totals["gpus_running"].tolist()[3] == 6.0
    assert store.tick_count() == (3, 1)
    with pytest.raises(InputError, match="60 s series into a 300 s history"):
        store.write_series(make_series(T0 + 60.0 * np.arange(4), ["g5.xlarge"],
                                       np.ones((4, 1)), 60.0))


# The version 1 schema exactly as headstart wrote it before known demand: a file
# recorded by an older release.
V1_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ticks (tick INTEGER PRIMARY KEY,
                    observed INTEGER NOT NULL CHECK (observed IN (0, 1)));
CREATE TABLE samples (tick INTEGER NOT NULL, series TEXT NOT NULL,
                      value REAL NOT NULL CHECK (value >= 0), PRIMARY KEY (tick, series));
INSERT INTO schema_version VALUES (1);
INSERT INTO meta VALUES ('tick_s', '300.0');
INSERT INTO ticks VALUES (5666667, 1), (5666668, 0), (5666669, 1);
INSERT INTO samples VALUES (5666667, 'g5.xlarge', 2), (5666667, 'total:gpus_running', 2),
                           (5666669, 'g5.xlarge', 3);
"""


def test_a_version_1_file_is_migrated_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    db.commit()
    db.close()
    with HistoryStore(path, TICK) as store:
        # the recorded history reads back unchanged
        np.testing.assert_array_equal(store.read_series().history(), [[2], [np.nan], [3]])
        # no known or announced demand was recorded then
        assert store.read_known().empty
        assert store.read_announced(T0 + TICK * np.arange(3), ["g5.xlarge"]).tolist() == [
            [0.0], [0.0], [0.0]]
        store.write_known(T0 + 3 * TICK, {"total": {"g5.xlarge": 1.0}}, {"g5.xlarge": 1.0})
    db = sqlite3.connect(path)
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    db.close()
    assert SCHEMA_VERSION == 3


def test_known_and_announced_demand_round_trip(store):
    store.write_tick(T0, {"g5.xlarge": 3})
    store.write_known(T0, {"total": {"g5.xlarge": 2.0}, "kueue": {"g5.xlarge": 2.0}},
                      {"g5.xlarge@pg-a": 1.0, "g5.xlarge": 0.0})
    # a re-write of the tick replaces both, as write_tick does
    store.write_known(T0, {"total": {"g5.xlarge": 1.0}, "cronjobs": {"g5.xlarge": 1.0}},
                      {"g5.xlarge@pg-a": 2.0})
    known = store.read_known()
    assert known.values.tolist() == [[T0, "cronjobs", "g5.xlarge", 1.0],
                                     [T0, "total", "g5.xlarge", 1.0]]
    assert store.read_announced(np.array([T0]), ["g5.xlarge", "g5.xlarge@pg-a"]).tolist() == [
        [0.0, 2.0]]


def test_announced_work_is_remembered_once_and_expires(store):
    store.remember_announced({"batch/Job/team/a": ("jobs", T0)})
    store.remember_announced({"batch/Job/team/a": ("kueue", T0 + TICK)})  # first time kept
    assert store.announced_work() == {"batch/Job/team/a": T0}
    store.write_tick(T0, {"a": 1})
    store.delete_older_than(T0 + 2 * 86_400, retention_days=1)
    assert store.announced_work() == {}


def test_negative_known_demand_is_refused(store):
    with pytest.raises(InputError, match="known kueue g5.xlarge = -1.0"):
        store.write_known(T0, {"kueue": {"g5.xlarge": -1.0}}, {})


def test_pinned_series_are_kept_apart_from_the_forecasters_columns(store):
    """Pinned demand (predictor.history.pinning) is read with read_pinned; read_series, which the
    forecaster reads, never sees it, so a file written with pinned series gives the same
    forecast columns as before them."""
    store.write_tick(T0, {"g5.xlarge": 3, "pinned:g5.xlarge/zone=us-east-1a": 1})
    store.write_gaps(T0 + TICK, T0 + 2 * TICK)
    store.write_tick(T0 + 2 * TICK, {"g5.xlarge": 2})
    assert store.read_series().columns == ["g5.xlarge"]
    pinned = store.read_pinned(T0, T0 + 3 * TICK)
    assert pinned.columns.tolist() == ["pinned:g5.xlarge/zone=us-east-1a"]
    # tick 0: 1; tick 1: a gap (NaN); tick 2: observed without a sample -> 0
    np.testing.assert_array_equal(pinned.iloc[:, 0].to_numpy(), [1.0, np.nan, 0.0])
    assert pinned.index.tolist() == [T0, T0 + TICK, T0 + 2 * TICK]


def test_a_history_without_pinned_series_reads_no_pinned_column(store):
    store.write_tick(T0, {"g5.xlarge": 3})
    assert store.read_pinned(T0, T0 + TICK).columns.tolist() == []


def test_pinned_series_are_not_in_the_table_an_older_headstart_reads(store):
    """An older headstart reads every `samples` row as a bucket count; pinned series live
    in a table of their own, so it never sees them (and plans the same buckets)."""
    store.write_tick(T0, {"g5.xlarge": 3, "pinned:g5.xlarge/zone=us-east-1a": 1})
    rows = store._db.execute("SELECT series FROM samples").fetchall()
    assert rows == [("g5.xlarge",)]
    # Rewriting the tick replaces its pinned series too; retention drops them.
    store.write_tick(T0, {"g5.xlarge": 3})
    assert store.read_pinned(T0, T0 + TICK).columns.tolist() == []
    store.write_tick(T0 + TICK, {"pinned:g5.xlarge/zone=us-east-1b": 2})
    store.delete_older_than(T0 + TICK + 86400.0, 1.0)  # cutoff is tick T0 + TICK: kept
    assert store.read_pinned(T0, T0 + 2 * TICK).columns.tolist() == [
        "pinned:g5.xlarge/zone=us-east-1b"]
    store.delete_older_than(T0 + 2 * TICK + 86400.0, 1.0)  # now it is older than a day
    assert store._db.execute("SELECT COUNT(*) FROM pinned").fetchone() == (0,)


def test_throughput_samples_per_owner_and_uid(store):
    store.write_throughput("Job.ml.a", "u1", T0, 4, 1000.0)
    store.write_throughput("Job.ml.a", "u1", T0 + TICK, 6, 1400.0)
    store.write_throughput("Job.ml.a", "u1", T0 + TICK, 5, 1300.0)  # the tick re-written
    store.write_throughput("Job.ml.a", "u2", T0, 2, 500.0)  # a new job of the same name
    assert store.read_throughput("Job.ml.a", "u1") == [(4, 1000.0), (5, 1300.0)]
    assert store.read_throughput("Job.ml.a", "u2") == [(2, 500.0)]
    with pytest.raises(InputError, match="Job.ml.a"):
        store.write_throughput("Job.ml.a", "u1", T0, 0, 10.0)
    # retention drops old samples with the ticks
    store.delete_older_than(T0 + 10 * 86_400, 1)
    assert store.read_throughput("Job.ml.a", "u1") == []


def test_finished_jobs_are_kept_once_newest_first_and_expire(store):
    assert store.remember_job("u1", T0, {"name": "Job/ml/a"})
    assert store.remember_job("u2", T0 + 60, {"name": "Job/ml/b"})
    assert not store.remember_job("u1", T0 + 120, {"name": "Job/ml/a-again"})
    assert [p["name"] for p in store.job_profiles()] == ["Job/ml/b", "Job/ml/a"]
    assert store.job_uids() == {"u1", "u2"}
    store.delete_older_than(T0 + 10 * 86_400, 1)
    assert store.job_profiles() == []
