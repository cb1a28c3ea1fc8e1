"""Where a gang replay's node GPU-hours and job completion times go.

Decides how each GPU-second of a launched node is counted (`NODE_PARTS`), exactly one
part each, so the parts add up to the node GPU-hours billed:
- a starting node's GPUs (launched, not ready): `starting`;
- a ready node with no pod: `empty` (cluster-autoscaler removes it once unneeded);
- a ready node whose only pods are placeholders: `growth_nodes` (kept for announced
  growth: nodes bought for it and not used yet);
- a node with real pods: their GPUs are the pods' (below), placeholders' GPUs there
  `placeholders`, the rest `free` (room between gangs);
and each real pod's GPU-seconds to its job, split by whether the job trained then
(`engine`'s rate above zero): while it trained, the GPU-seconds its trace run needs at
its trace size for the work done (`pods_full_size`) and the rest (`pods_smaller`: a
gang below its trace size runs longer, its PS and partial sizes held for that time;
negative for a gang above it); while it did not (bound, admitted, recovering without
its workers): `pods_idle`.

And a job's time from submit to finish as queueing (to its first Running), its trace
run at its trace size (`work`), the time its smaller sizes added while training
(`smaller`), and the time after its start it did not train (`stalled`: evicted,
waiting again, rebinding).

Must not: decide anything about the replay (it only counts what the engine reports).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

NODE_PARTS = ("pods_full_size", "pods_smaller", "pods_idle", "placeholders", "growth_nodes",
              "free", "empty", "starting")
"""The parts of node GPU-seconds, in the order the report shows them."""


@dataclass
class _JobTally:
    full_gpu: float  # GPUs at its trace size
    gpu_milli: int = 0  # bound now
    training: bool = False
    since: float = 0.0
    trained_s: float = 0.0
    gpu_trained_s: float = 0.0
    gpu_idle_s: float = 0.0


class Ledger:
    """Counts as the engine tells it: `advance` before the clock moves on, `pod` when a
    job's real pod binds or goes, `training` when its rate changes."""

    def __init__(self, full_gpus: Sequence[float], start: float) -> None:
        self.jobs = [_JobTally(gpus, since=start) for gpus in full_gpus]
        self.nodes = dict.fromkeys(("placeholders", "growth_nodes", "free", "empty",
                                    "starting"), 0.0)

    def advance(self, dt: float, nodes: Iterable[tuple[int, bool, int, int, bool]]) -> None:
        """`dt` seconds of the live nodes, each (GPUs, ready, real pods' GPU milli,
        placeholders' GPU milli, holds any pod)."""
        parts = self.nodes
        for gpus, ready, real, held, busy in nodes:
            if not ready:
                parts["starting"] += dt * gpus
            elif not busy:
                parts["empty"] += dt * gpus
            elif real == 0 and held > 0:
                parts["growth_nodes"] += dt * gpus
            else:
                parts["placeholders"] += dt * held / 1000
                parts["free"] += dt * (gpus - (real + held) / 1000)

    def _charge(self, index: int, now: float) -> _JobTally:
        tally = self.jobs[index]
        dt = now - tally.since
        if dt > 0:
            if tally.training:
                tally.trained_s += dt
                tally.gpu_trained_s += dt * tally.gpu_milli / 1000
            else:
                tally.gpu_idle_s += dt * tally.gpu_milli / 1000
        tally.since = now
        return tally

    def pod(self, index: int, now: float, gpu_milli: int) -> None:
        """A real pod of job `index` asking `gpu_milli` bound (positive) or gone."""
        self._charge(index, now).gpu_milli += gpu_milli

    def training(self, index: int, now: float, training: bool) -> None:
        self._charge(index, now).training = training

    def close(self, now: float) -> None:
        for index in range(len(self.jobs)):
            self._charge(index, now)

    def trained_s(self, index: int) -> float:
        """Seconds job `index` trained (its rate above zero)."""
        return self.jobs[index].trained_s

    def node_parts(self, work_done: Sequence[float]) -> dict[str, float]:
        """GPU-seconds per part (`NODE_PARTS`); work_done: per job, the seconds of its
        trace run done (at its trace size)."""
        full = sum(t.full_gpu * done for t, done in zip(self.jobs, work_done, strict=True))
        trained = sum(t.gpu_trained_s for t in self.jobs)
        return {"pods_full_size": full, "pods_smaller": trained - full,
                "pods_idle": sum(t.gpu_idle_s for t in self.jobs), **self.nodes}
