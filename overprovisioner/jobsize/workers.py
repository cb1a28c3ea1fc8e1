"""What `headstart size workers` does: the least workers that keep up with a sample
rate, by KALE's model, given its thetas or fitted to measurements.

The model, the fit and the size are `predictor.models.throughput`'s (`ThroughputModel`,
`fit`, `least_sufficient`), the same calls the overprovisioner's worker plans make.
Decides: which flags make the model, how the answer is shown (text, or `--json`), and
that a rate no size within the bounds keeps up with is an error (exit 2) naming the
fastest size, rather than a size that falls behind.

Must not: read the cluster or Prometheus.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from common.errors import InputError
from overprovisioner.jobsize import measurements
from overprovisioner.jobsize.flags import number, numbers, whole
from predictor.models.throughput import (
    SYNCHRONOUS,
    THETAS,
    ThroughputModel,
    fit,
    least_sufficient,
)

MAX_WORKERS = 100_000


def run(args: argparse.Namespace) -> int:
    answer = size(args)
    print(json.dumps(answer, indent=2) if args.json else text(answer))
    return 0


def size(args: argparse.Namespace) -> dict[str, Any]:
    """The answer as `--json` prints it (docs/predictor.md lists its keys)."""
    rate = number(args.rate, "--rate", 0)
    minimum = whole(args.min_workers, "--min-workers", 1)
    maximum = whole(args.max_workers, "--max-workers", 1)
    if maximum > MAX_WORKERS:
        raise InputError(f"--max-workers: at most {MAX_WORKERS:,}, got {args.max_workers!r}")
    if minimum > maximum:
        raise InputError(f"--min-workers: {minimum} is above --max-workers {maximum}")
    model, fitted = _model(args)
    found = least_sufficient(model, rate, minimum, maximum)
    at = model.rate(np.array([found.workers, max(found.workers - 1, 1)], dtype=float))
    if not np.isfinite(at).all():  # no JSON number for it, and no job is that fast
        raise InputError(f"--thetas: {', '.join(f'{t:g}' for t in model.thetas)} make the "
                         f"time per sample 0 at {found.workers} workers (an infinite rate)")
    if found.short:
        why = ("raise --max-workers: more workers may" if found.workers == maximum else
               "more workers only slow this job down")
        raise InputError(f"--rate: no size in {minimum}..{maximum} workers exceeds "
                         f"{rate:,.0f} samples/s; the fastest, {found.workers}, gives "
                         f"{at[0]:,.0f} ({why})")
    return {
        "rate": rate, "workers": found.workers, "throughput": float(at[0]),
        "throughput_one_fewer": float(at[1]) if found.workers > minimum else None,
        "min_workers": minimum, "max_workers": maximum,
        "model": {"mode": model.mode, "thetas": list(model.thetas),
                  "global_batch": model.global_batch if model.mode == SYNCHRONOUS else None},
        "fitted": fitted,
    }


def _model(args: argparse.Namespace) -> tuple[ThroughputModel, dict[str, Any] | None]:
    mode = str(args.model).strip()
    if mode not in THETAS:
        raise InputError(f"--model: expected one of {', '.join(THETAS)}, got {args.model!r}")
    batch = 1.0
    if mode == SYNCHRONOUS:
        if args.global_batch is None:
            raise InputError("--global-batch: the synchronous model needs M, the job's "
                             "global batch size")
        batch = number(args.global_batch, "--global-batch", 0, above=True)
    sources = [name for name, given in (("--thetas", args.thetas is not None),
                                        ("--sample", bool(args.sample)),
                                        ("--samples", args.samples is not None)) if given]
    if len(sources) != 1:
        raise InputError("--thetas, --sample, --samples: give exactly one (the model's "
                         f"thetas, or measurements to fit), got {', '.join(sources) or 'none'}")
    if args.thetas is not None:
        thetas = numbers(args.thetas, "--thetas")
        try:
            return ThroughputModel(mode, thetas, batch), None
        except InputError as error:
            raise InputError(f"--thetas: {error}") from None
    source = "--sample" if args.sample else args.samples
    pairs = measurements.from_flags(args.sample) if args.sample else \
        measurements.from_file(args.samples)
    workers, rates = (np.array(column, dtype=float) for column in zip(*pairs, strict=True))
    try:
        model = fit(mode, workers, rates, batch)
    except InputError as error:
        raise InputError(f"{source}: {error}") from None
    error = np.abs(model.rate(workers) / rates - 1)
    return model, {"samples": len(pairs), "sizes": int(np.unique(workers).size),
                   "max_relative_error": float(error.max())}


def text(answer: dict[str, Any]) -> str:
    model = answer["model"]
    thetas = ", ".join(f"{t:.6g}" for t in model["thetas"])
    batch = f", M = {model['global_batch']:,.0f}" if model["global_batch"] is not None else ""
    fitted = answer["fitted"]
    origin = "given" if fitted is None else (
        f"fitted to {fitted['samples']} samples at {fitted['sizes']} sizes, largest "
        f"relative error {fitted['max_relative_error']:.1%}")
    workers = answer["workers"]
    below = answer["throughput_one_fewer"]
    short = (f"; f({workers - 1}) = {below:,.0f} falls short" if below is not None else
             f" (the least allowed, --min-workers {answer['min_workers']})")
    return (f"{model['mode']} model{batch}, thetas {thetas} ({origin})\n"
            f"{answer['rate']:,.0f} samples/s needs {workers} workers: f({workers}) = "
            f"{answer['throughput']:,.0f} samples/s{short}")
