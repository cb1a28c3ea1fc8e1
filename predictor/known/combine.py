"""Known items placed in time and buckets, and the pods that were announced ahead.

Decides the rules that keep known demand from being counted twice:
1. One workload, one source: items sharing a workload key keep only the first source in
   `model.SOURCES` order (a Kueue Workload over its suspended Job, a JobSet over its
   child Jobs and its TrainJob, a training job over its PodGroup).
2. Only what is due counts: an item is *counted* at `now` when its expected time is
   known and at most `now + horizon` (`counted`). Items of unknown time or due later
   are reported, never added to the plan.
3. Announced work whose pods exist is no longer known ahead: every source subtracts the
   pods that exist (or announces nothing once its job runs), so a pod is in the
   observed demand or in the known demand, never in both. The exception is a pod held
   by scheduling gates (rule 5): it is not observed demand, so it is known.
4. The forecaster learns only what nobody announced in time: a workload counted at some
   tick is *announced* from that tick on; its pods created at least a node start-up
   after it (`announced_pods`) are the announced demand, recorded per tick beside the
   observed demand, and the forecaster's history is observed minus announced
   (`predictor.known.history`). The plan then adds back the announced demand running
   now and the known demand due within the horizon. Work that was known but never
   counted (a queue without room) stays in the forecaster's history: its arrival was
   not foreseen; so do pods that came within a start-up of being counted (a Workload
   admitted at once, a lead shorter than the start-up): no node could be ready for
   them, so only the forecast can cover the next ones.
5. Pods held by scheduling gates are known demand, not observed demand: cluster-autoscaler
   ignores them, so no node is on its way for them (`predictor.known.gated`).
   Work cluster-autoscaler provisions for itself (a Kueue Workload behind a
   ProvisioningRequest check) is *covered*: never counted, since placeholders would ask
   for its nodes a second time, but announced like counted work, so that its pods do not
   teach the forecaster to ask for them a second time either.

Known pods are not bound to nodes, so they are embedded like pending pods: into the
ungrouped bucket columns, with `bucketing.embed` (the same embedding as the demand).

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bucketing.catalog import InstanceType
from bucketing.embed import embed
from predictor.history.series import bucket_vectors, series_column
from predictor.history.snapshot import PodDemand
from predictor.known.model import EXISTING_POD_SOURCES, SOURCES, KnownItem
from predictor.known.pods import LivePod


def dedupe(items: Iterable[KnownItem]) -> list[KnownItem]:
    """Items whose workload key no higher-precedence source also describes."""
    items = list(items)
    best: dict[str, int] = {}
    for item in items:
        rank = SOURCES.index(item.source)
        best[item.key] = min(rank, best.get(item.key, rank))
    return [item for item in items if SOURCES.index(item.source) == best[item.key]]


def counted(items: Iterable[KnownItem], now_s: float, horizon_s: float) -> list[KnownItem]:
    """The items due within the horizon: a known expected time at most now + horizon, and
    not covered by cluster-autoscaler's own provisioning."""
    return [item for item in items if not item.covered
            and item.expected_s is not None and item.expected_s <= now_s + horizon_s]


def covered(items: Iterable[KnownItem]) -> list[KnownItem]:
    """The items cluster-autoscaler provisions for itself (a Kueue ProvisioningRequest):
    never counted, but announced (rule 5 in the module docstring)."""
    return [item for item in items if item.covered]


@dataclass(frozen=True)
class KnownValues:
    """Known demand of one tick in nodes per bucket column.

    total: every counted item embedded together (what the plan adds).
    by_source: each source's items embedded alone (for `/plan`; they can add up to
        more than `total`, since each is rounded up on its own).
    pods: counted pods per source. unbucketable: counted pods that fit no bucket.
    """

    total: Mapping[str, float]
    by_source: Mapping[str, Mapping[str, float]]
    pods: Mapping[str, int]
    unbucketable: int


def _embed_items(items: Sequence[KnownItem], bucket_types: Sequence[InstanceType]
                 ) -> tuple[dict[str, float], int]:
    names = [series_column(t.name, None) for t in bucket_types]
    if not items:
        return dict.fromkeys(names, 0.0), 0
    vectors = np.repeat(np.stack([item.request.as_vector() for item in items]),
                        [item.pods for item in items], axis=0)
    result = embed(vectors, bucket_vectors(bucket_types))
    return ({name: float(count) for name, count in zip(names, result.counts, strict=True)},
            len(result.unbucketable))


def known_values(items: Sequence[KnownItem], bucket_types: Sequence[InstanceType]
                 ) -> KnownValues:
    """Embed counted items into bucket counts, all together and per source."""
    total, unbucketable = _embed_items(items, bucket_types)
    by_source: dict[str, dict[str, float]] = {}
    pods: dict[str, int] = {}
    for source in SOURCES:
        chosen = [item for item in items if item.source == source]
        if chosen:
            by_source[source] = _embed_items(chosen, bucket_types)[0]
            pods[source] = sum(item.pods for item in chosen)
    return KnownValues(total, by_source, pods, unbucketable)


def newly_announced(items: Iterable[KnownItem], announced: Mapping[str, float], now_s: float
                    ) -> dict[str, tuple[str, float]]:
    """Workload keys counted (or covered) now for the first time: key -> (source, now_s).
    Gated pods are left out: they exist already, so no pod of theirs comes after them."""
    return {item.key: (item.source, now_s) for item in items
            if item.key not in announced and item.source not in EXISTING_POD_SOURCES}


def announced_pods(pods: Iterable[LivePod], announced: Mapping[str, float],
                   startup_s: float = 0.0) -> list[PodDemand]:
    """The demand of pods that belong to announced work and were created at least
    `startup_s` (the node start-up: the config's horizon) after it was first counted:
    pods that already existed then were not foreseen, and pods that came sooner were
    foreseen too late for a node to be ready, so the forecaster must still learn them.
    creationTimestamp has whole seconds, so a pod created in the second the work was
    counted is taken as created after it."""
    chosen = []
    for pod in pods:
        if pod.demand is None or pod.ref.created_s is None:
            continue
        first = min((announced[key] for key in pod.ref.keys if key in announced), default=None)
        if first is not None and pod.ref.created_s >= math.floor(first) + startup_s:
            chosen.append(pod.demand)
    return chosen
