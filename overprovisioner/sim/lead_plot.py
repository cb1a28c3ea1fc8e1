"""The lead-curve plot: pending reduction and cost of predictive against lead time.

Draws, for one trace and one share of jobs known ahead (`sim.lead_curve.LeadCurve`),
two panels over the lead (x, minutes, ticked at the leads run):
- top: predictive's cut of capacity-caused pending GPU-time against reactive (%), with
  the oracle's cut as a reference line;
- bottom: predictive's extra GPU-hours over reactive, the extra GPU-hours the cheapest
  peer headroom (static, proportional or scheduled) needs for the same cut at each lead
  (no point where no peer in the runs gets there), and the oracle's.
The curve a user reads to decide whether wiring Kueue or CronJobs into headstart pays
off on their workload.

Must not: run simulations (it draws a finished curve into a file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from overprovisioner.sim.lead_curve import LeadCurve


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def lead_label(seconds: float) -> str:
    """A tick label: 0, 90s, 2m, 1h30m."""
    if seconds == 0:
        return "0"
    if seconds % 60:
        return f"{seconds:g}s"
    hours, minutes = divmod(int(seconds // 60), 60)
    if hours and minutes:
        return f"{hours}h{minutes}m"
    return f"{hours}h" if hours else f"{minutes}m"


def write_lead_plot(curve: LeadCurve, folder: Path, title: str) -> Path:
    """Write lead-curve.png into `folder` (created); return its path."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7.5), sharex=True)
    leads: list[float] = []
    oracle_cut = oracle_extra = None
    for policy in curve.policies:
        points = curve.of(policy)
        x = np.array([p.lead_s / 60.0 for p in points])
        leads.extend(p.lead_s for p in points)
        cut = [100.0 * (p.assessment.reduction or 0.0) for p in points]
        extra = [p.assessment.extra_gpu_hours or 0.0 for p in points]
        top.plot(x, cut, "o-", label=policy)
        bottom.plot(x, extra, "o-", label=policy)
        best = [p.assessment.best_peer for p in points]
        peer_x = [xi for xi, b in zip(x, best, strict=True) if b is not None]
        peer_y = [b.extra for b in best if b is not None]
        if peer_x:
            bottom.plot(peer_x, peer_y, "s--", color="tab:gray",
                        label=f"best peer headroom at {policy}'s cut")
        first = points[0].assessment
        oracle_cut, oracle_extra = first.oracle_reduction, first.oracle_extra_gpu_hours
    if oracle_cut is not None:
        top.axhline(100.0 * oracle_cut, color="black", linestyle=":",
                    label=f"oracle ({100.0 * oracle_cut:.0f}%)")
    if oracle_extra is not None:
        bottom.axhline(oracle_extra, color="black", linestyle=":",
                       label=f"oracle ({oracle_extra:+.0f} GPU-h)")
    top.set_ylabel("pending GPU-time cut vs reactive (%)")
    top.set_ylim(min(0.0, top.get_ylim()[0]), 100.0)
    top.set_title(f"{title}\n{curve.share:.0%} of jobs known ahead by the lead")
    bottom.set_ylabel("extra GPU-hours over reactive")
    bottom.set_xlabel("lead: how long before creation the jobs are known (minutes)")
    ticks = sorted(set(leads))
    bottom.set_xticks([t / 60.0 for t in ticks], [lead_label(t) for t in ticks])
    for axis in (top, bottom):
        axis.grid(True, alpha=0.3)
        axis.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path = folder / "lead-curve.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
