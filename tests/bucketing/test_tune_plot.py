"""The tuner's figure keeps its words on the page: a long trace name used to run the
title off the figure's edge."""

from __future__ import annotations

from dataclasses import replace

import matplotlib.pyplot as plt

from bucketing.tune import tune
from bucketing.tune_plot import plot_report, tune_figure
from jobtraces.demand import snapshots
from tests.bucketing.test_tune import CATALOG, PODS, make_table


def test_title_and_labels_stay_inside_the_figure(tmp_path):
    table = make_table(PODS)
    report = replace(tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4"),
                     source="alibaba-gpu-2025-disaggregated_DLRM_trace-first-60-percent.csv.gz")
    figure = tune_figure(report)
    try:
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        page = figure.bbox
        texts = list(figure.texts) + [axes.title for axes in figure.axes] + [
            label for axes in figure.axes for label in (axes.xaxis.label, axes.yaxis.label)]
        for text in texts:
            if not text.get_text():
                continue
            box = text.get_window_extent(renderer)
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, text.get_text()[:60]
            assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, text.get_text()[:60]
    finally:
        plt.close(figure)
    path = tmp_path / "tune.png"
    plot_report(report, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_recommended_list_is_marked_and_named():
    # Its bar is 0% long (the others are measured against it): without a mark the figure
    # said "red = recommended" and showed no red, and named none of its types.
    from matplotlib.colors import to_rgba

    table = make_table(PODS)
    report = tune(table, snapshots(table, 1800), CATALOG, gpu_model="T4")
    figure = tune_figure(report)
    try:
        bars_axes = figure.axes[0]
        [chosen_row] = [row for row, candidate in enumerate(report.candidates)
                        if candidate.instance_types == report.recommended]
        red = to_rgba("tab:red")
        labels = bars_axes.get_yticklabels()
        assert [to_rgba(label.get_color()) == red for label in labels] == [
            row == chosen_row for row in range(len(labels))]
        [marker] = bars_axes.get_lines()
        assert list(marker.get_ydata()) == [chosen_row] and to_rgba(marker.get_color()) == red
        title = bars_axes.get_title(loc="left").replace("\n", " ")
        assert title.endswith(": " + ", ".join(report.recommended))
    finally:
        plt.close(figure)
