"""Draw the tuner's picture: the scale each candidate bucket list needs over time.

Decides: the figure `headstart buckets tune --plot` writes (one line per candidate:
the embedded bucket counts priced in $/hour on top, packed nodes below). Uses the
Agg backend, so it never needs a display.

Must not: compute anything the report does not already hold.
"""

from __future__ import annotations

from pathlib import Path

from bucketing.errors import InputError
from bucketing.tune import Candidate, TuneReport


def candidate_name(candidate: Candidate) -> str:
    """A legend entry: label, base instances (smallest CPU and GPU type), and the verdict."""
    verdict = {True: "kept", False: "rejected", None: "full catalog"}[candidate.accepted]
    base = " + ".join(candidate.base_instances) or "-"
    return f"{candidate.label}: from {base} ({len(candidate.instance_types)} types, {verdict})"


def plot_report(report: TuneReport, path: str | Path) -> None:
    """Write the figure to `path` (PNG, SVG or PDF by its suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hours = (report.times - report.times[0]) / 3600.0
    figure, (scale_axes, nodes_axes) = plt.subplots(
        2, 1, figsize=(11, 7), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
    )
    styles = ["-", "--", "-.", ":"]
    for number, candidate in enumerate(report.candidates):
        style = styles[number % len(styles)]
        width = 2.2 if candidate.instance_types == report.recommended else 1.0
        scale_axes.plot(hours, candidate.scale_series, style, linewidth=width,
                        label=candidate_name(candidate))
        nodes_axes.plot(hours, candidate.nodes_series, style, linewidth=width)
    scale_axes.set_ylabel("scale needed ($/hour of bucket counts)")
    scale_axes.set_title(
        f"{report.source}: scale per candidate base instance "
        f"(catalog {report.catalog}, GPU model {report.gpu_model}; thick = recommended)",
        fontsize=9,
    )
    scale_axes.legend(fontsize=7, loc="upper left")
    nodes_axes.set_ylabel("packed nodes")
    nodes_axes.set_xlabel(f"hours since trace start (tick {report.tick_s:g} s)")
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=110)
    except (OSError, ValueError) as error:
        raise InputError(f"--plot {path}: cannot write the figure ({error})") from None
    finally:
        plt.close(figure)
