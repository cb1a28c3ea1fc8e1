"""What the cluster holds now, per bucket: free whole nodes, placeholder pods, preemptions.

Decides, from nodes, pods and events as the API returns them:
- a node's bucket: its `node.kubernetes.io/instance-type` and its placement group (the
  configured `placeholders.placement_group_label` only: the key placeholders select on);
- a *free* node: Ready, schedulable, and running nothing but DaemonSet and static
  (mirror) pods: no real pod and no placeholder. The plan counts these as capacity
  already free;
- a *hit*: a `Preempted` event on a placeholder pod (kube-scheduler evicted it for a real
  pod). Events are counted once per (event uid, count).

The parsing functions are pure (JSON in, frozen dataclasses out); `ClusterReader` is the
thin adapter that lists nodes, pods and events with retries.

Must not: decide how many placeholders to keep, or write to the cluster.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from locality.config import LocalityConfig
from locality.parse import parse_node as parse_locality_node
from overprovisioner.errors import ErrorClass, RetryPolicy, call_with_retry
from overprovisioner.objects import NAME_PREFIX, NODE_INSTANCE_TYPE, PLACEHOLDER

TERMINAL_PHASES = ("Succeeded", "Failed")
Bucket = tuple[str, str]  # (instance type, placement group or "")


@dataclass(frozen=True)
class NodeView:
    name: str
    instance_type: str
    placement_group: str
    usable: bool  # Ready and schedulable


@dataclass(frozen=True)
class PodView:
    name: str
    namespace: str
    node_name: str
    placeholder: bool
    daemon: bool  # a DaemonSet or static pod: present on every node, not demand


@dataclass(frozen=True)
class ClusterView:
    """Per bucket: nodes, free nodes, placeholder pods running and waiting for a node."""

    nodes: Mapping[Bucket, int]
    free_nodes: Mapping[Bucket, int]
    placeholders_running: Mapping[Bucket, int]
    placeholders_pending: int


@functools.lru_cache(maxsize=8)
def _node_reading(group_label: str) -> LocalityConfig:
    """The extender's node reading, with the configured group label only: placeholders
    select their group with that key, so a group read from any other key (say GKE's,
    with headstart's key configured) would give placeholders that match no node."""
    return LocalityConfig(placement_group_labels=(group_label,),
                          instance_type_label=NODE_INSTANCE_TYPE)


def parse_node(node: Mapping[str, Any], group_label: str) -> NodeView:
    """Read a node the way the extender does (one parser): a node is usable when it is
    Ready, not cordoned and carries no taint saying it is going away (cluster-autoscaler's
    and Karpenter's scale-down taints included), so a draining node never counts as free
    capacity that the plan would then not replace."""
    parsed = parse_locality_node(node, _node_reading(group_label))
    return NodeView(
        parsed.name, parsed.instance_type or "", parsed.placement_group or "",
        parsed.takes_new_pods,
    )


def parse_pod(pod: Mapping[str, Any]) -> PodView:
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    owners = metadata.get("ownerReferences") or []
    annotations = metadata.get("annotations") or {}
    daemon = any(o.get("kind") == "DaemonSet" for o in owners) or (
        "kubernetes.io/config.mirror" in annotations
    )
    return PodView(
        metadata.get("name", ""), metadata.get("namespace", ""),
        (pod.get("spec") or {}).get("nodeName") or "",
        labels.get(PLACEHOLDER) == "true", daemon,
    )


def cluster_view(
    nodes: Iterable[NodeView], pods: Iterable[PodView], instance_types: Sequence[str]
) -> ClusterView:
    """Count nodes, free nodes and placeholder pods per bucket of the given types."""
    wanted = set(instance_types)
    by_name = {n.name: n for n in nodes if n.instance_type in wanted}
    busy: set[str] = set()
    running: dict[Bucket, int] = {}
    pending = 0
    for pod in pods:
        if pod.placeholder and not pod.node_name:
            pending += 1
        node = by_name.get(pod.node_name)
        if node is None:
            continue
        if pod.placeholder:
            key = (node.instance_type, node.placement_group)
            running[key] = running.get(key, 0) + 1
        if not pod.daemon:
            busy.add(node.name)
    counts: dict[Bucket, int] = {}
    free: dict[Bucket, int] = {}
    for node in by_name.values():
        key = (node.instance_type, node.placement_group)
        counts[key] = counts.get(key, 0) + 1
        if node.usable and node.name not in busy:
            free[key] = free.get(key, 0) + 1
    return ClusterView(counts, free, running, pending)


def new_preemptions(
    events: Iterable[Mapping[str, Any]], seen: Mapping[str, int], bucket_names: Mapping[str, Bucket]
) -> tuple[dict[Bucket, int], dict[str, int]]:
    """Preemptions of placeholder pods not counted before, per bucket; and the new `seen`.

    bucket_names: placeholder object name -> bucket; a pod `NAME-<rs hash>-<suffix>`
    (its base cut to 58 characters by the API server) belongs to the longest name whose
    base it starts with. `seen` maps event uid -> count counted.
    """
    hits: dict[Bucket, int] = {}
    now_seen: dict[str, int] = {}
    names = sorted(bucket_names, key=len, reverse=True)
    for event in events:
        involved = event.get("involvedObject") or {}
        if event.get("reason") != "Preempted" or involved.get("kind") != "Pod":
            continue
        pod_name = involved.get("name", "")
        if not pod_name.startswith(NAME_PREFIX):
            continue
        uid = (event.get("metadata") or {}).get("uid") or (event.get("metadata") or {}).get(
            "name", ""
        )
        count = int(event.get("count") or 1)
        now_seen[uid] = count
        fresh = count - seen.get(uid, 0)
        if fresh <= 0:
            continue
        for name in names:
            if pod_name.startswith(_pod_name_base(name)):
                bucket = bucket_names[name]
                hits[bucket] = hits.get(bucket, 0) + fresh
                break
    return hits, now_seen


# The API server cuts a generated name's base (here `<replicaset>-`) to this length
# before appending 5 random characters (apiserver/pkg/storage/names/generate.go).
MAX_GENERATED_NAME_BASE = 58


def _pod_name_base(deployment: str) -> str:
    """What every pod of the Deployment's ReplicaSets starts with."""
    return f"{deployment}-"[:MAX_GENERATED_NAME_BASE]


@dataclass
class ClusterReader:
    """Lists nodes, pods and events through KubeApi with retries (see errors.py)."""

    api: Any  # overprovisioner.apply.KubeApi
    policy: RetryPolicy
    rng: np.random.Generator
    sleep: Callable[[float], None]
    on_error: Callable[[ErrorClass, BaseException], None] | None = None

    def _list(self, what: str, path: str, query: Sequence[tuple[str, str]] = ()) -> list[dict]:
        body = call_with_retry(
            what, lambda: self.api.request("GET", path, query=query), self.policy, self.rng,
            self.sleep, self.on_error,
        )
        return list(body.get("items") or [])

    def view(self, instance_types: Sequence[str], group_label: str) -> ClusterView:
        nodes = [parse_node(n, group_label) for n in self._list("list nodes", "/api/v1/nodes")]
        pods = [
            parse_pod(p)
            for p in self._list(
                "list pods", "/api/v1/pods",
                [("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")],
            )
            if (p.get("status") or {}).get("phase") not in TERMINAL_PHASES
        ]
        return cluster_view(nodes, pods, instance_types)

    def preemption_events(self, namespace: str) -> list[dict]:
        return self._list(
            f"list events in {namespace}", f"/api/v1/namespaces/{namespace}/events",
            [("fieldSelector", "reason=Preempted,involvedObject.kind=Pod")],
        )
