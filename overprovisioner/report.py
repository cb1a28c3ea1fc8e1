"""Plots and the HTML report of a simulation comparison (an adapter: it writes files).

Draws, per policy, the demand, forecast, capacity (nodes launched or starting) and
placeholders over time, per instance type; and the trade-off of all policies: pending
GPU-minutes against extra GPU-hours and dollars over reactive, each peer family as a
line. The HTML page holds the plots, the summary table and each predictive run's cost
against the cheapest peer for the same reduction.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bucketing.errors import InputError


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")


def write_plots(results: Sequence, folder: Path) -> list[Path]:
    """Write timeline-<policy>.png per run and tradeoff.png; return the paths."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{folder}: cannot create the plot folder ({error.strerror})") from None
    paths = [plot_timeline(result, folder) for result, _ in results]
    paths.append(plot_tradeoff([m for _, m in results], folder / "tradeoff.png"))
    return paths


def plot_timeline(result, folder: Path) -> Path:
    plt = _pyplot()
    types = result.workload.types
    shown = [b for b in range(len(types)) if result.demand[:, b].any() or
             result.capacity[:, b].any()] or [0]
    fig, axes = plt.subplots(len(shown), 1, figsize=(11, 2.6 * len(shown)), sharex=True,
                             squeeze=False)
    days = (result.times - result.workload.start_s) / 86_400
    for axis, b in zip(axes[:, 0], shown, strict=True):
        axis.step(days, result.capacity[:, b], where="post", label="nodes (incl. starting)",
                  color="tab:blue", linewidth=0.8)
        axis.step(days, result.demand[:, b], where="post", label="demand (nodes)",
                  color="black", linewidth=0.8)
        if np.isfinite(result.forecast[:, b]).any():
            axis.plot(days, result.forecast[:, b], label="forecast (quantile)",
                      color="tab:orange", linewidth=0.7, alpha=0.8)
        axis.step(days, result.placeholders[:, b], where="post", label="placeholders",
                  color="tab:green", linewidth=0.7)
        axis.set_ylabel(types[b].name)
        axis.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper left", fontsize=8, ncol=4)
    axes[0, 0].set_title(f"{result.policy} ({result.scoring} scoring)")
    axes[-1, 0].set_xlabel("days from the window start")
    fig.tight_layout()
    path = folder / f"timeline-{_slug(result.policy)}-{result.scoring}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_tradeoff(metrics: Sequence, path: Path) -> Path:
    plt = _pyplot()
    main = [m for m in metrics if m.scoring == metrics[0].scoring]
    reactive = next((m for m in main if m.policy == "reactive"), None)
    base_hours = reactive.gpu_hours if reactive else 0.0
    base_cost = reactive.cost_usd if reactive else 0.0
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    draw_tradeoff(left, main, "gpu_hours", base_hours, "extra GPU-hours")
    draw_tradeoff(right, main, "cost_usd", base_cost, "extra dollars")
    fig.suptitle("pending time vs cost, all policies")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def draw_tradeoff(axis, main: Sequence, attr: str, base: float, label: str) -> None:
    """Pending GPU-minutes against `attr` over reactive's on one axis: reactive + each
    peer family (static, proportional, scheduled) as a line, every run annotated,
    predictive, oracle and rate-oracle (each with its `:Q` variants) as stars, one
    legend entry per family."""
    from overprovisioner.sim.policy_names import PEERS, parse_policy_name, peer_size

    kinds = {m.policy: parse_policy_name(m.policy).kind for m in main}
    reactive = [m for m in main if kinds[m.policy] == "reactive"]
    for family, style, color in zip(PEERS, ("-o", "-s", "-^"),
                                    ("tab:gray", "tab:brown", "tab:olive"), strict=True):
        members = sorted((m for m in main if kinds[m.policy] == family),
                         key=lambda m: peer_size(parse_policy_name(m.policy)))
        if not members:
            continue
        line = reactive + members
        axis.plot([getattr(m, attr) - base for m in line],
                  [m.pending_gpu_minutes for m in line], style, color=color,
                  label=f"reactive + {family}", markersize=4)
    for m in main:
        axis.annotate(m.policy, (getattr(m, attr) - base, m.pending_gpu_minutes),
                      fontsize=8, xytext=(4, 4), textcoords="offset points")
    predictive = sorted((m for m in main if kinds[m.policy] == "predictive"),
                        key=lambda m: m.gpu_hours)
    if len(predictive) > 1:
        axis.plot([getattr(m, attr) - base for m in predictive],
                  [m.pending_gpu_minutes for m in predictive], "--", color="tab:orange",
                  linewidth=0.8, label="predictive at quantiles")
    for name, color in (("predictive", "tab:orange"), ("oracle", "tab:green"),
                        ("rate-oracle", "tab:purple")):
        # `name` or `name:Q`; one legend entry per family.
        family = [m for m in main if kinds[m.policy] == name]
        for index, m in enumerate(family):
            axis.plot(getattr(m, attr) - base, m.pending_gpu_minutes, "*",
                      markersize=13, color=color, label=name if index == 0 else None)
    axis.set_xlabel(f"{label} over reactive")
    axis.set_ylabel("pending GPU-minutes (capacity-caused)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)


def write_report(results: Sequence, folder: Path, title: str, workload_text: str) -> Path:
    """Write plots and index.html into `folder`; return the page's path."""
    from overprovisioner.cli_sim import COLUMNS, table_rows
    from overprovisioner.sim.compare import assess_all

    paths = write_plots(results, folder)
    metrics = [m for _, m in results]
    header = "".join(f"<th>{html.escape(t)}</th>" for t, _, _ in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in table_rows(metrics)
    )
    assessment = "".join(f"<li>{html.escape(line)}</li>" for judged in assess_all(metrics)
                         for line in judged.lines())
    images = "".join(
        f'<figure><img src="{p.name}" alt="{html.escape(p.stem)}"></figure>'
        for p in [paths[-1], *paths[:-1]]
    )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 7px;text-align:right}}
img{{max-width:100%}}</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{html.escape(workload_text)}</p>
<h2>Summary</h2>
<table><tr>{header}</tr>{body}</table>
<ul>{assessment}</ul>
<p>Pending time is the wait from submit to placement, all of it for missing capacity
(the simulated scheduler is instantaneous). GPU-hours and dollars count every node
from cluster-autoscaler's launch request to its removal. "hits": placeholders
preempted by real pods. nodes/job, groups/job: distinct nodes and placement groups that
held a multi-pod job's pods. See docs/simulator.md for what the simulator models and
what it does not.</p>
<h2>Plots</h2>{images}
</body></html>
"""
    index = folder / "index.html"
    index.write_text(page)
    return index
