"""What `headstart simulate` and `headstart demo` do, once their options are parsed (cli.py).

An adapter: loads the trace, catalog and bucket list, calls the simulator core
(`overprovisioner.sim`), prints the table / JSON, writes the HTML report, and the plots
with --plot (matplotlib is imported only then: report.py, lead_plot.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bucketing.bucket_file import read_bucket_file
from bucketing.catalog import Catalog, InstanceType, load_catalog
from bucketing.fit import unused_types
from common.durations import parse_duration
from common.errors import ConfigError, InputError
from common.outpath import check_output_folder
from common.parallel import Workers, resolve_jobs
from common.progress import HEARTBEAT_S
from jobtraces.demand import resource_matrix
from jobtraces.gpu_sharing import rounded_note
from jobtraces.jobtable import JobTable, gpu_model_requirements, require_gpu_pods
from jobtraces.load import check_synthetic_options, load_trace
from jobtraces.synthetic import SyntheticWorkload, generate
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.checked import load_checked_config
from overprovisioner.policy_names import parse_policy_name
from overprovisioner.sim.compare import default_policies, run_policies
from overprovisioner.sim.config import SimConfig
from overprovisioner.sim.lead_curve import LeadCurve, judged, run_lead_curve
from overprovisioner.sim.metrics import Metrics
from overprovisioner.sim.summary import Progress, build_verdict_for, print_summary
from overprovisioner.sim.table import format_table
from overprovisioner.sim.what_if import WhatIf, parse_what_if
from overprovisioner.sim.workload import Workload, build_workload, default_types


def _config(args: argparse.Namespace, service: OverprovisionerConfig) -> SimConfig:
    return SimConfig(
        gpu_startup_s=parse_duration(args.node_startup, "--node-startup"),
        cpu_startup_s=parse_duration(args.cpu_node_startup, "--cpu-node-startup"),
        startup_spread=getattr(args, "node_startup_spread", 0.2),
        scale_down_delay_after_add_s=_delay(getattr(args, "scale_down_delay_after_add", "10m"),
                                            "--scale-down-delay-after-add"),
        utilization_threshold=getattr(args, "scale_down_utilization_threshold", 0.5),
        gpu_utilization_threshold=getattr(args, "scale_down_gpu_utilization_threshold", 0.5),
        drainable_pods=getattr(args, "drainable_pods", False),
        groups_per_gpu_type=args.groups,
        scoring=args.scoring,
        seed=args.seed,
        service=service,
    ).validate()


def _delay(text: str, option: str) -> float:
    """A duration that may be 0 (off), as CA's own flags allow."""
    return 0.0 if str(text).strip() == "0" else parse_duration(text, option)


def load_bucket_types(path: str, catalog: Catalog) -> tuple[InstanceType, ...]:
    """Instance types from a bucket file (`bucketing.bucket_file`); unknown types are
    ConfigErrors naming the entry."""
    types = []
    for index, name in enumerate(read_bucket_file(path).names):
        try:
            types.append(catalog.get(name))
        except ConfigError as error:
            raise ConfigError(f"{path}: instance_types[{index}]: {error}") from None
    return tuple(types)


def check_types_used(path: str, table: JobTable, types: tuple[InstanceType, ...]) -> None:
    """ConfigError naming the first listed type no pod of the trace would run on (the fit
    rule, bucketing.fit): a node group the simulation would keep for nothing."""
    unused = unused_types(resource_matrix(table), types, gpu_model_requirements(table))
    if unused:
        index = unused[0]
        raise ConfigError(f"{path}: instance_types[{index}]: {types[index].name}: no pod of "
                          f"{table.source} would run on it ({len(unused)} such types); "
                          "list the types the trace uses (headstart buckets tune --out)")


def service_config(args: argparse.Namespace) -> tuple[OverprovisionerConfig, Catalog]:
    """(service config, catalog): the --config file loaded and checked as the service
    loads it (its warnings to stderr), or the service's defaults with --catalog."""
    path = getattr(args, "config", None)
    if not path:
        return OverprovisionerConfig(), load_catalog(getattr(args, "catalog", None) or "aws",
                                                     "--catalog")
    for option, value in (("--buckets", getattr(args, "buckets", None)),
                          ("--catalog", getattr(args, "catalog", None))):
        if value:
            raise InputError(f"{option}: the --config file names the instance types and the "
                             "catalog; give one or the other")

    checked = load_checked_config(path)
    for warning in checked.warnings:  # what the service logs at start-up on this file
        print(f"headstart simulate: warning: {warning}", file=sys.stderr)
    return checked.config, checked.catalog


def load_workload(args: argparse.Namespace, synthetic: bool, catalog: Catalog,
          service: OverprovisionerConfig) -> tuple[JobTable, Workload]:
    table = load_table(args, synthetic)
    return table, replay_workload(args, table, catalog, service)


def load_table(args: argparse.Namespace, synthetic: bool) -> JobTable:
    if synthetic:
        check_synthetic_options(args.format, args.gpu_sharing,
                                "--synthetic" if getattr(args, "synthetic", False)
                                else "the demo without --trace")
        return generate(SyntheticWorkload())

    table = load_trace(args.trace, args.format, gpu_sharing=args.gpu_sharing)
    require_gpu_pods(table, "the simulator measures waiting in GPU-minutes and placeholders "
                     "in GPU nodes, so there is nothing to compare")
    return table


def replay_workload(args: argparse.Namespace, table: JobTable, catalog: Catalog,
                    service: OverprovisionerConfig,
                    types: tuple[InstanceType, ...] | None = None) -> Workload:
    """The replayed workload of `table`: the config's, bucket file's or default types
    (`types` given: those), in the --from-day/--days window."""
    if types is not None:
        pass
    elif getattr(args, "config", None):
        types = tuple(catalog.get(name) for name in service.instance_types)
    elif getattr(args, "buckets", None):
        types = load_bucket_types(args.buckets, catalog)
        check_types_used(args.buckets, table, types)
    else:
        types = default_types(table, catalog)
    workload = build_workload(table, types, days=args.days,
                              from_day=getattr(args, "from_day", 0.0))
    if len(workload) == 0:
        raise InputError(f"{table.source}: no pod to replay in the chosen window")
    if workload.initial.all():
        start = (workload.start_s - table.trace_start_s) / 86_400
        end = (workload.end_s - table.trace_start_s) / 86_400
        raise InputError(
            f"{table.source}: no pod arrives in the chosen window (days {start:g} to "
            f"{end:g} of the trace; {len(workload):,} ran from before it): there is no "
            "waiting to cut; widen --days or move --from-day")
    return workload


def with_models(policies: tuple[str, ...], models: str | None, configured: str
                ) -> tuple[str, ...]:
    """`policies` plus `predictive:MODEL` for each model of `--models` other than the
    configured one (which plain `predictive` runs); InputError naming an unknown one."""
    if not models:
        return policies
    added: list[str] = []
    for model in (m.strip() for m in models.split(",")):
        name = f"predictive:{model}"
        try:
            parse_policy_name(name)
        except InputError:
            raise InputError(f"--models: {model!r} is not a forecaster") from None
        if model != configured and name not in policies and name not in added:
            added.append(name)
    return (*policies, *added)


def simulate_command(args: argparse.Namespace) -> int:
    jobs = resolve_jobs(args.jobs)
    for name in args.policy or ():
        parse_policy_name(name)
    with_models((), args.models, "")  # before any work
    what_if = parse_what_if(args.lead_share, args.lead, args.lead_curve, args.seed)
    if args.plot:  # before any work: a bad folder must not cost a run
        check_output_folder(args.plot, "--plot")
    service, catalog = service_config(args)
    config = _config(args, service)
    progress = Progress()
    with progress.meanwhile("loading the trace"):
        table = load_table(args, args.synthetic)
        workload = replay_workload(args, table, catalog, service)
    policies = with_models(tuple(args.policy or default_policies(workload)), args.models,
                           service.forecast.model)
    if what_if is not None and what_if.curve:
        return _lead_curve_command(args, table, workload, catalog, service, config, policies,
                                   what_if, progress, jobs)
    lead = None
    if what_if is not None:
        lead = what_if.leads[0]
        workload = replay_workload(args, what_if.apply(table, lead), catalog, service,
                             workload.types)
    progress.total = len(policies) + int(args.compare_scoring)
    with progress.meanwhile("simulating the policies"), Workers(jobs) as workers:
        results = run_policies(workload, catalog, policies, config,
                               compare_scoring=args.compare_scoring, progress=progress,
                               workers=workers)
    metrics = [m for _, m in results]
    verdict = build_verdict_for(metrics, config, workload)
    if args.plot:
        from overprovisioner.sim.report import write_plots

        progress.say("drawing the plots")
        with progress.meanwhile("drawing the plots", after_s=HEARTBEAT_S):
            paths = write_plots(results, Path(args.plot), verdict.assessment, verdict.ring)
        progress.say(f"plots: {', '.join(str(p) for p in paths)}")
    if args.json:
        print(json.dumps([json_row(m, lead) for m in metrics], indent=2))
        return 0
    print_summary(verdict, describe_workload(table, workload), describe_service(config),
                  metrics)
    print(describe_known(workload, what_if))
    print(f"({len(results)} runs in {progress.elapsed():.1f} s)")
    return 0


def json_row(metrics: Metrics, lead: float | None) -> dict[str, Any]:
    """One run of `simulate --json`: its metrics, its role in the comparison (reactive,
    peer, predictive, yardstick: a script finds the best peer at a cut by it) and the
    lead its known demand had."""
    return dict(metrics.as_dict(), role=parse_policy_name(metrics.policy).role,
                lead_seconds=lead)


def _lead_curve_command(args: argparse.Namespace, table: JobTable, workload: Workload,
                        catalog: Catalog, service: OverprovisionerConfig, config: SimConfig,
                        policies: tuple[str, ...], what_if: WhatIf,
                        progress: Progress, jobs: int) -> int:
    if not judged(policies):
        raise InputError("--lead-curve: needs a predictive policy in --policy (only "
                         "predictive reads known demand)")
    names = judged(policies)
    progress.total = len(policies) - len(names) + len(names) * len(what_if.leads)
    with progress.meanwhile("simulating the policies at each lead"), Workers(jobs) as workers:
        runs, curve = run_lead_curve(
            table, lambda t: replay_workload(args, t, catalog, service, workload.types), catalog,
            policies, config, what_if, progress=progress, workers=workers)
    if args.plot:
        from overprovisioner.sim.lead_plot import write_lead_plot

        progress.say("drawing the lead curve")
        path = write_lead_plot(curve, Path(args.plot), table.source)
        progress.say(f"plot: {path}")
    if args.json:
        print(json.dumps([json_row(m, lead) for _, m, lead in runs], indent=2))
        return 0
    print(describe_workload(table, workload))
    print(describe_known(workload, what_if))
    print(describe_service(config))
    print(format_table(list(curve.baseline)))
    print(format_lead_curve(curve))
    print(f"({len(runs)} runs in {progress.elapsed():.1f} s)")
    return 0


def describe_known(workload: Workload, what_if: WhatIf | None) -> str:
    """One line: how much of the window's demand is known ahead, and from where."""
    share = float(workload.known_ahead[~workload.initial].mean()) if len(workload) else 0.0
    if what_if is None:
        return (f"known ahead: {share:.1%} of the window's pods (the trace's known_at_s; "
                "--lead-share/--lead to try more)")
    leads = ", ".join(f"{lead:g}" for lead in what_if.leads)
    return (f"known ahead: the trace's known_at_s plus a what-if: {what_if.share:.0%} of "
            f"jobs (seed {what_if.seed}) known {leads} s before creation"
            + ("" if what_if.curve else f": {share:.1%} of the window's pods"))


def format_lead_curve(curve: LeadCurve) -> str:
    """Per judged policy and lead: the cut, the cost, the best peer's cost, the oracle."""
    header = ["policy", "lead s", "known pods", "pend cut", "extra GPU-h", "best peer",
              "peer GPU-h", "x best peer"]
    rows = []
    for point in curve.points:
        a = point.assessment
        best = a.best_peer
        ratio = a.ratio_to_best_peer
        rows.append([point.policy, f"{point.lead_s:g}", f"{point.known_share:.1%}",
                     f"{a.reduction:.1%}" if a.reduction is not None else "-",
                     f"{a.extra_gpu_hours:+.1f}" if a.extra_gpu_hours is not None else "-",
                     best.family if best else "none reaches it",
                     f"{best.extra:+.1f}" if best else "-",
                     f"{ratio:.2f}" if ratio is not None else "-"])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(row, widths, strict=True)))
             for row in [header, *rows]]
    first = curve.points[0].assessment if curve.points else None
    if first is not None and first.oracle_reduction is not None:
        lines.append(f"oracle: {first.oracle_reduction:.1%} cut for "
                     f"{first.oracle_extra_gpu_hours:+.1f} GPU-hours")
    return "\n".join(lines)


def describe_service(config: SimConfig) -> str:
    """One line: what the predictive policy runs (the service's config, or its defaults)."""
    service = config.service
    forecast = service.forecast
    stabilize = (f"stabilization tau {forecast.stabilize_tau_s:g} s"
                 if forecast.stabilize_tau_s > 0 else "no stabilization")
    fallback = "reactive fallback on" if forecast.fallback else "no fallback"
    debounce = service.placeholders.wake_debounce_s
    latency = ("at its next tick" if debounce <= 0 else f"{debounce:g} s after a preemption")
    cap = service.limits.cost_cap_per_hour
    limits_cap = "no cost cap" if cap is None else f"cost cap {cap:g} $/h"
    return (f"predictive = the overprovisioner service as configured ({service.source}): "
            f"{service.tick_s:g}-s tick, horizon {service.horizon_s:g} s "
            f"({service.horizon_ticks} ticks), {forecast.model} at quantile "
            f"{forecast.quantile:g}, {stabilize}, {fallback}, at most "
            f"{service.limits.default.max} placeholders per type, {limits_cap}; re-plans "
            f"{latency}")


def describe_workload(table: JobTable, workload: Workload) -> str:
    excluded = ", ".join(f"{n} {reason}" for reason, n in workload.excluded.items()) or "none"
    days = (workload.end_s - workload.start_s) / 86_400
    rounded = rounded_note(table)
    return (
        f"{table.source}: {len(workload)} pods over {days:.1f} days on "
        f"{', '.join(t.name for t in workload.types)}; {int(workload.initial.sum())} running "
        f"at the start on existing nodes; not replayed: {excluded}"
        + (f"; {rounded}" if rounded else "")
    )
