"""How long the extender's event loop spends on the largest request body it admits: a
body of exactly `body_limit` bytes (8 MiB by default) of tiny JSON values, decoded
(`extender.wire.decode_json`) and refused as ExtenderArgs
(`extender.wire.parse_extender_args`: its NodeNames are not all strings), as `/filter`
does with it. Bodies are decoded on the event loop, so `/healthz` and every other
request wait this long (docs/security.md, "Requests are bounded").

    python bench/bench_decode.py            # median of 5
    python bench/bench_decode.py --record   # and write bench/results.json

Baseline in the same run: a real filter request of the same verb for 5,000 nodes
(bench_extender's `nodeCacheCapable` body), decoded and parsed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_extender  # noqa: E402
from results_file import load_average, record  # noqa: E402

from common.errors import InputError  # noqa: E402
from extender.config import ExtenderConfig  # noqa: E402
from extender.wire import decode_json, parse_extender_args  # noqa: E402


def largest_body(limit: int) -> bytes:
    """`limit` bytes of `{"Pod": {}, "NodeNames": [0,0,...,0]}`: the most values a body
    the limit admits can hold, each one a number where a name belongs."""
    head, tail = b'{"Pod": {}, "NodeNames": [0', b"]}"
    count = (limit - len(head) - len(tail)) // 2
    body = head + b",0" * count + tail
    return body + b" " * (limit - len(body))


def timed(body: bytes) -> tuple[float, bool]:
    started = time.perf_counter()
    try:
        parse_extender_args(decode_json(body))
        refused = False
    except InputError:
        refused = True
    return time.perf_counter() - started, refused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    load_before = load_average()
    limit = ExtenderConfig().body_limit
    body = largest_body(limit)
    assert len(body) == limit
    baseline = bench_extender.request_bodies(5000)["cache"]
    largest, real = [], []
    for _ in range(args.repeats):  # in alternation: drift hits both alike
        seconds, refused = timed(body)
        if not refused:
            raise RuntimeError("the largest body was accepted: it measures no refusal")
        largest.append(seconds)
        real.append(timed(baseline)[0])
    f = {"limit_bytes": limit, "repeats": args.repeats,
         "largest_ms": 1000 * statistics.median(largest),
         "largest_runs_ms": [round(1000 * s, 1) for s in largest],
         "filter_5000_bytes": len(baseline),
         "filter_5000_ms": 1000 * statistics.median(real)}
    f["largest_vs_filter"] = f["largest_ms"] / f["filter_5000_ms"]
    print(f"{limit / 2**20:g} MiB of tiny JSON values decoded and refused in "
          f"{f['largest_ms']:.0f} ms (median of {args.repeats}; runs {f['largest_runs_ms']}); "
          f"a 5,000-node filter request ({len(baseline):,} bytes) in {f['filter_5000_ms']:.1f} "
          f"ms, {f['largest_vs_filter']:.0f}x less (load average {load_before:.1f}-"
          f"{load_average():.1f})")
    if args.record:
        record("decode-limit", f, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
