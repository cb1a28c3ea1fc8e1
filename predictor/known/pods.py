"""A pod as the live recorder caches it: its demand and what the known-demand sources
need of it, typed once at the edge for both.

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bucketing.resources import DEFAULT_GPU_RESOURCE
from predictor.history.snapshot import PLACEHOLDER_LABEL, PodDemand, pod_demand
from predictor.known.model import PodRef, pod_ref


@dataclass(frozen=True)
class LivePod:
    """A pod as the live recorder caches it: its demand (None once it no longer wants
    capacity) and what the known-demand sources need of it (they count finished pods
    too: a training job's finished worker is not a worker still to be created)."""

    demand: PodDemand | None
    ref: PodRef


def live_pod(pod: Mapping[str, Any], gpu_resource: str = DEFAULT_GPU_RESOURCE
             ) -> LivePod | None:
    """The cached view of a Pod (JSON); None for headstart's placeholder pods."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(PLACEHOLDER_LABEL) == "true":
        return None
    return LivePod(pod_demand(pod, gpu_resource), pod_ref(pod))
