"""The HTML report of a simulation comparison (an adapter: it writes files).

The page leads with the verdict (which predictive run to configure, what it buys and
costs against the headroom users run today, the config lines), then the trade-off
plot, the summary table, each judged run's details and the timelines of the runs that
tell the story (`overprovisioner.sim.report_plots`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from overprovisioner.sim.report_plots import story_runs, write_plots

__all__ = ["story_runs", "write_plots", "write_report"]


def write_report(results: Sequence, folder: Path, title: str, workload_text: str,
                 verdict=None, system: Sequence[str] = (), system_table: str = "") -> Path:
    """Write plots and index.html into `folder`; return the page's path. system: the
    whole system's verdict, which leads the page, and `system_table` its replay's table
    (`overprovisioner.sim.system.demo`)."""
    from overprovisioner.sim.assess import assess_all
    from overprovisioner.sim.table import LEGEND, table_header, table_rows

    metrics = [m for _, m in results]
    paths = (write_plots(results, folder, verdict.assessment, verdict.ring) if verdict
             else write_plots(results, folder))
    header = "".join(f"<th>{html.escape(t)}</th>" for t in table_header(metrics))
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        for row in table_rows(metrics)
    )
    details = "".join(
        f"<li>{html.escape(first)}<ul>"
        + "".join(f"<li>{html.escape(line.strip())}</li>" for line in rest) + "</ul></li>"
        for first, *rest in (judged.lines() for judged in assess_all(metrics)))
    lead = "".join(f"<p>{html.escape(line)}</p>" for line in verdict.lines) if verdict else ""
    snippet = f"<pre>{html.escape(verdict.snippet)}</pre>" if verdict and verdict.snippet else ""
    whole = ""
    if system:
        whole = ('<h2>The whole system</h2><div class="verdict">'
                 + "".join(f"<p>{html.escape(line)}</p>" for line in system) + "</div>"
                 + (f"<pre>{html.escape(system_table)}</pre>" if system_table else ""))
    tradeoff, timelines = paths[0], paths[1:]
    images = "".join(
        f'<figure><img src="{p.name}" alt="{html.escape(p.stem)}"></figure>' for p in timelines
    )
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}
table{{border-collapse:collapse;font-size:90%}}
td,th{{border:1px solid #ccc;padding:3px 7px;text-align:right}}th{{vertical-align:bottom}}
.wide{{max-width:100%;overflow-x:auto}}
td:first-child,th:first-child{{text-align:left;white-space:nowrap}}
.verdict{{background:#eef6ee;padding:0.5em 1em;border-left:4px solid #2a2}}
pre{{background:#f4f4f4;padding:0.5em}}img{{max-width:100%}}</style></head><body>
<h1>{html.escape(title)}</h1>
{whole}
<h2>Placeholders</h2>
<div class="verdict">{lead}{snippet}</div>
<p>{html.escape(workload_text)}</p>
<h2>Waiting against cost</h2>
<figure><img src="{tradeoff.name}" alt="trade-off"></figure>
<h2>Every run</h2>
<div class="wide"><table><tr>{header}</tr>{body}</table></div>
<p>{html.escape(LEGEND)}. See docs/simulator.md for what the simulator models and what
it does not.</p>
<h2>Each predictive run against the headroom users run today</h2>
<ul>{details}</ul>
<h2>Over time</h2>{images}
</body></html>
"""
    index = folder / "index.html"
    index.write_text(page)
    return index
