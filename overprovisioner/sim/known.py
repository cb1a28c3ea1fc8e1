"""Known-ahead demand replayed from the workload's `known_at_s`, on the service's tick grid.

Decides what the overprovisioner service's known-demand sources would have reported had
the trace's announcements been visible (docs/known-demand.md), with the rules of
`bucketing.known_ahead`:
- `known`: (T, B) per policy tick t, the nodes of the pods known by t (known_at <= t)
  whose creation falls within (t, t + horizon], the horizon in whole ticks as the
  service's recorder counts it (6m30s at 5-minute ticks: 10 minutes), embedded per
  instance type like the observed demand the simulator records (summed requests over
  the type's node, rounded up; each pod in the type it is pinned to);
- `KnownReplay.at`: the same at a re-plan after a preemption, between ticks: the
  service's recorder then records its tick again from its caches as they are now
  (`predictor.live.recorder`: the tick containing now is rewritten), so the pods created
  since the tick are no longer known (every source subtracts the pods that exist) and
  work announced since then counts, while due still means within the horizon of the
  tick. Reusing the tick's row would count a pod that just took its placeholder twice
  (in use and known), and the re-plan would keep its replacement;
- `announced`: (N,) which pods were first counted at a tick at least the service's
  start-up (its `horizon`, unrounded) before their creation, as its recorder does; their
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

from bucketing.embed import bucket_sums, counts_from_sums, round_up
from bucketing.known_ahead import announced, known_counts
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.sim.workload import Workload, bucket_vectors

UNITS = np.array([1000.0, 1000.0, 1024.0**3])  # request units -> (GPUs, CPUs, GiB)


@dataclass(frozen=True)
class KnownReplay:
    """known: (T, B) nodes of known demand due within the horizon per policy tick;
    announced: (N,) bool per pod of the workload; the rest is what `at` reads: the
    known-ahead pods in creation order (`order` indexes the workload), their known_at,
    creation, bucket and (GPUs, CPUs, GiB) vector, the (B, 3) bucket vectors, the
    horizon (whole ticks) and the tick."""

    known: np.ndarray
    announced: np.ndarray
    order: np.ndarray
    known_at_s: np.ndarray
    submit_s: np.ndarray
    bucket: np.ndarray
    vectors: np.ndarray
    buckets: np.ndarray
    horizon_s: float
    tick_s: float
    start_s: float

    def at(self, tick: int, now_s: float) -> np.ndarray:
        """(B,) nodes of known demand at `now_s` within tick `tick`: the tick's row when
        now is the tick's time, else the pods known by now and not created by now whose
        creation is due within the tick's horizon."""
        tick_time = self.start_s + tick * self.tick_s
        if now_s <= tick_time and tick < len(self.known):
            return self.known[tick]
        low = np.searchsorted(self.submit_s, now_s, side="right")
        high = np.searchsorted(self.submit_s, tick_time + self.horizon_s, side="right")
        rows = np.arange(low, high)
        rows = rows[self.known_at_s[rows] <= now_s]
        sums = bucket_sums(self.vectors[rows], self.bucket[rows], len(self.buckets))
        return round_up(counts_from_sums(sums, self.buckets)).astype(np.float64)


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
    # The window the service's recorder counts known items in (overprovisioner/service/demand.py).
    horizon_s = service.known_window_s
    vectors = workload.request.astype(np.float64) / UNITS
    buckets = bucket_vectors(workload.types)
    counts = known_counts(vectors, known, workload.submit_s, buckets, times, horizon_s,
                          bucket_of=workload.bucket)
    rows = np.flatnonzero(np.isfinite(known))
    rows = rows[np.argsort(workload.submit_s[rows], kind="stable")]
    return KnownReplay(counts.astype(np.float64),
                       announced(known, workload.submit_s, times, horizon_s,
                                 service.horizon_s),
                       rows, known[rows], workload.submit_s[rows], workload.bucket[rows],
                       vectors[rows], buckets, horizon_s, service.tick_s, workload.start_s)
