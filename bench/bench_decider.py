"""CPU per pod of the extender's request path without HTTP: `extender.decide.Decider`
filter, prioritize and bind on bench_extender's cluster, in one process. For A/B runs of
two builds on a loaded machine, where the HTTP bench's figures swing with the load.

    python bench/bench_decider.py                       # this checkout
    python bench/bench_decider.py --tree /tmp/ab/main   # another build's source tree

Per cluster size (1,000 and 5,000 nodes): the cluster, cache and request bodies of
bench/bench_extender.py (the tree's own copy); 20 warm-up rounds, then `--repeats`
timings of `--rounds` rounds, each round = parse + filter, parse + prioritize, bind
(the bind changes the cache, so every filter works on a fresh context). Reported: the
median and the minimum over the repeats of CPU ms per round (process time: waiting for
a core is not counted). Alternate the builds over several invocations and compare
medians; the minimum is the least disturbed run.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="source tree of the build to measure (default: this checkout)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--rounds", type=int, default=50, help="rounds per timing")
    parser.add_argument("--repeats", type=int, default=15, help="timings per size")
    args = parser.parse_args()
    tree = args.tree.resolve()
    if not (tree / "extender" / "decide.py").is_file():
        print(f"bench_decider: error: --tree {tree}: no extender/decide.py there",
              file=sys.stderr)
        return 2
    sys.path[:0] = [str(tree), str(tree / "bench")]
    import bench_extender

    from extender.decide import Decider
    from extender.inflight import PendingBinds

    for size in args.sizes:
        app = bench_extender.headstart_app(size, bind_wait_seconds=0.25)
        cache = app_cache(app)
        decider = Decider(cache, cache.config,
                          PendingBinds(0.25, cache.config.assumed_ttl_seconds))
        bodies = bench_extender.request_bodies(size)
        gc.collect()
        gc.freeze()
        for _ in range(20):
            one_round(decider, bodies)
        timings = []
        for _ in range(args.repeats):
            started = time.process_time()
            for _ in range(args.rounds):
                one_round(decider, bodies)
            timings.append(1e3 * (time.process_time() - started) / args.rounds)
        print(json.dumps({"tree": str(tree), "nodes": size,
                          "median_ms": round(statistics.median(timings), 3),
                          "min_ms": round(min(timings), 3)}))
    return 0


def one_round(decider, bodies: dict[str, bytes]) -> None:
    """One pod as kube-scheduler sends it: filter, prioritize (each parsing its body), bind."""
    from extender.wire import parse_binding_args, parse_extender_args

    now = time.monotonic()
    decider.filter(parse_extender_args(json.loads(bodies["cache"])), now)
    decider.prioritize(parse_extender_args(json.loads(bodies["cache"])), now)
    decider.bind_arrived(parse_binding_args(json.loads(bodies["bind"])), now)


def app_cache(app):
    """The ClusterCache inside bench_extender's app (filled as the HTTP bench fills it)."""
    from extender.app import CACHE

    return app[CACHE]


if __name__ == "__main__":
    sys.exit(main())
