"""Which instance type of a bucket list a pod goes to, or none: the one rule every tool uses.

Decides: the type (node group) each pod is pinned to, as a workload's nodeSelector would
pin it. The tuner counts the pods that fit no type with it, and the simulator replays
the pods it places and drops the rest, so the two numbers are the same by construction.

The rule, per pod:
- a GPU pod goes only to GPU types (GPU-less nodes have no GPU to give);
- a GPU pod that asks for a GPU model (the job table's `gpu_model`, e.g. openb's
  `gpu_spec` mapped by `jobtraces.gpu_spec`) goes only to types of that model; "" asks
  for none and may take any model; "A|B" takes either;
- a GPU-less pod goes only to GPU-less types when the list has any (GPU nodes carry
  the GPU taint); without GPU-less types (openb's cluster has GPU nodes only) it may
  take GPU types;
- among the types it may take, `bucketing.embed.assign` chooses (the first bucket it
  is strictly smaller than, in cost order); when it fits none it is unbucketable (-1).

Must not: read files, log, or mutate its inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bucketing.catalog import InstanceType
from bucketing.embed import assign
from jobtraces.jobtable import ANY_MODEL, MODEL_SEPARATOR


def bucket_vectors(types: Sequence[InstanceType]) -> np.ndarray:
    """(B, 3) what one node of each type offers pods, in (GPUs, CPUs, GiB)."""
    return np.array(
        [t.placeholder_request.as_vector() for t in types], dtype=np.float64
    ).reshape(-1, 3)


def accepted_models(requirement: str) -> frozenset[str]:
    """The GPU models a requirement accepts ("A|B" -> {A, B}); empty = any model."""
    return frozenset(m for m in requirement.split(MODEL_SEPARATOR) if m)


def allowed_types(
    types: Sequence[InstanceType], wants_gpu: bool, requirement: str = ANY_MODEL
) -> np.ndarray:
    """(B,) bool: the types a pod of this kind may be pinned to (the rule above)."""
    gpu_type = np.array([t.gpus > 0 for t in types], dtype=bool)
    if not wants_gpu:
        return ~gpu_type if (~gpu_type).any() else np.ones(len(types), dtype=bool)
    models = accepted_models(requirement)
    if not models:
        return gpu_type
    return gpu_type & np.array([t.gpu_model in models for t in types], dtype=bool)


def pin_buckets(
    vectors: np.ndarray,
    types: Sequence[InstanceType],
    models: np.ndarray | None = None,
) -> np.ndarray:
    """(N,) the index into `types` each (GPUs, CPUs, GiB) vector is pinned to, -1 = none.

    models: (N,) each pod's GPU-model requirement ("" = any); None = none asks for one.
    """
    vectors = np.asarray(vectors, dtype=np.float64).reshape(-1, 3)
    result = np.full(len(vectors), -1, dtype=np.int64)
    if len(types) == 0 or len(vectors) == 0:
        return result
    offered = bucket_vectors(types)
    requirements = (np.full(len(vectors), ANY_MODEL, dtype=object) if models is None
                    else np.asarray(models, dtype=object))
    wants_gpu = vectors[:, 0] > 0
    # One pass per (kind, requirement) class: a trace has a handful of them.
    keys = np.where(wants_gpu, requirements, None)
    for key in dict.fromkeys(keys.tolist()):
        rows = np.flatnonzero(keys == key) if key is not None else np.flatnonzero(~wants_gpu)
        indexes = np.flatnonzero(allowed_types(types, key is not None, key or ANY_MODEL))
        if len(indexes) == 0:
            continue
        picked = assign(vectors[rows], offered[indexes])
        result[rows] = np.where(picked >= 0, indexes[np.maximum(picked, 0)], -1)
    return result


def unused_types(
    vectors: np.ndarray, types: Sequence[InstanceType], models: np.ndarray | None = None
) -> tuple[int, ...]:
    """Indices of the types no pod is pinned to: node groups the trace would never use."""
    used = np.unique(pin_buckets(vectors, types, models))
    return tuple(i for i in range(len(types)) if i not in set(used.tolist()))
