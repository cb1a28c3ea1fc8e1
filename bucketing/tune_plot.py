"""Draw the tuner's picture: what each candidate bucket list costs, and its scale over time.

Decides: the figure `headstart buckets tune --plot` writes (each candidate's cost
against the recommended list's as bars on top, the recommended row marked and its
instance types named above them; the scale needed over time below, for the
recommended list and the full catalog). Uses the Agg backend, so it never needs a
display.

Must not: compute anything the report does not already hold.
"""

from __future__ import annotations

from pathlib import Path

from bucketing.tune_report import Candidate, TuneReport
from common.errors import InputError


def candidate_name(candidate: Candidate) -> str:
    """A legend entry: label, base instances (smallest CPU and GPU type), and the verdict."""
    verdict = {True: "kept", False: "rejected", None: "full catalog"}[candidate.accepted]
    base = " + ".join(candidate.base_instances) or "-"
    return f"{candidate.label}: from {base} ({len(candidate.instance_types)} types, {verdict})"


def _color(candidate: Candidate, recommended: bool) -> str:
    if recommended:
        return "tab:red"
    return {True: "tab:blue", False: "0.7", None: "0.4"}[candidate.accepted]


def plot_report(report: TuneReport, path: str | Path) -> None:
    """Write the figure to `path` (PNG, SVG or PDF by its suffix): on top, each
    candidate's cost over the trace against the recommended list's (bars: the lists
    differ by a few percent at most, which lines over time cannot show); below, the
    scale needed over time for the recommended list and the full catalog, the other
    candidates as one band."""
    import matplotlib.pyplot as plt

    figure = tune_figure(report)
    try:
        figure.savefig(path, dpi=110, bbox_inches="tight")
    except (OSError, ValueError) as error:
        raise InputError(f"--plot {path}: cannot write the figure ({error})") from None
    finally:
        plt.close(figure)


def tune_figure(report: TuneReport):
    """The figure `plot_report` writes (the caller closes it)."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    hours = (report.times - report.times[0]) / 3600.0
    figure, (bars_axes, scale_axes) = plt.subplots(
        2, 1, figsize=(11, 8), gridspec_kw={"height_ratios": [1, 1.2]})
    chosen = next((c for c in report.candidates if c.instance_types == report.recommended),
                  report.candidates[0])
    names = [candidate_name(c) for c in report.candidates]
    above = [100.0 * (c.cost_usd / chosen.cost_usd - 1) if chosen.cost_usd else 0.0
             for c in report.candidates]
    colors = [_color(c, c is chosen) for c in report.candidates]
    rows = np.arange(len(names))
    bars_axes.barh(rows, above, color=colors)
    bars_axes.set_yticks(rows, names, fontsize=8)
    bars_axes.invert_yaxis()
    # The recommended list's own bar is 0% long: mark its row, and name its types (the
    # list the overprovisioner gets), or the figure never says which list to take.
    chosen_row = report.candidates.index(chosen)
    label = bars_axes.get_yticklabels()[chosen_row]
    label.set_color("tab:red")
    label.set_fontweight("bold")
    bars_axes.plot([0.0], [chosen_row], marker="D", color="tab:red", linestyle="none",
                   clip_on=False)
    bars_axes.set_title("\n".join(textwrap.wrap(
        f"recommended list ({chosen.label}, {len(report.recommended)} types): "
        f"{', '.join(report.recommended)}", 110, break_on_hyphens=False)), fontsize=9,
        color="tab:red", loc="left")
    for row, (candidate, extra) in enumerate(zip(report.candidates, above, strict=True)):
        note = "recommended" if candidate is chosen else f"{extra:+.1f}%"
        bars_axes.annotate(
            f"{note}: ${candidate.cost_usd:,.0f}, {candidate.node_hours:,.0f} node-h, waste "
            f"GPU {candidate.gpu_waste_fraction:.0%} CPU {candidate.cpu_waste_fraction:.0%}",
            (max(extra, 0.0), row), xytext=(4, 0), textcoords="offset points", va="center",
            fontsize=8)
    bars_axes.set_xlim(min(0.0, min(above)) * 1.1, max(max(above), 1.0) * 1.9)
    bars_axes.set_xlabel("cost over the trace above the recommended list (%, packed nodes at "
                         "catalog prices)")
    # A trace's file name can be long: the title spans the figure, not the bars' axes
    # (which start right of the long list names), and wraps instead of running off it.
    figure.suptitle("\n".join(textwrap.wrap(
        f"{report.source}: candidate bucket lists (catalog {report.catalog}, GPU model "
        f"{report.gpu_model}); red = recommended, blue = kept, light = rejected", 120)),
        fontsize=10)
    bars_axes.grid(axis="x", alpha=0.3)

    others = [c.scale_series for c in report.candidates
              if c is not chosen and c.accepted is not None]
    if others:
        stack = np.vstack(others)
        scale_axes.fill_between(hours, stack.min(axis=0), stack.max(axis=0), step="post",
                                color="tab:blue", alpha=0.25,
                                label="the other candidates (range)")
    catalog = next((c for c in report.candidates if c.accepted is None), None)
    if catalog is not None and catalog is not chosen:
        scale_axes.step(hours, catalog.scale_series, where="post", color="0.4", linewidth=0.8,
                        label=candidate_name(catalog))
    scale_axes.step(hours, chosen.scale_series, where="post", color="tab:red", linewidth=1.0,
                    label=candidate_name(chosen) + " (recommended)")
    scale_axes.set_ylabel("scale needed ($/hour of\nembedded bucket counts)")
    scale_axes.set_xlabel(f"hours since trace start (tick {report.tick_s:g} s)")
    scale_axes.legend(fontsize=8, loc="upper left")
    scale_axes.grid(alpha=0.3)
    figure.tight_layout()
    return figure
