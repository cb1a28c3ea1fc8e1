"""The jobs a gang replay runs: a workload's pods grouped into gangs, some made elastic by
a stated rule, and how fast a job trains at each size.

Decides:
- a gang per job of the workload (its pods by `Workload.job`; a pod of no job is a gang
  of one). It is created when its first pod is, with all its pods (the owner creates
  them together), and its work is its trace run: its pods' longest run from that
  moment, at its trace size. A gang with a pod running before the window (`initial`)
  is replayed from the window's start but left out of the figures (its wait and run
  are not the trace's);
- which gangs are elastic (`ElasticRule`): those with at least two workers, all on one
  instance type and asking for as many GPUs, whose name hashes into the rule's `share`
  (crc32, so the choice is the same on every run and in every arm). An elastic job's
  owner has one worker template: each resource's largest request among its workers
  (every arm replays its workers so, fixed or not). Its workers are resized
  between ceil(`min_fraction` x n) and max(n, floor(`max_factor` x n)), n the trace's
  worker count; the rest of their pods (PS) keep their count, as a PyTorchJob's master
  does;
- the training rate at w workers (`speed`): `linear`, w / n of the trace's rate (every
  worker adds as much: the case most favourable to growing), or `kale`, KALE's
  synchronous model f(w) = M / (theta0 + theta1/w + theta2/w^2 + theta3 w) with the
  paper's thetas (0.00035, 2.5726, 0.9824, 0.02786), past its peak (w = 10) held at the
  peak: an owner would not run slower at more workers, it would stop growing.

Bounds: a trace gives each job one size, so the bounds are this rule's, not the job's;
a job's work is conserved across sizes (what it learns does not depend on how fast).

Must not: read files, log, touch the simulated cluster.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np

from common.errors import InputError
from overprovisioner.sim.workload import Workload

SCALINGS = ("linear", "kale")
KALE_THETAS = (0.00035, 2.5726, 0.9824, 0.02786)
"""KALE's worked example (SoCC 2024): synchronous, M = 16,384."""
KALE_PEAK = 10
"""Where the worked example's f(w) peaks (f(10) = 30,017 samples/s, f(11) is less)."""


@dataclass(frozen=True)
class ElasticRule:
    """Which of a trace's jobs are replayed as elastic, and their bounds."""

    share: float = 1.0
    """The share of eligible jobs (two or more workers of one shape) made elastic."""
    min_fraction: float = 0.5
    """Minimum = ceil(min_fraction x trace workers), at least 1."""
    max_factor: float = 1.0
    """Maximum = max(trace workers, floor(max_factor x trace workers))."""
    scaling: str = "linear"
    """How a job's rate follows its workers: `linear` or `kale` (`speed`)."""

    def validate(self) -> ElasticRule:
        if not 0.0 <= self.share <= 1.0:
            raise InputError(f"--elastic-share: expected 0 to 1, got {self.share:g}")
        if not 0.0 < self.min_fraction <= 1.0:
            raise InputError(f"--min-fraction: expected above 0 and at most 1, got "
                             f"{self.min_fraction:g}")
        if not self.max_factor >= 1.0:
            raise InputError(f"--max-factor: expected 1 or more, got {self.max_factor:g}")
        if self.scaling not in SCALINGS:
            raise InputError(f"--scaling: expected one of {', '.join(SCALINGS)}, got "
                             f"{self.scaling!r}")
        return self


@dataclass(frozen=True)
class GangJob:
    """One job of the replay. pods: workload row indices, its fixed pods (PS) first,
    then its workers in index order. bounds: (min, max) workers when elastic;
    worker_request: then its workers' one template (gpu_milli, cpu_milli, bytes)."""

    name: str
    pods: tuple[int, ...]
    workers: int
    submit_s: float
    work_s: float
    initial: bool
    bounds: tuple[int, int] | None
    worker_request: tuple[int, int, int] | None = None

    @property
    def fixed(self) -> tuple[int, ...]:
        return self.pods[:len(self.pods) - self.workers]


def gang_jobs(workload: Workload, rule: ElasticRule) -> tuple[GangJob, ...]:
    """The workload's gangs, by creation time then name (`ElasticRule` for which are
    elastic)."""
    rule.validate()
    by_job: dict[str, list[int]] = {}
    for row, job in enumerate(workload.job.tolist()):
        name = workload.job_names[job] if job >= 0 else f"pod-{workload.pod_names[row]}"
        by_job.setdefault(name, []).append(row)
    out = []
    for name, rows in by_job.items():
        worker_rows = [r for r in rows if workload.role[r] == "worker"]
        fixed = [r for r in rows if workload.role[r] != "worker"]
        submit = float(min(workload.submit_s[r] for r in rows))
        ends = [workload.submit_s[r] + workload.duration_s[r] for r in rows]
        work = max(float(max(ends)) - submit, 1.0)
        n = len(worker_rows)
        shapes = {(int(workload.request[r][0]), int(workload.bucket[r])) for r in worker_rows}
        bounds = template = None
        if n >= 2 and len(shapes) == 1 and _chosen(name, rule.share):
            bounds = (max(1, math.ceil(rule.min_fraction * n)),
                      max(n, math.floor(rule.max_factor * n)))
            template = tuple(int(v) for v in workload.request[worker_rows].max(axis=0))
        out.append(GangJob(name, tuple(fixed + worker_rows), n if bounds else 0, submit, work,
                           bool(np.any(workload.initial[rows])), bounds, template))
    return tuple(sorted(out, key=lambda job: (job.submit_s, job.name)))


def _chosen(name: str, share: float) -> bool:
    return zlib.crc32(name.encode()) % 10_000 < round(share * 10_000)


def speed(workers: int, trace_workers: int, scaling: str) -> float:
    """The job's training rate at `workers` as a share of its rate at its trace size."""
    if workers <= 0:
        return 0.0
    if scaling == "linear":
        return workers / trace_workers
    return _kale(min(workers, KALE_PEAK)) / _kale(min(trace_workers, KALE_PEAK))


def _kale(w: int) -> float:
    t0, t1, t2, t3 = KALE_THETAS
    return 16_384 / (t0 + t1 / w + t2 / w ** 2 + t3 * w)
