"""The elastic table (issue 28): each workload's jobs replayed as gangs at fixed sizes,
elastic, and elastic with the growth announced (`headstart simulate-elastic`), at one or
more node-group caps, recorded so docs/simulator.md's "Elastic jobs" table is rendered
from bench/results.json (entry elastic), never typed.

    python bench/bench_elastic.py --record           # synthetic and DLRM
    python bench/bench_elastic.py --workloads synthetic
    python bench/render_tables.py                    # then the table

Every run uses the command's defaults (the rule: every job with two or more workers of
one GPU shape elastic between half and all its trace workers, linear scaling; 2
placement groups; the extender's admission defaults; cluster-autoscaler's delays and a
5-minute GPU start-up) and is deterministic (seed 0), so one run per setting is the
figure. The DLRM trace is read from the folder `--traces` names (docs/traces.md):
the first 60% of its window; a missing trace is skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results_file import load_average, record  # noqa: E402

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
DLRM = "alibaba-gpu-2025-disaggregated_DLRM_trace.csv.gz"


@dataclass(frozen=True)
class Spec:
    key: str
    name: str
    trace: str | None
    max_nodes: tuple[int, ...]
    days: float | None = None

    def command(self, max_nodes: int) -> str:
        source = "--synthetic" if self.trace is None else f"--trace $TRACES/{self.trace}"
        days = f" --days {self.days:g}" if self.days else ""
        return f"headstart simulate-elastic {source}{days} --max-nodes {max_nodes}"


SPECS = (
    Spec("synthetic", "synthetic (seeded, 14 days)", None, (8,)),
    Spec("dlrm", "Alibaba DLRM 2025 (first 60% cut, first 7 days)", DLRM, (16,), 7.0),
)


def run(spec: Spec, max_nodes: int, traces: Path) -> dict:
    from bucketing.catalog import load_catalog
    from overprovisioner.sim.gangs.gang_engine import GangSimConfig
    from overprovisioner.sim.gangs.jobs import ElasticRule, gang_jobs
    from overprovisioner.sim.gangs.table import run_arms, summaries
    from overprovisioner.sim.workload import build_workload, default_types

    catalog = load_catalog("aws")
    if spec.trace is None:
        from jobtraces.synthetic import SyntheticWorkload, generate

        table = generate(SyntheticWorkload())
    else:
        from jobtraces.load import load_trace

        table = load_trace(traces / spec.trace)
    workload = build_workload(table, default_types(table, catalog), days=spec.days)
    rule = ElasticRule()
    jobs = gang_jobs(workload, rule)
    started = time.monotonic()
    rows = summaries(run_arms(workload, jobs, workload.types, rule,
                              GangSimConfig(max_nodes=max_nodes)))
    return {"workload": spec.name, "max_nodes": max_nodes, "command": spec.command(max_nodes),
            "seconds": round(time.monotonic() - started, 1), "arms": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=[s.key for s in SPECS],
                        choices=[s.key for s in SPECS])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--record", action="store_true",
                        help="write the figures into bench/results.json (entry elastic)")
    args = parser.parse_args()
    before = load_average()
    runs = []
    for spec in SPECS:
        if spec.key not in args.workloads:
            continue
        if spec.trace is not None and not (args.traces / spec.trace).exists():
            print(f"{spec.key}: skipped, {args.traces / spec.trace} is missing")
            continue
        for cap in spec.max_nodes:
            result = run(spec, cap, args.traces)
            runs.append(result)
            arms = {row["arm"]: row for row in result["arms"]}
            print(f"{spec.key} max {cap}: " + "; ".join(
                f"{name} JCT {row['jct_mean_h']} h, queue {row['queue_mean_min']} min, "
                f"{row['node_gpu_hours']} GPU-h, unfinished {row['unfinished']}"
                for name, row in arms.items()) + f" ({result['seconds']} s)", flush=True)
    if args.record:
        record("elastic", {"runs": runs}, before,
               note="one deterministic run per workload and cap (seed 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
