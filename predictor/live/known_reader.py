"""Adapter: keeps the announced work of the enabled sources cached, and lists it as items.

Decides: which API resources each source reads (`WATCHED`), how their presence is
checked (discovery of `/apis/<group>/<version>` at start; an absent CRD skips its
resource, and all skipped ones are logged in ONE line; a check that fails for another
reason, e.g. an API server not yet reachable, is retried at the next tick at most every
`DISCOVERY_RETRY_S`, so a service started during an outage still reads every source once
the server answers), and how the caches become
`KnownItem`s at a tick (the pure source modules, then `combine.dedupe`). Every resource
is one list + watch (`kube.informer.Informer`, the recorder's informer too) over
all namespaces, through `CustomObjectsApi.list_cluster_custom_object`, which serves
built-in groups (batch/v1) as well as CRDs. Objects are typed at the edge (each
source's `parse_*`); one that cannot be read is left out and counted, never a crash.

Must not: decide what an object announces (the source modules do), or write anything.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kube.informer import Informer, WatchSettings
from kube.kinds import KINDS, WorkloadKind
from predictor.known import batch, cron, gated, kubeflow, kueue, podgroups
from predictor.known.combine import dedupe
from predictor.known.config import KnownDemandConfig
from predictor.known.model import (
    COSCHEDULING_POD_GROUP,
    VOLCANO_POD_GROUP,
    KnownItem,
    count_pods,
)
from predictor.known.pods import LivePod

log = logging.getLogger("headstart.known")

DISCOVERY_RETRY_S = 30.0


@dataclass(frozen=True)
class Watched:
    """One API resource a source reads: the versions tried (preferred first) and how
    an object of it is typed (raw object, GPU resource name) -> typed object."""

    source: str
    group: str
    versions: tuple[str, ...]
    plural: str
    parse: Callable[[Mapping[str, Any], str], Any]

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


_DEMAND_READERS: dict[str, Callable[[WorkloadKind], Callable[[Mapping[str, Any], str], Any]]] = {
    "pod-sets": lambda kind: lambda obj, gpu: kubeflow.parse_training_job(obj, kind, gpu),
    "job": lambda kind: batch.parse_job,
    "jobset": lambda kind: batch.parse_jobset,
    "trainjob": lambda kind: kubeflow.parse_trainjob,
}
"""How each `WorkloadKind.demand` is read (`kube.kinds`): the generic pod-set reader, or
a kind's own."""


_POD_SET_SOURCES = frozenset(kind.demand_source for kind in KINDS
                             if kind.demand in ("pod-sets", "trainjob"))
"""The sources whose objects are read as pod sets (`kubeflow.TrainingJob`)."""


def _workload(kind: WorkloadKind) -> Watched:
    return Watched(kind.demand_source, kind.group, kind.versions, kind.plural,
                   _DEMAND_READERS[kind.demand or ""](kind))


_KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # Kueue serves v1beta2 (storage) beside v1beta1 since 0.15
WATCHED: tuple[Watched, ...] = (
    Watched("kueue", "kueue.x-k8s.io", _KUEUE_VERSIONS, "workloads", kueue.parse_workload),
    Watched("kueue", "kueue.x-k8s.io", _KUEUE_VERSIONS, "localqueues",
            lambda obj, gpu: kueue.parse_local_queue(obj)),
    Watched("kueue", "kueue.x-k8s.io", _KUEUE_VERSIONS, "clusterqueues",
            kueue.parse_cluster_queue),
    # Which controller runs each admission check: a ProvisioningRequest check means
    # cluster-autoscaler provisions the Workload's nodes itself (kueue.workload_items).
    Watched("kueue", "kueue.x-k8s.io", _KUEUE_VERSIONS, "admissionchecks",
            lambda obj, gpu: kueue.parse_admission_check(obj)),
    # The training workloads that announce demand, from the kind registry.
    *(_workload(kind) for kind in KINDS if kind.demand),
    Watched("podgroups", "scheduling.x-k8s.io", ("v1alpha1",), "podgroups",
            lambda obj, gpu: podgroups.parse_pod_group(obj, COSCHEDULING_POD_GROUP, gpu)),
    Watched("podgroups", "scheduling.volcano.sh", ("v1beta1",), "podgroups",
            lambda obj, gpu: podgroups.parse_pod_group(obj, VOLCANO_POD_GROUP, gpu)),
    Watched("cronjobs", "batch", ("v1",), "cronjobs", cron.parse_cronjob),
)


@dataclass(frozen=True)
class KnownReport:
    """The known items of one tick and the state of the sources.

    items: every deduplicated item, due or not. served: resource -> version read.
    absent: resources of enabled sources the cluster does not serve. stale: sources
    left out this tick because a cache was not fresh. unreadable: objects left out.
    """

    items: tuple[KnownItem, ...]
    served: Mapping[str, str]
    absent: tuple[str, ...]
    stale: tuple[str, ...]
    unreadable: int


class KnownDemandReader:
    """One informer per served resource of the enabled sources; `items(now)` per tick."""

    def __init__(self, config: KnownDemandConfig, max_stale_s: float,
                 informers: Mapping[Watched, Informer], served: Mapping[str, str],
                 absent: Sequence[str], horizon_s: float,
                 clock: Callable[[], float] = time.time,
                 unchecked: Sequence[Watched] = (),
                 checker: Callable[[Watched], tuple[str | None, Informer | None]] | None = None,
                 ) -> None:
        self.config = config
        self.max_stale_s = max_stale_s
        self.informers = dict(informers)
        self.served = dict(served)
        self.absent = tuple(absent)
        self.horizon_s = horizon_s
        self.clock = clock
        # Resources whose discovery failed for a reason other than "not served": checked
        # again by `retry_discovery` until they answer.
        self.unchecked = list(unchecked)
        self._checker = checker
        self._last_check_s = -math.inf
        self._stop: threading.Event | None = None

    def start(self, stop: threading.Event) -> list[threading.Thread]:
        self._stop = stop
        return [self._start_one(informer) for informer in self.informers.values()]

    def _start_one(self, informer: Informer) -> threading.Thread:
        assert self._stop is not None
        thread = threading.Thread(target=informer.run, args=(self._stop,), daemon=True,
                                  name=f"headstart-{informer.name}-informer")
        thread.start()
        return thread

    def retry_discovery(self, now_s: float) -> None:
        """Check the resources whose discovery failed, at most every DISCOVERY_RETRY_S;
        start an informer for each one now served."""
        if not self.unchecked or self._checker is None:
            return
        if now_s - self._last_check_s < DISCOVERY_RETRY_S:
            return
        self._last_check_s = now_s
        still: list[Watched] = []
        newly_absent: list[str] = []
        for watched in self.unchecked:
            try:
                version, informer = self._checker(watched)
            except Exception:  # noqa: BLE001 - still unreachable: try again later
                still.append(watched)
                continue
            if version is None or informer is None:
                newly_absent.append(f"{watched.name} ({watched.source})")
                continue
            self.served[watched.name] = version
            self.informers[watched] = informer
            if self._stop is not None:
                self._start_one(informer)
        self.unchecked = still
        if newly_absent:
            self.absent = self.absent + tuple(newly_absent)
            log.info("known demand: not served by this cluster, skipped: %s",
                     ", ".join(newly_absent))
        if not still:
            log.info("known demand: every enabled source checked")

    def _objects(self, source: str, plural: str | None = None) -> list[Any]:
        return [obj for watched, informer in self.informers.items()
                if watched.source == source and plural in (None, watched.plural)
                for obj in informer.items().values()]

    def items(self, now_s: float, pods: Iterable[LivePod]) -> KnownReport:
        """The known items at now_s (Unix seconds), given the pods that exist (the
        recorder's pod cache, fresh whenever it records a tick)."""
        self.retry_discovery(now_s)
        pods = list(pods)
        counts = count_pods(pod.ref for pod in pods)
        window = self.config.suspended_window_s
        max_stale = self.max_stale_s
        stale = []
        items: list[KnownItem] = []
        for source in self.config.enabled():
            if source == "gated":  # read from the pod cache: no informer of its own
                items += gated.gated_items(pods, now_s)
                continue
            informers = [i for w, i in self.informers.items() if w.source == source]
            if not informers:
                continue
            if not all(i.fresh(now_s, max_stale) for i in informers):
                stale.append(source)
                continue
            if source == "kueue":
                items += kueue.workload_items(self._objects(source, "workloads"),
                                              self._objects(source, "localqueues"),
                                              self._objects(source, "clusterqueues"), now_s,
                                              self._objects(source, "admissionchecks"))
            elif source == "jobs":
                items += batch.job_items(self._objects(source), now_s, window)
            elif source == "jobsets":
                items += batch.jobset_items(self._objects(source), now_s, window)
            elif source in _POD_SET_SOURCES:
                items += kubeflow.training_items(self._objects(source), counts, now_s, window)
            elif source == "cronjobs":
                items += cron.cron_items(self._objects(source), now_s,
                                         self.config.lead_s(self.horizon_s))
            elif source == "podgroups":
                items += podgroups.pod_group_items(self._objects(source), counts, now_s)
        unreadable = sum(i.status.parse_errors_total for i in self.informers.values())
        return KnownReport(tuple(dedupe(items)), self.served, self.absent, tuple(stale),
                           unreadable)


def discover(custom_api: Any, watched: Watched) -> str | None:
    """The first version of `watched.group` the cluster serves with `watched.plural`, or
    None. Raises the API error for anything but 404 (not served)."""
    from kubernetes.client.exceptions import ApiException

    for version in watched.versions:
        try:
            resources = custom_api.get_api_resources(watched.group, version)
        except ApiException as error:
            if error.status == 404:
                continue
            raise
        if any(r.name == watched.plural for r in resources.resources or []):
            return version
    return None


def make_known_reader(config: KnownDemandConfig, settings: WatchSettings, max_stale_s: float,
                      api_client: Any, gpu_resource: str, horizon_s: float,
                      clock: Callable[[], float] = time.time) -> KnownDemandReader:
    """Discover the enabled sources' resources and build one informer per served one
    (with the recorder's watch settings; a source whose informer has failed for longer
    than `max_stale_s` is reported stale, not read)."""
    import copy

    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    enabled = set(config.enabled())
    # Each informer holds one watch connection open: a client of its own, with a pool big
    # enough for all of them (the default, 5 per CPU, would discard connections).
    configuration = copy.deepcopy(api_client.configuration)
    configuration.connection_pool_maxsize = max(
        configuration.connection_pool_maxsize or 0,
        sum(1 for w in WATCHED if w.source in enabled) + 2)
    custom = client.CustomObjectsApi(client.ApiClient(configuration))
    informers: dict[Watched, Informer] = {}
    served: dict[str, str] = {}
    absent: list[str] = []
    unchecked: list[Watched] = []
    reasons: set[str] = set()

    def check(watched: Watched) -> tuple[str | None, Informer | None]:
        version = discover(custom, watched)
        if version is None:
            return None, None
        list_call = functools.partial(custom.list_cluster_custom_object, watched.group,
                                      version, watched.plural)
        return version, Informer(
            f"{watched.plural}-{watched.group}", list_call,
            functools.partial(_typed, watched.parse, gpu_resource), settings, clock)

    for watched in WATCHED:
        if watched.source not in enabled:
            continue
        try:
            version, informer = check(watched)
        except Exception as error:  # noqa: BLE001 - ApiException, urllib3 and socket errors
            # Not a missing CRD (that is a 404): an outage or a refusal. Read nothing
            # rather than guess, and check again at the next ticks.
            unchecked.append(watched)
            reasons.add(str(error.status) if isinstance(error, ApiException)
                        else type(error).__name__)
            continue
        if version is None or informer is None:
            absent.append(f"{watched.name} ({watched.source})")
            continue
        served[watched.name] = version
        informers[watched] = informer
    if absent:
        log.info("known demand: not served by this cluster, skipped: %s", ", ".join(absent))
    if unchecked:
        log.warning("known demand: cannot check %d resources yet (%s); retrying every %.0f s",
                    len(unchecked), ", ".join(sorted(reasons)), DISCOVERY_RETRY_S)
    return KnownDemandReader(config, max_stale_s, informers, served, absent, horizon_s, clock,
                             unchecked, check)


def _typed(parse: Callable[[Mapping[str, Any], str], Any], gpu_resource: str,
           obj: Mapping[str, Any]) -> Any:
    return parse(obj, gpu_resource)
