"""How long one admission round takes when many waiting jobs try preemption and some
cannot be satisfied by it (issue 46: "a round with 1,000 waiting jobs, 200 of which
preemption cannot satisfy, stays under 2 s at 5,000 nodes").

    python bench/bench_preemption.py              # medians of 3
    python bench/bench_preemption.py --record     # and write bench/results.json

The cluster: 100 placement groups of 50 8-GPU nodes. In each, 5 running gangs of
priority 0 and 5 of priority 100 (4 nodes each, every pod bound and Ready, owned by a
Job: preemption victims when lower) and 10 free nodes. The jobs behind the gate: 800
one-node jobs of priority 50 (they fit the free nodes: admitted), then 200 jobs of 31
to 50 nodes at priority 100, each of its own shape (size and CPUs a pod), so no answer
serves two: one group could hold any of them empty, but freeing every lower gang of a
group leaves 30 nodes, so preemption cannot satisfy any and each asks every group.
They are created 1 s before the round (no one holds room yet).

The round is `locality.admission.round.plan_round` with a fresh memo (the first round;
a preemption's answer is not kept across rounds), timed twice in the same process:
with the round as shipped, and with the preemption's necessary-room check and its
within-round memory switched off (`--baseline` alone runs only that). The plans are
checked equal.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results_file import load_average, record  # noqa: E402

GROUPS, NODES_PER_GROUP, GANGS_PER_PRIORITY, GANG_NODES = 100, 50, 5, 4
SMALL_JOBS, BIG_JOBS = 800, 200


def inputs(now: float):
    from locality.admission.config import GATE
    from locality.admission.model import Domain
    from locality.admission.record import GangRecord, GangState
    from locality.admission.round import Inputs
    from locality.model import JobKey, NodeState
    from tests.locality.builders import make_pod, make_state

    states, records, by_job, gated = [], {}, {}, []
    for group in range(GROUPS):
        name = f"pg-{group}"
        members = {}
        for gang in range(2 * GANGS_PER_PRIORITY):
            priority = 0 if gang < GANGS_PER_PRIORITY else 100
            key = JobKey("ns", f"run-{group}-{gang}")
            pods = tuple(replace(
                make_pod(f"{key.name}-{i}", job=key.name, gpus=8, cpu=8, memory_gib=64,
                         node=f"{name}-{gang * GANG_NODES + i}"),
                priority=priority, controller=("Job", key.name), ready=True)
                for i in range(GANG_NODES))
            by_job[key] = pods
            records[key] = GangRecord(key, GangState.RUNNING, Domain("placement-group", name),
                                      "headstart.io/placement-group", GANG_NODES, name=key.name)
            for pod in pods:
                members[pod.node_name] = [pod]
        for index in range(NODES_PER_GROUP):
            node = f"{name}-{index}"
            state = make_state(node, gpus=8, cpu=96, memory_gib=1024, group=name,
                               pods=members.get(node, []))
            states.append(NodeState(state.node, state.requested, state.placeholder_requested))

    def waiting(job: str, size: int, priority: int, cpu: int = 8) -> None:
        key = JobKey("ns", job)
        pods = tuple(replace(make_pod(f"{job}-{i}", job=job, gpus=8, cpu=cpu, memory_gib=64,
                                      group="required", job_size=size),
                             priority=priority, scheduling_gates=(GATE,),
                             created_at=now - 1, controller=("Job", job))
                     for i in range(size))
        by_job[key] = pods
        gated.extend(pods)

    for job in range(SMALL_JOBS):
        waiting(f"small-{job}", 1, 50)
    for job in range(BIG_JOBS):  # 200 shapes: 31-50 nodes, 8-17 CPUs a pod
        waiting(f"big-{job}", 31 + job % 20, 100, cpu=8 + job // 20)
    return Inputs(gated, records, by_job, states, None)


def timed_round(round_inputs, now: float):
    from locality.admission.config import AdmissionConfig
    from locality.admission.round import RoundMemo, plan_round
    from locality.config import LocalityConfig

    started = time.perf_counter()
    planned, _, _ = plan_round(round_inputs, now, LocalityConfig(), AdmissionConfig(),
                               None, None, RoundMemo())
    return time.perf_counter() - started, planned


def baseline():
    """The round without the necessary-room check and the within-round memory."""
    from locality.admission import gang_preemption

    return patch.multiple(gang_preemption, ROOM_CHECK=False, MEMORY=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", action="store_true", help="only the round without them")
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    now = time.time()
    round_inputs = inputs(now)
    load_before = load_average()
    shipped, before, plans = [], [], []
    for _ in range(args.repeats):
        if not args.baseline:
            seconds, planned = timed_round(round_inputs, now)
            shipped.append(seconds)
            plans.append(planned)
        with baseline():
            seconds, planned = timed_round(round_inputs, now)
        before.append(seconds)
        plans.append(planned)
    if any(planned != plans[0] for planned in plans):
        raise SystemExit("the rounds disagree: the check or the memory changed a decision")
    plan = plans[0]
    codes: dict[str, int] = {}
    for waiting in plan.waiting:
        codes[waiting.code.value] = codes.get(waiting.code.value, 0) + 1
    result = {"groups": GROUPS, "nodes": GROUPS * NODES_PER_GROUP,
              "jobs": SMALL_JOBS + BIG_JOBS, "unsatisfiable": BIG_JOBS,
              "admitted": len(plan.admissions), "preemptions": len(plan.preemptions),
              "waiting": codes, "baseline_s": statistics.median(before),
              "baseline_runs_s": before}
    line = (f"{result['jobs']:,} waiting jobs ({BIG_JOBS} preemption cannot satisfy) at "
            f"{result['nodes']:,} nodes: {result['admitted']} admitted, waiting {codes}; "
            f"without the check and memory {result['baseline_s']:.2f} s")
    if shipped:
        result.update(shipped_s=statistics.median(shipped), shipped_runs_s=shipped)
        result["speedup"] = result["baseline_s"] / result["shipped_s"]
        line += (f", shipped {result['shipped_s']:.2f} s ({result['speedup']:.1f}x faster)")
    print(line + f"; medians of {args.repeats}; load average {load_before:.1f}-"
          f"{load_average():.1f}", flush=True)
    if args.record:
        if args.baseline:
            parser.error("--record measures both: drop --baseline")
        record("preemption-round", {"repeats": args.repeats, **result}, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
