"""`headstart backtest`: score forecasters on a trace or an aggregate series, from the shell.

Decides: the command's options, how a trace or CSV series becomes backtest targets
(every bucket with demand, plus the total GPUs), and how results are printed (a
table, or JSON with --json). Heavy modules are imported inside the handler so
`headstart --help` stays fast. All bad input ends as one line and exit code 2.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from bucketing.bucket_file import read_bucket_file
from common.durations import parse_duration
from common.errors import InputError
from common.outpath import check_output_file
from jobtraces.gpu_sharing import GPU_SHARING_HELP, rounded_note
from predictor.models.registry import DEFAULT_MODEL

DEFAULT_MODELS = DEFAULT_MODEL


def whole_ticks(seconds: float, tick_s: float, option: str) -> int:
    """A duration as a whole number of ticks; refused when it is not a multiple of the tick."""
    ticks = seconds / tick_s
    if abs(ticks - round(ticks)) > 1e-9 or round(ticks) < 1:
        raise InputError(f"{option}: {seconds:g} s is not a whole number of {tick_s:g}-s ticks")
    return int(round(ticks))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "backtest",
        help="score forecasters on a demand trace or series (rolling origin, last 20%%)",
        description=(
            "Rolling-origin backtest on the last 20% of a demand series: every test tick is "
            "forecast from the history up to `horizon` before it, at a quantile, and scored on "
            "MAE, RMSE, PMSE, shortfall rate and size, and over-provisioning. A trace gives one "
            "series per instance-type bucket plus the total GPUs; a CSV gives one column. The "
            "row `last+margin` is the last value plus the smallest constant margin reaching the "
            "target shortfall rate (1 - quantile): the fair baseline for headroom."
        ),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--trace", metavar="PATH", help="a job trace (alibaba-openb, "
                        "alibaba-dlrm or headstart CSV); embedded into buckets per tick")
    source.add_argument("--series", metavar="PATH", help="an aggregate series CSV with a "
                        "`time` column (datetimes or seconds), e.g. helios-earth-gpu-5min.csv.gz")
    source.add_argument("--history", metavar="FILE.sqlite", help="the live recorder's SQLite "
                        "history (every recorded bucket column, plus total GPUs)")
    parser.add_argument("--column", metavar="NAME", help="with --series: the value column")
    parser.add_argument("--format", metavar="F", help="with --trace: force the trace format")
    parser.add_argument("--gpu-sharing", action="store_true",
                        help="with --trace: " + GPU_SHARING_HELP)
    parser.add_argument("--catalog", default=None, metavar="NAME|PATH",
                        help="instance catalog for the buckets (default: the one the "
                        "--buckets file names, else aws)")
    parser.add_argument("--buckets", metavar="FILE.yaml", help="instance types to bucket into: the "
                        "file `headstart buckets tune --out` writes, or a YAML list of names "
                        "(default: every type in the catalog; buckets that never get demand "
                        "are left out)")
    parser.add_argument("--tick", default=None, metavar="DURATION",
                        help="tick (default: 5m for traces, the file's spacing for series)")
    parser.add_argument("--horizon", required=True, metavar="DURATION",
                        help="how far ahead to forecast (the node start-up time), e.g. 10m")
    parser.add_argument("--models", default=DEFAULT_MODELS, metavar="LIST",
                        help=f"comma-separated forecasters (default: {DEFAULT_MODELS}, the "
                        "overprovisioner's default; others: last, conditional, seasonal, "
                        "seasonal_week, hw, transformer)")
    parser.add_argument("--quantile", type=float, default=0.9,
                        help="forecast level to provision and judge (default: 0.9)")
    parser.add_argument("--refit-every", default="1d", metavar="DURATION|never",
                        help="refit each model this often over the test period (default: 1d)")
    parser.add_argument("--test-fraction", type=float, default=0.2,
                        help="share of the series at its end that is tested (default: 0.2)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of rows")
    parser.add_argument("--plot", metavar="FILE.png", help="draw actual vs forecasts with "
                        "the quantile band over the test period")
    parser.set_defaults(func=run_backtest)


def run_backtest(args: argparse.Namespace) -> int:
    import json

    series, result = compute_backtest(args)
    if args.plot:
        from common.progress import Progress
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


def simulate_command(args: argparse.Namespace, rows: Any) -> str | None:
    """The `headstart simulate` run that decides between the scored models on the same
    trace, bucket list and catalog, with the horizon as the node start-up; None when the
    backtest read a series or a history (simulate replays job traces only)."""
    import shlex

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


def compute_backtest(args: argparse.Namespace) -> tuple[Any, Any]:
    """(the series, its BacktestResult) for parsed `headstart backtest` options; every
    option is checked before the series is read. bench/bench_backtest.py calls it too."""
    import time

    from predictor.backtest.rolling import BacktestConfig, Target, backtest
    from predictor.models.registry import FORECASTER_NAMES, make_forecaster

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
    from common.progress import Progress

    progress = Progress()
    with progress.meanwhile("loading the series"):
        series, targets = _load_targets(args, Target)
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


def _load_targets(args: argparse.Namespace, target_type: Any) -> tuple[Any, list]:
    import numpy as np

    if args.series:
        from predictor.live.series_io import read_series_csv

        tick = parse_duration(args.tick, "--tick") if args.tick else None
        series = read_series_csv(args.series, args.column, tick)
        column = series.columns[0]
        return series, [target_type(column, (column,), series.history())]

    if args.history:
        from predictor.live.store import read_history

        series = read_history(args.history)
        total = series.total_gpus()
        targets = [target_type("buckets", tuple(series.columns), series.history())]
        if total is not None:
            targets.append(target_type("total_gpus", ("total_gpus",), total[:, None]))
        return series, targets

    from bucketing.catalog import load_catalog
    from jobtraces.jobtable import require_gpu_pods
    from jobtraces.load import load_trace
    from predictor.history.series import series_from_jobtable

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
        targets.append(target_type("buckets", tuple(with_demand),
                                   counts[with_demand].to_numpy(dtype=np.float64)))
    targets.append(target_type("total_gpus", ("total_gpus",), series.total_gpus()[:, None]))
    return series, targets


def read_bucket_names(path: Path) -> tuple[list[str], str | None]:
    """Bucket names (and the catalog, when the file names one): `bucketing.bucket_file`."""
    buckets = read_bucket_file(path)
    return list(buckets.names), buckets.catalog


def format_table(rows: Any, source: str, tick_s: float, simulate: str | None = None) -> str:
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
    from predictor.backtest.rolling import choose_model, recommend_model

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
