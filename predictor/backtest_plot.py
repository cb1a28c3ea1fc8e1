"""Draw a backtest: actual demand against each model's forecast and quantile band.

Decides: the picture only (one panel per series, at most MAX_PANELS, the test period
on the x axis in hours since its start). Writes a PNG with matplotlib's Agg backend,
so it runs without a display. Must not: compute metrics (that is predictor.backtest.rolling).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from common.errors import InputError
from predictor.backtest.rolling import LAST_MARGIN, BacktestResult

MAX_PANELS = 6
TOTAL_FIRST = "total_gpus"


def check_plot_path(path: Path) -> None:
    """Refuse, before the backtest runs, a file name whose format matplotlib cannot write."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        raise InputError(f"--plot: {path}: cannot draw a {suffix or 'suffix-less'} file "
                         f"(use one of: {', '.join(sorted(formats))})")


def plot_backtest(
    result: BacktestResult, times: np.ndarray, tick_s: float, path: Path, title: str = ""
) -> None:
    """Write `path` (PNG): per series, actual, each model's point forecast and its band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The total first: with many buckets it would otherwise fall off the page.
    columns = sorted(result.actual, key=lambda column: column != TOTAL_FIRST)[:MAX_PANELS]
    if not columns or len(result.test_index) == 0:
        raise InputError("--plot: nothing to draw (no tested ticks)")
    hours = (np.asarray(times)[result.test_index] - times[result.test_index[0]]) / 3600.0
    figure, axes = plt.subplots(len(columns), 1, figsize=(12, 3.2 * len(columns)),
                                squeeze=False, sharex=True)
    for axis, column in zip(axes[:, 0], columns, strict=True):
        axis.plot(hours, result.actual[column], color="black", linewidth=1.2, label="actual")
        for (series, model), (point, upper) in result.forecasts.items():
            if series != column:
                continue
            if model == LAST_MARGIN:
                axis.plot(hours, upper, linewidth=0.8, linestyle="--", label=model)
                continue
            (line,) = axis.plot(hours, point, linewidth=0.8, label=f"{model} point")
            axis.fill_between(hours, np.minimum(point, upper), upper, alpha=0.2,
                              color=line.get_color(), label=f"{model} band")
        axis.set_title(f"{title} {column}".strip(), fontsize=9)
        # the series' own unit: nodes of a bucket, or GPUs for the totals
        axis.set_ylabel(column.replace("_", " "), fontsize=8)
        axis.legend(fontsize=7, loc="upper left", ncol=4)
    axes[-1, 0].set_xlabel("hours since the start of the test period")
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=90)
    except OSError as error:
        raise InputError(f"--plot: cannot write {path} ({error.strerror})") from None
    finally:
        plt.close(figure)
