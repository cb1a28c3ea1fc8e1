"""`headstart demo`: the built-in synthetic workload (or a trace) replayed under every
placeholder policy (`headstart simulate`'s default list) and under the whole system
(`headstart replay`, one seed), the whole system's verdict first, then the placeholders'
own, the tables and an HTML report.

An adapter, as `overprovisioner.sim.commands` is for `simulate`: it loads, runs and
prints; what it prints is decided in `overprovisioner.sim.summary`,
`overprovisioner.sim.verdict` and `overprovisioner.sim.system`. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from common.outpath import check_output_folder
from common.parallel import Workers, resolve_jobs
from common.progress import HEARTBEAT_S
from overprovisioner.sim.commands import (
    describe_service,
    describe_workload,
    load_workload,
    service_config,
    with_models,
)
from overprovisioner.sim.compare import default_policies, run_policies
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.summary import (
    QUICK_DAYS,
    Progress,
    build_verdict_for,
    print_summary,
    quick_policies,
)


def demo_command(args: argparse.Namespace) -> int:
    from overprovisioner.sim.report import write_report  # matplotlib: the demo only
    from overprovisioner.sim.system.demo import whole_system
    from overprovisioner.sim.system.table import format_report

    args.buckets = None
    args.from_day = 0.0
    args.catalog = "aws"
    if args.quick and args.days is None:
        args.days = QUICK_DAYS
    jobs = resolve_jobs(args.jobs)
    progress = Progress()
    out = Path(args.out) if args.out else Path(f"headstart-demo-{time.strftime('%Y%m%d-%H%M%S')}")
    check_output_folder(out, "--out")  # before any work: a bad folder must not cost a run
    with_models((), args.models, "")  # an unknown model, before any work
    service, catalog = service_config(args)
    with progress.meanwhile("loading the trace"):
        table, workload = load_workload(args, args.trace is None, catalog, service)
    config = SimConfig(service=service).validate()
    policies = default_policies(workload, demo=True)
    if args.quick:
        policies = quick_policies(policies)
    policies = with_models(policies, args.models, service.forecast.model)
    progress.total = len(policies) + int(args.compare_scoring)
    with progress.meanwhile("simulating the policies"), Workers(jobs) as workers:
        results = run_policies(workload, catalog, policies, config,
                               compare_scoring=args.compare_scoring, progress=progress,
                               workers=workers)
        progress.say("replaying the whole system")
        system = whole_system(args, workers, lambda arm: progress.say(f"whole system: {arm}"))
    metrics = [m for _, m in results]
    progress.say("writing the report")
    verdict = build_verdict_for(metrics, config, workload)
    system_table = format_report(system.report) if system.report is not None else ""
    with progress.meanwhile("writing the report", after_s=HEARTBEAT_S):
        index = write_report(results, out, title=f"headstart demo: {table.source}",
                             workload_text=describe_workload(table, workload) + ". "
                             + describe_service(config) + ".", verdict=verdict,
                             system=system.lines, system_table=system_table)
    for line in system.lines:  # the whole system's verdict leads
        print(line)
    print()
    print("Placeholders alone, pod by pod:")
    print_summary(verdict, describe_workload(table, workload), describe_service(config),
                  metrics)
    if system_table:
        print()
        print(system_table)
    runs = len(results) + (len(system.report.rows) if system.report is not None else 0)
    print(f"({runs} runs in {progress.elapsed():.1f} s)")
    print(f"report: {index}")
    return 0
