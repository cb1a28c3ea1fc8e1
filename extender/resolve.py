"""What pods and nodes take from other objects: DRA GPUs, PodGroup and owner sizes.

Decides (adapter state, no I/O): which parsed pods and nodes depend on which
ResourceClaims, ResourceClaimTemplates, ResourceSlices, PodGroups and owners (Kubeflow
training jobs, JobSets, TrainJobs: `locality.owners`), and, when one of those
changes, which pods and nodes must reach the cache again with their new requests,
allocatable GPUs or job size. The arithmetic is the locality core's (`locality.dra`,
`locality.podgroups`, `locality.owners`); this keeps the latest objects and always
resolves from a pod's or node's own parse, never from an already resolved value
(adding a claim's GPUs twice would be easy otherwise).

The extender's sync (`extender.sync`) passes every parsed pod and node through here
before the cache sees it, and the request path resolves the pod kube-scheduler sends
with `ClusterCache.resolve_pod`. Everything runs on the event loop.

Must not: talk to the API, decide placements.
"""

from __future__ import annotations

from collections.abc import Iterable

from bucketing.resources import Devices
from extender.cache import pod_key
from locality.config import LocalityConfig
from locality.dra import (
    ClaimDevices,
    SliceDevices,
    node_devices,
    with_claims,
    with_node_devices,
)
from locality.model import Node, Pod
from locality.owners import OwnerKey, OwnerSize, owner_of, with_owner_size
from locality.podgroups import PodGroupSize, with_group_size
from locality.suspension import JobName, JobSuspension, suspendable


class Resolver:
    """The latest DRA objects and PodGroups, and the pods and nodes that use them."""

    def __init__(self, config: LocalityConfig) -> None:
        self.config = config
        self._claims: dict[tuple[str, str, str], Devices] = {}
        self._sizes: dict[tuple[str, str, str], int] = {}
        self._owners: dict[OwnerKey, dict[str, OwnerSize]] = {}  # key -> source -> object
        self._jobs: dict[JobName, JobSuspension] = {}  # Jobs and JobSets among the owners
        self._slices: dict[str, SliceDevices] = {}
        self._devices: dict[str, Devices] = {}
        self._pods: dict[str, Pod] = {}  # own parse of pods with claims or a PodGroup
        self._nodes: dict[str, Node] = {}  # own parse of every node

    # ---- pods and nodes on their way to the cache ------------------------------------

    def pod(self, pod: Pod) -> Pod:
        """`pod` (its own parse) with its claims' GPUs and its PodGroup's size."""
        if pod.claims:
            pod = with_claims(pod, self._claims, self.config)
        if pod.pod_group is not None:
            pod = with_group_size(pod, self._sizes)
        if owner_of(pod) is not None:
            pod = with_owner_size(pod, self._owners)
        return pod

    def track_pod(self, pod: Pod) -> Pod:
        """Remember the pod's own parse when it depends on other objects; resolve it."""
        key = pod_key(pod.namespace, pod.name)
        if pod.claims or pod.pod_group is not None or owner_of(pod) is not None:
            self._pods[key] = pod
        else:
            self._pods.pop(key, None)
        return self.pod(pod)

    def forget_pod(self, pod: Pod) -> None:
        self._pods.pop(pod_key(pod.namespace, pod.name), None)

    def replace_pods(self, pods: Iterable[Pod]) -> list[Pod]:
        self._pods = {}
        return [self.track_pod(pod) for pod in pods]

    def node(self, node: Node) -> Node:
        """`node` (its own parse) with its DRA GPU devices."""
        self._nodes[node.name] = node
        return with_node_devices(node, self._devices.get(node.name, ()), self.config)

    def forget_node(self, name: str) -> None:
        self._nodes.pop(name, None)

    def replace_nodes(self, nodes: Iterable[Node]) -> list[Node]:
        self._nodes = {}
        return [self.node(node) for node in nodes]

    # ---- the objects they depend on: each returns what the cache must see again -----

    def apply_claim(self, claim: ClaimDevices, deleted: bool = False) -> list[Pod]:
        if deleted:
            changed = self._claims.pop(claim.key, None) is not None
        else:
            changed = self._claims.get(claim.key) != claim.devices
            self._claims[claim.key] = claim.devices
        return self._pods_using(lambda pod: (claim.namespace == pod.namespace and (
            claim.kind, claim.name) in pod.claims)) if changed else []

    def replace_claims(self, claims: Iterable[ClaimDevices], kind: str) -> list[Pod]:
        """A full list of claims (kind "claim") or templates (kind "template")."""
        kept = {key: devices for key, devices in self._claims.items() if key[1] != kind}
        kept.update((claim.key, claim.devices) for claim in claims)
        changed = kept != self._claims
        self._claims = kept
        return self._pods_using(lambda pod: bool(pod.claims)) if changed else []

    def apply_pod_group(self, group: PodGroupSize, deleted: bool = False) -> list[Pod]:
        if deleted:
            changed = self._sizes.pop(group.key, None) is not None
        else:
            changed = self._sizes.get(group.key) != group.min_member
            self._sizes[group.key] = group.min_member
        return self._pods_using(lambda pod: pod.namespace == group.namespace and (
            pod.pod_group == (group.api_group, group.name))) if changed else []

    def replace_pod_groups(self, groups: Iterable[PodGroupSize], api_group: str) -> list[Pod]:
        kept = {key: size for key, size in self._sizes.items() if key[0] != api_group}
        kept.update((group.key, group.min_member) for group in groups)
        changed = kept != self._sizes
        self._sizes = kept
        return self._pods_using(lambda pod: pod.pod_group is not None) if changed else []

    def apply_owner(self, owner: OwnerSize, deleted: bool = False) -> list[Pod]:
        self._index_job(owner, deleted)
        kinds = self._owners.setdefault(owner.key, {})
        if deleted:
            changed = kinds.pop(owner.source, None) is not None
        else:
            changed = kinds.get(owner.source) != owner
            kinds[owner.source] = owner
        if not kinds:
            del self._owners[owner.key]
        return self._pods_using(lambda pod: owner_of(pod) == owner.key) if changed else []

    def replace_owners(self, owners: Iterable[OwnerSize], source: str) -> list[Pod]:
        """A full list of one owner API (`OwnerSize.source`: kind/version)."""
        kept: dict[OwnerKey, dict[str, OwnerSize]] = {}
        for key, kinds in self._owners.items():
            rest = {k: v for k, v in kinds.items() if k != source}
            if rest:
                kept[key] = rest
        kind, _, version = source.partition("/")
        if suspendable(kind, version):  # a relist replaces that kind's entries of its version
            self._jobs = {key: job for key, job in self._jobs.items()
                          if key[0] != kind or job.version != version}
        for owner in owners:
            kept.setdefault(owner.key, {})[source] = owner
            self._index_job(owner)
        changed = kept != self._owners
        self._owners = kept
        return self._pods_using(lambda pod: owner_of(pod) is not None) if changed else []

    def batch_jobs(self) -> dict[JobName, JobSuspension]:
        """Every batch/v1 Job and JobSet seen, as headstart may suspend it (a copy: the
        admitter's worker thread reads it while watches change the resolver)."""
        return dict(self._jobs)

    def _index_job(self, owner: OwnerSize, deleted: bool = False) -> None:
        if owner.suspension is None:
            return
        if deleted:
            self._jobs.pop(owner.suspension.key, None)
        else:
            self._jobs[owner.suspension.key] = owner.suspension

    def apply_slice(self, item: SliceDevices, deleted: bool = False) -> list[Node]:
        if deleted:
            self._slices.pop(item.name, None)
        else:
            self._slices[item.name] = item
        return self._refresh_devices()

    def replace_slices(self, items: Iterable[SliceDevices]) -> list[Node]:
        self._slices = {item.name: item for item in items}
        return self._refresh_devices()

    def _refresh_devices(self) -> list[Node]:
        """Recount every node's DRA GPUs (slices are few: one or two per GPU node) and
        return the nodes whose count changed, resolved."""
        devices = node_devices(self._slices.values())
        changed = {name for name in devices.keys() | self._devices.keys()
                   if devices.get(name) != self._devices.get(name)}
        self._devices = devices
        return [self.node(self._nodes[name]) for name in sorted(changed) if name in self._nodes]

    def _pods_using(self, uses) -> list[Pod]:
        return [self.pod(pod) for pod in self._pods.values() if uses(pod)]
