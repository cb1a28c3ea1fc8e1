"""The simulation comparison's plots (an adapter: it writes PNG files).

- tradeoff.png: one panel, pending GPU-minutes against extra GPU-hours over reactive;
  each peer family a line from reactive, predictive's runs joined, the recommended run
  ringed, yardsticks (oracle, rate-oracle) hollow and named as such; log axes where the
  values span decades; a "better" arrow towards less of both; labels placed by
  adjustText so they do not overlap.
- timeline-<policy>.png for the runs that tell the story (reactive, the recommended
  predictive run, the headroom closest to its cut, the oracle): demand, nodes
  (including starting), forecast and placeholders over time, one panel per instance
  type, the MAX_TYPES costing most only (`shown_types`), integer node ticks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from common.errors import InputError
from overprovisioner.policy_names import PEERS, parse_policy_name, peer_size
from overprovisioner.sim.verdict import display_name

# Instance types shown per timeline: the busiest ones (demand node-hours).
MAX_TYPES = 3
# Values spanning more than this ratio get a log axis.
DECADES = 30.0
FAMILY_STYLE = {"static": ("-o", "tab:gray"), "proportional": ("-s", "tab:brown"),
                "scheduled": ("-^", "tab:olive"), "per-type": ("-v", "tab:cyan")}
SEGMENT_POINTS = 48  # samples per segment of a line drawn straight in data coordinates
JUDGED_STYLE = {"predictive": "tab:orange", "oracle": "tab:green", "rate-oracle": "tab:purple"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")


def story_runs(metrics: Sequence, assessment) -> tuple[str, ...]:
    """The policies whose timelines are drawn: reactive, the recommended run, the member
    of its cheapest peer family whose cut is closest to it, the oracle (those present);
    every run when there is no recommendation."""
    names = [m.policy for m in metrics if m.scoring == metrics[0].scoring] if metrics else []
    if assessment is None:
        return tuple(names)
    chosen = ["reactive", assessment.policy]
    best = assessment.best_peer
    reactive = next((m for m in metrics if m.policy == "reactive"), None)
    if best is not None and reactive is not None and reactive.pending_gpu_minutes > 0:
        family = [m for m in metrics if m.scoring == metrics[0].scoring
                  and parse_policy_name(m.policy).kind == best.family]
        cut = 1 - np.array([m.pending_gpu_minutes for m in family]) / reactive.pending_gpu_minutes
        if family:
            chosen.append(family[int(np.argmin(np.abs(cut - assessment.reduction)))].policy)
    chosen.append("oracle")
    return tuple(n for n in dict.fromkeys(chosen) if n in names)


def write_plots(results: Sequence, folder: Path, assessment=None,
                ring: str = "recommended") -> list[Path]:
    """Write tradeoff.png and the story runs' timelines; return the paths, trade-off first.
    assessment: the verdict's run, ringed and labelled `ring`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{folder}: cannot create the plot folder ({error.strerror})") from None
    metrics = [m for _, m in results]
    story = story_runs(metrics, assessment)
    recommended = assessment.policy if assessment is not None else None
    paths = [plot_tradeoff(metrics, folder / "tradeoff.png", recommended, ring)]
    main = metrics[0].scoring if metrics else None
    by_name = {r.policy: r for r, m in results if m.scoring == main}
    paths += [plot_timeline(by_name[name], folder) for name in story]
    return paths


def _axis_scale(axis, which: str, values: np.ndarray) -> None:
    """Log (symlog when a value is 0) where the positive values span decades."""
    positive = values[values > 0]
    if positive.size < 2 or positive.max() / positive.min() < DECADES:
        return
    from matplotlib.ticker import LogLocator

    setter = axis.set_xscale if which == "x" else axis.set_yscale
    if (values <= 0).any():
        setter("symlog", linthresh=float(positive.min()))
    else:
        setter("log")
        # 1, 2 and 5 of each decade labelled: a reader needs more than powers of ten
        (axis.xaxis if which == "x" else axis.yaxis).set_major_locator(
            LogLocator(subs=(1.0, 2.0, 5.0)))


def _thousands(axis) -> None:
    from matplotlib.ticker import FuncFormatter

    formatter = FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 1 or v == 0 else f"{v:g}")
    axis.xaxis.set_major_formatter(formatter)
    axis.yaxis.set_major_formatter(formatter)


def plot_tradeoff(metrics: Sequence, path: Path, recommended: str | None = None,
                  ring: str = "recommended") -> Path:
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(13, 6.5))
    main = [m for m in metrics if m.scoring == metrics[0].scoring]
    reactive = next((m for m in main if m.policy == "reactive"), None)
    base = reactive.gpu_hours if reactive else 0.0
    texts = draw_tradeoff(axis, main, base, recommended, ring)
    extra = np.array([m.gpu_hours - base for m in main])
    pending = np.array([m.pending_gpu_minutes for m in main])
    _axis_scale(axis, "x", extra)
    _axis_scale(axis, "y", pending)
    _thousands(axis)
    tip = _emptiest_spot(axis, extra, pending)
    axis.annotate("better", xy=tip, xytext=(tip[0] + 0.1, tip[1] + 0.1),
                  xycoords="axes fraction", arrowprops={"arrowstyle": "->", "color": "tab:green",
                                                        "lw": 2},
                  color="tab:green", fontsize=11, fontweight="bold")
    axis.set_title("Waiting against cost, every policy (lower left is better; hollow = "
                   "yardstick that knows the future, cannot be deployed)", fontsize=10)
    fig.tight_layout()
    _place_labels(axis, texts)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _emptiest_spot(axis, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Where the "better" arrow's tip goes (axes fraction): the candidate farthest from
    every run, so the cue never hides one."""
    points = axis.transAxes.inverted().transform(axis.transData.transform(np.c_[x, y]))
    candidates = [(cx, cy) for cx in (0.15, 0.35, 0.55, 0.75) for cy in (0.1, 0.3, 0.5)]
    return max(candidates, key=lambda c: min(
        np.hypot(points[:, 0] - c[0] - 0.05, points[:, 1] - c[1] - 0.05)))


def _place_labels(axis, texts: list) -> None:
    from adjustText import adjust_text

    if texts:
        adjust_text(texts, ax=axis, expand=(1.3, 1.8),
                    arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.5})


def straight_in_data(xs: Sequence[float], ys: Sequence[float],
                     per_segment: int = SEGMENT_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The polyline through (xs, ys) sampled densely along each segment, so that it stays
    straight in data coordinates whatever the axis scale."""
    if len(xs) < 2:
        return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    steps = np.linspace(0.0, 1.0, per_segment, endpoint=False)
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    dense_x = np.concatenate([x[i] + (x[i + 1] - x[i]) * steps for i in range(len(x) - 1)]
                             + [x[-1:]])
    dense_y = np.concatenate([y[i] + (y[i + 1] - y[i]) * steps for i in range(len(y) - 1)]
                             + [y[-1:]])
    return dense_x, dense_y


def draw_tradeoff(axis, main: Sequence, base: float, recommended: str | None = None,
                  ring: str = "recommended") -> list:
    """Pending GPU-minutes against extra GPU-hours over reactive (`base`) on one axis:
    each peer family a line from reactive, predictive's runs joined by a dashed line,
    predictive / oracle / rate-oracle (with `:Q` variants) as stars, the yardsticks
    hollow; one legend entry per family. Returns the run labels (Text objects)."""
    kinds = {m.policy: parse_policy_name(m.policy).kind for m in main}
    reactive = [m for m in main if kinds[m.policy] == "reactive"]
    for family in PEERS:
        members = sorted((m for m in main if kinds[m.policy] == family),
                         key=lambda m: peer_size(parse_policy_name(m.policy)))
        if not members:
            continue
        style, color = FAMILY_STYLE[family]
        line = reactive + members
        xs = [m.gpu_hours - base for m in line]
        ys = [m.pending_gpu_minutes for m in line]
        # The verdict prices a cut between two runs linearly in GPU-hours and waiting
        # (`assess.interpolate_extra`); on a log or symlog axis a plain line between
        # them is another curve, so the line is drawn through that interpolation, with
        # markers on the runs only.
        dense_x, dense_y = straight_in_data(xs, ys, SEGMENT_POINTS)
        axis.plot(dense_x, dense_y, style, color=color, markersize=5,
                  markevery=list(range(0, len(dense_x), SEGMENT_POINTS)),
                  label=f"{family} headroom (from reactive)")
    for m in reactive:
        axis.plot(0.0, m.pending_gpu_minutes, "D", color="black", markersize=7,
                  label="reactive (cluster-autoscaler alone)")
    predictive = sorted((m for m in main if kinds[m.policy] == "predictive"),
                        key=lambda m: m.gpu_hours)
    if len(predictive) > 1:
        axis.plot(*straight_in_data([m.gpu_hours - base for m in predictive],
                                    [m.pending_gpu_minutes for m in predictive]),
                  "--", color="tab:orange", linewidth=0.8)
    for name, color in JUDGED_STYLE.items():
        family = [m for m in main if kinds[m.policy] == name]
        hollow = name != "predictive"
        label = f"{name} (yardstick, not deployable)" if hollow else name
        for index, m in enumerate(family):
            axis.plot(m.gpu_hours - base, m.pending_gpu_minutes, "*", markersize=15,
                      color=color, markerfacecolor="none" if hollow else color,
                      markeredgewidth=1.5, label=label if index == 0 else None)
    for m in main:
        if m.policy == recommended:
            axis.plot(m.gpu_hours - base, m.pending_gpu_minutes, "o", markersize=22,
                      markerfacecolor="none", markeredgecolor="red", markeredgewidth=1.5,
                      label=ring)
    texts = [axis.text(m.gpu_hours - base, m.pending_gpu_minutes,
                       display_name(m.policy) + (f" ({ring})" if m.policy == recommended
                                                 else ""), fontsize=8)
             for m in main]
    axis.set_xlabel("extra GPU-hours over reactive (cost)")
    axis.set_ylabel("pending GPU-minutes caused by missing capacity (waiting)")
    axis.grid(alpha=0.3, which="both")
    # outside the axes, so it never hides a run
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), markerscale=0.7)
    return texts


def shown_types(types, demand: np.ndarray, capacity: np.ndarray) -> tuple[list[int], int]:
    """(the types a timeline draws, busiest first, how many busy ones it leaves out).
    Busy by what the nodes cost (node-ticks x the type's price; node-ticks alone where
    the catalog has no price): an 8-GPU type runs few nodes, and ranking by node count
    hid DLRM's as "quieter" than its GPU-less type."""
    price = np.array([t.price_per_hour if t.price_per_hour == t.price_per_hour
                      and t.price_per_hour > 0 else 1.0 for t in types])
    busy = (demand.sum(axis=0) + 1e-9 * capacity.sum(axis=0)) * price
    ranked = [int(b) for b in np.argsort(-busy, kind="stable") if busy[b] > 0]
    shown = ranked[:MAX_TYPES] or [0]
    return shown, max(0, len(ranked) - len(shown))


def plot_timeline(result, folder: Path) -> Path:
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    types = result.workload.types
    shown, others = shown_types(types, result.demand, result.capacity)
    fig, axes = plt.subplots(len(shown), 1, figsize=(11, 2.4 * len(shown) + 0.8),
                             sharex=True, squeeze=False)
    days = (result.times - result.workload.start_s) / 86_400
    for axis, b in zip(axes[:, 0], shown, strict=True):
        axis.step(days, result.capacity[:, b], where="post", label="nodes (incl. starting)",
                  color="tab:blue", linewidth=0.9)
        axis.step(days, result.demand[:, b], where="post", label="demand",
                  color="black", linewidth=0.8)
        if np.isfinite(result.forecast[:, b]).any():
            axis.plot(days, result.forecast[:, b], label="forecast", color="tab:orange",
                      linewidth=0.7, alpha=0.8)
        # A few placeholders beside hundreds of nodes are a flat line at zero: past 10x,
        # they get a right-hand axis of their own.
        placeholders = result.placeholders[:, b]
        peak = max(float(result.demand[:, b].max(initial=0)),
                   float(result.capacity[:, b].max(initial=0)))
        if 0 < placeholders.max(initial=0) < peak / 10:
            right = axis.twinx()
            right.step(days, placeholders, where="post", color="tab:green", linewidth=0.7)
            right.set_ylabel("placeholders", fontsize=8, color="tab:green")
            right.set_ylim(bottom=0)
            right.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=4))
            axis.plot([], [], color="tab:green", linewidth=0.7, label="placeholders (right)")
        else:
            axis.step(days, placeholders, where="post", label="placeholders",
                      color="tab:green", linewidth=0.7)
        axis.set_ylabel(f"{types[b].name}\nnodes", fontsize=9)
        axis.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper left", fontsize=8, ncol=4)
    more = (f"; {others} type{'s' if others > 1 else ''} costing less not shown"
            if others > 0 else "")
    axes[0, 0].set_title(f"{display_name(result.policy)}: nodes of each instance type over "
                         f"time{more}", fontsize=10)
    axes[-1, 0].set_xlabel("days from the window start")
    if days.size and days[-1] >= 2:  # whole days; a shorter window keeps fractions
        axes[-1, 0].xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    path = folder / f"timeline-{_slug(result.policy)}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
