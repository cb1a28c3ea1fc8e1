"""The HTTP side of `headstart trace export`: ask Prometheus, hand the answers to the core.

Decides: nothing about pods (that is `predictor.live.trace_export`); only the grid of ticks,
one `query_range` per role through `predictor.live.prometheus.fetch_range` (which splits the
range into chunks under Prometheus' 11,000-points-per-series limit and merges them), and
the refusal of an empty answer where one makes the export meaningless.

Faults raise PrometheusError (one line naming the URL or the query): Prometheus not
reachable, a non-200 or non-JSON answer, an `"status": "error"` body, and no series at all
for the pods' creation times or requests.
"""

from __future__ import annotations

from datetime import UTC, datetime

from jobtraces.jobtable import JobTable
from predictor.live.prometheus import PrometheusConfig, PrometheusError, fetch_range, grid
from predictor.live.trace_export import (
    REQUIRED_ROLES,
    ExportStats,
    export_queries,
    job_table_from_results,
)


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def fetch_job_table(
    config: PrometheusConfig, since_s: float, until_s: float, step_s: float
) -> tuple[JobTable, ExportStats]:
    """The job table of the pods kube-state-metrics reported between since_s and until_s
    (Unix seconds), sampled every step_s."""
    import aiohttp

    times = grid(since_s, until_s, step_s)
    results = {}
    async with aiohttp.ClientSession() as session:
        for role, query in export_queries(config).items():
            results[role] = await fetch_range(session, config, query, times, step_s)
            if role in REQUIRED_ROLES and not results[role]:
                raise PrometheusError(
                    f"prometheus: {config.url}: no series for {query} between "
                    f"{_utc(since_s)} and {_utc(until_s)} (is kube-state-metrics v2 scraped, "
                    "and are the window and the excluded namespaces right?)"
                )
    return job_table_from_results(results, times, step_s, since_s, until_s, config)
