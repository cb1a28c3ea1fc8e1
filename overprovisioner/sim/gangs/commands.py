"""What `headstart simulate-elastic` does, once its options are parsed (cli.py).

An adapter: loads the workload as `headstart simulate` does (`overprovisioner.sim.commands`),
runs the arms (`overprovisioner.sim.gangs.table`) on `--jobs` processes
(`common.parallel`) and prints the table or JSON. Progress goes to stderr, a line as each
arm finishes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bucketing.catalog import Catalog, load_catalog
from common.errors import InputError
from common.parallel import Workers, resolve_jobs
from jobtraces.jobtable import JobTable, require_jobs
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.sim.commands import load_table, replay_workload
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.gangs.gang_engine import GangSimConfig
from overprovisioner.sim.gangs.jobs import ElasticRule, GangJob, gang_jobs
from overprovisioner.sim.gangs.table import ARMS, format_rows, run_arms, summaries
from overprovisioner.sim.workload import Workload


@dataclass(frozen=True)
class GangReplay:
    """What every gang replay reads from its options (`cli.add_gang_options`)."""

    rule: ElasticRule
    catalog: Catalog
    table: JobTable
    workload: Workload
    jobs: Sequence[GangJob]
    groups: tuple[str, ...]
    config: GangSimConfig


def gang_replay(args: argparse.Namespace, needs_jobs: str | None = None) -> GangReplay:
    """The options checked, the trace read and its jobs made gangs; `needs_jobs`: what
    refuses a trace without job structure (`require_jobs`), None: nothing does."""
    if args.max_nodes < 1:
        raise InputError(f"--max-nodes: expected 1 or more, got {args.max_nodes}")
    if not 1 <= args.groups <= 26:
        raise InputError(f"--groups: expected 1 to 26, got {args.groups}")
    rule = ElasticRule(args.elastic_share, args.min_fraction, args.max_factor,
                       args.scaling).validate()
    catalog = load_catalog(args.catalog)
    table = load_table(args, args.synthetic)
    if needs_jobs is not None:
        require_jobs(table, needs_jobs)
    workload = replay_workload(args, table, catalog, OverprovisionerConfig())
    groups = tuple(f"pg-{chr(ord('a') + i)}" for i in range(args.groups))
    config = GangSimConfig(replace(SimConfig(), seed=args.seed), groups, args.max_nodes)
    return GangReplay(rule, catalog, table, workload, gang_jobs(workload, rule), groups,
                      config)


def simulate_elastic_command(args: argparse.Namespace) -> int:
    processes = resolve_jobs(args.jobs)
    replay = gang_replay(args)
    rule, table, workload, jobs, groups, config = (
        replay.rule, replay.table, replay.workload, replay.jobs, replay.groups, replay.config)
    started = time.monotonic()

    def done(arm: str) -> None:
        print(f"{arm}: done ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

    with Workers(processes) as workers:
        results = run_arms(workload, jobs, workload.types, rule, config, arms=ARMS,
                           workers=workers, done=done)
    rows = summaries(results)
    if args.json:
        print(json.dumps({"source": table.source, "rule": _rule(rule),
                          "max_nodes": args.max_nodes, "groups": list(groups), "arms": rows},
                         indent=2))
        return 0
    print(describe(table.source, jobs, rule, args.max_nodes, groups, workload))
    print(format_rows(rows))
    return 0


def _rule(rule: ElasticRule) -> dict[str, Any]:
    return {"share": rule.share, "min_fraction": rule.min_fraction,
            "max_factor": rule.max_factor, "scaling": rule.scaling}


def describe(source: str, jobs: Sequence[GangJob], rule: ElasticRule, max_nodes: int,
             groups: tuple[str, ...], workload: Workload) -> str:
    elastic = sum(1 for job in jobs if job.bounds is not None)
    types = ", ".join(t.name for t in workload.types)
    return (f"{source}: {len(jobs):,} jobs, {elastic:,} elastic (workers between "
            f"ceil({rule.min_fraction:g} n) and max(n, floor({rule.max_factor:g} n)), n the "
            f"trace's; {rule.scaling} scaling); node groups of at most {max_nodes} nodes per "
            f"type ({types}) in each of {', '.join(groups)}.")
