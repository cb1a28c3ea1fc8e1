"""The whole-system replay as text: the verdict first, then every arm, then what each
part of headstart contributes.

Decides the layout only (the figures are `replay.SystemReport`'s).

Must not: read files, print.
"""

from __future__ import annotations

from overprovisioner.sim.system.replay import SystemReport

PART_WORDS = {
    "queue_mean_min": ("mean queueing", "min"),
    "queue_p95_min": ("p95 queueing", "min"),
    "jct_mean_h": ("mean JCT", "h"),
    "jct_p95_h": ("p95 JCT", "h"),
    "node_gpu_hours": ("node GPU-hours", ""),
    "dollars": ("dollars", "$"),
}


def format_report(report: SystemReport) -> str:
    lines = list(report.verdict.lines)
    lines.append("")
    lines.append(f"{'arm':<44} {'JCT mean h':>10} {'p95 h':>7} {'queue mean min':>14} "
                 f"{'p95 min':>8} {'node GPU-h':>10} {'$':>8} {'resizes':>8} "
                 f"{'unfinished':>10}")
    for row in report.rows:
        mark = ""
        if report.strongest is not None and row["arm"] == report.strongest["arm"]:
            mark = " *"
        if report.reaching is not None and row["arm"] == report.reaching["arm"]:
            mark += " +"
        lines.append(
            f"{row['arm'] + mark:<44} {_num(row['jct_mean_h']):>10} "
            f"{_num(row['jct_p95_h']):>7} {_num(row['queue_mean_min'], 1):>14} "
            f"{_num(row['queue_p95_min'], 1):>8} {row['node_gpu_hours']:>10,.0f} "
            f"{row['dollars']:>8,.0f} {sum(row['resizes'].values()):>8} "
            f"{row['unfinished']:>10}")
    lines.append(f"* the strongest peer: least mean queueing within the node GPU-hours "
                 f"(+{report.tie:.0%}) of {report.chosen['arm']}; + the cheapest peer "
                 "reaching its mean queueing")
    if report.hindsight:
        lines.append("per-type headroom chosen in hindsight: " + ", ".join(report.hindsight))
    measured = report.rows[0]
    lines.append(f"times over the {measured['measured']:,} of {measured['jobs']:,} jobs every "
                 "arm finished (jobs running before the window left out)")
    lines.append("")
    lines.append("What each part contributes (switched off, against the whole system):")
    for part, change in report.contributions.items():
        lines.append(f"  {part}: " + ", ".join(
            f"{words} {_signed(change[key], unit)}" for key, (words, unit) in PART_WORDS.items()))
    return "\n".join(lines)


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "$":
        return f"{'+' if value >= 0 else '-'}${abs(value):,.0f}"
    if unit == "":
        return f"{value:+,.0f}"
    return f"{value:+.1f} {unit}" if unit == "min" else f"{value:+.2f} {unit}"
