"""The extender's in-memory view of the cluster: node states, pods by job, NUMA topology.

Decides: how list results and watch events change the view, incrementally. A bound
pod's request is added to (or removed from) its node's `NodeState` when it appears,
moves, finishes or goes away, and to its job's running totals (`locality.tally`), so a
request never re-sums pods: per request the work is one dict lookup per candidate node
plus the nodes of one job, however many pods it has.

Also holds the `AssumedPlacements` (pods kube-scheduler asked the extender to bind, not
yet seen bound) and drops an assumption as soon as a watch event shows the pod bound,
finished or deleted; and indexes the jobs with pods waiting for a node (their claims,
`locality.claims`).

NUMA zones lag behind bindings: NFD's topology updater republishes a node's
NodeResourceTopology on its own interval (60 s by default), so for a while after a
GPU pod is bound its zone still looks free. The cache therefore keeps charging the
node's zones with the pods taking a zone (GPUs or pinned CPUs, `Pod.numa_request`) it
saw bound since that node's NRT object last changed (each to the zone
`NodeTopology.zone_for` picks, in bind order), and drops
those charges when the NRT object next changes (the updater has counted them), or a
pod's own charge when the pod finishes, moves or is deleted. `NodeState.topology` is
the published zones less those charges; live assumptions are charged on top per
request (`locality.context`). Pods seen already bound in the first full list are
taken as counted by the NRT list that comes with it; a relist after a pod watch gap
charges the bindings it newly shows, except on nodes whose NRT zones changed during
the gap (that change most likely counts them). An identical republish changes nothing.

Threading: every method runs on the event-loop thread. The watch threads
(`kube.informer`, started by `extender.sync`) only parse JSON and hand the parsed objects over with
`loop.call_soon_threadsafe`, so the handlers read a consistent view without locks.

Must not: do I/O, or decide placements (that is `locality`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import fields, replace
from typing import Any

from locality.admission.record import GangRecord
from locality.columns import NodeTable
from locality.config import LocalityConfig
from locality.jobs import job_key_of, job_policy
from locality.layout import JobLayout, place_of
from locality.model import JobKey, Node, NodeState, NodeTopology, Pod
from locality.numa import NumaDemand
from locality.placement import AssumedPlacements, nominated_assumption
from locality.tally import JobTally
from locality.topology import Domains

NODES = "nodes"
PODS = "pods"
TOPOLOGIES = "noderesourcetopologies"
KINDS = (NODES, PODS, TOPOLOGIES)


def pod_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


Change = tuple[str, tuple[Any, ...]]
"""One change of a `ClusterCache`: a method's name and its arguments."""

CHANGES = ("replace_nodes", "apply_node", "delete_node", "replace_pods", "apply_pod",
           "delete_pod", "replace_gangs", "apply_gang", "delete_gang", "replace_topologies",
           "apply_topology", "delete_topology")
"""Every method that changes a `ClusterCache` (each journaled)."""


def _journaled(method: Callable[..., None]) -> Callable[..., None]:
    """Appends the call to the cache's journal, when it keeps one, before making it;
    the arguments are immutable parsed objects, a `replace_*` method's one argument (an
    iterable, maybe a generator) taken as a list, which the method is then given."""
    name = method.__name__
    listed = name.startswith("replace_")  # decided here, not per change: the watch path

    @functools.wraps(method)
    def change(self: ClusterCache, *args: Any) -> None:
        if self.journal is not None:
            if listed:
                args = (list(args[0]),)
            self.journal.append((name, args))
        method(self, *args)

    return change


class SharedObjects(dict[str, Any]):
    """A copy of the cache's pods by key (`pod_key`), and of its node states and nodes,
    read as `shared[("state", name)]` and `shared[("node", name)]`. Pods are looked up
    in the dict itself, so a C caller reads each without a Python call
    (`extender.admission.planning_process`: tens of thousands per plan with many jobs waiting);
    the rest go through `__missing__`."""

    def __init__(self, pods: Mapping[str, Any], others: Mapping[str, Mapping[str, Any]]
                 ) -> None:
        super().__init__(pods)
        self._others = others

    def __missing__(self, key: Any) -> Any:
        if not isinstance(key, tuple):
            raise KeyError(key)
        kind, name = key
        return self._others[kind][name]


class ClusterCache:
    """Nodes, pods and NUMA topologies as the watches last reported them."""

    def __init__(self, config: LocalityConfig) -> None:
        self.config = config
        self.nodes: dict[str, NodeState] = {}
        """Node name -> state with the requests of its bound pods; read by the handlers."""
        self.assumed = AssumedPlacements()
        """Placements kube-scheduler bound through this extender, not yet visible as
        bindings."""
        self.version = 0
        """Bumped on every change, so callers can tell whether their snapshot is current."""
        self.synced: dict[str, bool] = dict.fromkeys(KINDS, False)
        """Per kind: has its first full list arrived?"""
        self._pods: dict[str, Pod] = {}
        self._pods_on_node: dict[str, set[str]] = {}
        self._pods_of_job: dict[JobKey, set[str]] = {}
        # Job -> running totals of its pods (`locality.tally`): a request reads these
        # instead of walking the job's pods.
        self._tallies: dict[JobKey, JobTally] = {}
        # Job -> keys of its pods not bound and not finished: the jobs with pods to place.
        self._waiting_of_job: dict[JobKey, set[str]] = {}
        # Job -> keys of its Failed pods (their replacements are still to come).
        self._failed_of_job: dict[JobKey, set[str]] = {}
        # Job -> the size its latest indexed pod declares (`JobPolicy.job_size`).
        self._size_of_job: dict[JobKey, int] = {}
        # Jobs declaring more pods than the cache knows (Failed pods not counted).
        self._short_jobs: set[JobKey] = set()
        # Keys of pods behind a scheduling gate (not bound, not finished): what the job
        # admitter reads each round, without a pass over every pod.
        self._gated: set[str] = set()
        # Job -> a counter bumped whenever one of its pods changes (per pods generation).
        self._job_versions: dict[JobKey, int] = {}
        self._pods_generation = 0
        self._topologies: dict[str, NodeTopology] = {}
        # Node -> {pod key: NUMA request}, bind order: pods taking a zone seen bound since
        # the node's NRT object last changed, i.e. not yet counted in its published zones.
        self._unreflected: dict[str, dict[str, NumaDemand]] = {}
        # Nodes whose NRT zones changed since the last pod event or list: after a pod
        # watch gap, a binding the relist shows on such a node is likely already counted.
        self._nrt_changed_since_pods: set[str] = set()
        self._node_objects: dict[str, Node] = {}
        # The columnar snapshot for the numpy filter/score, brought up to date lazily:
        # a burst of watch events costs one column copy at the next request.
        self._table: NodeTable | None = None
        self._dirty: set[str] = set()
        self.gangs: dict[JobKey, GangRecord] = {}
        """The gang records (`locality.admission.record`) by job: headstart's decisions,
        as the API holds them."""
        self.journal: list[Change] | None = None
        """When a list: every change, appended as made (the method's name and its
        arguments, iterables as lists), for a replica elsewhere to replay in order
        (`extender.admission.planning_process`). None: not kept."""
        self.resolve_pod: Callable[[Pod], Pod] = _as_parsed
        """Adds what a pod takes from other objects (DRA claims, its PodGroup's size);
        `extender.sync` sets it, the request path calls it on kube-scheduler's pod."""

    # ---- reads -------------------------------------------------------------------

    def pod(self, namespace: str, name: str) -> Pod | None:
        return self._pods.get(pod_key(namespace, name))

    def shared_objects(self) -> SharedObjects:
        """The pods, node states and nodes as they are now, copied: their values are
        immutable, so the copy holds this moment's view (`extender.admission.planning_process`)."""
        return SharedObjects(self._pods, {"state": dict(self.nodes),
                                          "node": dict(self._node_objects)})

    def as_changes(self) -> list[Change]:
        """The changes that make an empty cache hold what this one holds now, as first
        lists would (a planning process started on a filled cache, or again after one
        was lost, starts its replica from these: `extender.admission.planning_process`)."""
        return [("replace_nodes", (list(self._node_objects.values()),)),
                ("replace_topologies", (list(self._topologies.values()),)),
                ("replace_pods", (list(self._pods.values()),)),
                ("replace_gangs", (list(self.gangs.values()),))]

    def node_object(self, name: str) -> Node | None:
        return self._node_objects.get(name)

    def pods_on_node(self, node_name: str) -> list[Pod]:
        """The pods the cache sees bound to the node (any phase)."""
        pods = self._pods
        return [pods[key] for key in self._pods_on_node.get(node_name, ())]

    def pods_of_job(self, job: JobKey | None) -> list[Pod]:
        """The job's pods in any phase (empty for None)."""
        if job is None:
            return []
        keys = self._pods_of_job.get(job)
        if not keys:
            return []
        pods = self._pods
        return [pods[key] for key in keys]

    def tally_of(self, job: JobKey | None) -> JobTally:
        """The running totals of the job's pods (empty for None or a job with no pod),
        with their layout (`locality.layout`), summed once and then kept up to date."""
        tally = self._tallies.get(job) if job is not None else None
        if tally is None:
            return JobTally(self.config)
        if tally.layout is None:
            tally.layout = JobLayout.of(tally.on_node.items(), self._where)
        return tally

    def _where(self, node_name: str) -> tuple[str | None, Domains] | None:
        state = self.nodes.get(node_name)
        return None if state is None else place_of(state)

    def _forget_layouts(self) -> None:
        """A node came, went or changed its group or domains: the layouts that summed
        it are rebuilt when next read."""
        for tally in self._tallies.values():
            tally.layout = None

    def waiting_pods_of_job(self, job: JobKey) -> Iterator[Pod]:
        """The job's pods neither bound nor finished (lazily: callers mostly want one)."""
        pods = self._pods
        return (pods[key] for key in self._waiting_of_job.get(job, ()))

    def jobs_with_waiting_pods(self) -> list[JobKey]:
        """Jobs with pods neither bound nor finished (their claims are computed)."""
        return list(self._waiting_of_job)

    def gated_pods(self) -> list[Pod]:
        """Pods behind any scheduling gate, not bound and not finished."""
        pods = self._pods
        return [pods[key] for key in self._gated]

    def jobs_short_of_size(self) -> list[JobKey]:
        """Jobs whose declared size (`headstart.io/job-size`, or their PodGroup's
        minMember) exceeds their pods known, Failed ones not counted: pods to come."""
        return list(self._short_jobs)

    def job_version(self, job: JobKey) -> tuple[int, int]:
        """Changes whenever a pod of `job` is added, changed or removed."""
        return self._pods_generation, self._job_versions.get(job, 0)

    def table(self) -> NodeTable:
        """The node states as a `NodeTable` (an immutable snapshot; cheap when unchanged)."""
        table = self._table
        if table is None:
            table = NodeTable(self.nodes.values())
        elif self._dirty:
            nodes = self.nodes
            gone = [name for name in self._dirty if name not in nodes and name in table]
            if gone:
                table = table.without(gone)
            table = table.with_states(nodes[name] for name in self._dirty if name in nodes)
        self._table = table
        self._dirty.clear()
        return table

    def pod_count(self) -> int:
        return len(self._pods)

    def topology_count(self) -> int:
        return len(self._topologies)

    def ready(self) -> bool:
        """Nodes and pods have been listed once (NUMA data is optional)."""
        return self.synced[NODES] and self.synced[PODS]

    # ---- nodes -------------------------------------------------------------------

    @_journaled
    def replace_nodes(self, nodes: Iterable[Node]) -> None:
        """A full node list: rebuild every node state from the pods already known.

        The names are copied into fresh strings allocated one after another: the
        table's name index is probed once per candidate in every request, and keys
        that sit together in memory (instead of scattered through the parsed Node
        JSON) halve that cost at 5,000 nodes (bench/bench_extender.py).
        """
        self._node_objects = {
            compact: replace(node, name=compact)
            for node in nodes
            for compact in (node.name.encode().decode(),)
        }
        self.nodes = {name: self._build_state(node) for name, node in self._node_objects.items()}
        self._forget_layouts()
        self._table = None
        self.synced[NODES] = True
        self.version += 1

    @_journaled
    def apply_node(self, node: Node) -> None:
        old = self._node_objects.get(node.name)
        if old is not None and _same_node(old, node):
            return  # a status heartbeat: nothing the decisions read has changed
        self._node_objects[node.name] = node
        state = self.nodes.get(node.name)
        self.nodes[node.name] = (
            self._build_state(node) if state is None else state.with_node(node)
        )
        if state is None or place_of(state) != place_of(self.nodes[node.name]):
            self._forget_layouts()
        self._dirty.add(node.name)
        self.version += 1

    @_journaled
    def replace_gangs(self, records: Iterable[GangRecord]) -> None:
        self.gangs = {record.job: record for record in records}
        self.version += 1

    @_journaled
    def apply_gang(self, record: GangRecord) -> None:
        self.gangs[record.job] = record
        self.version += 1

    @_journaled
    def delete_gang(self, record: GangRecord) -> None:
        if self.gangs.get(record.job) is not None and self.gangs[record.job].name == record.name:
            del self.gangs[record.job]
        self.version += 1

    @_journaled
    def delete_node(self, name: str) -> None:
        self._node_objects.pop(name, None)
        if self.nodes.pop(name, None) is not None:
            self._forget_layouts()
        self._dirty.add(name)
        self.version += 1

    def _build_state(self, node: Node) -> NodeState:
        pods = self._pods
        state = NodeState(node, topology=self._topology_of(node.name))
        for key in self._pods_on_node.get(node.name, ()):
            state = state.with_pod(pods[key])
        return state

    # ---- pods --------------------------------------------------------------------

    @_journaled
    def replace_pods(self, pods: Iterable[Pod]) -> None:
        """A full pod list: re-index and rebuild every node state.

        On a relist (not the first list) a zone-taking pod (GPUs or pinned CPUs) bound
        since the last view starts a NUMA charge as a watch event would, unless its
        node's NRT zones changed during the watch gap (the change most likely counts that
        binding; charging it again would hold a second zone until the next change);
        charges of pods gone, finished or moved end.
        """
        before = self._pods
        relist = self.synced[PODS]
        self._pods = {}
        self._pods_on_node = {}
        self._pods_of_job = {}
        self._tallies = {}
        self._waiting_of_job = {}
        self._failed_of_job = {}
        self._size_of_job = {}
        self._short_jobs = set()
        self._gated = set()
        self._job_versions = {}
        self._pods_generation += 1
        for pod in pods:
            self._index(pod_key(pod.namespace, pod.name), pod)
        unreflected: dict[str, dict[str, NumaDemand]] = {}
        for key, pod in self._pods.items():
            if not _charges_zone(pod):
                continue
            old = before.get(key)
            still_charged = (
                old is not None and old.uid == pod.uid
                and key in self._unreflected.get(pod.node_name or "", {})
            )
            newly_bound = (
                relist
                and (old is None or old.node_name is None or old.uid != pod.uid)
                and pod.node_name not in self._nrt_changed_since_pods
            )
            if still_charged or newly_bound:
                unreflected.setdefault(pod.node_name or "", {})[key] = pod.numa_request
        self._unreflected = {
            name: charges for name, charges in unreflected.items() if name in self._topologies
        }
        self.nodes = {name: self._build_state(node) for name, node in self._node_objects.items()}
        self._forget_layouts()
        self._table = None
        assumed = self.assumed
        listed = {pod.uid for pod in self._pods.values()}
        for uid, assumption in list(assumed.by_uid.items()):
            if assumption.nominated and uid not in listed:
                assumed = assumed.forget(uid)  # deleted while the watch was down
        for pod in self._pods.values():
            assumed = self._observed(assumed, pod)
        self.assumed = assumed
        self.synced[PODS] = True
        self._nrt_changed_since_pods.clear()
        self.version += 1

    @_journaled
    def apply_pod(self, pod: Pod) -> None:
        """An ADDED or MODIFIED pod: move its request between node states as needed."""
        key = pod_key(pod.namespace, pod.name)
        old = self._pods.get(key)
        self._nrt_changed_since_pods.clear()  # the pod watch is live up to here
        if old is not None and _same_pod(old, pod):
            self._pods[key] = pod  # a status update the decisions do not read
            return
        if old is not None:
            self._unindex(key, old)
        self._index(key, pod)
        newly_bound = old is None or old.node_name is None or old.uid != pod.uid
        if old is not None and old.node_name is not None:
            self._update_node(old.node_name, old, remove=True)
            if newly_bound or pod.node_name != old.node_name or not _charges_zone(pod):
                self._uncharge_zone(old.node_name, key)  # moved, finished or replaced
        if pod.node_name is not None:
            self._update_node(pod.node_name, pod, remove=False)
            if newly_bound and self.synced[PODS] and _charges_zone(pod):
                self._charge_zone(pod.node_name, key, pod.numa_request)
        self.assumed = self._observed(self.assumed, pod)
        self.version += 1

    def _observed(self, assumed: AssumedPlacements, pod: Pod) -> AssumedPlacements:
        """`assumed` after seeing `pod`: its assumption dropped once bound, finished or
        deleted, and a pending pod's nomination (`status.nominatedNodeName`) assumed
        until it is bound or cleared (a bind's assumption is never replaced by it)."""
        assumed = assumed.observe(pod)
        if pod.nominated_node_name is not None and pod.uid not in assumed.by_uid:
            nominated = nominated_assumption(pod, self.config)
            if nominated is not None:
                assumed = assumed.assume(nominated)
        return assumed

    @_journaled
    def delete_pod(self, pod: Pod) -> None:
        key = pod_key(pod.namespace, pod.name)
        old = self._pods.get(key)
        self._nrt_changed_since_pods.clear()
        if old is not None:
            self._unindex(key, old)
            if old.node_name is not None:
                self._update_node(old.node_name, old, remove=True)
                self._uncharge_zone(old.node_name, key)
        self.assumed = self.assumed.observe(pod, deleted=True)
        self.version += 1

    def _update_node(self, node_name: str, pod: Pod, remove: bool) -> None:
        state = self.nodes.get(node_name)
        if state is not None:
            self.nodes[node_name] = state.without_pod(pod) if remove else state.with_pod(pod)
            self._dirty.add(node_name)

    def _index(self, key: str, pod: Pod) -> None:
        self._pods[key] = pod
        if pod.scheduling_gates and pod.node_name is None and not pod.terminal:
            self._gated.add(key)
        if pod.node_name is not None:
            self._pods_on_node.setdefault(pod.node_name, set()).add(key)
        job = job_key_of(pod, self.config)
        if job is not None:
            self._pods_of_job.setdefault(job, set()).add(key)
            tally = self._tallies.get(job)
            if tally is None:
                tally = self._tallies[job] = JobTally(self.config)
            tally.add(pod)
            self._job_versions[job] = self._job_versions.get(job, 0) + 1
            if pod.node_name is None and not pod.terminal:
                self._waiting_of_job.setdefault(job, set()).add(key)
            if pod.terminal and not pod.succeeded:
                self._failed_of_job.setdefault(job, set()).add(key)
            size = job_policy(pod, self.config).job_size
            if size is not None:
                self._size_of_job[job] = size
            self._check_short(job)

    def _unindex(self, key: str, pod: Pod) -> None:
        del self._pods[key]
        self._gated.discard(key)
        if pod.node_name is not None:
            _discard(self._pods_on_node, pod.node_name, key)
        job = job_key_of(pod, self.config)
        if job is not None:
            _discard(self._pods_of_job, job, key)
            tally = self._tallies.get(job)
            if tally is not None:
                tally.remove(pod.uid)
                if not tally:
                    del self._tallies[job]
            _discard(self._waiting_of_job, job, key)
            _discard(self._failed_of_job, job, key)
            if job not in self._pods_of_job:
                self._size_of_job.pop(job, None)
            self._check_short(job)
            self._job_versions[job] = self._job_versions.get(job, 0) + 1

    def _check_short(self, job: JobKey) -> None:
        size = self._size_of_job.get(job)
        known = len(self._pods_of_job.get(job, ())) - len(self._failed_of_job.get(job, ()))
        if size is not None and size > known:
            self._short_jobs.add(job)
        else:
            self._short_jobs.discard(job)

    # ---- NUMA topology -----------------------------------------------------------

    @_journaled
    def replace_topologies(self, topologies: Iterable[NodeTopology]) -> None:
        before = self._topologies
        self._topologies = {topology.node_name: topology for topology in topologies}
        if self.synced[TOPOLOGIES]:  # a relist; the first list changes nothing seen
            for name, topology in self._topologies.items():
                if topology != before.get(name):
                    self._nrt_changed_since_pods.add(name)
        for name in list(self._unreflected):
            if self._topologies.get(name) != before.get(name):
                del self._unreflected[name]  # republished since: it counts those pods
        for name, state in self.nodes.items():
            topology = self._topology_of(name)
            if topology is not state.topology:
                self.nodes[name] = state.with_topology(topology)
        self._table = None
        self.synced[TOPOLOGIES] = True
        self.version += 1

    @_journaled
    def apply_topology(self, topology: NodeTopology) -> None:
        name = topology.node_name
        if self._topologies.get(name) == topology:
            return  # an identical republish: zones and charges stand, no table copy
        # The updater republished different zones: they count every pod bound before
        # (see the module docstring for the race this leaves).
        self._unreflected.pop(name, None)
        self._nrt_changed_since_pods.add(name)
        self._topologies[name] = topology
        self._refresh_topology(name)
        self.version += 1

    @_journaled
    def delete_topology(self, node_name: str) -> None:
        self._topologies.pop(node_name, None)
        self._unreflected.pop(node_name, None)
        state = self.nodes.get(node_name)
        if state is not None:
            self.nodes[node_name] = state.with_topology(None)
            self._dirty.add(node_name)
        self.version += 1

    def unreflected_pods(self, node_name: str) -> tuple[str, ...]:
        """Keys (namespace/name) of the pods charged to the node's NUMA zones because
        its NRT object has not changed since they were bound (bind order)."""
        return tuple(self._unreflected.get(node_name, ()))

    def _topology_of(self, node_name: str) -> NodeTopology | None:
        """The published zones less the pods bound since they were published."""
        topology = self._topologies.get(node_name)
        charges = self._unreflected.get(node_name)
        if topology is None or not charges:
            return topology
        return topology.charged(charges.values())

    def _refresh_topology(self, node_name: str) -> None:
        state = self.nodes.get(node_name)
        if state is not None:
            self.nodes[node_name] = state.with_topology(self._topology_of(node_name))
            self._dirty.add(node_name)

    def _charge_zone(self, node_name: str, key: str, request: NumaDemand) -> None:
        if node_name in self._topologies:
            self._unreflected.setdefault(node_name, {})[key] = request
            self._refresh_topology(node_name)

    def _uncharge_zone(self, node_name: str, key: str) -> None:
        charges = self._unreflected.get(node_name)
        if charges is not None and key in charges:
            del charges[key]
            if not charges:
                del self._unreflected[node_name]
            self._refresh_topology(node_name)

    # ---- assumptions -------------------------------------------------------------

    def set_assumed(self, assumed: AssumedPlacements) -> None:
        if assumed is not self.assumed:
            self.assumed = assumed
            self.version += 1


def _as_parsed(pod: Pod) -> Pod:
    return pod


def _same_node(old: Node, new: Node) -> bool:
    """Equal in every field (Node compares by identity): a heartbeat that changes only
    what `parse_node` drops (status timestamps, images) is skipped."""
    return _same_fields(old, new, _NODE_FIELDS)


def _same_pod(old: Pod, new: Pod) -> bool:
    """Equal in every field (Pod compares by identity): a status update that changes only
    what `parse_pod` drops (conditions, container statuses) is skipped."""
    return _same_fields(old, new, _POD_FIELDS)


# Every field, not a hand-kept list: the list missed Node.ready and blocking_taints
# (a node going NotReady or draining kept taking pods in the cache) and
# Pod.pinned_cpu_milli, and a field added later would be missed the same way.
_NODE_FIELDS = tuple(f.name for f in fields(Node))
_POD_FIELDS = tuple(f.name for f in fields(Pod))


def _same_fields(old: object, new: object, names: tuple[str, ...]) -> bool:
    return all(getattr(old, name) == getattr(new, name) for name in names)


def _charges_zone(pod: Pod) -> bool:
    """A bound, running pod with GPUs or pinned CPUs: kubelet gave it a NUMA zone
    (placeholders are left out: real pods preempt them, as everywhere else)."""
    return (
        pod.node_name is not None
        and not pod.terminal
        and not pod.is_placeholder
        and pod.takes_numa_zone
    )


def _discard(index: dict, key: object, member: str) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(member)
        if not members:
            del index[key]
