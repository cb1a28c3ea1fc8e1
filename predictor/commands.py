"""What `headstart backtest` does, once its options are parsed (cli.py).

Decides how a trace or CSV series becomes backtest targets (every bucket with demand,
plus the total GPUs), and how results are printed (a table, or JSON with --json).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bucketing.bucket_file import read_bucket_file
from bucketing.catalog import load_catalog
from common.durations import parse_duration
from common.errors import InputError
from common.outpath import check_output_file
from common.progress import Progress
from jobtraces.gpu_sharing import rounded_note
from jobtraces.jobtable import require_gpu_pods
from jobtraces.load import load_trace
from predictor.backtest.rolling import (
    BacktestConfig,
    BacktestResult,
    BacktestRow,
    Target,
    backtest,
    choose_model,
    recommend_model,
)
from predictor.history.series import DemandSeries, series_from_jobtable
from predictor.live.series_io import read_series_csv
from predictor.live.store import read_history
from predictor.models.registry import FORECASTER_NAMES, make_forecaster


def whole_ticks(seconds: float, tick_s: float, option: str) -> int:
    """A duration as a whole number of ticks; refused when it is not a multiple of the tick."""
    ticks = seconds / tick_s
    if abs(ticks - round(ticks)) > 1e-9 or round(ticks) < 1:
        raise InputError(f"{option}: {seconds:g} s is not a whole number of {tick_s:g}-s ticks")
    return int(round(ticks))


def run_backtest(args: argparse.Namespace) -> int:
    series, result = compute_backtest(args)
    if args.plot:
        from predictor.backtest_plot import plot_backtest

        with Progress().meanwhile("drawing the plot"):
            plot_backtest(result, series.times, series.tick_s, Path(args.plot),
                          title=series.source)
    if args.json:
        print(json.dumps([row.as_dict() for row in result.rows], indent=1))
    else:
        sys.stdout.write(format_table(result.rows, series.source, series.tick_s,
                                      simulate_command(args, result.rows)))
    return 0


def simulate_command(args: argparse.Namespace, rows: Sequence[BacktestRow]) -> str | None:
    """The `headstart simulate` run that decides between the scored models on the same
    trace, bucket list and catalog, with the horizon as the node start-up; None when the
    backtest read a series or a history (simulate replays job traces only)."""

    if not args.trace:
        return None
    scored = ",".join(dict.fromkeys(r.model for r in rows if r.model != "last+margin"))
    parts = ["headstart simulate", "--trace", shlex.quote(args.trace)]
    if args.format:
        parts += ["--format", args.format]
    if args.gpu_sharing:
        parts.append("--gpu-sharing")
    if args.buckets:
        parts += ["--buckets", shlex.quote(args.buckets)]
    elif args.catalog:
        parts += ["--catalog", shlex.quote(args.catalog)]
    parts += ["--node-startup", args.horizon, "--models", scored]
    return " ".join(parts)


def compute_backtest(args: argparse.Namespace) -> tuple[DemandSeries, BacktestResult]:
    """(the series, its BacktestResult) for parsed `headstart backtest` options; every
    option is checked before the series is read. bench/bench_backtest.py calls it too."""

    models = [name.strip() for name in args.models.split(",") if name.strip()]
    if not models:
        raise InputError("--models: name at least one forecaster")
    unknown = [name for name in models if name not in FORECASTER_NAMES]
    if unknown:
        raise InputError(f"--models: unknown forecaster {unknown[0]!r} "
                         f"(valid: {', '.join(FORECASTER_NAMES)})")
    if not (math.isfinite(args.quantile) and 0 < args.quantile < 1):
        raise InputError(f"--quantile must be inside (0, 1), got {args.quantile}")
    if args.column and not args.series:
        raise InputError("--column goes with --series")
    if args.tick and args.history:
        raise InputError("--tick: a history file keeps the tick it was recorded at")
    for option, value in (("--format", args.format), ("--buckets", args.buckets),
                          ("--catalog", args.catalog), ("--gpu-sharing", args.gpu_sharing)):
        if value and not args.trace:
            raise InputError(f"{option} goes with --trace (a series has no pods to bucket)")

    if args.plot:
        from predictor.backtest_plot import check_plot_path

        check_plot_path(Path(args.plot))
        check_output_file(args.plot, "--plot")

    progress = Progress()
    with progress.meanwhile("loading the series"):
        series, targets = _load_targets(args)
    tick_s = series.tick_s
    horizon = whole_ticks(parse_duration(args.horizon, "--horizon"), tick_s, "--horizon")
    refit = None
    if args.refit_every.strip().lower() not in ("never", "none", "0"):
        refit = whole_ticks(parse_duration(args.refit_every, "--refit-every"), tick_s,
                            "--refit-every")
    config = BacktestConfig(
        horizon_ticks=horizon,
        quantile=args.quantile,
        test_fraction=args.test_fraction,
        refit_every_ticks=refit,
        first_tick=int(round(series.times[0] / tick_s)),
    )
    # Build each model once up front so a bad parameter fails before any work.
    for name in models:
        make_forecaster(name, tick_seconds=int(tick_s), max_horizon=horizon)
    factories = {
        name: (lambda name=name: make_forecaster(name, tick_seconds=int(tick_s),
                                                 max_horizon=horizon))
        for name in models
    }
    with progress.meanwhile(f"backtesting {', '.join(models)} (rolling origin over the last "
                            f"{args.test_fraction:.0%})"):
        result = backtest(targets, factories, config, time.perf_counter)
    skipped = [row for row in result.rows if row.skipped is not None]
    if result.rows and len(skipped) == len(result.rows):
        raise InputError(f"every model was skipped on every series: {skipped[0].skipped}")
    return series, result


def _load_targets(args: argparse.Namespace) -> tuple[DemandSeries, list[Target]]:
    if args.series:
        tick = parse_duration(args.tick, "--tick") if args.tick else None
        series = read_series_csv(args.series, args.column, tick)
        column = series.columns[0]
        return series, [Target(column, (column,), series.history())]

    if args.history:
        series = read_history(args.history)
        total = series.total_gpus()
        targets = [Target("buckets", tuple(series.columns), series.history())]
        if total is not None:
            targets.append(Target("total_gpus", ("total_gpus",), total[:, None]))
        return series, targets

    tick = parse_duration(args.tick or "5m", "--tick")
    names, file_catalog = (read_bucket_names(Path(args.buckets)) if args.buckets
                           else (None, None))
    catalog = load_catalog(args.catalog or file_catalog or "aws",
                           "--catalog" if args.catalog or not file_catalog
                           else f"{args.buckets}: catalog")
    types = catalog.subset(names).instance_types if names else catalog.instance_types
    table = load_trace(args.trace, args.format, gpu_sharing=args.gpu_sharing)
    require_gpu_pods(table, "there is no GPU demand to forecast ahead of a GPU node's "
                     "start-up (pass a GPU trace, or --series for another quantity)")
    if note := rounded_note(table):
        print(note, file=sys.stderr)
    series = series_from_jobtable(table, list(types), tick)
    counts = series.counts
    with_demand = [c for c in counts.columns if np.nansum(counts[c].to_numpy()) > 0]
    targets = []
    if with_demand:
        targets.append(Target("buckets", tuple(with_demand),
                                   counts[with_demand].to_numpy(dtype=np.float64)))
    targets.append(Target("total_gpus", ("total_gpus",), series.total_gpus()[:, None]))
    return series, targets


def read_bucket_names(path: Path) -> tuple[list[str], str | None]:
    """Bucket names (and the catalog, when the file names one): `bucketing.bucket_file`."""
    buckets = read_bucket_file(path)
    return list(buckets.names), buckets.catalog


def format_table(rows: Sequence[BacktestRow], source: str, tick_s: float,
                 simulate: str | None = None) -> str:
    """The human report: one line per (series, model), skipped models with their reason,
    the model forecast error ranks first and `simulate`, the command whose verdict
    names the one to configure."""
    header = (f"{'series':<16} {'model':<12} {'MAE':>9} {'RMSE':>9} {'PMSE':>10} {'short%':>7} "
              f"{'meanShort':>9} {'p95Short':>9} {'overProv':>9} {'fairOver':>9} "
              f"{'fit s':>7} {'pred ms':>8}")
    lines = []
    if rows:
        first = rows[0]
        lines.append(f"{source}: horizon {first.horizon_ticks} ticks "
                     f"({first.horizon_ticks * tick_s / 60:g} min), quantile {first.quantile:g}")
    lines.append(header)
    for row in rows:
        if row.skipped is not None:
            lines.append(f"{row.series:<16} {row.model:<12} skipped: {row.skipped}")
            continue
        m = row.metrics
        lines.append(
            f"{row.series:<16} {row.model:<12} {m.mae:>9.3f} {m.rmse:>9.3f} {m.pmse:>10.3f} "
            f"{100 * m.shortfall_rate:>6.1f}% {m.mean_shortfall:>9.3f} {m.p95_shortfall:>9.3f} "
            f"{m.mean_overprovision:>9.3f} {_num(row.fair_overprovision):>9} "
            f"{_num(row.fit_seconds):>7} {_num(1000 * row.predict_seconds):>8}"
        )
    lines.append("short% = share of origins where demand rose above the forecast somewhere "
                 "within the horizon (what placeholders must cover); fairOver = mean "
                 "over-provision of last value + a margin tuned to the same shortfall rate "
                 "(lower overProv than fairOver beats it)")

    all_series = list(dict.fromkeys(row.series for row in rows))
    for series in all_series:
        chosen = choose_model(rows, series)
        if chosen is not None:
            lines.append(
                f"best for {series} alone: {chosen.model} (short "
                f"{100 * chosen.metrics.shortfall_rate:.1f}%, over-provision "
                f"{chosen.metrics.mean_overprovision:.3f}; fair {_num(chosen.fair_overprovision)})"
            )
    # The service runs one model for every bucket: judge on the bucket series (the
    # total is not a series it forecasts) when there are any.
    buckets = [s for s in all_series if s != "total_gpus"] or all_series
    pick = recommend_model(rows, buckets)
    if pick is not None:
        over = ("-" if math.isnan(pick.over_vs_fair)
                else f"{pick.over_vs_fair:.2f}x the fair baseline's over-provision")
        lines.append(
            f"ranks first by forecast error, one model for all {pick.series} bucket series "
            f"(the lowest over-provision, as the mean of each series' ratio to its fair "
            f"baseline, among models short too often on the fewest series; a series' best "
            f"alone may differ): {pick.model} (falls short on "
            f"{100 * pick.shortfall_rate:.1f}% of horizons on average, too often on "
            f"{pick.short_on} of {pick.series}; {over})")
        lines.append(
            "  forecast error is not cost: which model and quantile to configure is the "
            "verdict of " + (f"`{simulate}`" if simulate else
                             "`headstart simulate` on the job trace this series came from")
            + ", which runs predictive with each and names one")
    return "\n".join(lines) + "\n"


def _num(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"
