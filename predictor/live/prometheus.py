"""Demand history from Prometheus (kube-state-metrics), so a new install can forecast from day one.

Decides: which PromQL is asked (`query_range` at the tick as step), how the answers
become per-tick pod demand, and how Prometheus faults are reported.

Queries (kube-state-metrics v2 names):
  sum by (namespace, pod, resource) (kube_pod_container_resource_requests{resource=~R})
  max by (namespace, pod, resource) (kube_pod_init_container_resource_requests{resource=~R})
  max by (namespace, pod, phase) (kube_pod_status_phase{phase=~"Pending|Running"} == 1)
with R = the GPU resource (`nvidia_com_gpu`: kube-state-metrics turns `nvidia.com/gpu` into
that), `cpu` (cores) and `memory` (bytes). A pod's request at a tick is the larger of its
containers' sum and its largest init container, per resource, as the scheduler does;
pod overhead and sidecar init containers are not visible in these metrics and are
left out. A pod is demand at a tick when its phase is Pending (counted pending) or
Running (counted running). Placeholder pods (label `headstart.io/placeholder`) are not
told apart: kube-state-metrics only exports labels on an allow-list, so exclude their
namespace with `exclude_namespaces` (default: `headstart` and `headstart-placeholders`,
where the shipped manifests keep them; the service passes its own `placeholders.namespace`).

A tick where no pod has a phase sample at all (kube-state-metrics or Prometheus was
down) is a gap (NaN), never zero demand (a live cluster always runs some pod, if only
kube-state-metrics itself, so "no pod at all" means "no data"). Placement groups are
not read here: every count is in the plain `bucket` column.

The pure part (`demand_from_results`, `series_from_demand`, and the request rules
`request_samples` / `request_resources` that `predictor.live.trace_export` shares) takes
decoded JSON; the adapter (`fetch_range`, `load_series`) talks HTTP with aiohttp.
Errors from Prometheus (an `"status": "error"` body, a non-200 status, a body that is
not the expected JSON) raise PrometheusError with Prometheus' own message.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bucketing.catalog import InstanceType
from bucketing.resources import Resources
from common.errors import HeadstartError, InputError
from predictor.history.series import TOTAL_PREFIX, DemandSeries, make_series
from predictor.history.snapshot import PodDemand, snapshot_values

# Prometheus refuses a range query over 11,000 points per series.
MAX_POINTS = 11_000


class PrometheusError(HeadstartError):
    """Prometheus could not be reached or answered with an error; the message says which."""


@dataclass(frozen=True)
class PrometheusConfig:
    """Where Prometheus is and how to read kube-state-metrics from it."""

    url: str = "http://prometheus-server.monitoring.svc:80"
    """Base URL of the Prometheus HTTP API (the path /api/v1/query_range is appended)."""

    gpu_resource: str = "nvidia_com_gpu"
    """The GPU resource as kube-state-metrics labels it (dots and slashes become _)."""

    exclude_namespaces: tuple[str, ...] = ("headstart", "headstart-placeholders")
    """Namespaces whose pods are not demand: headstart's own, and its placeholders' (the
    shipped manifests' `placeholders.namespace`; the built-in default is `headstart`)."""

    timeout_s: float = 60.0
    """Per-request timeout in seconds."""


def namespace_matcher(config: PrometheusConfig) -> str:
    """The label matcher (with a leading comma) that leaves out the excluded namespaces."""
    if not config.exclude_namespaces:
        return ""
    return ',namespace!~"' + "|".join(config.exclude_namespaces) + '"'


def queries(config: PrometheusConfig) -> dict[str, str]:
    """The PromQL expressions asked, by role."""
    resources = f'resource=~"{config.gpu_resource}|cpu|memory"'
    exclude = namespace_matcher(config)
    return {
        "requests": "sum by (namespace, pod, resource) "
        f"(kube_pod_container_resource_requests{{{resources}{exclude}}})",
        "init_requests": "max by (namespace, pod, resource) "
        f"(kube_pod_init_container_resource_requests{{{resources}{exclude}}})",
        "phase": "max by (namespace, pod, phase) "
        f'(kube_pod_status_phase{{phase=~"Pending|Running"{exclude}}} == 1)',
    }


def matrix_of(body: Any, query: str) -> list[Mapping[str, Any]]:
    """The `result` list of a query_range answer, or PrometheusError naming what is wrong."""
    if not isinstance(body, Mapping):
        raise PrometheusError(f"prometheus: {query}: the answer is not a JSON object")
    if body.get("status") != "success":
        raise PrometheusError(
            f"prometheus: {query}: {body.get('errorType', 'error')}: "
            f"{body.get('error', 'no error message')}"
        )
    data = body.get("data")
    if not isinstance(data, Mapping) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, Mapping) else None
        raise PrometheusError(f"prometheus: {query}: expected a matrix result, got {kind!r}")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError(f"prometheus: {query}: data.result is not a list")
    return result


def samples(series: Mapping[str, Any], times: np.ndarray, tick_s: float, what: str
            ) -> tuple[np.ndarray, np.ndarray]:
    """(tick indices, values) of one matrix series on the grid `times`."""
    values = series.get("values")
    if not isinstance(values, list):
        raise PrometheusError(f"prometheus: {what}: a series has no values list")
    try:
        stamps = np.array([float(v[0]) for v in values], dtype=np.float64)
        numbers = np.array([float(v[1]) for v in values], dtype=np.float64)
    except (TypeError, ValueError, IndexError):
        raise PrometheusError(f"prometheus: {what}: values must be [time, \"number\"] pairs"
                              ) from None
    ticks = np.rint((stamps - times[0]) / tick_s).astype(np.int64)
    keep = (ticks >= 0) & (ticks < len(times)) & ~np.isnan(numbers)
    return ticks[keep], numbers[keep]


REQUEST_ROLES = ("requests", "init_requests")


def request_samples(
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    times: np.ndarray,
    tick_s: float,
    gpu_resource: str = "nvidia_com_gpu",
) -> Iterator[tuple[str, int, np.ndarray, np.ndarray]]:
    """(pod key "namespace/pod", dimension 0=GPUs 1=cores 2=bytes, tick indices, values) of
    every request series in the "requests" and "init_requests" results.

    The pod's request at a tick is the per-dimension max over what this yields for that tick
    (the containers' sum, or the largest init container); negative requests are refused.
    """
    dims = {gpu_resource: 0, "cpu": 1, "memory": 2}
    for role in REQUEST_ROLES:
        for series in results.get(role, ()):
            metric = series.get("metric") or {}
            dim = dims.get(metric.get("resource", ""))
            if dim is None:
                continue
            key = f"{metric.get('namespace', '')}/{metric.get('pod', '')}"
            ticks, values = samples(series, times, tick_s, role)
            if (values < 0).any():
                raise PrometheusError(f"prometheus: {role}: pod {key} has a negative "
                                      f"{metric.get('resource')} request")
            yield key, dim, ticks, values


def request_resources(vector: Sequence[float] | np.ndarray) -> Resources:
    """(GPUs, cores, bytes) as kube-state-metrics reports them -> integer Resources.

    CPU and memory round up (a 0.1-core request is 100 millicores even when the float
    reads 0.1000000001 or 0.0999999999); GPUs round to the nearest thousandth.
    """
    return Resources(
        gpu_milli=round(vector[0] * 1000),
        cpu_milli=math.ceil(vector[1] * 1000 - 1e-6),
        memory_bytes=math.ceil(vector[2] - 1e-6),
    )


def demand_from_results(
    results: Mapping[str, Sequence[Mapping[str, Any]]],
    times: np.ndarray,
    tick_s: float,
    gpu_resource: str = "nvidia_com_gpu",
) -> list[list[PodDemand] | None]:
    """Per tick, the pods wanting capacity (None = no phase sample at all: a gap)."""
    tick_count = len(times)
    requests: dict[str, np.ndarray] = {}
    for key, dim, ticks, values in request_samples(results, times, tick_s, gpu_resource):
        table = requests.setdefault(key, np.zeros((tick_count, 3)))
        # Containers are summed by the query; an init container only raises the floor.
        table[ticks, dim] = np.maximum(table[ticks, dim], values)
    per_tick: list[list[PodDemand] | None] = [None] * tick_count
    for series in results.get("phase", ()):
        metric = series.get("metric") or {}
        key = f"{metric.get('namespace', '')}/{metric.get('pod', '')}"
        phase = metric.get("phase")
        ticks, values = samples(series, times, tick_s, "phase")
        table = requests.get(key)
        for tick in ticks[values > 0]:
            request = request_resources(table[tick] if table is not None else np.zeros(3))
            pods = per_tick[tick]
            if pods is None:
                pods = per_tick[tick] = []
            # Prometheus has no node here: Running counts as running, Pending as pending.
            pods.append(PodDemand(key, request, "" if phase == "Running" else None))
    return per_tick


def series_from_demand(
    per_tick: Sequence[list[PodDemand] | None],
    times: np.ndarray,
    tick_s: float,
    bucket_types: Sequence[InstanceType],
    source: str,
) -> DemandSeries:
    """Embed each tick's pods into bucket counts plus totals; None ticks become NaN rows."""
    names = [t.name for t in bucket_types]
    rows: list[dict[str, float]] = []
    for pods in per_tick:
        rows.append({} if pods is None else snapshot_values(pods, {}, bucket_types))
    frame = pd.DataFrame(rows, index=range(len(times)), dtype=np.float64)
    counts = frame.reindex(columns=names).to_numpy(dtype=np.float64)
    total_columns = [c for c in frame.columns if str(c).startswith(TOTAL_PREFIX)]
    totals = None
    if total_columns:
        totals = frame[total_columns].rename(columns=lambda c: c[len(TOTAL_PREFIX):])
    return make_series(times, names, counts, tick_s, totals, source)


def grid(start_s: float, end_s: float, tick_s: float) -> np.ndarray:
    """Tick times on the epoch grid from the first tick at/after start_s to end_s inclusive."""
    first = math.ceil(start_s / tick_s) * tick_s
    if end_s < first:
        raise InputError(f"prometheus: no tick between {start_s} and {end_s}")
    return first + tick_s * np.arange(int((end_s - first) // tick_s) + 1, dtype=np.float64)


async def fetch_range(
    session: Any, config: PrometheusConfig, query: str, times: np.ndarray, tick_s: float
) -> list[Mapping[str, Any]]:
    """query_range over `times` (in chunks under MAX_POINTS), the series merged by labels."""
    import aiohttp

    merged: dict[tuple, dict[str, Any]] = {}
    url = config.url.rstrip("/") + "/api/v1/query_range"
    for chunk_start in range(0, len(times), MAX_POINTS - 1):
        chunk = times[chunk_start : chunk_start + MAX_POINTS - 1]
        params = {"query": query, "start": f"{chunk[0]:.3f}", "end": f"{chunk[-1]:.3f}",
                  "step": f"{tick_s:g}s"}
        try:
            async with session.post(
                url, data=params, timeout=aiohttp.ClientTimeout(total=config.timeout_s)
            ) as response:
                text = await response.text()
                try:
                    body = await response.json(content_type=None)
                except ValueError:
                    raise PrometheusError(
                        f"prometheus: {url}: HTTP {response.status}, not JSON: {text[:200]!r}"
                    ) from None
        except (aiohttp.ClientError, TimeoutError) as error:
            raise PrometheusError(f"prometheus: cannot reach {url} "
                                  f"({type(error).__name__}: {error})") from None
        for series in matrix_of(body, query):
            key = tuple(sorted((series.get("metric") or {}).items()))
            entry = merged.setdefault(key, {"metric": series.get("metric") or {}, "values": []})
            entry["values"].extend(series.get("values") or [])
    return list(merged.values())


async def load_series(
    config: PrometheusConfig,
    start_s: float,
    end_s: float,
    tick_s: float,
    bucket_types: Sequence[InstanceType],
) -> DemandSeries:
    """Demand history between start_s and end_s (Unix seconds) at tick_s, from Prometheus."""
    import aiohttp

    times = grid(start_s, end_s, tick_s)
    async with aiohttp.ClientSession() as session:
        results = {
            role: await fetch_range(session, config, query, times, tick_s)
            for role, query in queries(config).items()
        }
    per_tick = demand_from_results(results, times, tick_s, config.gpu_resource)
    return series_from_demand(per_tick, times, tick_s, bucket_types, config.url)

