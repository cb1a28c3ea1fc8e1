"""What the cluster holds now, per bucket: free whole nodes, placeholder pods, preemptions.

Decides, from nodes, pods and events as the API returns them:
- a node's bucket: its `node.kubernetes.io/instance-type` and its placement group (the
  configured `placeholders.placement_group_label` only: the key placeholders select on);
- a *free* node: Ready, schedulable, and running nothing but DaemonSet and static
  (mirror) pods: no real pod and no placeholder. The plan counts these as capacity
  already free;
- per node of a bucket type, its allocatable and what its DaemonSet and static pods
  request (`sizing.NodeRoom`: placeholders are sized from these);
- a *hit*: a `Preempted` event on a placeholder pod (kube-scheduler evicted it for a real
  pod). Events are counted once per (event uid, count). With CapacityBuffers there are no
  placeholder pods to preempt, and cluster-autoscaler reports no consumption (the
  buffer's status has no such field; its fake pods live only inside CA): a hit there is
  a node that was free (nothing but DaemonSet pods) at the previous observation and now
  runs a real pod, at most the buffer's replicas per bucket (`buffer_nodes_taken`).

The parsing functions are pure (JSON in, frozen dataclasses out); `ClusterReader` is the
thin adapter that lists nodes and events with retries, and reads pods from a watch
cache (`pod_cache`, the service's pod informer) while that cache is fresh, listing
them only when it is not (not synced yet, or its watch failing).

Must not: decide how many placeholders to keep, or write to the cluster.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from kubernetes.client.exceptions import ApiException

from bucketing.resources import DEFAULT_GPU_RESOURCE, ZERO, Resources, pod_effective_request
from kube.retry import RetryPolicy
from locality.config import LocalityConfig
from locality.parse import parse_node as parse_locality_node
from overprovisioner.planner.sizing import GPU_NODE_LABELS, NodeRoom
from overprovisioner.service.errors import ErrorClass, call_with_retry
from overprovisioner.service.objects import NAME_PREFIX, NODE_INSTANCE_TYPE, PLACEHOLDER

TERMINAL_PHASES = ("Succeeded", "Failed")
Bucket = tuple[str, str]  # (instance type, placement group or "")


@dataclass(frozen=True)
class NodeView:
    name: str
    instance_type: str
    placement_group: str
    usable: bool  # Ready and schedulable
    allocatable: Resources = ZERO
    ready_since_s: float | None = None  # when the Ready condition last turned True
    gpu_labeled: bool = False  # carries an autoscaler's GPU label (sizing.GPU_NODE_LABELS)


@dataclass(frozen=True)
class PodView:
    name: str
    namespace: str
    node_name: str
    placeholder: bool
    daemon: bool  # a DaemonSet or static pod: present on every node, not demand
    request: Resources = ZERO  # filled in for DaemonSet and static pods only


@dataclass(frozen=True)
class ClusterView:
    """Per bucket: nodes, free nodes, placeholder pods running and waiting for a node;
    per node of a bucket type, what its DaemonSets take (`rooms`), which nodes are free
    (`free_node_names`) and which run a real pod (`real_pod_nodes`)."""

    nodes: Mapping[Bucket, int]
    free_nodes: Mapping[Bucket, int]
    placeholders_running: Mapping[Bucket, int]
    placeholders_pending: int
    rooms: tuple[NodeRoom, ...] = ()
    free_node_names: Mapping[Bucket, frozenset[str]] = field(default_factory=dict)
    real_pod_nodes: frozenset[str] = frozenset()
    placeholder_pods: Mapping[str, str] = field(default_factory=dict)  # name -> node or ""


@functools.lru_cache(maxsize=8)
def _node_reading(group_label: str, gpu_resource: str) -> LocalityConfig:
    """The extender's node reading, with the configured group label only: placeholders
    select their group with that key, so a group read from any other key (say GKE's,
    with headstart's key configured) would give placeholders that match no node."""
    return LocalityConfig(placement_group_labels=(group_label,),
                          instance_type_label=NODE_INSTANCE_TYPE, gpu_resources=(gpu_resource,),
                          device_resource_prefixes=(), dra_gpus=())


def parse_node(node: Mapping[str, Any], group_label: str,
               gpu_resource: str = DEFAULT_GPU_RESOURCE) -> NodeView:
    """Read a node the way the extender does (one parser): a node is usable when it is
    Ready, not cordoned and carries no taint saying it is going away (cluster-autoscaler's
    and Karpenter's scale-down taints included), so a draining node never counts as free
    capacity that the plan would then not replace."""
    parsed = parse_locality_node(node, _node_reading(group_label, gpu_resource))
    labels = (node.get("metadata") or {}).get("labels") or {}
    return NodeView(
        parsed.name, parsed.instance_type or "", parsed.placement_group or "",
        parsed.takes_new_pods, parsed.allocatable, _ready_since(node),
        any(label in labels for label in GPU_NODE_LABELS),
    )


def _ready_since(node: Mapping[str, Any]) -> float | None:
    """Unix time of the Ready condition's last transition when it is True, else None."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime"))
    return None


def parse_time(text: Any) -> float | None:
    """An RFC 3339 time as the API writes it (`2026-05-01T10:00:00Z`) in Unix seconds."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def parse_pod(pod: Mapping[str, Any], gpu_resource: str = DEFAULT_GPU_RESOURCE) -> PodView:
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
        # What cluster-autoscaler's node template holds besides the node: its DaemonSet
        # and mirror pods (simulator/nodes.go). Other pods' requests do not matter here.
        pod_effective_request(pod, gpu_resource) if daemon else ZERO,
    )


def cluster_view(
    nodes: Iterable[NodeView], pods: Iterable[PodView], instance_types: Sequence[str]
) -> ClusterView:
    """Count nodes, free nodes and placeholder pods per bucket of the given types."""
    wanted = set(instance_types)
    by_name = {n.name: n for n in nodes if n.instance_type in wanted}
    busy: set[str] = set()
    real: set[str] = set()
    daemons: dict[str, Resources] = {}
    running: dict[Bucket, int] = {}
    placeholder_pods: dict[str, str] = {}
    pending = 0
    for pod in pods:
        if pod.placeholder:
            placeholder_pods[pod.name] = pod.node_name
        if pod.placeholder and not pod.node_name:
            pending += 1
        node = by_name.get(pod.node_name)
        if node is None:
            continue
        if pod.placeholder:
            key = (node.instance_type, node.placement_group)
            running[key] = running.get(key, 0) + 1
        if pod.daemon:
            daemons[node.name] = daemons.get(node.name, ZERO) + pod.request
        else:
            busy.add(node.name)
            if not pod.placeholder:
                real.add(node.name)
    counts: dict[Bucket, int] = {}
    free: dict[Bucket, set[str]] = {}
    for node in by_name.values():
        key = (node.instance_type, node.placement_group)
        counts[key] = counts.get(key, 0) + 1
        if node.usable and node.name not in busy:
            free.setdefault(key, set()).add(node.name)
    rooms = tuple(
        NodeRoom(n.name, n.instance_type, n.placement_group, n.allocatable,
                 daemons.get(n.name, ZERO), n.usable, n.ready_since_s, n.gpu_labeled)
        for n in sorted(by_name.values(), key=lambda n: n.name)
    )
    return ClusterView(counts, {k: len(v) for k, v in free.items()}, running, pending, rooms,
                       {k: frozenset(v) for k, v in free.items()}, frozenset(real),
                       placeholder_pods)


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
        bucket = pod_bucket(pod_name, bucket_names)
        if fresh > 0 and bucket is not None:
            hits[bucket] = hits.get(bucket, 0) + fresh
    return hits, now_seen


def buffer_nodes_taken(
    previously_free: Mapping[Bucket, frozenset[str]], real_pod_nodes: frozenset[str],
    replicas: Mapping[Bucket, int],
) -> dict[Bucket, int]:
    """Per bucket, nodes free at the previous observation that now run a real pod, at
    most the bucket's buffer replicas (only that many free nodes were the buffer's)."""
    taken = {}
    for bucket, names in previously_free.items():
        count = min(len(names & real_pod_nodes), replicas.get(bucket, 0))
        if count > 0:
            taken[bucket] = count
    return taken


def pod_bucket(pod_name: str, bucket_names: Mapping[str, Bucket]) -> Bucket | None:
    """The bucket of a placeholder pod `NAME-<rs hash>-<suffix>`: the longest object
    name whose generated-name base the pod name starts with."""
    for name in sorted(bucket_names, key=len, reverse=True):
        if pod_name.startswith(_pod_name_base(name)):
            return bucket_names[name]
    return None


# The API server cuts a generated name's base (here `<replicaset>-`) to this length
# before appending 5 random characters (apiserver/pkg/storage/names/generate.go).
MAX_GENERATED_NAME_BASE = 58


def _pod_name_base(deployment: str) -> str:
    """What every pod of the Deployment's ReplicaSets starts with."""
    return f"{deployment}-"[:MAX_GENERATED_NAME_BASE]


def live_pod_view(pod: Mapping[str, Any], gpu_resource: str = DEFAULT_GPU_RESOURCE
                  ) -> PodView | None:
    """What the pod cache keeps of a Pod: its PodView, None once it has finished."""
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return None
    return parse_pod(pod, gpu_resource)


class PodCache:
    """The pods of a list+watch informer (kube.informer.Informer, parse
    `live_pod_view`) as PodViews, while its cache is fresh."""

    def __init__(self, informer: Any, max_stale_s: float,
                 clock: Callable[[], float]) -> None:
        self.informer = informer
        self.max_stale_s = max_stale_s
        self.clock = clock

    def pods(self) -> list[PodView] | None:
        """The cached pods; None when the cache is not synced or its watch has failed for
        longer than max_stale_s (the reader then lists)."""
        if not self.informer.fresh(self.clock(), self.max_stale_s):
            return None
        return list(self.informer.items().values())


@dataclass
class ClusterReader:
    """Lists nodes, pods and events through KubeApi with retries (see errors.py)."""

    api: Any  # overprovisioner.service.apply.KubeApi
    policy: RetryPolicy
    rng: np.random.Generator
    sleep: Callable[[float], None]
    on_error: Callable[[ErrorClass, BaseException], None] | None = None
    pod_cache: PodCache | None = None

    def _list(self, what: str, path: str, query: Sequence[tuple[str, str]] = ()) -> list[dict]:
        body = call_with_retry(
            what, lambda: self.api.request("GET", path, query=query), self.policy, self.rng,
            self.sleep, self.on_error,
        )
        return list(body.get("items") or [])

    def view(self, instance_types: Sequence[str], group_label: str,
             gpu_resource: str = DEFAULT_GPU_RESOURCE) -> ClusterView:
        nodes = [parse_node(n, group_label, gpu_resource)
                 for n in self._list("list nodes", "/api/v1/nodes")]
        pods = self.pod_cache.pods() if self.pod_cache is not None else None
        if pods is None:
            pods = [
                parse_pod(p, gpu_resource)
                for p in self._list(
                    "list pods", "/api/v1/pods",
                    [("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")],
                )
                if (p.get("status") or {}).get("phase") not in TERMINAL_PHASES
            ]
        return cluster_view(nodes, pods, instance_types)

    def events(self, namespace: str) -> list[dict]:
        """Every Event in the placeholder namespace (Preempted, NotTriggerScaleUp,
        TriggeredScaleUp: a field selector takes one reason only, so one list for all)."""
        return self._list(f"list events in {namespace}", f"/api/v1/namespaces/{namespace}/events")

    def configmap(self, reference: str) -> dict | None:
        """The ConfigMap NAMESPACE/NAME, or None when it does not exist."""
        namespace, _, name = reference.partition("/")

        def get() -> dict | None:
            try:
                return self.api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
            except ApiException as error:
                if error.status == 404:
                    return None
                raise

        return call_with_retry(f"get configmap {reference}", get, self.policy, self.rng,
                               self.sleep, self.on_error)
