"""The simulator's verdict on the developers' traces: every run README's headline and
docs/simulator.md's Measured section quote, recorded so the tables are rendered from
bench/results.json (entry simulator-measured), never typed.

    python bench/bench_simulator_measured.py --record        # all four workloads
    python bench/bench_simulator_measured.py --workloads dlrm synthetic
    python bench/bench_simulator_measured.py --jobs 1         # one process (default 2)
    python bench/render_tables.py                             # then the tables

Each workload runs what `headstart simulate` runs by default on it (reactive, static:1 /
2 / 4 / 8, proportional at the busiest type's mean node count over 1, 2 and 4,
schedules over the trace's own busy hours, predictive, the oracle) plus static:3,
predictive at quantiles 0.97 and 0.99, and rate-oracle, then the per-type counts
`simulate` chooses in hindsight for each predictive cut: the service's default
configuration, 5-minute GPU start-up, 2 placement groups per GPU type, headstart
scoring, cluster-autoscaler's delays, whole GPUs per pod (no GPU sharing). Judged runs
(predictive*, rate-oracle) are assessed as `simulate` assesses them: the cut in pending
GPU-minutes against reactive, the extra GPU-hours, and each peer family's cost for the
same cut. The public traces are read from the folder `--traces` names (docs/traces.md
says where to get them); a workload whose trace is missing is skipped with a line
saying so.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from results_file import load_average, record  # noqa: E402

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
OPENB = "alibaba-gpu-2023-openb_pod_list_default.csv.gz"
DLRM = "alibaba-gpu-2025-disaggregated_DLRM_trace.csv.gz"
EXTRA = ("static:3", "predictive:0.97", "predictive:0.99", "rate-oracle")


@dataclass(frozen=True)
class Spec:
    """One workload: `trace` None = the synthetic workload; `buckets` None = the types
    `simulate` picks by default."""

    key: str
    name: str
    trace: str | None
    buckets: tuple[str, ...] | None = None
    from_day: float = 0.0

    def command(self) -> str:
        """The `headstart simulate` line that runs the same (README, docs)."""
        source = "--synthetic" if self.trace is None else f"--trace $TRACES/{self.trace}"
        parts = [f"headstart simulate {source}"]
        if self.buckets:
            parts.append("--buckets buckets.yaml  # instance_types: [" +
                         ", ".join(self.buckets) + "]")
        if self.from_day:
            parts.insert(1, f"--from-day {self.from_day:g}")
        return " ".join(parts)

    def load(self, traces: Path, catalog) -> tuple:
        """(the job table, the simulated instance types) of this workload."""
        if self.trace is None:
            from jobtraces.synthetic import SyntheticWorkload, generate

            table = generate(SyntheticWorkload())
        else:
            from jobtraces.load import load_trace

            table = load_trace(traces / self.trace)
        if self.buckets:
            return table, tuple(catalog.get(name) for name in self.buckets)
        from overprovisioner.sim.workload import default_types

        return table, default_types(table, catalog)

    def missing(self, traces: Path) -> bool:
        """Its trace is not in `traces` (the synthetic workload never is missing)."""
        return self.trace is not None and not (traces / self.trace).is_file()


OPENB_TUNED = ("m5.12xlarge", "g4dn.4xlarge", "g4dn.8xlarge", "g5.48xlarge")
SPECS = (
    Spec("openb", "openb", OPENB),
    Spec("openb-active", "openb, active weeks", OPENB, from_day=108.0),
    Spec("dlrm", "DLRM", DLRM),
    Spec("synthetic", "synthetic", None),
    # The lists `headstart buckets tune --catalog aws` recommends (bench_tuner.py; openb's
    # for its active weeks too, the list a user tuning on the trace gets; the synthetic
    # workload's from `buckets tune --synthetic`): the verdict should not change
    # direction with the bucket list.
    Spec("openb-tuned", "openb, tuned list", OPENB, OPENB_TUNED),
    Spec("openb-active-tuned", "openb, active weeks, tuned list", OPENB, OPENB_TUNED,
         from_day=108.0),
    Spec("dlrm-tuned", "DLRM, tuned list", DLRM,
         ("m5.24xlarge", "g4dn.4xlarge", "g4dn.8xlarge", "g5.48xlarge")),
    Spec("synthetic-tuned", "synthetic, tuned list", None,
         ("m5.8xlarge", "g5.12xlarge", "g5.24xlarge", "g5.48xlarge")),
)
# Workloads bench_known_demand.py runs too (the tuned lists are for the verdict only).
DEFAULT_LISTS = ("openb", "openb-active", "dlrm", "synthetic")


def measure_workload(spec: Spec, traces: Path) -> dict:
    """Every run of `spec` and the assessment of each judged one."""
    from bucketing.catalog import load_catalog
    from overprovisioner.config import OverprovisionerConfig
    from overprovisioner.policy_names import parse_policy_name
    from overprovisioner.sim.assess import assess
    from overprovisioner.sim.compare import default_policies, run_policies
    from overprovisioner.sim.config import SimConfig
    from overprovisioner.sim.summary import build_verdict_for
    from overprovisioner.sim.workload import build_workload

    catalog = load_catalog("aws")
    table, types = spec.load(traces, catalog)
    workload = build_workload(table, types, from_day=spec.from_day)
    defaults = default_policies(workload)
    policies = tuple(dict.fromkeys(defaults[:-2] + EXTRA[:1] + defaults[-2:-1] + EXTRA[1:3]
                                   + defaults[-1:] + EXTRA[3:]))
    config = SimConfig(service=OverprovisionerConfig()).validate()
    started = time.perf_counter()
    results = run_policies(workload, catalog, policies, config)
    metrics = [m for _, m in results]
    runs = []
    for m in metrics:  # every run's cut and extra against reactive, as simulate has them
        a = assess(metrics, m.policy)
        runs.append(dict(m.as_dict(), reduction_pct=round(100 * a.reduction, 1),
                         extra_gpu_hours=round(a.extra_gpu_hours)))
    judged = [m.policy for m in metrics if parse_policy_name(m.policy).kind in
              ("predictive", "rate-oracle")]
    assessments = []
    for name in judged:
        a = assess(metrics, name)
        best = a.best_peer
        assessments.append({
            "policy": name, "reduction_pct": round(100 * a.reduction, 1),
            "extra_gpu_hours": round(a.extra_gpu_hours),
            "peers": {p.family: (None if p.extra is None else round(p.extra))
                      for p in a.peers},
            "best_peer": None if best is None else best.family,
            "best_peer_extra": None if best is None else round(best.extra),
            "ratio": (None if a.ratio_to_best_peer is None
                      else round(a.ratio_to_best_peer, 2)),
        })
    days = (workload.end_s - workload.start_s) / 86_400
    verdict = build_verdict_for(metrics, config, workload)
    chosen = verdict.assessment
    return {
        "key": spec.key, "name": f"{spec.name}, {days:.1f} days", "command": spec.command(),
        "pods": len(workload), "gpus_rounded": table.gpus_rounded,
        "types": [t.name for t in workload.types], "excluded": workload.excluded,
        "runs": runs, "assessments": assessments,
        # What `simulate` would recommend on this workload, as its verdict line says it.
        "verdict": None if chosen is None else {
            "policy": chosen.policy, "beats": verdict.beats,
            "ratio": (None if chosen.ratio_to_best_peer is None
                      else round(chosen.ratio_to_best_peer, 2)),
            "line": verdict.lines[0]},
        "seconds": round(time.perf_counter() - started, 1),
    }


def _measure(args: tuple[Spec, Path]) -> dict:
    spec, traces = args
    found = measure_workload(spec, traces)
    print(f"... {spec.name}: {len(found['runs'])} runs in {found['seconds']:.0f} s",
          file=sys.stderr, flush=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", choices=[s.key for s in SPECS],
                        default=[s.key for s in SPECS])
    parser.add_argument("--traces", type=Path, default=TRACES,
                        help=f"folder of the real traces (default {TRACES})")
    parser.add_argument("--jobs", type=int, default=2, help="workloads run side by side")
    parser.add_argument("--record", action="store_true",
                        help="write bench/results.json's simulator-measured entry")
    args = parser.parse_args()
    specs = []
    for spec in SPECS:
        if spec.key not in args.workloads:
            continue
        if spec.missing(args.traces):
            print(f"skipped {spec.name}: {args.traces / spec.trace} is missing",
                  file=sys.stderr)
            continue
        specs.append(spec)
    load_before = load_average()
    started = time.perf_counter()
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            found = pool.map(_measure, [(spec, args.traces) for spec in specs], chunksize=1)
    else:
        found = [_measure((spec, args.traces)) for spec in specs]
    for workload in found:
        print(f"\n{workload['name']} ({workload['pods']} pods on {', '.join(workload['types'])})")
        if workload["verdict"] is not None:
            print(f"  {workload['verdict']['line']}")
        for a in workload["assessments"]:
            ratio = "-" if a["ratio"] is None else f"{a['ratio']:.2f}x"
            print(f"  {a['policy']:<16} cut {a['reduction_pct']:5.1f}% for "
                  f"{a['extra_gpu_hours']:+,} GPU-h; cheapest peer {a['best_peer']} "
                  f"{a['best_peer_extra']}: {ratio}")
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.record:
        record("simulator-measured", {"workloads": found}, load_before,
               note="every run with the simulator's defaults; judged runs assessed as "
                    "`headstart simulate` assesses them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
