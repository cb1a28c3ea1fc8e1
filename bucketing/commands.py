"""What `headstart buckets tune` does, once its options are parsed (cli.py).

An adapter: reads the trace (or generates the synthetic default) and the catalog, calls
the pure `bucketing.tune.tune`, then prints a table or JSON, writes the YAML snippet the
overprovisioner reads, and draws the plot (matplotlib imported only then).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from bucketing.catalog import load_catalog
from bucketing.tune import tune
from bucketing.tune_report import recommended_series
from common.durations import parse_duration
from common.errors import InputError
from common.outpath import check_output_file
from common.progress import Progress
from jobtraces.demand import snapshots
from jobtraces.gpu_sharing import rounded_note
from jobtraces.load import check_synthetic_options, load_trace
from jobtraces.synthetic import SyntheticWorkload, generate


def snippet(report, catalog_ref: str) -> str:
    """The YAML the overprovisioner reads, with a comment saying where it came from."""

    body = yaml.safe_dump(
        {"buckets": {"catalog": catalog_ref, "instance_types": list(report.recommended)}},
        sort_keys=False,
        default_flow_style=False,
    )
    return (
        f"# Written by `headstart buckets tune` from {report.source},\n"
        f"# catalog {catalog_ref}, GPU model {report.gpu_model}, tick {report.tick_s:g} s, "
        f"{len(report.times)} ticks; {report.unbucketable_pods} pods fit no bucket.\n" + body
    )


def headline(report) -> list[str]:
    """The answer, before the table: the list to run and what it cannot hold."""
    bound = (f"--max-types {report.max_types}" if report.max_types is not None
             else "no --max-types")
    cut = (f", {len(report.trimmed)} cut from the {len(report.recommended) + len(report.trimmed)}"
           " base-instance selection kept" if report.trimmed else "")
    never = (f" (and {report.unbucketable_never_scheduled} never-scheduled pods that fit no "
             "type either)" if report.unbucketable_never_scheduled else "")
    return [
        f"recommended: {len(report.recommended)} types ({bound}{cut}): "
        + ", ".join(report.recommended),
        f"cannot bucket: {report.unbucketable_pods:,} of {report.pods:,} pods "
        f"({report.unbucketable_pods / max(report.pods, 1):.0%}; "
        f"{report.unbucketable_gpu_hours:,.1f} GPU-hours, "
        f"{report.unbucketable_cpu_hours:,.1f} CPU-hours){never}; `headstart simulate` "
        "on this list drops the same pods (\"fit no simulated instance type\")",
    ]


def table_text(report) -> str:
    """The human-readable report."""
    hours = len(report.times) * report.tick_s / 3600
    lines = [
        f"trace {report.source}: {report.pods} pods, {len(report.times)} ticks of "
        f"{report.tick_s:g} s ({hours:.1f} h); {report.censoring}",
        f"catalog {report.catalog}, GPU model {report.gpu_model}",
        *headline(report),
    ]
    if report.family_scales:
        lines.append("  auto choice (scale $, unbucketable pods): " + ", ".join(
            f"{m} {s:,.0f}/{p}" for m, (s, p) in report.family_scales.items()
        ))
    header = (
        f"{'candidate':<9} {'kept':<5} {'types':>5} {'base instances':<32} {'scale $':>10} "
        f"{'embed node-h':>13} {'node-h':>12} {'cost $':>12} {'GPU w':>6} {'CPU w':>6} "
        f"{'mem w':>6} {'unbkt':>6}"
    )
    lines += ["", header, "-" * len(header)]
    for c in report.candidates:
        kept = {True: "yes", False: "no", None: "-"}[c.accepted]
        mark = " *" if c.instance_types == report.recommended else ""
        lines.append(
            f"{c.label:<9} {kept:<5} {len(c.instance_types):>5} "
            f"{' + '.join(c.base_instances):<32} {c.scale_usd:>10,.0f} "
            f"{c.embed_node_hours:>13,.1f} {c.node_hours:>12,.1f} {c.cost_usd:>12,.0f} "
            f"{c.gpu_waste_fraction:>6.1%} {c.cpu_waste_fraction:>6.1%} "
            f"{c.memory_waste_fraction:>6.1%} {c.unbucketable_pods:>6}{mark}"
        )
    lines += [
        "",
        "scale $ = embedded bucket counts x price; node-h, cost $ and waste = packed nodes "
        "(first-fit-decreasing); * = recommended",
    ]
    if report.unbucketable_examples:
        lines.append("pods the recommended list cannot hold (first "
                     f"{len(report.unbucketable_examples)}):")
    for pod, (gpus, cpus, memory) in report.unbucketable_examples:
        lines.append(f"  {pod}: {gpus:g} GPUs, {cpus:g} CPUs, {memory:.1f} GiB")
    return "\n".join(lines)


def run_tune(args: argparse.Namespace) -> int:
    tick_s = parse_duration(args.tick, "--tick")
    if args.max_types < 1:
        raise InputError(f"--max-types: must be at least 1, got {args.max_types}")
    # Before the trace is read: a bad path must not cost a run.
    for option, path in (("--out", args.out), ("--series", args.series),
                         ("--plot", args.plot)):
        if path:
            check_output_file(path, option)
    catalog = load_catalog(args.catalog, "--catalog")
    progress = Progress()
    if args.synthetic:
        check_synthetic_options(args.format, args.gpu_sharing)
        table = generate(SyntheticWorkload())
    else:
        with progress.meanwhile("loading the trace"):
            table = load_trace(args.trace, args.format, gpu_sharing=args.gpu_sharing)
        if note := rounded_note(table):
            print(note, file=sys.stderr)
    with progress.meanwhile("embedding and packing the trace for each candidate list"):
        report = tune(
            table, snapshots(table, tick_s), catalog,
            gpu_model=args.gpu_model, include_pending=not args.running_only,
            max_types=args.max_types,
        )
    if args.out:
        try:
            Path(args.out).write_text(snippet(report, args.catalog))
        except OSError as error:
            raise InputError(f"--out {args.out}: cannot write ({error.strerror})") from None
    if args.series:
        try:
            recommended_series(report).to_csv(args.series)
        except OSError as error:
            raise InputError(f"--series {args.series}: cannot write ({error.strerror})") from None
    if args.plot:
        from bucketing.tune_plot import plot_report

        with progress.meanwhile("drawing the plot"):
            plot_report(report, args.plot)
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(table_text(report))
        for written in (args.out, args.series, args.plot):
            if written:
                print(f"wrote {written}")
    return 0
