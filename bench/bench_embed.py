"""Benchmark: embed one snapshot of 1,000,000 pods into 10 buckets (target < 1 s).

Run: python bench/bench_embed.py [--pods N] [--repeats R]

Prints the median of R runs of `bucketing.embed.embed`, and, measured in the same
run, a baseline: the same rule as a plain Python loop over a 10,000-pod sample,
scaled linearly to N pods. Also times the FFD packer on the same snapshot.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from bucketing.embed import embed
from bucketing.pack import pack

# 10 buckets like an AWS list: 3 CPU-only types, then 1-, 4- and 8-GPU types.
BUCKETS = np.array(
    [
        [0, 7.6, 30.0], [0, 31.5, 126.0], [0, 95.4, 382.0],
        [1, 3.6, 14.0], [1, 7.6, 30.0], [1, 31.5, 126.0],
        [4, 47.5, 190.0], [4, 95.4, 382.0],
        [8, 95.4, 382.0], [8, 191.2, 766.0],
    ]
)


def make_pods(count: int, rng: np.random.Generator) -> np.ndarray:
    """(count, 3) pods: 0-8 GPUs, 1-64 CPUs, 2, 4 or 8 GiB per CPU (some fit no bucket).

    Requests come from a menu, as in real clusters (about a thousand distinct vectors),
    which is what the packer's grouping of identical vectors relies on."""
    gpus = rng.choice([0, 0.5, 1, 2, 4, 8], size=count, p=[0.3, 0.1, 0.3, 0.15, 0.1, 0.05])
    cpus = rng.integers(1, 65, size=count).astype(float)
    memory = cpus * rng.choice([2.0, 4.0, 8.0], size=count)
    return np.column_stack([gpus, cpus, memory])


def python_loop_embed(vectors: np.ndarray, buckets: np.ndarray) -> list[float]:
    """The baseline: the embedding rule (docs/buckets.md, "Algorithms") one pod at a time in
    plain Python."""
    order = sorted(range(len(buckets)), key=lambda i: tuple(buckets[i]))
    rows = [tuple(map(float, b)) for b in buckets]
    sums = [[0.0, 0.0, 0.0] for _ in buckets]
    for vector in map(tuple, vectors.tolist()):
        chosen = last = -1
        for i in order:
            if all(v <= b for v, b in zip(vector, rows[i], strict=True)):
                last = i
                if vector < rows[i]:
                    chosen = i
                    break
        chosen = chosen if chosen >= 0 else last
        if chosen >= 0:
            for d in range(3):
                sums[chosen][d] += vector[d]
    return [max((s / b for s, b in zip(total, row, strict=True) if b > 0), default=0.0)
            for total, row in zip(sums, rows, strict=True)]


def median_seconds(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--record", action="store_true",
                        help="write the figures into bench/results.json")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rng = np.random.default_rng(0)
    pods = make_pods(args.pods, rng)
    sample = pods[:10_000]

    result = embed(pods, BUCKETS)
    reference = python_loop_embed(sample, BUCKETS)
    np.testing.assert_allclose(embed(sample, BUCKETS).raw_counts, reference)

    vectorised = median_seconds(lambda: embed(pods, BUCKETS), args.repeats)
    loop_sample = median_seconds(lambda: python_loop_embed(sample, BUCKETS), args.repeats)
    loop_scaled = loop_sample * args.pods / len(sample)
    packed = median_seconds(lambda: pack(pods, BUCKETS), max(1, args.repeats // 2))
    print(f"embed {args.pods:,} pods into {len(BUCKETS)} buckets "
          f"(median of {args.repeats}): {vectorised:.3f} s  (target < 1 s)")
    print(f"baseline python loop, {len(sample):,}-pod sample: {loop_sample:.3f} s "
          f"-> {loop_scaled:.1f} s scaled to {args.pods:,}")
    print(f"speed-up over the baseline: {loop_scaled / vectorised:.0f}x")
    print(f"unbucketable pods: {len(result.unbucketable):,}; counts {result.counts.tolist()}")
    print(f"pack (FFD, grouped by identical vectors) the same snapshot: {packed:.3f} s; "
          f"nodes {pack(pods, BUCKETS).nodes.sum():,} vs embedding bound "
          f"{result.counts.sum():,}")
    if args.record:
        from results_file import record

        record("embed", {"pods": args.pods, "buckets": len(BUCKETS), "repeats": args.repeats,
                         "median_s": round(vectorised, 3),
                         "speedup": round(loop_scaled / vectorised)}, load_before)


if __name__ == "__main__":
    main()
