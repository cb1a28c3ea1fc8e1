"""The trade-off picture (every peer family a line, every judged family a marker, the
yardsticks hollow, each one legend entry; log axes where values span decades) and the
choice of the timelines that tell the story."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from overprovisioner.sim.assess import assess  # noqa: E402
from overprovisioner.sim.report_plots import (  # noqa: E402
    _axis_scale,
    draw_tradeoff,
    plot_tradeoff,
    story_runs,
)
from tests.overprovisioner.sim.test_sim_compare import metrics  # noqa: E402

RUNS = [metrics("reactive", 1000.0, 100.0), metrics("static:1", 500.0, 110.0),
        metrics("proportional:4", 600.0, 108.0),
        metrics("predictive", 700.0, 103.0), metrics("predictive:0.97", 300.0, 112.0),
        metrics("oracle", 10.0, 101.0), metrics("rate-oracle:0.97", 100.0, 114.0)]


def test_tradeoff_marks_each_family_once_and_the_yardsticks_as_such():
    fig, axis = plt.subplots()
    try:
        texts = draw_tradeoff(axis, RUNS, 100.0, recommended="predictive")
        _, labels = axis.get_legend_handles_labels()
        stars = [(tuple(line.get_xydata()[0]), line.get_label(), line.get_markerfacecolor())
                 for line in axis.lines if line.get_marker() == "*"]
        names = [t.get_text() for t in texts]
    finally:
        plt.close(fig)
    assert labels == ["static headroom (from reactive)", "proportional headroom (from reactive)",
                      "reactive (cluster-autoscaler alone)", "predictive",
                      "oracle (yardstick, not deployable)",
                      "rate-oracle (yardstick, not deployable)", "recommended"]
    # one star per judged run, at (extra GPU-hours, pending GPU-minutes); yardsticks hollow
    assert sorted((point, face == "none") for point, _, face in stars) == [
        ((1.0, 10.0), True), ((3.0, 700.0), False), ((12.0, 300.0), False),
        ((14.0, 100.0), True)]
    assert "predictive (recommended)" in names
    assert "oracle (yardstick)" in names


@pytest.mark.parametrize("values, scale", [
    ([0.0, 10.0, 700.0], "symlog"),   # 700 / 10 = 70 >= 30, and a zero: symlog
    ([5.0, 10.0, 700.0], "log"),      # 700 / 5 = 140 >= 30, all positive: log
    ([0.0, 100.0, 2500.0], "linear"),  # 2500 / 100 = 25 < 30
], ids=["zero-spans-decades", "positive-spans-decades", "within-a-decade-and-a-half"])
def test_log_axis_only_where_values_span_decades(values, scale):
    import numpy as np

    fig, axis = plt.subplots()
    try:
        _axis_scale(axis, "y", np.array(values))
        assert axis.get_yscale() == scale
    finally:
        plt.close(fig)


def test_story_runs_are_reactive_the_recommended_run_the_closest_peer_and_the_oracle():
    # predictive:0.97 cuts 70% (300 of 1000); static:1 cuts 50%, proportional:4 40%;
    # static is the cheapest at 70% (static:1 is its only member: it never gets there,
    # proportional neither), so add static:2 cutting 90% for +30.
    runs = RUNS + [metrics("static:2", 100.0, 130.0)]
    judged = assess(runs, "predictive:0.97")
    assert judged.best_peer.family == "static"
    # static members cut 50% (static:1) and 90% (static:2): 50% is closer to 70%? |50-70| = 20
    # = |90-70|: the first in run order, static:1
    assert story_runs(runs, judged) == ("reactive", "predictive:0.97", "static:1", "oracle")
    assert story_runs(runs, None) == tuple(m.policy for m in runs)


def test_the_tradeoff_png_is_written(tmp_path):
    path = plot_tradeoff(RUNS, tmp_path / "t.png", "predictive")
    assert path.stat().st_size > 10_000


def test_the_timeline_shows_the_types_that_cost_most_not_the_most_nodes():
    """DLRM: dozens of GPU-less nodes, a handful of 8-GPU ones; ranked by node count the
    8-GPU type was 'a quieter type not shown'."""
    import numpy as np

    from overprovisioner.sim.report_plots import MAX_TYPES, shown_types
    from tests.overprovisioner.simbuild import CATALOG

    names = ["m5.24xlarge", "g4dn.4xlarge", "g4dn.8xlarge", "g5.48xlarge"]
    types = [CATALOG.get(name) for name in names]
    # node-ticks: 40 of the CPU type, 30 and 20 of the small GPU types, 15 of g5.48xlarge
    # (by node count, the fewest: the one a 3-type timeline left out)
    demand = np.array([[40.0, 30.0, 20.0, 15.0]])
    shown, left_out = shown_types(types, demand, demand)
    # $/h x node-ticks: g5.48xlarge 16.288 x 15 = 244 > m5.24xlarge 4.608 x 40 = 184 >
    # g4dn.8xlarge 2.176 x 20 = 44 > g4dn.4xlarge 1.204 x 30 = 36
    assert [names[b] for b in shown] == ["g5.48xlarge", "m5.24xlarge", "g4dn.8xlarge"]
    assert MAX_TYPES == 3 and left_out == 1


def test_peer_lines_are_drawn_as_the_verdict_interpolates_them():
    """The verdict prices a cut between two runs linearly in data space; on the symlog
    axis a two-point line is another curve, and predictive sat on it while the text said
    0.16x. The drawn line passes through the verdict's interpolated point."""
    import numpy as np

    from overprovisioner.sim.assess import interpolate_extra
    from overprovisioner.sim.report_plots import straight_in_data

    # reactive (0 GPU-h, 1000 pending) then static:1 (+100 GPU-h, 10 pending); a cut of
    # 50% (500 pending) costs, interpolated, 100 x (0.5 / 0.99) = 50.5 GPU-h
    xs, ys = straight_in_data([0.0, 100.0], [1000.0, 10.0])
    extra = interpolate_extra([(0.0, 0.0), (0.99, 100.0)], 0.5)
    assert extra is not None
    assert np.interp(500.0, ys[::-1], xs[::-1]) == pytest.approx(extra, rel=0.01)
    assert (xs[0], ys[0], xs[-1], ys[-1]) == (0.0, 1000.0, 100.0, 10.0)
