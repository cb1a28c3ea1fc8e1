"""Keeps a `ClusterCache` in step with the API: one list+watch thread per kind.

Decides: which API calls feed the cache (nodes, pods in all namespaces, and the
optional kinds, for which 404 means "not served here", logged once and re-checked
every minute: NodeResourceTopology `topology.node.k8s.io/v1alpha2` for NUMA data;
ResourceSlices, ResourceClaims and ResourceClaimTemplates `resource.k8s.io/v1` for
DRA GPUs; Volcano `scheduling.volcano.sh/v1beta1` and Coscheduling
`scheduling.x-k8s.io/v1alpha1` PodGroups, and the owners of training pods
(`locality.owners.OWNER_APIS`: Kubeflow PyTorchJob, TFJob, MPIJob, JobSet, TrainJob)
for job sizes), headstart's own gang records (`headstart.io/v1alpha1` Gangs, the
admitter's decisions), how each kind's parsed objects are applied (pods and nodes through
`extender.resolve.Resolver`, which adds what they take from the DRA objects, PodGroups
and owners), and what readiness means: ready
once nodes and pods have been listed, and not ready again when a watch has been
failing for longer than `stale_after_seconds` (a stale cache steers pods onto full
nodes; kube-scheduler should rather skip or wait). The optional kinds never hold
readiness back: until they are listed, DRA GPUs and PodGroup sizes are unknown.

Must not: decide placements; mutate the cache from a watch thread.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import time
from typing import Any

from kubernetes import client as k8s

from extender.cache import NODES, PODS, TOPOLOGIES, ClusterCache
from extender.resolve import Resolver
from kube.informer import ListWatch, Sink, WatchSettings, WatchStatus
from locality.admission import record as gang
from locality.config import LocalityConfig
from locality.dra import parse_resource_claim, parse_resource_claim_template, parse_resource_slice
from locality.owners import OWNER_APIS, parse_owner
from locality.parse import parse_node, parse_node_topology, parse_pod
from locality.podgroups import POD_GROUP_APIS, parse_pod_group

NRT_GROUP = "topology.node.k8s.io"
NRT_VERSION = "v1alpha2"
NRT_PLURAL = "noderesourcetopologies"
DRA_GROUP = "resource.k8s.io"
DRA_VERSION = "v1"
RESOURCE_SLICES = "resourceslices"
RESOURCE_CLAIMS = "resourceclaims"
RESOURCE_CLAIM_TEMPLATES = "resourceclaimtemplates"
POD_GROUPS = "podgroups"
GANGS = "gangs.headstart.io"


def on_loop(loop: asyncio.AbstractEventLoop, sink: Sink) -> Sink:
    """A watch sink that hands each delivery to `sink` on the event loop, where all cache
    mutation happens (a closed loop raises RuntimeError, which ends the watch)."""
    return lambda op, payload: loop.call_soon_threadsafe(sink, op, payload)


class ClusterSync:
    """The watches feeding one cache."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        cache: ClusterCache,
        config: LocalityConfig,
        settings: WatchSettings,
        watch_topology: bool = True,
        stale_after_seconds: float = 120.0,
        watch_dra: bool = True,
        watch_pod_groups: bool = True,
        watch_owners: bool = True,
        watch_gangs: bool = True,
    ) -> None:
        self._api_client = api_client
        self._cache = cache
        self._config = config
        self._settings = settings
        self._watch_topology = watch_topology
        self._watch_dra = watch_dra
        self._watch_pod_groups = watch_pod_groups
        self._watch_owners = watch_owners
        self._watch_gangs = watch_gangs
        self._owner_kinds = {api.watch_name for api in OWNER_APIS}
        self._stale_after = stale_after_seconds
        self.resolver = Resolver(config)
        cache.resolve_pod = self.resolver.pod  # the request path's pods, resolved alike
        self.watches: list[ListWatch] = []

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the watch threads (a second call does nothing)."""
        if self.watches:
            return
        core = k8s.CoreV1Api(self._api_client)
        config = self._config
        self.watches = [
            ListWatch(
                NODES, core.list_node, functools.partial(parse_node, config=config),
                on_loop(loop, self._node_sink), self._settings,
            ),
            ListWatch(
                PODS, core.list_pod_for_all_namespaces, functools.partial(parse_pod, config=config),
                on_loop(loop, self._pod_sink), self._settings,
            ),
        ]
        if self._watch_topology:
            custom = k8s.CustomObjectsApi(self._api_client)
            self.watches.append(
                ListWatch(
                    TOPOLOGIES,
                    functools.partial(
                        custom.list_cluster_custom_object, NRT_GROUP, NRT_VERSION, NRT_PLURAL
                    ),
                    functools.partial(parse_node_topology, config=config),
                    on_loop(loop, self._topology_sink), self._settings, optional=True,
                )
            )
        else:
            self._cache.replace_topologies(())
        if self._watch_dra:
            self.watches += self._dra_watches(loop)
        if self._watch_pod_groups:
            self.watches += self._pod_group_watches(loop)
        if self._watch_gangs:
            self.watches.append(self._optional_watch(
                loop, gang.GROUP, gang.VERSION, gang.PLURAL, GANGS, gang.parse_gang,
                self._gang_sink))
        if self._watch_owners:
            self.watches += [
                self._optional_watch(
                    loop, api.group, api.version, api.plural, api.watch_name,
                    functools.partial(parse_owner, kind=api.kind, version=api.version),
                    functools.partial(self._owner_sink, f"{api.kind}/{api.version}"))
                for api in OWNER_APIS
            ]
        for watch in self.watches:
            watch.start()

    def _optional_watch(self, loop: asyncio.AbstractEventLoop, group: str, version: str,
                        plural: str, kind: str, parse: Any, sink: Any) -> ListWatch:
        """A watch of a kind some clusters do not serve (404: absent, re-checked)."""
        custom = k8s.CustomObjectsApi(self._api_client)
        return ListWatch(
            kind,
            functools.partial(custom.list_cluster_custom_object, group, version, plural),
            parse, on_loop(loop, sink), self._settings, optional=True,
        )

    def _dra_watches(self, loop: asyncio.AbstractEventLoop) -> list[ListWatch]:
        config = self._config
        return [
            self._optional_watch(
                loop, DRA_GROUP, DRA_VERSION, RESOURCE_SLICES, RESOURCE_SLICES,
                functools.partial(parse_resource_slice, config=config), self._slice_sink),
            self._optional_watch(
                loop, DRA_GROUP, DRA_VERSION, RESOURCE_CLAIMS, RESOURCE_CLAIMS,
                functools.partial(parse_resource_claim, config=config),
                functools.partial(self._claim_sink, "claim")),
            self._optional_watch(
                loop, DRA_GROUP, DRA_VERSION, RESOURCE_CLAIM_TEMPLATES,
                RESOURCE_CLAIM_TEMPLATES,
                functools.partial(parse_resource_claim_template, config=config),
                functools.partial(self._claim_sink, "template")),
        ]

    def _pod_group_watches(self, loop: asyncio.AbstractEventLoop) -> list[ListWatch]:
        return [
            self._optional_watch(
                loop, group, version, POD_GROUPS, f"{POD_GROUPS}.{group}",
                functools.partial(parse_pod_group, api_group=group),
                functools.partial(self._pod_group_sink, group))
            for group, version in POD_GROUP_APIS
        ]

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop every watch and wait (off the loop) for their threads to end."""
        for watch in self.watches:
            watch.stop()
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        for watch in self.watches:
            remaining = max(deadline - time.monotonic(), 0.0)
            await loop.run_in_executor(None, watch.join, remaining)

    def sizes_listed(self) -> bool:
        """Every watch of what sizes jobs (PodGroups, owners) has listed once (or found
        its API not served): until then a job of pods created long ago would be taken
        as declaring no size and admitted without waiting for its missing pods, and until
        the gang records are listed an admitted job's reservation is unknown. A watch
        that has failed (a 403 from a missing RBAC rule) holds nothing back: it shows
        in /readyz, and admission must not stop for it."""
        return all(watch.status.synced or watch.status.errors_total > 0
                   for watch in self.watches
                   if watch.kind.startswith(POD_GROUPS + ".") or watch.kind in self._owner_kinds
                   or watch.kind == GANGS)

    def statuses(self) -> list[WatchStatus]:
        return [watch.status for watch in self.watches]

    def readiness(self, now: float) -> tuple[bool, dict[str, Any]]:
        """(ready, detail for /readyz); `now` is time.monotonic()."""
        cache = self._cache
        detail: dict[str, Any] = {status.kind: status.as_dict(now) for status in self.statuses()}
        if not cache.ready():
            return False, {"reason": "waiting for the first full list", "watches": detail}
        for status in self.statuses():
            since = status.failing_since
            if since is not None and now - since > self._stale_after and not status.absent:
                return False, {
                    "reason": f"{status.kind} watch failing for {now - since:.0f} s "
                    f"(over {self._stale_after:.0f} s): {status.last_error}",
                    "watches": detail,
                }
        return True, {"reason": "cache synced", "watches": detail}

    # ---- sinks (run on the event loop) -------------------------------------------

    @staticmethod
    def _settle_heap() -> None:
        """After a full list: collect once, then freeze the survivors out of the cyclic
        GC. The cache holds hundreds of thousands of acyclic objects (refcounting frees
        them); without this, every full collection would walk them all and stall the
        event loop for tens of milliseconds, in the middle of some scheduling cycle."""
        gc.collect()
        gc.freeze()

    def _node_sink(self, op: str, payload: Any) -> None:
        resolver = self.resolver
        if op == "replace":
            self._cache.replace_nodes(resolver.replace_nodes(payload))
            self._settle_heap()
        elif op == "upsert":
            self._cache.apply_node(resolver.node(payload))
        else:
            resolver.forget_node(payload.name)
            self._cache.delete_node(payload.name)

    def _pod_sink(self, op: str, payload: Any) -> None:
        resolver = self.resolver
        if op == "replace":
            self._cache.replace_pods(resolver.replace_pods(payload))
            self._settle_heap()
        elif op == "upsert":
            self._cache.apply_pod(resolver.track_pod(payload))
        else:
            resolver.forget_pod(payload)
            self._cache.delete_pod(payload)

    def _slice_sink(self, op: str, payload: Any) -> None:
        resolver = self.resolver
        if op == "replace":
            nodes = resolver.replace_slices(payload)
        else:
            nodes = resolver.apply_slice(payload, deleted=op == "delete")
        for node in nodes:
            self._cache.apply_node(node)

    def _claim_sink(self, kind: str, op: str, payload: Any) -> None:
        if op == "replace":
            self._apply_pods(self.resolver.replace_claims(payload, kind))
        else:
            self._apply_pods(self.resolver.apply_claim(payload, deleted=op == "delete"))

    def _pod_group_sink(self, api_group: str, op: str, payload: Any) -> None:
        if op == "replace":
            self._apply_pods(self.resolver.replace_pod_groups(payload, api_group))
        else:
            self._apply_pods(self.resolver.apply_pod_group(payload, deleted=op == "delete"))

    def _gang_sink(self, op: str, payload: Any) -> None:
        if op == "replace":
            self._cache.replace_gangs(payload)
        elif op == "upsert":
            self._cache.apply_gang(payload)
        else:
            self._cache.delete_gang(payload)

    def _owner_sink(self, source: str, op: str, payload: Any) -> None:
        if op == "replace":
            self._apply_pods(self.resolver.replace_owners(payload, source))
        else:
            self._apply_pods(self.resolver.apply_owner(payload, deleted=op == "delete"))

    def _apply_pods(self, pods: list[Any]) -> None:
        """Pods whose claims or PodGroup changed, resolved again: into the cache."""
        for pod in pods:
            self._cache.apply_pod(pod)

    def _topology_sink(self, op: str, payload: Any) -> None:
        if op == "replace":
            self._cache.replace_topologies(payload)
        elif op == "upsert":
            self._cache.apply_topology(payload)
        else:
            self._cache.delete_topology(payload.node_name)
