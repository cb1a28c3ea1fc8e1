"""Known-ahead demand in the tick's plan: the forecast split and the per-bucket known nodes.

Decides how the recorder's known demand meets the forecaster (the rule is
`predictor.known.combine` (4), documented in docs/known-demand.md):
- the model is fitted and asked on the *unannounced* history (observed minus announced,
  `predictor.known.history.unannounced`);
- the announced demand running or pending now is added back to its forecast (it is in
  the cluster and assumed to stay over the horizon), and `in_use` stays the observed
  demand, so the plan's delta is the unannounced forecast's rise plus the known demand;
- the known demand due within the horizon is a per-bucket number of nodes the plan adds
  in every mode (`known_nodes`); known pods are not bound, so they sit in the ungrouped
  bucket, as pending pods do;
- the planned growth of elastic jobs (KALE's worker plans, `worker_plan.growth`) is
  known demand in the job's own placement group (its new workers join the domain it
  runs in): embedded per group (`growth_nodes`) and added to the known nodes
  (`with_growth`).

Must not: read the clock, log, or call the API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from bucketing.catalog import InstanceType
from bucketing.embed import embed
from overprovisioner.planner.forecasting import BucketForecast
from overprovisioner.planner.worker_plan import Growth
from predictor.history.series import bucket_vectors, split_column
from predictor.live.known_recording import KnownState

Bucket = tuple[str, str]


def add_announced(forecasts: Mapping[Bucket, BucketForecast], columns: Sequence[str],
                  history: np.ndarray, announced: np.ndarray) -> dict[Bucket, BucketForecast]:
    """Forecasts of the unannounced demand plus the announced demand at the last observed
    tick; `in_use` is the observed demand then. `history` is the (T, K) observed demand
    in `columns` and `announced` its announced part."""
    result = dict(forecasts)
    for index, column in enumerate(columns):
        bucket, group = split_column(column)
        forecast = forecasts.get((bucket, group or ""))
        if forecast is None:
            continue
        rows = np.flatnonzero(~np.isnan(history[:, index]))
        observed = float(history[rows[-1], index]) if len(rows) else 0.0
        extra = float(announced[rows[-1], index]) if len(rows) else 0.0
        result[(bucket, group or "")] = replace(
            forecast, point=forecast.point + extra, quantile=forecast.quantile + extra,
            raw_quantile=forecast.raw_quantile + extra, in_use=observed, announced=extra)
    return result


def known_nodes(state: KnownState | None) -> dict[Bucket, float]:
    """Per bucket, the nodes known demand due within the horizon needs."""
    if state is None:
        return {}
    nodes: dict[Bucket, float] = {}
    for column, value in state.values.total.items():
        bucket, group = split_column(column)
        nodes[(bucket, group or "")] = float(value)
    return nodes


def known_by_source(state: KnownState | None, bucket: Bucket) -> dict[str, float]:
    """Per source, the nodes its own due items need in `bucket` (each embedded alone)."""
    if state is None:
        return {}
    column = bucket[0] if not bucket[1] else f"{bucket[0]}@{bucket[1]}"
    return {source: float(values.get(column, 0.0))
            for source, values in state.values.by_source.items() if values.get(column, 0.0)}


def known_source_nodes(state: KnownState | None) -> dict[tuple[str, str, str], float]:
    """Per (instance type, placement group, source), the nodes that source's due items
    need (each source embedded alone, as `known_by_source`); zeros left out."""
    if state is None:
        return {}
    nodes: dict[tuple[str, str, str], float] = {}
    for source, values in state.values.by_source.items():
        for column, value in values.items():
            if value:
                bucket, group = split_column(column)
                nodes[(bucket, group or "", source)] = float(value)
    return nodes


def growth_nodes(growths: Sequence[Growth], bucket_types: Sequence[InstanceType]
                 ) -> dict[Bucket, float]:
    """Per (bucket, placement group), the nodes elastic jobs' planned growth needs: each
    group's new workers embedded together (a worker that fits no bucket adds nothing)."""
    out: dict[Bucket, float] = {}
    vectors = bucket_vectors(bucket_types)
    for group in sorted({g.group for g in growths}):
        chosen = [g for g in growths if g.group == group]
        pods = np.repeat(np.stack([g.request.as_vector() for g in chosen]),
                         [g.pods for g in chosen], axis=0)
        counts = embed(pods, vectors).counts
        for instance_type, count in zip(bucket_types, counts, strict=True):
            if count > 0:
                out[(instance_type.name, group)] = float(count)
    return out


def with_growth(known: Mapping[Bucket, float], growth: Mapping[Bucket, float]
                ) -> dict[Bucket, float]:
    """Known nodes plus the planned growth's, bucket by bucket."""
    total = dict(known)
    for bucket, nodes in growth.items():
        total[bucket] = total.get(bucket, 0.0) + nodes
    return total
