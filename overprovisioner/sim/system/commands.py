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

from common.errors import InputError
from common.parallel import Workers, resolve_jobs
from overprovisioner.sim.gangs.commands import describe, gang_replay
from overprovisioner.sim.system.replay import SystemReport, run_system
from overprovisioner.sim.system.table import format_report


def replay_command(args: argparse.Namespace) -> int:
    processes = resolve_jobs(args.jobs)
    if args.repeats < 1:
        raise InputError(f"--repeats: expected 1 or more, got {args.repeats}")
    replay = gang_replay(args, "the whole-system replay admits jobs as gangs, so it")
    rule, catalog, table, workload, jobs, groups, config = (
        replay.rule, replay.catalog, replay.table, replay.workload, replay.jobs, replay.groups,
        replay.config)
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
