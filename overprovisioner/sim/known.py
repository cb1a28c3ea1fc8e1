"""Known-ahead demand replayed from the workload's `known_at_s`, on the service's tick grid.

Decides what the overprovisioner service's known-demand sources would have reported had
the trace's announcements been visible (docs/known-demand.md), with the rules of
`bucketing.known_ahead`:
- `known`: (T, B) per policy tick t, the nodes of the pods known by t (known_at <= t)
  whose creation falls within (t, t + horizon], the horizon in whole ticks as the
  service's recorder counts it (6m30s at 5-minute ticks: 10 minutes), embedded per
  instance type like the observed demand the simulator records (summed requests over
  the type's node, rounded up; each pod in the type it is pinned to). A re-plan after
  a preemption reuses its tick's row, as the service reads the known demand recorded
  at its tick;
- `announced`: (N,) which pods were counted at some tick before their creation; their
  running and pending demand is the *announced* demand the engine tracks apart
  (`TickView.announced`), so the forecaster learns only what nobody announced and the
  plan adds the announced demand running now back (rule 4 of docs/known-demand.md).

None of it applies when the service config switches every known-demand source off,
or when no pod is known ahead.

Must not: run the simulation (it returns arrays the predictive policy reads).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bucketing.known_ahead import announced, known_counts
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.sim.workload import Workload, bucket_vectors

UNITS = np.array([1000.0, 1000.0, 1024.0**3])  # request units -> (GPUs, CPUs, GiB)


@dataclass(frozen=True)
class KnownReplay:
    """known: (T, B) nodes of known demand due within the horizon per policy tick;
    announced: (N,) bool per pod of the workload."""

    known: np.ndarray
    announced: np.ndarray


def replay_known(workload: Workload, service: OverprovisionerConfig,
                 ticks: int) -> KnownReplay | None:
    """The known demand the service would see at each of `ticks` ticks of its
    `tick_s` from the window start, or None when there is none to replay."""
    if workload.known_at_s is None or not service.known_demand.enabled():
        return None
    known = np.where(workload.known_ahead, workload.known_at_s, np.nan)
    if not np.isfinite(known).any():
        return None
    times = workload.start_s + service.tick_s * np.arange(ticks)
    # The service's recorder counts items due within the horizon in whole ticks
    # (overprovisioner/cli.py passes horizon_ticks * tick_s to the known reader).
    horizon_s = service.horizon_ticks * service.tick_s
    vectors = workload.request.astype(np.float64) / UNITS
    counts = known_counts(vectors, known, workload.submit_s, bucket_vectors(workload.types),
                          times, horizon_s, bucket_of=workload.bucket)
    return KnownReplay(counts.astype(np.float64),
                       announced(known, workload.submit_s, times, horizon_s))
