"""The bucket-list tuner's report: which instance types to bucket a trace's demand into.

Decides: which catalog types are bucket candidates, the demand each tick wants
(running plus pending pods: all of them want capacity), and for the full catalog
and every list base-instance selection tries: embedded and packed node-hours,
dollar cost, and waste (allocated but unrequested GPU / CPU / memory).

Which catalog types count as buckets: the lexicographic order compares GPU counts,
not GPU models, so a list mixing models sends a 4-GPU pod to whichever 4-GPU type
has fewer CPUs (a V100 p3.8xlarge before a T4 g4dn.12xlarge at a third of the
price). A bucket list is therefore one GPU model's types plus the catalog's GPU-less
types (for CPU-only pods such as parameter servers). `gpu_model="all"` uses every
type; `"auto"` (the default) tries each model's list and the whole catalog and
takes the one leaving the fewest pods unbucketable, then needing the lowest scale
(ties go to a single model). The full catalog is always reported as a candidate.

Which pod fits which type is `bucketing.fit`'s rule, the one the simulator pins pods
with: GPU pods only on GPU types of the model they ask for (openb's `gpu_spec`),
GPU-less pods only on GPU-less types when the list has any. So the pods the tuner
reports unbucketable on its list are the pods `headstart simulate` on that list drops.

After base-instance selection, `bucketing.trim` cuts the list to at most `max_types`
types (each one a node group to run), and that list is the recommendation.

Bucket vectors are the types' placeholder requests (allocatable less daemonset
overhead): what one node offers pods, and exactly what one placeholder requests.

Must not: read files, log, read the clock, or mutate the job table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bucketing.base_instance import (
    ScaleResult,
    Selection,
    per_bucket_sums,
    scale_over_trace,
    select_base_instance,
)
from bucketing.catalog import Catalog, InstanceType
from bucketing.embed import counts_from_sums, lexicographic_order, round_up
from bucketing.fit import accepted_models, pin_buckets, unused_types
from bucketing.pack import pack_histogram
from bucketing.trim import trim_types
from bucketing.tune_report import Candidate, TuneReport, TypeUsage
from common.errors import ConfigError, InputError
from jobtraces.demand import DemandSnapshots, resource_matrix
from jobtraces.jobtable import JobTable, gpu_model_requirements, require_gpu_pods

EXAMPLES = 5
# Each type is a node group to run and a series to forecast; four covers what a
# training cluster asks for (GPU-less pods, 1-, 4- and 8-GPU classes) and keeps the
# operator's list short. `tune --max-types` says the same in its help.
DEFAULT_MAX_TYPES = 4


@dataclass(frozen=True)
class DemandHistogram:
    """A trace's demand as counts of distinct pod vectors per tick.

    shapes: (S, 3) distinct (GPUs, CPUs, GiB) vectors of the table's pods.
    histogram: (T, S) pods of each shape wanting capacity at each tick.
    shape_of_row: (N,) the shape of each table row.
    shape_pods: (S,) pods of the table with each shape.
    shape_models: (S,) the GPU model the shape's pods ask for ("" = any): two pods of
        one vector asking for different models are two shapes.
    """

    shapes: np.ndarray
    histogram: np.ndarray
    shape_of_row: np.ndarray
    shape_pods: np.ndarray
    shape_models: np.ndarray


def demand_histogram(
    vectors: np.ndarray, snaps: DemandSnapshots, include_pending: bool = True,
    models: np.ndarray | None = None,
) -> DemandHistogram:
    """Count, per tick, the running (and pending) pods of each distinct vector and model."""
    if models is None:
        models = np.full(len(vectors), "", dtype=object)
    model_names, model_of_row = np.unique(np.asarray(models, dtype=str), return_inverse=True)
    keyed = np.column_stack([vectors, np.asarray(model_of_row).reshape(-1)])
    keyed_shapes, shape_of_row = np.unique(keyed, axis=0, return_inverse=True)
    shapes = np.ascontiguousarray(keyed_shapes[:, :3])
    shape_models = model_names[keyed_shapes[:, 3].astype(np.int64)].astype(object)
    shape_of_row = np.asarray(shape_of_row).reshape(-1)
    tick_count, shape_count = len(snaps), len(shapes)
    sources = [(snaps.running_offsets, snaps.running_index)]
    if include_pending:
        sources.append((snaps.pending_offsets, snaps.pending_index))
    histogram = np.zeros(tick_count * shape_count, dtype=np.int64)
    for offsets, index in sources:
        tick_of_entry = np.repeat(np.arange(tick_count), np.diff(offsets))
        histogram += np.bincount(
            tick_of_entry * shape_count + shape_of_row[index], minlength=tick_count * shape_count
        )
    return DemandHistogram(
        shapes=shapes,
        histogram=histogram.reshape(tick_count, shape_count),
        shape_of_row=shape_of_row,
        shape_pods=np.bincount(shape_of_row, minlength=shape_count),
        shape_models=shape_models,
    )


def sorted_types(types: Sequence[InstanceType]) -> tuple[InstanceType, ...]:
    """Types increasingly in cost order of their placeholder vectors, equal vectors by price."""
    by_price = sorted(types, key=lambda t: t.price_per_hour)
    order = lexicographic_order(np.array([t.placeholder_request.as_vector() for t in by_price]))
    return tuple(by_price[i] for i in order)  # lexsort is stable: price breaks ties


def without_duplicates(
    types: Sequence[InstanceType], demanded: frozenset[str] = frozenset()
) -> tuple[InstanceType, ...]:
    """Sorted types less those whose vector equals a cheaper type's: the embedding can
    never send a pod to them (a pod goes to the first of equal buckets). A type of a GPU
    model some pod asks for (`demanded`) is kept: those pods can go nowhere else."""
    kept: list[InstanceType] = []
    seen: set[tuple] = set()
    for t in sorted_types(types):
        key = (t.placeholder_request, t.gpu_model if t.gpu_model in demanded else None)
        if key in seen:
            continue
        seen.add(key)
        kept.append(t)
    return tuple(kept)


def gpu_models(catalog: Catalog) -> tuple[str, ...]:
    """The catalog's GPU models, in file order."""
    models: list[str] = []
    for t in catalog.instance_types:
        if t.gpus > 0 and t.gpu_model and t.gpu_model not in models:
            models.append(t.gpu_model)
    return tuple(models)


def family(
    catalog: Catalog, gpu_model: str, demanded: frozenset[str] = frozenset()
) -> tuple[InstanceType, ...]:
    """The GPU-less types plus one GPU model's types ("all": every type), sorted, without
    types that duplicate a cheaper one's vector (unless of a `demanded` model)."""
    if gpu_model == "all":
        return without_duplicates(catalog.instance_types, demanded)
    if gpu_model not in gpu_models(catalog):
        known = ", ".join(gpu_models(catalog)) or "none"
        raise ConfigError(
            f"catalog {catalog.name}: no GPU model {gpu_model!r} (known: {known}, auto, all)"
        )
    return without_duplicates(
        [t for t in catalog.instance_types if t.gpus == 0 or t.gpu_model == gpu_model],
        demanded,
    )


def _vectors(types: Sequence[InstanceType]) -> np.ndarray:
    return np.array([t.placeholder_request.as_vector() for t in types]).reshape(-1, 3)


def _prices(types: Sequence[InstanceType]) -> np.ndarray:
    return np.array([t.price_per_hour for t in types], dtype=np.float64)


def _waste(requested: float, allocated: float) -> float:
    return 0.0 if allocated <= 0 else max(0.0, 1.0 - requested / allocated)


def evaluate(
    label: str,
    types: Sequence[InstanceType],
    demand: DemandHistogram,
    tick_hours: float,
    accepted: bool | None = None,
    memo: dict | None = None,
) -> Candidate:
    """Embed and pack the whole trace into one bucket list."""
    buckets, prices = _vectors(types), _prices(types)
    shape_bucket = pin_buckets(demand.shapes, types, demand.shape_models)
    sums = per_bucket_sums(
        demand.shapes, demand.histogram.astype(np.float64), shape_bucket, len(types)
    )
    embed_counts = round_up(counts_from_sums(sums, buckets))
    nodes = pack_histogram(demand.shapes, demand.histogram, shape_bucket, buckets, memo)
    requested = sums.sum(axis=(0, 1)) * tick_hours
    allocated = (nodes.sum(axis=0) @ buckets) * tick_hours
    unbucketable = np.flatnonzero(shape_bucket < 0)
    per_type = tuple(
        TypeUsage(
            name=t.name,
            embed_node_hours=float(embed_counts[:, b].sum() * tick_hours),
            node_hours=float(nodes[:, b].sum() * tick_hours),
            cost_usd=float(nodes[:, b].sum() * tick_hours * t.price_per_hour),
        )
        for b, t in enumerate(types)
    )
    scale_series = embed_counts @ prices
    return Candidate(
        label=label,
        instance_types=tuple(t.name for t in types),
        base_instances=tuple(
            tier[0].name
            for tier in ([t for t in types if t.gpus == 0], [t for t in types if t.gpus > 0])
            if tier
        ),
        accepted=accepted,
        scale_usd=float(scale_series.sum() * tick_hours),
        embed_node_hours=float(embed_counts.sum() * tick_hours),
        node_hours=float(nodes.sum() * tick_hours),
        cost_usd=float((nodes @ prices).sum() * tick_hours),
        gpu_waste_fraction=_waste(requested[0], allocated[0]),
        cpu_waste_fraction=_waste(requested[1], allocated[1]),
        memory_waste_fraction=_waste(requested[2], allocated[2]),
        unbucketable_pods=int(demand.shape_pods[unbucketable].sum()),
        peak_nodes=int(nodes.sum(axis=1).max(initial=0)),
        per_type=per_type,
        scale_series=scale_series,
        nodes_series=nodes.sum(axis=1),
        bucket_counts=embed_counts.astype(np.int32),
        bucket_nodes=nodes.astype(np.int32),
    )


def _placer(types: Sequence[InstanceType], demand: DemandHistogram):
    """place(indices): each shape's position within those types (the fit rule)."""
    def place(index: tuple[int, ...]) -> np.ndarray:
        return pin_buckets(demand.shapes, [types[i] for i in index], demand.shape_models)
    return place


def _family_scale(
    types: Sequence[InstanceType], demand: DemandHistogram, tick_hours: float
) -> ScaleResult:
    return scale_over_trace(
        demand.shapes, demand.histogram, demand.shape_pods, _vectors(types), _prices(types),
        tick_hours, pin_buckets(demand.shapes, types, demand.shape_models),
    )


def tune(
    table: JobTable,
    snaps: DemandSnapshots,
    catalog: Catalog,
    gpu_model: str = "auto",
    include_pending: bool = True,
    max_types: int | None = DEFAULT_MAX_TYPES,
) -> TuneReport:
    """Evaluate the catalog and each base-instance list for a trace, cut the chosen one to
    at most `max_types` types (None: no cut), and recommend that."""
    if max_types is not None and max_types < 1:
        raise InputError(f"--max-types: must be at least 1, got {max_types}")
    require_gpu_pods(table, "there are no GPU buckets to tune")
    tick_hours = snaps.tick_s / 3600.0
    vectors = resource_matrix(table)
    models = gpu_model_requirements(table)
    demand = demand_histogram(vectors, snaps, include_pending, models)
    demanded = frozenset().union(*(accepted_models(m) for m in set(models.tolist())))

    family_scales: dict[str, tuple[float, int]] = {}
    if gpu_model == "auto":
        choices = (*gpu_models(catalog), "all")
        for model in choices:
            result = _family_scale(family(catalog, model, demanded), demand, tick_hours)
            family_scales[model] = (result.total, result.unbucketable_pods)
        gpu_model = min(choices, key=lambda m: (family_scales[m][1], family_scales[m][0]))
    types = family(catalog, gpu_model, demanded)
    vectors_of_types, prices = _vectors(types), _prices(types)
    place = _placer(types, demand)

    selection: Selection = select_base_instance(
        demand.shapes, demand.histogram, demand.shape_pods, vectors_of_types, prices,
        tick_hours, order=range(len(types)), place=place,
    )
    drops = () if max_types is None else trim_types(
        selection.chosen.types, max_types, demand.shapes, demand.histogram,
        demand.shape_pods, vectors_of_types, prices, tick_hours, place,
    )
    final = drops[-1].types if drops else selection.chosen.types
    # A type no pod lands on is a node group run for nothing (simulate refuses such a list).
    idle = set(unused_types(demand.shapes, [types[i] for i in final], demand.shape_models))
    if idle and len(idle) < len(final):
        final = tuple(i for position, i in enumerate(final) if position not in idle)
    memo: dict = {}  # packings shared by candidates that keep a type and its pods
    candidates = []
    everything = sorted_types(catalog.instance_types)  # duplicates too: the user's full list
    if [t.name for t in everything] != [t.name for t in types]:
        candidates.append(evaluate("catalog", everything, demand, tick_hours, memo=memo))
    for number, step in enumerate(selection.steps):
        step_types = [types[i] for i in step.types]
        candidates.append(
            evaluate(f"base {number}", step_types, demand, tick_hours, step.accepted, memo)
        )
    if final != selection.chosen.types:
        label = f"max {max_types}" if drops else "used"
        candidates.append(evaluate(label, [types[i] for i in final], demand, tick_hours,
                                   True, memo))
    recommended = tuple(types[i].name for i in final)

    unplaced = pin_buckets(vectors, [types[i] for i in final], models) < 0
    ran = ~np.isnan(table.frame["start_s"].to_numpy(dtype=np.float64))
    unplaced_rows = np.flatnonzero(unplaced & ran)
    pod_names = table.frame["pod"].to_numpy()
    examples = tuple(
        (str(pod_names[row]), (float(vectors[row, 0]), float(vectors[row, 1]),
                               float(vectors[row, 2])))
        for row in np.concatenate([unplaced_rows, np.flatnonzero(unplaced & ~ran)])[:EXAMPLES]
    )
    return TuneReport(
        source=table.source,
        catalog=catalog.name,
        gpu_model=gpu_model,
        tick_s=snaps.tick_s,
        times=snaps.times,
        pods=len(table),
        censoring=table.censoring.describe(),
        candidates=tuple(candidates),
        recommended=recommended,
        unbucketable_pods=int(unplaced_rows.size),
        unbucketable_examples=examples,
        family_scales=family_scales,
        max_types=max_types,
        trimmed=tuple(types[drop.dropped].name for drop in drops),
        unbucketable_gpu_hours=resource_hours(table, unplaced_rows, "gpu_milli"),
        unbucketable_cpu_hours=resource_hours(table, unplaced_rows, "cpu_milli"),
        unbucketable_never_scheduled=int((unplaced & ~ran).sum()),
    )


def resource_hours(table: JobTable, rows: np.ndarray, column: str) -> float:
    """Hours of `column` (a milli-unit request: `gpu_milli`, `cpu_milli`) the pods at
    `rows` held within the trace (a NaN end runs to its end): GPU- or CPU-hours."""
    frame = table.frame
    start = frame["start_s"].to_numpy(dtype=np.float64)[rows]
    end = frame["end_s"].to_numpy(dtype=np.float64)[rows]
    end = np.where(np.isnan(end), table.trace_end_s, np.minimum(end, table.trace_end_s))
    start = np.maximum(start, table.trace_start_s)
    amount = frame[column].to_numpy(dtype=np.float64)[rows] / 1000.0
    return float((amount * np.clip(end - start, 0.0, None)).sum() / 3600.0)
