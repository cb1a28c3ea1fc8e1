"""What `headstart replay` does, once its options are parsed (cli.py).

An adapter: loads the workload as `headstart simulate-elastic` does, refuses a trace
without jobs (`jobtraces.jobtable.require_jobs`), runs the whole-system replay
(`overprovisioner.sim.system.replay`) and prints the report, the verdict first, or JSON.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace

from bucketing.catalog import load_catalog
from common.errors import InputError
from common.parallel import Workers, resolve_jobs
from jobtraces.jobtable import require_jobs
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.sim.commands import load_table, replay_workload
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.gangs.commands import describe
from overprovisioner.sim.gangs.engine import GangSimConfig
from overprovisioner.sim.gangs.jobs import ElasticRule, gang_jobs
from overprovisioner.sim.system.replay import SystemReport, run_system
from overprovisioner.sim.system.table import format_report


def replay_command(args: argparse.Namespace) -> int:
    processes = resolve_jobs(args.jobs)
    if args.repeats < 1:
        raise InputError(f"--repeats: expected 1 or more, got {args.repeats}")
    if args.max_nodes < 1:
        raise InputError(f"--max-nodes: expected 1 or more, got {args.max_nodes}")
    if not 1 <= args.groups <= 26:
        raise InputError(f"--groups: expected 1 to 26, got {args.groups}")
    rule = ElasticRule(args.elastic_share, args.min_fraction, args.max_factor,
                       args.scaling).validate()
    catalog = load_catalog(args.catalog)
    table = load_table(args, args.synthetic)
    require_jobs(table, "the whole-system replay admits jobs as gangs, so it")
    workload = replay_workload(args, table, catalog, OverprovisionerConfig())
    jobs = gang_jobs(workload, rule)
    groups = tuple(f"pg-{chr(ord('a') + i)}" for i in range(args.groups))
    config = GangSimConfig(replace(SimConfig(), seed=args.seed), groups, args.max_nodes)
    started = time.monotonic()

    def progress(name: str) -> None:
        print(f"{name}: done ({time.monotonic() - started:.0f} s)", file=sys.stderr)

    with Workers(processes) as workers:
        report = run_system(workload, jobs, catalog, rule, config, progress=progress,
                            repeats=args.repeats, workers=workers)
    if args.json:
        print(json.dumps(as_json(report, table.source), indent=2))
        return 0
    print(format_report(report))
    print()
    print(describe(table.source, jobs, rule, args.max_nodes, groups, workload))
    return 0


def as_json(report: SystemReport, source: str) -> dict:
    return {"source": source, "verdict": list(report.verdict.lines),
            "run": report.verdict.run, "configuration": report.chosen["arm"],
            "tie": report.tie, "seeds": list(report.seeds),
            "strongest_peer": report.strongest["arm"] if report.strongest else None,
            "cheapest_peer_reaching": report.reaching["arm"] if report.reaching else None,
            "hindsight": list(report.hindsight), "contributions": report.contributions,
            "repeated": list(report.repeated), "arms": list(report.rows)}
