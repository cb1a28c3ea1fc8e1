"""`headstart backtest`: score forecasters on a trace or an aggregate series, from the shell.

This module only builds the parser. What the command does is `predictor.commands`, which
`common.later` imports when the command runs, so `headstart --help` and the other
commands load none of its imports.
"""

from __future__ import annotations

from typing import Any

from common.later import later
from jobtraces.gpu_sharing import GPU_SHARING_HELP
from predictor.models.registry import DEFAULT_MODEL

DEFAULT_MODELS = DEFAULT_MODEL


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
    parser.set_defaults(func=later("predictor.commands", "run_backtest"))
