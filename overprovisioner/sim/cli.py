"""`headstart simulate` and `headstart demo`: replay a trace under placeholder policies.

A thin adapter: parses arguments, loads the trace, catalog and bucket list, calls the
simulator core (`overprovisioner.sim`), prints the table / JSON, writes plots and the
HTML report. Heavy imports happen inside the handlers so `headstart --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from common.errors import ConfigError, InputError
from common.outpath import check_output_folder
from common.progress import HEARTBEAT_S
from jobtraces.gpu_sharing import GPU_SHARING_HELP, rounded_note
from overprovisioner.sim.summary import QUICK_DAYS, Progress, print_summary, quick_policies

POLICY_HELP = (
    "policies to compare: reactive; the peers users run today: static:N (N placeholder "
    "nodes per instance type), proportional:R[,min=M][,max=X] (one per R nodes of the type, "
    "as cluster-proportional-autoscaler's linear mode), scheduled:HH-HH=N[,...][,else=N] "
    "(N per type during those UTC hours); predictive (the overprovisioner service as "
    "configured), predictive:Q (at forecast quantile Q); oracle, rate-oracle[:Q] (limits "
    "that know the future) (default: reactive, static:1/2/4/8, proportional:R at three "
    "ratios sized to the trace (R = the busiest type's mean node count / 1, 2 and 4), two "
    "schedules following the trace's busy hours, predictive, oracle)"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    simulate = subparsers.add_parser(
        "simulate",
        help="replay a trace on a simulated autoscaled cluster under placeholder policies",
        description="Replay a job table on a simulated cluster with cluster-autoscaler "
        "(node start-up, 10 s scans, 10 min scale-down) and kube-scheduler-like placement "
        "(locality scoring), under each placeholder policy; report pending time caused "
        "by missing capacity, GPU-hours, dollars and node launches, and what predictive "
        "costs against the cheapest peer headroom for the same reduction. The predictive "
        "policy runs the overprovisioner service's configuration: --config FILE, or the "
        "service's defaults.",
    )
    source = simulate.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="PATH", help="a trace file (Alibaba openb/DLRM, "
                        "headstart CSV; gzip allowed)")
    source.add_argument("--synthetic", action="store_true",
                        help="the seeded synthetic workload (14 days of PS/worker jobs)")
    _common(simulate)
    simulate.add_argument("--json", action="store_true",
                          help="print one JSON object per policy run (a JSON list)")
    simulate.add_argument("--plot", metavar="DIR",
                          help="write demand/forecast/capacity plots per policy and the "
                          "pending-time vs cost trade-off into DIR (with --lead-curve: "
                          "the lead curve, lead-curve.png)")
    what_if = simulate.add_argument_group(
        "what-if: jobs known ahead (docs/known-demand.md)",
        "predictive plans for announced work (Kueue Workloads, CronJobs, ...) before its "
        "pods exist; the trace's known_at_s column says when each pod was known. These "
        "options mark a seeded random share of whole jobs as known a lead before creation "
        "(a pod known earlier by the trace keeps that).")
    what_if.add_argument("--lead-share", metavar="F",
                         help="share of jobs known ahead, 0-1 (with --lead or --lead-curve)")
    what_if.add_argument("--lead", metavar="DURATION",
                         help="how long before creation those jobs are known, e.g. 10m")
    what_if.add_argument("--lead-curve", metavar="D1,D2,...",
                         help="run predictive once per lead (e.g. 0,2m,5m,10m,20m; the "
                         "other policies once) and report the cut and cost per lead")
    simulate.set_defaults(func=simulate_command)

    demo = subparsers.add_parser(
        "demo",
        help="run every policy on the synthetic workload and write an HTML report",
        description="Run reactive, the peer headrooms (static, proportional, scheduled), "
        "predictive (the service's defaults, and quantiles 0.97 and 0.99) and the oracle on "
        "the synthetic workload (or --trace); print the verdict (which quantile to "
        "configure, what it cuts and costs in GPU-hours and dollars against each headroom, "
        "the config lines) and the table, and write the same as an HTML report with plots "
        "into a new folder (named on stdout). Progress goes to stderr.",
    )
    demo.add_argument("--trace", metavar="PATH", help="use this trace instead of the "
                      "synthetic workload")
    demo.add_argument("--out", metavar="DIR", default=None,
                      help="folder for the report (default: ./headstart-demo-<time>)")
    demo.add_argument("--format", default=None, help="trace format (default: detected)")
    demo.add_argument("--gpu-sharing", action="store_true", help=GPU_SHARING_HELP)
    demo.add_argument("--days", type=float, default=None, help="simulate only N days")
    demo.add_argument("--models", metavar="LIST", default=None,
                      help="also run predictive with each of these forecasters (comma-"
                      "separated), as `headstart simulate --models` does: the verdict then "
                      "chooses the model and the quantile together")
    demo.add_argument("--compare-scoring", action="store_true",
                      help="one more run: predictive with kube-scheduler's default scoring "
                      "(only with multi-pod jobs)")
    demo.add_argument("--quick", action="store_true",
                      help=f"a quick look: the first {QUICK_DAYS:g} days (unless --days) and 8 "
                      "policies: reactive, static:1, static:2, the middle proportional ratio "
                      "and schedule, predictive, predictive:0.97, oracle (drops static:4 and "
                      ":8, the other ratios and schedules, predictive:0.99)")
    demo.set_defaults(func=demo_command)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default=None,
                        help="trace format (default: detected from the header)")
    parser.add_argument("--gpu-sharing", action="store_true", help=GPU_SHARING_HELP)
    parser.add_argument("--config", metavar="FILE.yaml",
                        help="the overprovisioner config the predictive policy runs (the "
                        "file `headstart overprovisioner --config` reads, loaded and checked "
                        "the same way; its instance types and catalog are the simulated "
                        "ones); default: the service's built-in defaults")
    parser.add_argument("--catalog", default=None,
                        help="instance catalog without --config: aws, gcp or a YAML path "
                        "(default aws)")
    parser.add_argument("--buckets", metavar="FILE.yaml",
                        help="instance types to simulate without --config (the `headstart "
                        "buckets tune --out` file, or `instance_types: [...]`); default: one "
                        "type per GPU count")
    parser.add_argument("--policy", nargs="+", metavar="NAME", default=None, help=POLICY_HELP)
    parser.add_argument("--models", metavar="LIST", default=None,
                        help="also run predictive with each of these forecasters (comma-"
                        "separated, e.g. last_adaptive,conditional; `headstart backtest "
                        "--models` ranks them by forecast error): the verdict then chooses "
                        "the model and the quantile together, by cost against headroom")
    parser.add_argument("--node-startup", default="5m",
                        help="GPU node start-up after CA asks, the mean (default 5m)")
    parser.add_argument("--node-startup-spread", type=float, default=0.2, metavar="F",
                        help="each node's start-up is drawn uniformly within +-F of the mean "
                        "(default 0.2: 4-6 min for 5m; 0 = exactly the mean)")
    parser.add_argument("--cpu-node-startup", default="2m",
                        help="GPU-less node start-up (default 2m)")
    parser.add_argument("--scale-down-delay-after-add", default="10m", metavar="DURATION",
                        help="cluster-autoscaler's flag of that name: no node is removed "
                        "this long after a scale-up (default 10m, CA's default; 0 = none)")
    parser.add_argument("--scale-down-utilization-threshold", type=float, default=0.5,
                        metavar="F", help="cluster-autoscaler's flag of that name: a node "
                        "without GPUs under this share of CPU and memory requested is "
                        "unneeded (default 0.5)")
    parser.add_argument("--scale-down-gpu-utilization-threshold", type=float, default=0.5,
                        metavar="F", help="the same for GPU nodes, by their GPU share alone "
                        "(default 0.5)")
    parser.add_argument("--drainable-pods", action="store_true",
                        help="the trace's pods are plain Jobs' pods that cluster-autoscaler "
                        "may evict to remove an underused node (default: pods of a "
                        "training operator, a custom controller CA never evicts)")
    parser.add_argument("--days", type=float, default=None,
                        help="simulate only the first N days of the window")
    parser.add_argument("--from-day", type=float, default=0.0,
                        help="start the window N days after the trace start (default 0)")
    parser.add_argument("--groups", type=int, default=2,
                        help="placement groups per GPU type the config does not name "
                        "(default 2; 1 = none)")
    parser.add_argument("--scoring", choices=("headstart", "default"), default="headstart",
                        help="scheduler scoring of the main runs (default headstart)")
    parser.add_argument("--compare-scoring", action="store_true",
                        help="also run the predictive policy (or the first) with the other "
                        "scoring, to see what headstart's locality scoring changes (one more "
                        "run; only with multi-pod jobs)")
    # The comparison used to run by default; the old opt-out is still accepted.
    parser.add_argument("--no-scoring-comparison", action="store_true",
                        help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help="seed for CA's tie-breaks")


def _config(args: argparse.Namespace, service: Any) -> Any:
    from common.durations import parse_duration
    from overprovisioner.sim.config import SimConfig

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
    from common.durations import parse_duration

    return 0.0 if str(text).strip() == "0" else parse_duration(text, option)


def load_bucket_types(path: str, catalog: Any) -> tuple:
    """Instance types from a bucket file (`bucketing.bucket_file`); unknown types are
    ConfigErrors naming the entry."""
    from bucketing.bucket_file import read_bucket_file

    types = []
    for index, name in enumerate(read_bucket_file(path).names):
        try:
            types.append(catalog.get(name))
        except ConfigError as error:
            raise ConfigError(f"{path}: instance_types[{index}]: {error}") from None
    return tuple(types)


def check_types_used(path: str, table: Any, types: tuple) -> None:
    """ConfigError naming the first listed type no pod of the trace would run on (the fit
    rule, bucketing.fit): a node group the simulation would keep for nothing."""
    from bucketing.fit import unused_types
    from jobtraces.demand import resource_matrix
    from jobtraces.jobtable import gpu_model_requirements

    unused = unused_types(resource_matrix(table), types, gpu_model_requirements(table))
    if unused:
        index = unused[0]
        raise ConfigError(f"{path}: instance_types[{index}]: {types[index].name}: no pod of "
                          f"{table.source} would run on it ({len(unused)} such types); "
                          "list the types the trace uses (headstart buckets tune --out)")


def _service_config(args: argparse.Namespace) -> tuple[Any, Any]:
    """(service config, catalog): the --config file loaded as the service loads it, or
    the service's defaults with --catalog."""
    from bucketing.catalog import load_catalog
    from overprovisioner.config import OverprovisionerConfig

    path = getattr(args, "config", None)
    if not path:
        return OverprovisionerConfig(), load_catalog(getattr(args, "catalog", None) or "aws",
                                                     "--catalog")
    for option, value in (("--buckets", getattr(args, "buckets", None)),
                          ("--catalog", getattr(args, "catalog", None))):
        if value:
            raise InputError(f"{option}: the --config file names the instance types and the "
                             "catalog; give one or the other")
    from overprovisioner.config.catalog import resolve_catalog
    from overprovisioner.config.load import load_config

    service = load_config(path)
    return service, resolve_catalog(service)


def _load(args: argparse.Namespace, synthetic: bool, catalog: Any,
          service: Any) -> tuple[Any, Any]:
    table = load_table(args, synthetic)
    return table, replay_workload(args, table, catalog, service)


def load_table(args: argparse.Namespace, synthetic: bool) -> Any:
    if synthetic:
        from jobtraces.synthetic import SyntheticWorkload, generate

        return generate(SyntheticWorkload())
    from jobtraces.jobtable import require_gpu_pods
    from jobtraces.load import load_trace

    table = load_trace(args.trace, args.format, gpu_sharing=args.gpu_sharing)
    require_gpu_pods(table, "the simulator measures waiting in GPU-minutes and placeholders "
                     "in GPU nodes, so there is nothing to compare")
    return table


def replay_workload(args: argparse.Namespace, table: Any, catalog: Any, service: Any,
              types: tuple | None = None) -> Any:
    """The replayed workload of `table`: the config's, bucket file's or default types
    (`types` given: those), in the --from-day/--days window."""
    from overprovisioner.sim.workload import build_workload, default_types

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
    from overprovisioner.policy_names import parse_policy_name

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
    from overprovisioner.policy_names import parse_policy_name
    from overprovisioner.sim.compare import default_policies, run_policies
    from overprovisioner.sim.summary import build_verdict_for
    from overprovisioner.sim.what_if import parse_what_if

    for name in args.policy or ():
        parse_policy_name(name)
    with_models((), args.models, "")  # before any work
    what_if = parse_what_if(args.lead_share, args.lead, args.lead_curve, args.seed)
    if args.plot:  # before any work: a bad folder must not cost a run
        check_output_folder(args.plot, "--plot")
    service, catalog = _service_config(args)
    config = _config(args, service)
    progress = Progress()
    with progress.meanwhile("loading the trace"):
        table = load_table(args, args.synthetic)
        workload = replay_workload(args, table, catalog, service)
    policies = with_models(tuple(args.policy or default_policies(workload)), args.models,
                           service.forecast.model)
    if what_if is not None and what_if.curve:
        return _lead_curve_command(args, table, workload, catalog, service, config, policies,
                                   what_if, progress)
    lead = None
    if what_if is not None:
        lead = what_if.leads[0]
        workload = replay_workload(args, what_if.apply(table, lead), catalog, service,
                             workload.types)
    progress.total = len(policies) + int(args.compare_scoring)
    with progress.meanwhile("simulating the policies"):  # says again every 10 s
        results = run_policies(workload, catalog, policies, config,
                               compare_scoring=args.compare_scoring, progress=progress)
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


def json_row(metrics: Any, lead: Any) -> dict[str, Any]:
    """One run of `simulate --json`: its metrics, its role in the comparison (reactive,
    peer, predictive, yardstick: a script finds the best peer at a cut by it) and the
    lead its known demand had."""
    from overprovisioner.policy_names import parse_policy_name

    return dict(metrics.as_dict(), role=parse_policy_name(metrics.policy).role,
                lead_seconds=lead)


def _lead_curve_command(args: argparse.Namespace, table: Any, workload: Any, catalog: Any,
                        service: Any, config: Any, policies: tuple, what_if: Any,
                        progress: Any) -> int:
    from overprovisioner.sim.lead_curve import judged, run_lead_curve
    from overprovisioner.sim.table import format_table

    if not judged(policies):
        raise InputError("--lead-curve: needs a predictive policy in --policy (only "
                         "predictive reads known demand)")
    names = judged(policies)
    progress.total = len(policies) - len(names) + len(names) * len(what_if.leads)
    with progress.meanwhile("simulating the policies at each lead"):
        runs, curve = run_lead_curve(
            table, lambda t: replay_workload(args, t, catalog, service, workload.types), catalog,
            policies, config, what_if, progress=progress)
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


def describe_known(workload: Any, what_if: Any) -> str:
    """One line: how much of the window's demand is known ahead, and from where."""
    share = float(workload.known_ahead[~workload.initial].mean()) if len(workload) else 0.0
    if what_if is None:
        return (f"known ahead: {share:.1%} of the window's pods (the trace's known_at_s; "
                "--lead-share/--lead to try more)")
    leads = ", ".join(f"{lead:g}" for lead in what_if.leads)
    return (f"known ahead: the trace's known_at_s plus a what-if: {what_if.share:.0%} of "
            f"jobs (seed {what_if.seed}) known {leads} s before creation"
            + ("" if what_if.curve else f": {share:.1%} of the window's pods"))


def format_lead_curve(curve: Any) -> str:
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


def demo_command(args: argparse.Namespace) -> int:
    from overprovisioner.sim.compare import default_policies, run_policies
    from overprovisioner.sim.config import SimConfig
    from overprovisioner.sim.report import write_report
    from overprovisioner.sim.summary import build_verdict_for

    args.buckets = None
    args.from_day = 0.0
    args.catalog = "aws"
    if args.quick and args.days is None:
        args.days = QUICK_DAYS
    progress = Progress()
    out = Path(args.out) if args.out else Path(f"headstart-demo-{time.strftime('%Y%m%d-%H%M%S')}")
    check_output_folder(out, "--out")  # before any work: a bad folder must not cost a run
    with_models((), args.models, "")  # an unknown model, before any work
    service, catalog = _service_config(args)
    with progress.meanwhile("loading the trace"):
        table, workload = _load(args, args.trace is None, catalog, service)
    config = SimConfig(service=service).validate()
    policies = default_policies(workload, demo=True)
    if args.quick:
        policies = quick_policies(policies)
    policies = with_models(policies, args.models, service.forecast.model)
    progress.total = len(policies) + int(args.compare_scoring)
    with progress.meanwhile("simulating the policies"):
        results = run_policies(workload, catalog, policies, config,
                               compare_scoring=args.compare_scoring, progress=progress)
    metrics = [m for _, m in results]
    progress.say("writing the report")
    verdict = build_verdict_for(metrics, config, workload)
    with progress.meanwhile("writing the report", after_s=HEARTBEAT_S):
        index = write_report(results, out, title=f"headstart demo: {table.source}",
                             workload_text=describe_workload(table, workload) + ". "
                             + describe_service(config) + ".", verdict=verdict)
    print_summary(verdict, describe_workload(table, workload), describe_service(config),
                  metrics)
    print(f"({len(results)} runs in {progress.elapsed():.1f} s)")
    print(f"report: {index}")
    return 0


def describe_service(config: Any) -> str:
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


def describe_workload(table: Any, workload: Any) -> str:
    excluded = ", ".join(f"{n} {reason}" for reason, n in workload.excluded.items()) or "none"
    days = (workload.end_s - workload.start_s) / 86_400
    rounded = rounded_note(table)
    return (
        f"{table.source}: {len(workload)} pods over {days:.1f} days on "
        f"{', '.join(t.name for t in workload.types)}; {int(workload.initial.sum())} running "
        f"at the start on existing nodes; not replayed: {excluded}"
        + (f"; {rounded}" if rounded else "")
    )
