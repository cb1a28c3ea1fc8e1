"""The whole system, replayed (issue 47): `headstart replay` on the seeded synthetic
workload, recorded so docs/simulator.md's "The whole system" table, each part's
contribution and the strongest peer are rendered from bench/results.json (entry
system), never typed.

    python bench/bench_system.py --record          # synthetic, 3 seeds
    python bench/bench_system.py --workloads dlrm  # the DLRM trace's first-60% cut
    python bench/render_tables.py                  # then the tables

It records what `headstart replay` reports (`overprovisioner.sim.system.replay`): every
arm once at seed 0 (each replay is deterministic for its seed, which draws node
start-up times), and the arms the verdict compares at seeds 0, 1 and 2, whose medians
it compares and whose spread across seeds widens what it calls a tie. The DLRM trace
is read from the folder `--traces` names (docs/traces.md): the first 60% of its window,
as the file holds it; a missing trace is skipped with a line saying so.
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
    max_nodes: int
    days: float | None = None

    def command(self) -> str:
        source = "--synthetic" if self.trace is None else f"--trace $TRACES/{self.trace}"
        days = f" --days {self.days:g}" if self.days else ""
        return f"headstart replay {source}{days} --max-nodes {self.max_nodes}"


SPECS = (
    Spec("synthetic", "synthetic (seeded, 14 days)", None, 8),
    Spec("dlrm", "Alibaba DLRM 2025 (first-60% cut, first 7 days)", DLRM, 16, 7.0),
)


def load(spec: Spec, traces: Path):
    from bucketing.catalog import load_catalog
    from overprovisioner.sim.gangs.jobs import ElasticRule, gang_jobs
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
    return catalog, workload, rule, gang_jobs(workload, rule)


def run(spec: Spec, traces: Path, repeats: int) -> dict:
    from overprovisioner.sim.gangs.gang_engine import GangSimConfig
    from overprovisioner.sim.system.replay import run_system

    catalog, workload, rule, jobs = load(spec, traces)
    started = time.monotonic()

    def progress(name: str) -> None:
        print(f"  {spec.key} {name}: {time.monotonic() - started:.0f} s", flush=True)

    report = run_system(workload, jobs, catalog, rule, GangSimConfig(max_nodes=spec.max_nodes),
                        progress=progress, repeats=repeats)
    return {"workload": spec.name, "key": spec.key, "max_nodes": spec.max_nodes,
            "command": spec.command(), "seconds": round(time.monotonic() - started, 1),
            "verdict": list(report.verdict.lines), "run": report.verdict.run,
            "configuration": report.chosen["arm"],
            "strongest_peer": report.strongest["arm"] if report.strongest else None,
            "cheapest_peer_reaching": report.reaching["arm"] if report.reaching else None,
            "hindsight": list(report.hindsight), "contributions": report.contributions,
            "tie": report.tie, "seeds": list(report.seeds), "repeated": list(report.repeated),
            "arms": list(report.rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=["synthetic"],
                        choices=[s.key for s in SPECS])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--repeats", type=int, default=3,
                        help="seeds (0, 1, ...) the compared arms run at (default 3)")
    parser.add_argument("--record", action="store_true",
                        help="write the figures into bench/results.json (entry system; "
                        "workloads not run keep their recorded figures)")
    args = parser.parse_args()
    before = load_average()
    runs = []
    for spec in SPECS:
        if spec.key not in args.workloads:
            continue
        if spec.trace is not None and not (args.traces / spec.trace).exists():
            print(f"{spec.key}: skipped, {args.traces / spec.trace} is missing")
            continue
        result = run(spec, args.traces, args.repeats)
        runs.append(result)
        print(f"{spec.key}: {result['verdict'][0]} ({result['seconds']} s)", flush=True)
    if args.record:
        from results_file import load as load_results

        kept = []
        try:
            kept = [r for r in load_results()["system"]["figures"]["runs"]
                    if r["key"] not in {run["key"] for run in runs}]
        except KeyError:
            pass
        order = [s.key for s in SPECS]
        record("system", {"runs": sorted(kept + runs, key=lambda r: order.index(r["key"]))},
               before, note="one deterministic run per arm at seed 0; headstart's "
               "configuration and the peers the verdict names also at seeds 1 and 2 (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
