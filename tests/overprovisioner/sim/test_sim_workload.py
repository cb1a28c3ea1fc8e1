"""Workload preparation: censoring, window, pinning pods to types, true demand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from common.errors import InputError
from overprovisioner.sim.workload import build_workload, pin_buckets, true_demand
from tests.overprovisioner.simbuild import pod, table, types


def test_censored_rows_are_counted_not_dropped_silently():
    rows = [
        pod("ok", 100, 50),
        pod("never", 200, None, start=math.nan, end=300.0),  # deleted while pending
        pod("late", 9000, 10),  # after the window end 7200
        pod("huge", 100, 50, gpus=16),  # fits no listed type
        pod("open", 300, None),  # NaN end: runs to the trace end 7200 -> 6900 s
    ]
    workload = build_workload(table(rows, end=7200.0), types("g4dn.xlarge"))
    assert list(workload.pod_names) == ["ok", "open"]
    assert workload.excluded == {
        "never scheduled in the trace": 1,
        "submitted after the simulated window": 1,
        "fit no simulated instance type": 1,
    }
    assert workload.duration_s.tolist() == [50.0, 6900.0]


def test_window_from_day_makes_running_pods_initial():
    day = 86_400.0
    rows = [
        pod("done", 10, 100),  # ends before the window (day 1): excluded
        pod("spanning", 50, day),  # runs 50 .. day + 50: initial, 50 s left
        pod("inside", day + 500, 60),
    ]
    workload = build_workload(table(rows, end=2 * day), types("g4dn.xlarge"), from_day=1)
    assert list(workload.pod_names) == ["spanning", "inside"]
    assert workload.initial.tolist() == [True, False]
    assert workload.duration_s[0] == pytest.approx(50.0)
    assert workload.excluded == {"ended before the simulated window": 1}


@pytest.mark.parametrize(
    "kinds, vector, expected",
    [
        # a CPU pod goes to the GPU-less type even though assign would pick the GPU one
        (("g4dn.xlarge", "m5.xlarge"), (0, 2, 8), "m5.xlarge"),
        # no GPU-less type listed (openb's GPU-only cluster): the GPU type takes it
        (("g4dn.xlarge",), (0, 2, 8), "g4dn.xlarge"),
        # a GPU pod never goes to a GPU-less type
        (("m5.24xlarge",), (1, 2, 8), None),
        # first bucket it is smaller than, in cost order: 1 GPU, 6 CPU -> 2xlarge (8 vCPU)
        (("g4dn.xlarge", "g4dn.2xlarge"), (1, 6, 8), "g4dn.2xlarge"),
    ],
    ids=["cpu-to-cpu-type", "cpu-on-gpu-only-cluster", "gpu-never-cpu-type", "embedding-order"],
)
def test_pin_buckets(kinds, vector, expected):
    listed = types(*kinds)
    picked = pin_buckets(np.array([vector], dtype=float), listed)[0]
    assert (listed[picked].name if picked >= 0 else None) == expected


def test_true_demand_counts_by_hand():
    # g4dn.xlarge offers 1 GPU per node. Pods (GPU): a 1.0 over [0, 120), b 0.5 over
    # [60, 180), c 0.5 over [60, 90). Ticks of 60 s at 0, 60, 120, 180:
    # t=0 (a is initial at t0): 1.0 -> 1; t=60: 1 + .5 + .5 = 2 -> 2;
    # t=120: b only (c ended at 90, a at 120) -> 0.5 -> 1; t=180: 0.
    rows = [pod("a", 0, 120), pod("b", 60, 120, gpus=0.5), pod("c", 60, 30, gpus=0.5)]
    workload = build_workload(table(rows, end=180.0), types("g4dn.xlarge"))
    assert true_demand(workload, 60.0)[:, 0].tolist() == [1.0, 2.0, 1.0, 0.0]


@pytest.mark.parametrize(
    "kwargs, message",
    [({"days": 0}, "--days"), ({"from_day": -1}, "--from-day"), ({"from_day": 5}, "past")],
    ids=["zero-days", "negative-from-day", "from-day-past-end"],
)
def test_bad_window(kwargs, message):
    with pytest.raises(InputError, match=message):
        build_workload(table([pod("a", 10, 5)]), types("g4dn.xlarge"), **kwargs)
