"""The trade-off picture: every peer family gets a line, every family of judged runs a marker,
each one legend entry."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from overprovisioner.report import draw_tradeoff  # noqa: E402
from tests.overprovisioner.test_sim_compare import metrics  # noqa: E402


def test_tradeoff_marks_each_family_once_in_the_legend():
    runs = [metrics("reactive", 1000.0, 100.0), metrics("static:1", 500.0, 110.0),
            metrics("proportional:4", 600.0, 108.0),
            metrics("predictive", 700.0, 103.0), metrics("predictive:0.97", 300.0, 112.0),
            metrics("oracle", 10.0, 101.0), metrics("rate-oracle:0.97", 100.0, 114.0)]
    fig, axis = plt.subplots()
    try:
        draw_tradeoff(axis, runs, "gpu_hours", 100.0, "extra GPU-hours")
        _, labels = axis.get_legend_handles_labels()
        stars = [(tuple(line.get_xydata()[0]), line.get_label()) for line in axis.lines
                 if line.get_marker() == "*"]
    finally:
        plt.close(fig)
    assert labels == ["reactive + static", "reactive + proportional",
                      "predictive at quantiles", "predictive", "oracle", "rate-oracle"]
    # one star per judged run, at (extra GPU-hours, pending GPU-minutes)
    assert sorted(point for point, _ in stars) == [(1.0, 10.0), (3.0, 700.0), (12.0, 300.0),
                                                   (14.0, 100.0)]
