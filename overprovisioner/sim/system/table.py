"""The whole-system replay as text: the verdict first, then every arm at the first seed,
the repeated arms' medians and spreads, then what each part of headstart contributes.

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
HEADER = (f"{'arm':<48} {'JCT mean h':>10} {'p95 h':>7} {'queue mean min':>14} "
          f"{'p95 min':>8} {'node GPU-h':>10} {'$':>8}")


def format_report(report: SystemReport) -> str:
    lines = list(report.verdict.lines)
    lines += ["", f"Every arm at node start-up seed {report.seeds[0]}:",
              HEADER + f" {'resizes':>8} {'unfinished':>10}"]
    for row in report.rows:
        lines.append(_figures(row, _mark(report, row["arm"]))
                     + f" {sum(row['resizes'].values()):>8} {row['unfinished']:>10}")
    lines.append("* the strongest peer: least mean queueing within the node GPU-hours of "
                 f"{report.chosen['arm']} (tie band over); + the cheapest peer reaching its "
                 "mean queueing")
    if report.hindsight:
        lines.append("per-type headroom chosen in hindsight: " + ", ".join(report.hindsight))
    measured = report.rows[0]
    lines.append(f"times over the {measured['measured']:,} of {measured['jobs']:,} jobs every "
                 "arm finished (jobs running before the window left out)")
    if len(report.seeds) > 1:
        lines += ["", f"Medians over seeds {', '.join(map(str, report.seeds))} (spread: "
                  "(largest - smallest) / median):", HEADER + "  spread of queue / JCT / GPU-h"]
        for row in report.repeated:
            spread = row["spread"]
            lines.append(_figures(row, "") + "  " + " / ".join(
                "-" if spread[key] is None else f"{spread[key]:.0%}"
                for key in ("queue_mean_min", "jct_mean_h", "node_gpu_hours")))
    lines += ["", "What each part contributes (switched off, against the whole system at "
              f"seed {report.seeds[0]}; ~ within the whole system's tie band):"]
    for part, change in report.contributions.items():
        quiet = change["within_noise"]
        lines.append(f"  {part}: " + ", ".join(
            f"{words} {_signed(change[key], unit)}{'~' if quiet[key] else ''}"
            for key, (words, unit) in PART_WORDS.items()))
    return "\n".join(lines)


def _mark(report: SystemReport, arm: str) -> str:
    mark = ""
    if report.strongest is not None and arm == report.strongest["arm"]:
        mark = " *"
    if report.reaching is not None and arm == report.reaching["arm"]:
        mark += " +"
    return mark


def _figures(row: dict, mark: str) -> str:
    return (f"{row['arm'] + mark:<48} {_num(row['jct_mean_h']):>10} "
            f"{_num(row['jct_p95_h']):>7} {_num(row['queue_mean_min'], 1):>14} "
            f"{_num(row['queue_p95_min'], 1):>8} {row['node_gpu_hours']:>10,.0f} "
            f"{row['dollars']:>8,.0f}")


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
