"""Keeps a `ClusterCache` in step with the API: one list+watch thread per kind.

Decides: which API calls feed the cache (nodes, pods in all namespaces, and
NodeResourceTopology `topology.node.k8s.io/v1alpha2` cluster objects, the last one
optional: 404 means "no NUMA data"), how each kind's parsed objects are applied, and
what readiness means: ready once nodes and pods have been listed, and not ready again
when a watch has been failing for longer than `stale_after_seconds` (a stale cache
steers pods onto full nodes; kube-scheduler should rather skip or wait).

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
from extender.watch import ResourceWatch, WatchSettings, WatchStatus
from locality.config import LocalityConfig
from locality.parse import parse_node, parse_node_topology, parse_pod

NRT_GROUP = "topology.node.k8s.io"
NRT_VERSION = "v1alpha2"
NRT_PLURAL = "noderesourcetopologies"


class ClusterSync:
    """The three watches feeding one cache."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        cache: ClusterCache,
        config: LocalityConfig,
        settings: WatchSettings,
        watch_topology: bool = True,
        stale_after_seconds: float = 120.0,
    ) -> None:
        self._api_client = api_client
        self._cache = cache
        self._config = config
        self._settings = settings
        self._watch_topology = watch_topology
        self._stale_after = stale_after_seconds
        self.watches: list[ResourceWatch] = []

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the watch threads (a second call does nothing)."""
        if self.watches:
            return
        core = k8s.CoreV1Api(self._api_client)
        config = self._config
        self.watches = [
            ResourceWatch(
                NODES, core.list_node, functools.partial(parse_node, config=config),
                self._node_sink, loop, self._settings,
            ),
            ResourceWatch(
                PODS, core.list_pod_for_all_namespaces, functools.partial(parse_pod, config=config),
                self._pod_sink, loop, self._settings,
            ),
        ]
        if self._watch_topology:
            custom = k8s.CustomObjectsApi(self._api_client)
            self.watches.append(
                ResourceWatch(
                    TOPOLOGIES,
                    functools.partial(
                        custom.list_cluster_custom_object, NRT_GROUP, NRT_VERSION, NRT_PLURAL
                    ),
                    functools.partial(parse_node_topology, config=config),
                    self._topology_sink, loop, self._settings, optional=True,
                )
            )
        else:
            self._cache.replace_topologies(())
        for watch in self.watches:
            watch.start()

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop every watch and wait (off the loop) for their threads to end."""
        for watch in self.watches:
            watch.stop()
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        for watch in self.watches:
            remaining = max(deadline - time.monotonic(), 0.0)
            await loop.run_in_executor(None, watch.join, remaining)

    def statuses(self) -> list[WatchStatus]:
        return [watch.status for watch in self.watches]

    def readiness(self, now: float) -> tuple[bool, dict[str, Any]]:
        """(ready, detail for /readyz); `now` is time.monotonic()."""
        cache = self._cache
        detail: dict[str, Any] = {status.kind: status.as_dict(now) for status in self.statuses()}
        if not cache.ready():
            return False, {"reason": "waiting for the first full list", "watches": detail}
        for status in self.statuses():
            since = status.failing_since_monotonic
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
        if op == "replace":
            self._cache.replace_nodes(payload)
            self._settle_heap()
        elif op == "upsert":
            self._cache.apply_node(payload)
        else:
            self._cache.delete_node(payload.name)

    def _pod_sink(self, op: str, payload: Any) -> None:
        if op == "replace":
            self._cache.replace_pods(payload)
            self._settle_heap()
        elif op == "upsert":
            self._cache.apply_pod(payload)
        else:
            self._cache.delete_pod(payload)

    def _topology_sink(self, op: str, payload: Any) -> None:
        if op == "replace":
            self._cache.replace_topologies(payload)
        elif op == "upsert":
            self._cache.apply_topology(payload)
        else:
            self._cache.delete_topology(payload.node_name)
