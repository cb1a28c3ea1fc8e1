"""The simulator replays known-ahead demand: what predictive sees, and what it buys."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bucketing.known_ahead import with_lead
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.known import replay_known
from overprovisioner.sim.metrics import measure
from overprovisioner.sim.pod_engine import run
from overprovisioner.sim.workload import build_workload
from predictor.known.config import KnownDemandConfig
from tests.overprovisioner.simbuild import CATALOG, pod, table, types

# 300-s tick, horizon 390 s: known demand counts within tick + horizon = 690 s
SERVICE = OverprovisionerConfig()
NO_SOURCES = replace(SERVICE, known_demand=KnownDemandConfig(
    kueue=False, gated=False, jobs=False, jobsets=False, kubeflow=False, rayjobs=False,
    cronjobs=False, podgroups=False))

# A job of 4 one-GPU pods every 7800 s (26 ticks), each running 10 minutes: its nodes are
# removed (10 min unneeded) long before the next job, and the demand history shows a
# burst from nothing, which no forecast of it sees coming.
BURSTS = table([pod(f"j{j}-{i}", 7800 * j + 1000, 600, job=f"j{j}") for j in range(6)
                for i in range(4)], end=48000.0)


def workload(trace):
    return build_workload(trace, types("g4dn.xlarge"))


def pending(trace, policy, service=SERVICE):
    config = SimConfig(service=service, startup_spread=0.0).validate()  # exact start-ups
    result = run(workload(trace), CATALOG, policy, config)
    return measure(result)


def test_known_demand_cuts_pending_against_the_same_run_without_it():
    known = with_lead(BURSTS, 1.0, 600.0, np.random.default_rng(0))
    reactive = pending(BURSTS, "reactive").pending_gpu_minutes
    blind = pending(BURSTS, "predictive").pending_gpu_minutes
    seeing = pending(known, "predictive")
    # reactive: 24 pods x 1 GPU x (30 s CA's GPU-pod wait + 300 s start-up) = 132
    # GPU-minutes
    assert reactive == pytest.approx(132.0)
    # without known demand a burst from nothing is a surprise: most pods still wait
    assert blind > 0.5 * reactive
    # known 600 s ahead, each job counts from the first tick after 7800 j + 400
    # (7800 j + 600; 7800 = 26 ticks), its 4 nodes are asked for then and ready at
    # 7800 j + 900, before the pods come at 7800 j + 1000: nobody waits
    assert seeing.pending_gpu_minutes == 0.0
    assert seeing.known_share == 1.0


def test_every_source_off_replays_nothing():
    known = with_lead(BURSTS, 1.0, 600.0, np.random.default_rng(0))
    off = pending(known, "predictive", NO_SOURCES)
    blind = pending(BURSTS, "predictive")
    assert off.pending_gpu_minutes == blind.pending_gpu_minutes
    assert off.gpu_hours == blind.gpu_hours
    assert replay_known(workload(known), NO_SOURCES, 10) is None


def test_half_known_cuts_about_half_of_what_all_known_cuts():
    half = with_lead(BURSTS, 0.5, 600.0, np.random.default_rng(0))
    marked_jobs = len({row.job_id for row in half.frame.itertuples()
                       if not np.isnan(row.known_at_s)})
    result = pending(half, "predictive")
    # the unknown jobs' pods wait as without known demand (at most 330 s each): at most
    # (6 - marked) jobs x 4 pods x 5.5 GPU-minutes
    assert 0 < marked_jobs < 6
    assert result.pending_gpu_minutes <= (6 - marked_jobs) * 4 * 5.5
    assert result.known_share == pytest.approx(marked_jobs / 6)


def test_replay_counts_each_job_within_the_whole_tick_horizon():
    known = with_lead(BURSTS, 1.0, 900.0, np.random.default_rng(0))
    replay = replay_known(workload(known), SERVICE, 161)  # 48000 / 300 + 1, as the engine
    # the first job (created at 1000, known at 100) counts at ticks t with
    # max(100, 1000 - 690) = 310 <= t < 1000: 600 and 900 (ticks 2 and 3); its 4 one-GPU
    # pods need 4 g4dn.xlarge nodes; the second job comes at 8800: ticks 8400, 8700
    assert np.flatnonzero(replay.known[:, 0])[:4].tolist() == [2, 3, 28, 29]
    assert replay.known[2, 0] == 4.0
    # every pod was first counted at least the 390-s start-up before it came (400 s)
    assert replay.announced.all()
    # with only the first 27 ticks replayed, only the first job's pods were counted
    assert replay_known(workload(known), SERVICE, 27).announced.sum() == 4


@pytest.mark.parametrize(
    "tick, now, nodes",
    [
        (2, 600.0, 4.0),  # the tick's own row: job j0 (created at 1000) is due
        # a re-plan at 1005 within tick 3 (900): j0's pods exist: nothing is known
        (3, 1005.0, 0.0),
        # a re-plan at 999: not created yet, still known
        (3, 999.0, 4.0),
        # a re-plan at 8250 within tick 27 (8100): j1 (known at 7900, created at 8800)
        # is due within 8100 + 690 = 8790? no: 8800 > 8790, not counted yet
        (27, 8250.0, 0.0),
    ],
    ids=["tick-row", "replan-after-creation", "replan-before-creation", "not-due-yet"],
)
def test_a_replan_reads_known_demand_as_it_is_then(tick, now, nodes):
    known = with_lead(BURSTS, 1.0, 900.0, np.random.default_rng(0))
    replay = replay_known(workload(known), SERVICE, 161)
    assert replay.at(tick, now)[0] == nodes


@pytest.mark.parametrize(
    "lead_s, announced",
    [
        # first counted at the tick 7800 j + 600, 400 s ahead: at least the 390-s
        # start-up, so the forecaster does not learn these pods
        (600.0, True),
        # known 300 s ahead: first counted at 7800 j + 900, 100 s ahead: no node could
        # be ready, so they stay in the forecaster's history
        (300.0, False),
    ],
    ids=["in-time", "too-late"],
)
def test_pods_announced_later_than_a_start_up_stay_in_the_history(lead_s, announced):
    known = with_lead(BURSTS, 1.0, lead_s, np.random.default_rng(0))
    replay = replay_known(workload(known), SERVICE, 161)
    assert replay.announced.tolist() == [announced] * 24
    assert replay.known[:, 0].max() == 4.0  # counted either way
