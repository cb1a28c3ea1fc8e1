"""Benchmark: Transformer training and predict time on 30 days x 10 buckets.

Targets: train on 30 days of 5-minute ticks (8,640) for 10 buckets in
under 5 minutes on this machine's 2 cores; predict in under 50 ms.

Data: a seeded synthetic demand (daily and weekly waves, a slow random walk and
noise, whole nodes, never negative), because the real aggregate traces are one
series each. Baselines measured in the same run: last value and Holt-Winters
(fit and predict), so the ratios stay meaningful on a loaded machine.

Run: python bench/bench_transformer.py [--runs 1] [--threads 1] [--predicts 50]
Prints medians. The machine is shared: run it once, not in a loop.

Threads default to 1: with 2 torch threads on the 2 shared, busy cores here,
training took 372-724 s against 56-160 s with 1 thread (oversubscribed intra-op
threads wait on each other); `--threads 2` measures that case.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from predictor.models.registry import make_forecaster  # noqa: E402

TICKS = 30 * 288
BUCKETS = 10
HORIZON = 2  # 10 minutes at 5-minute ticks


def synthetic_demand(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ticks = np.arange(TICKS)[:, None]
    size = rng.uniform(2, 40, BUCKETS)
    phase = rng.uniform(0, 2 * np.pi, BUCKETS)
    daily = 0.3 * np.sin(2 * np.pi * ticks / 288 + phase)
    weekly = 0.15 * np.sin(2 * np.pi * ticks / 2016 + phase)
    walk = np.cumsum(rng.normal(0, 0.01, (TICKS, BUCKETS)), axis=0)
    level = size * (1 + daily + weekly + walk)
    return np.maximum(np.round(level + rng.normal(0, 1, (TICKS, BUCKETS))), 0)


def time_model(name: str, history: np.ndarray, runs: int, predicts: int,
               threads: int) -> dict[str, float]:
    params = {"threads": threads} if name == "transformer" else {}
    fit_seconds = []
    model = None
    for _ in range(runs):
        model = make_forecaster(name, max_horizon=12, **params)
        start = time.perf_counter()
        model.fit(history)
        fit_seconds.append(time.perf_counter() - start)
    predict_seconds = []
    for i in range(predicts):
        window = history[: TICKS - i]
        start = time.perf_counter()
        model.predict(window, HORIZON, quantiles=(0.9,))
        predict_seconds.append(time.perf_counter() - start)
    return {"fit_s": statistics.median(fit_seconds),
            "predict_ms": 1000 * statistics.median(predict_seconds)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="training runs (median), default 1")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, default 1")
    parser.add_argument("--predicts", type=int, default=50, help="predict calls, default 50")
    parser.add_argument("--record", action="store_true",
                        help="write the figures into bench/results.json")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    import torch

    torch.set_num_threads(args.threads)
    history = synthetic_demand()
    print(f"history {history.shape[0]} ticks x {history.shape[1]} buckets; horizon {HORIZON} "
          f"ticks; torch {torch.__version__}, {args.threads} threads; "
          f"{args.runs} training run(s), {args.predicts} predicts")
    results = {name: time_model(name, history, args.runs if name == "transformer" else 1,
                                args.predicts, args.threads)
               for name in ("last", "hw", "transformer")}
    for name, r in results.items():
        print(f"{name:12s} fit {r['fit_s']:8.2f} s   predict median {r['predict_ms']:8.2f} ms")
    tf, hw = results["transformer"], results["hw"]
    print(f"transformer / hw: fit x{tf['fit_s'] / hw['fit_s']:.1f}, "
          f"predict x{tf['predict_ms'] / hw['predict_ms']:.1f}")
    print(f"targets: train < 300 s -> {'met' if tf['fit_s'] < 300 else 'MISSED'}; "
          f"predict < 50 ms -> {'met' if tf['predict_ms'] < 50 else 'MISSED'}")
    if args.record:
        from results_file import record

        record("transformer", {"threads": args.threads, "runs": args.runs,
                               "predicts": args.predicts,
                               **{f"{name}_{key}": round(value, 2)
                                  for name, r in results.items() for key, value in r.items()}},
               load_before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
