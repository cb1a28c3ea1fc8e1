"""What announced work buys on the developers' traces: the lead curves docs/known-demand.md
and README quote, recorded so their tables are rendered from bench/results.json (entry
known-demand), never typed.

    python bench/bench_known_demand.py --record     # four workloads, two shares (~5 min)
    python bench/render_tables.py                   # then the tables

For each workload of bench_simulator_measured (same windows and types), the what-if
`headstart simulate --lead-share S --lead-curve 0,2m,5m,10m,20m` runs with S = 0.5 and
1 (whole jobs drawn with seed 0, the same jobs at every lead): the peers (what
`simulate` runs by default plus static:3) and the oracle once on the trace as it is,
`predictive` once per lead, each judged as `simulate` judges it. Defaults as there: the
service's default configuration, 5-minute mean start-up, CA's delays, whole GPUs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_simulator_measured import DEFAULT_LISTS, SPECS, TRACES, Spec  # noqa: E402
from results_file import load_average, record  # noqa: E402

SHARES = (0.5, 1.0)
LEADS = (0.0, 120.0, 300.0, 600.0, 1200.0)


def curves(spec: Spec, traces: Path) -> dict:
    from bucketing.catalog import load_catalog
    from overprovisioner.config import OverprovisionerConfig
    from overprovisioner.sim.compare import default_policies
    from overprovisioner.sim.config import SimConfig
    from overprovisioner.sim.lead_curve import run_lead_curve
    from overprovisioner.sim.what_if import WhatIf
    from overprovisioner.sim.workload import build_workload

    catalog = load_catalog("aws")
    table, types = spec.load(traces, catalog)

    def build(t):
        return build_workload(t, types, from_day=spec.from_day)

    workload = build(table)
    defaults = default_policies(workload)
    policies = tuple(dict.fromkeys(defaults[:-2] + ("static:3",) + defaults[-2:]))
    config = SimConfig(service=OverprovisionerConfig()).validate()
    started = time.perf_counter()
    found: dict = {"key": spec.key, "name": None, "shares": []}
    for share in SHARES:
        _, curve = run_lead_curve(table, build, catalog, policies, config,
                                  WhatIf(share, LEADS, 0, curve=True))
        reactive = next(m for m in curve.baseline if m.policy == "reactive")
        oracle = next(m for m in curve.baseline if m.policy == "oracle")
        base = reactive.pending_gpu_minutes
        found["reactive_pending_gpu_minutes"] = round(base)
        found["oracle"] = {"reduction_pct": round(100 * (1 - oracle.pending_gpu_minutes / base), 1),
                           "extra_gpu_hours": round(oracle.gpu_hours - reactive.gpu_hours)}
        found["shares"].append({"share": share, "points": [{
            "lead_s": p.lead_s, "known_share": round(p.known_share, 3),
            "reduction_pct": round(100 * p.assessment.reduction, 1),
            "extra_gpu_hours": round(p.assessment.extra_gpu_hours),
            "ratio": (None if p.assessment.ratio_to_best_peer is None
                      else round(p.assessment.ratio_to_best_peer, 2)),
        } for p in curve.of("predictive")]})
    days = (workload.end_s - workload.start_s) / 86_400
    found["name"] = f"{spec.name}, {days:.1f} days"
    found["seconds"] = round(time.perf_counter() - started, 1)
    return found


def _curves(args: tuple[Spec, Path]) -> dict:
    spec, traces = args
    found = curves(spec, traces)
    print(f"... {found['name']}: {found['seconds']:.0f} s", file=sys.stderr, flush=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--jobs", type=int, default=2, help="workloads run side by side")
    parser.add_argument("--record", action="store_true",
                        help="write bench/results.json's known-demand entry")
    args = parser.parse_args()
    wanted = [s for s in SPECS if s.key in DEFAULT_LISTS]
    specs = [s for s in wanted if not s.missing(args.traces)]
    for spec in wanted:
        if spec.missing(args.traces):
            print(f"skipped {spec.name}: {args.traces / spec.trace} is missing",
                  file=sys.stderr)
    load_before = load_average()
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            found = pool.map(_curves, [(spec, args.traces) for spec in specs], chunksize=1)
    else:
        found = [_curves((spec, args.traces)) for spec in specs]
    for w in found:
        print(f"\n{w['name']}: reactive {w['reactive_pending_gpu_minutes']:,} pending GPU-min")
        for s in w["shares"]:
            cells = [f"{p['lead_s'] / 60:g}m {p['reduction_pct']}%/{p['extra_gpu_hours']:+,}"
                     for p in s["points"]]
            print(f"  share {s['share']:g}: " + "; ".join(cells))
    if args.record:
        record("known-demand", {"leads_s": list(LEADS), "workloads": found}, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
