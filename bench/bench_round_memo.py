"""How long one admission round takes while many jobs wait, packing every trial (the
round before `locality.admission.trials`) against remembering them (the round now).
Each round here admits the same jobs again (nothing is written), so a domain a job
takes changes in every round: the next round's saving is what it may reuse then.

    python bench/bench_round_memo.py              # both sizes, medians of 3
    python bench/bench_round_memo.py --quick      # 1,000 x 8 at 5,000 nodes, 1 repeat
    python bench/bench_round_memo.py --record     # and write bench/results.json

Sizes, as issue 26 names them: 1,000 jobs of 8 pods at 5,000 nodes, and 200 jobs of
64 pods at 20,000 nodes. Cluster: bench_extender's (placement groups of 50 nodes,
background pods using 0-6 GPUs per node). Jobs: 1-GPU, 4-CPU workers behind the gate,
size declared, policy required, each in its own namespace, as bench_admission_rounds
adds them. Every job fits some group, so each round admits them all (the admitter is a
follower here and writes nothing): the most packing a round of them can ask for.

The round is `Admitter.plan_now` (the snapshot on the event loop, then
`locality.admission.round.plan_round`), timed three ways in the same process:

- every trial: each job packed into every domain of its level, nothing remembered
  (`TrialMemo(capacity=0)` and a search that loops over every domain: the round as it
  was, with the same decisions);
- first round: the shipped round with an empty memo (within the round, a job packs
  only domains changed since a job of its shape asked);
- next round: the same, the memo (`RoundMemo`: trials and gathered jobs) kept from
  the round before, nothing changed between.

Each is the median of `--repeats` rounds. The plans of the three are checked equal.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_admission_rounds  # noqa: E402
import bench_extender  # noqa: E402
from results_file import load_average, record  # noqa: E402

SIZES = ((1000, 8, 5000), (200, 64, 20_000))


def admitter_for(jobs: int, pods: int, nodes: int):
    from extender.admission.admitter import Admitter
    from extender.app import CACHE
    from locality.admission.config import AdmissionConfig
    from locality.parse import parse_pod

    cache = bench_extender.headstart_app(nodes, 0.0)[CACHE]
    for raw in bench_admission_rounds.gated_jobs(jobs, pods):
        cache.apply_pod(parse_pod(raw, cache.config))
    return Admitter(cache, cache.config, AdmissionConfig(), None, lambda: False)


def timed(admitter, now: float) -> tuple[float, object]:
    started = time.perf_counter()
    planned = admitter.plan_now(now)
    return time.perf_counter() - started, planned


def measure(jobs: int, pods: int, nodes: int, repeats: int) -> dict:
    from locality.admission.round import RoundMemo
    from locality.admission.trials import RoundBins, TrialMemo
    from tests.locality.admission.test_trials import every_domain

    admitter = admitter_for(jobs, pods, nodes)
    now = time.time()
    every, first, following = [], [], []
    plans = []
    for _ in range(repeats):
        admitter.decider.memo = RoundMemo(TrialMemo(capacity=0))
        with patch.object(RoundBins, "search", every_domain):
            seconds, planned = timed(admitter, now)
        every.append(seconds)
        plans.append(planned)
        admitter.decider.memo = RoundMemo()
        seconds, planned = timed(admitter, now)
        first.append(seconds)
        plans.append(planned)
        seconds, planned = timed(admitter, now)
        following.append(seconds)
        plans.append(planned)
    if any(planned != plans[0] for planned in plans):
        raise SystemExit("the rounds disagree: the memo changed a decision")
    admitted = len(plans[0].admissions)
    result = {"jobs": jobs, "pods": pods, "nodes": nodes, "admitted": admitted,
              "every_s": statistics.median(every), "first_s": statistics.median(first),
              "next_s": statistics.median(following),
              "every_runs_s": every, "first_runs_s": first, "next_runs_s": following}
    result["first_vs_every"] = result["first_s"] / result["every_s"]
    result["next_vs_every"] = result["next_s"] / result["every_s"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="only 1,000 x 8 at 5,000 nodes, 1 repeat")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    sizes = SIZES[:1] if args.quick else SIZES
    repeats = 1 if args.quick else args.repeats
    load_before = load_average()
    results = []
    for jobs, pods, nodes in sizes:
        result = measure(jobs, pods, nodes, repeats)
        results.append(result)
        print(f"{jobs:,} jobs x {pods} pods at {nodes:,} nodes ({result['admitted']} admitted "
              f"a round): every trial {result['every_s']:.2f} s, first round "
              f"{result['first_s']:.2f} s ({result['first_vs_every']:.2f}x), next round "
              f"{result['next_s']:.2f} s ({result['next_vs_every']:.2f}x); medians of "
              f"{repeats}", flush=True)
    print(f"load average {load_before:.1f}-{load_average():.1f}")
    if args.record:
        if args.quick:
            parser.error("--record measures both sizes: drop --quick")
        record("round-memo", {"repeats": repeats, "sizes": results}, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
