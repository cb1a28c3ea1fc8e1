"""The simulator on a slice of the real Alibaba openb trace (skipped without $TRACES)."""

from __future__ import annotations

from jobtraces.load import load_trace
from overprovisioner.sim.compare import run_policies
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.workload import build_workload
from tests.overprovisioner.simbuild import CATALOG, types


def test_openb_day_static_headroom_cuts_pending(traces_dir):
    table = load_trace(traces_dir / "alibaba-gpu-2023-openb_pod_list_default.csv.gz")
    workload = build_workload(table, types("g4dn.8xlarge"), days=1, from_day=112)
    assert workload.excluded["never scheduled in the trace"] == 405
    runs = run_policies(workload, CATALOG, ("reactive", "static:2"), SimConfig(),
                        compare_scoring=False)
    reactive, static = (metrics for _, metrics in runs)
    assert reactive.pods_submitted_in_window > 50
    assert reactive.pending_seconds_mean > 0
    assert static.pending_gpu_minutes < reactive.pending_gpu_minutes
    assert static.gpu_hours > reactive.gpu_hours
