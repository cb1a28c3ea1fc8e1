"""Settings of the job admitter and the autoscaler's node groups it may count on.

Decides: the defaults (admission on, gate `headstart.io/placement`, a job without a
declared size admitted once no pod of it has been added for 10 s, a waiting job holds
room against later jobs after 60 s) and the validation of the `admission:` section,
with errors naming the file and the field path.

Must not: read files (the extender's config loader hands the mapping in), talk to the
API, log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from bucketing.resources import DeviceNames, Resources, resources_from_list
from common.errors import ConfigError, InputError
from common.fields import FieldReader
from kube.labels import DOMAIN_ANNOTATION
from kube.labels import PLACEMENT_GATE as GATE
from locality.admission.weight import ElasticConfig
from locality.constraints import Taint
from locality.parse_constraints import node_taints

# Gates and annotations of other admitters: a pod carrying one is theirs (Kueue:
# pkg/controller/jobs/pod/constants SchedulingGateName, apis/kueue/v1beta2
# topology_types.go TopologySchedulingGate, ElasticJobSchedulingGate,
# WorkloadAnnotation, PodSetRequiredTopologyAnnotation / Preferred).
FOREIGN_GATE_PREFIXES: tuple[str, ...] = ("kueue.x-k8s.io/",)
FOREIGN_ANNOTATIONS: tuple[str, ...] = (
    "kueue.x-k8s.io/workload",
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
)


PLANNING = ("process", "thread")
"""Where admission rounds may be planned (`AdmissionConfig.planning`)."""


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """One autoscaler node group: nodes of one instance type in one domain.

    The admitter counts as nodes cluster-autoscaler can still add there: the group's
    maxSize less its current size as CA's status ConfigMap reports them (by `name`),
    else `max_size` less the nodes it sees of that type in that domain.
    """

    name: str
    """The node group's name as cluster-autoscaler's status lists it (shown in
    /admission and reasons). It may hold `*` and `?` (shell-style, `fnmatch`): one group
    per name CA's status lists that matches, so an EKS managed node group's Auto
    Scaling group, `eks-NAME-UUID`, is named `eks-NAME-*` (`node_groups.resolve`)."""

    instance_type: str
    """Its nodes' `node.kubernetes.io/instance-type` (`locality.instance_type_label`)."""

    domain: str
    """The domain its nodes join: their label value at `level`."""

    max_size: int | None = None
    """The group's maximum node count (cluster-autoscaler's `--nodes=MIN:MAX:NAME`, an
    EKS managed node group's maxSize, a GKE node pool's max nodes), used while CA's
    status does not list the group. Unset: only CA's status sizes it."""

    level: str = "placement-group"
    """The topology level (`locality.topology_levels`) `domain` is a domain of."""

    allocatable: Resources | None = None
    """What one new node offers to pods (Kubernetes quantities: `cpu`, `memory`,
    `nvidia.com/gpu`). Unset: the allocatable of a node of this instance type the
    cluster has; with none, the group counts for nothing until one exists."""

    labels: Mapping[str, str] | None = None
    """The labels of a node it adds (the node group's template: an EKS managed node
    group's labels, a GKE node pool's), which pods' nodeSelector and node affinity are
    matched against. Unset, and `taints` unset too: the labels and taints of a node of
    this instance type the cluster has (in `domain` when there is one), with the domain
    label set to `domain`; with none, only the instance type and domain labels."""

    taints: tuple[Taint, ...] | None = None
    """The NoSchedule/NoExecute taints of a node it adds (`key`, `value`, `effect`, as in
    a Node's spec.taints), which pods' tolerations must tolerate. Setting `labels` or
    `taints` describes the whole template: the one left unset is empty."""

    can_add: int | None = None
    """Nodes it can add beyond those that exist, whatever its size: a Karpenter NodePool's
    remaining limits (`locality.admission.nodepools`; not a config field). Set: neither
    CA's status nor `max_size` is read."""


@dataclass(frozen=True, slots=True)
class AdmissionConfig:
    """The `admission:` section of the extender's config (docs/extender.md)."""

    enabled: bool = True
    """Run the job admitter (leader-elected). Must be on while the
    MutatingAdmissionPolicy that adds `gate` is installed, or gated pods never run."""

    gate: str = GATE
    """The scheduling gate training pods are created behind."""

    domain_annotation: str = DOMAIN_ANNOTATION
    """Written on every admitted pod with its node affinity: `LEVEL=DOMAIN`, for people
    and tools reading the pod. It decides nothing: the job's reservation and domain are
    read from its gang record (`locality.admission.record`), which only headstart can
    write, where this annotation is any pod creator's to set."""

    settle_seconds: float = 10.0
    """A job that declares no size (no `headstart.io/job-size`, no PodGroup) is
    admitted with the pods it has once none has been added for this long."""

    head_reserve_after_seconds: float = 60.0
    """Once the first job in admission order that does not fit has waited this long
    (since its last pod was created), it holds the room it can use in its best domain:
    later jobs are admitted only with what it cannot use. 0: from the start."""

    head_hold_seconds: float | None = None
    """How long one job may hold room that way. Unset (the default): for as long as it
    waits and some domain could ever hold it, as Kueue's StrictFIFO keeps its head, so no
    stream of smaller jobs of its priority starves it: it waits at most until the gangs
    already running in its held domain give up the room it needs (they end, or a job
    of higher priority preempts them), plus a node start-up where it counts on the
    autoscaler. A number of seconds: once it has waited `head_reserve_after_seconds` +
    this, it waits without a hold and the next job that does not fit may hold instead
    (a job waiting for room a days-long gang keeps then does not keep a domain from
    every other job, but a large job may wait for ever behind small ones)."""

    bind_timeout_seconds: float = 900.0
    """An admitted job not whole this long after admission, or a running one short of a
    member this long, is evicted whole and admitted again after a backoff
    (`locality.admission.recovery`). 15 minutes: the nodes an admission counted on may
    have to be launched (4-6 minutes on EKS, plus about 90 s for the GPU device plugin),
    twice over, before the gang gives its GPUs back."""

    ready_timeout_seconds: float = 1200.0
    """An admitted job whose members are not all bound and Ready this long after
    admission is evicted whole and admitted again after a backoff, as Kueue's
    `waitForPodsReady` does (`locality.admission.recovery`); so is a Running one that
    lost a member's readiness (a crash loop) and has not got it back this long after.
    At least `bind_timeout_seconds`: binding comes first. 20 minutes: the bind timeout's
    15, plus pulling a training image of several GB onto new nodes. A job may ask for
    another value with the pod annotation `headstart.io/ready-timeout` (seconds), from
    `bind_timeout_seconds` to `ready_timeout_max_seconds`."""

    ready_timeout_max_seconds: float = 3600.0
    """The most a job's `headstart.io/ready-timeout` may ask for (a job asking for more,
    or for less than `bind_timeout_seconds`, gets `ready_timeout_seconds` and a Warning
    Event saying why)."""

    requeue_limit: int | None = None
    """Evictions for not being whole or Ready in time after which a job is no longer
    admitted: its record becomes `Inadmissible` (reason `RequeueLimit`) and its pods stay
    gated, holding nothing, until its owner is deleted (Kueue's `backoffLimitCount`,
    after which the Workload is deactivated). Unset (the default, as Kueue's): no limit.
    Preemptions and fail-fast evictions (a lost member that its domain cannot replace)
    do not count: they are not the job's doing."""

    pod_groups: bool = True
    """Give each admitted gang a scheduler-plugins PodGroup (`scheduling.x-k8s.io/v1alpha1`,
    minMember = its size) and label its pods with it, so the shipped scheduler's
    Coscheduling plugin binds the gang all or nothing (`locality.admission.coscheduling`).
    Skipped where that API is not served, and for pods that name a PodGroup already."""

    pod_group_timeout_seconds: int = 300
    """The PodGroup's `scheduleTimeoutSeconds`: how long pods assumed on their nodes wait
    in Coscheduling's Permit for the rest of the gang before all are rejected and
    retried, none bound. 5 minutes: the Permit timeout of Kubernetes' own
    GangScheduling plugin (1.35, fixed there). How long a very large gang takes to
    reach Permit whole is not measured here: raise it if yours time out."""

    suspend_jobs: bool = True
    """Evict a gang whose pods are all batch/v1 Jobs', a JobSet's, a TrainJob's or a
    Kubeflow job's (PyTorchJob, TFJob, MPIJob v1) by suspending them (`spec.suspend`; a
    Kubeflow job's `spec.runPolicy.suspend`)
    until its backoff is over, rather than evicting its pods: evicted pods count as
    failures toward a Job's `backoffLimit` (a default Job of 8 pods fails at its first
    eviction), pods deleted by a suspension do not (`locality.admission.suspend_owners`). false:
    evict the pods, as for every other owner."""

    backoff_base_seconds: float = 60.0
    """The wait before an evicted job is admitted again, doubling with each eviction
    (Kueue's requeuing backoff: 60 s)."""

    backoff_max_seconds: float = 3600.0
    """The longest such wait."""

    interval_seconds: float = 1.0
    """Least time between two admission rounds (a round runs after any change)."""

    planning: str = "process"
    """Where rounds are planned: `process`, a process of the extender's own with a
    replica of its cache, so planning never holds the interpreter that answers
    kube-scheduler (`extender.admission.planning_process`; the replica costs about the cache's
    memory again); `thread`, a worker thread of the extender's process, which takes the
    interpreter from the event loop while it packs (filter p99 3.2x that without rounds
    at 20,000 nodes, against 1.1x: bench/bench_admission_rounds.py), for a memory
    budget that cannot hold the replica."""

    api_qps: float = 200.0
    """The admitter's requests per second to the API server at most, bursts of
    `api_burst` (Karpenter's client defaults, 200 and 300; `extender.admission.throttle`);
    a request answered 408, 429 or 5xx is retried after its `Retry-After` (`kube.retry`)."""

    api_burst: int = 300
    """Requests the admitter may send at once before `api_qps` paces them."""

    write_workers: int = 16
    """Pods of an admitted job patched at once (each read, patched and given its Event
    in one worker); 1: one after another."""

    job_workers: int = 4
    """Admitted jobs of a round written at once (each its record, PodGroup and pods, in
    that order); 1: one after another. A round admitting hundreds of small gangs waits
    on a few round trips per job, not on the API server's capacity."""

    lease_name: str = "headstart-extender-admitter"
    """Lease (coordination.k8s.io/v1) of the admitter's leader election."""

    lease_namespace: str = "headstart"
    """Namespace of the Lease (the extender's own; `POD_NAMESPACE` overrides it)."""

    lease_duration_s: int = 15
    """Seconds a follower waits after the last renewal seen before taking over."""

    renew_deadline_s: int = 10
    """Seconds the leader keeps trying to renew before it stops admitting."""

    retry_period_s: int = 2
    """Seconds between acquire and renew attempts."""

    autoscaler_status: str = "kube-system/cluster-autoscaler-status"
    """`NAMESPACE/NAME` of cluster-autoscaler's status ConfigMap (its `--namespace`,
    `--status-config-map-name`; `autoscaler: {status: ...}` in the file), read every
    `AUTOSCALER_STATUS_SECONDS` for the node groups' current and maximum sizes. `""`:
    not read (config's `max_size` only). Another name needs the extender's Role in
    kube-system changed too."""

    node_groups: tuple[NodeGroup, ...] = ()
    """The autoscaler's node groups (`autoscaler: {node_groups: [...]}` in the file):
    nodes cluster-autoscaler can still add to each domain. A group CA's status lists
    that no entry names leaves the room unknown: a job that does not fit what is known
    is released to the autoscaler with a warning rather than held (`assign`)."""

    nodepools: bool = True
    """Read Karpenter's NodePools (`karpenter.sh/v1`, where served) every
    `AUTOSCALER_STATUS_SECONDS` and count the nodes each can add
    (`locality.admission.nodepools`; `autoscaler: {nodepools: false}` in the file)."""

    elastic: ElasticConfig = ElasticConfig()
    """Resizing of jobs whose owners opted in (`locality.elastic`,
    `locality.admission.resize`): KOD2's weights, scale-in, scale-out."""

    @classmethod
    def from_mapping(
        cls, data: Any, source: str, gpu_resources: tuple[str, ...] = ("nvidia.com/gpu",),
        devices: DeviceNames | None = None,
    ) -> AdmissionConfig:
        """Validate the `admission:` mapping; errors name `source` and the field.
        gpu_resources: the resource names that count as GPUs (`locality.gpu_resources`),
        and devices the names kept per kind (`locality.device_names`), for node groups'
        `allocatable`, read as a node's is."""
        if data is None:
            return cls()
        reader = FieldReader(source)
        data = reader.mapping(data, "")
        reader.known(data, "", {f.name for f in fields(cls)}
                     - {"node_groups", "autoscaler_status", "nodepools"} | {"autoscaler"})
        values: dict[str, Any] = {}
        for name, raw in data.items():
            if name in ("enabled", "pod_groups", "suspend_jobs"):
                values[name] = reader.as_bool(raw, name)
            elif name in ("settle_seconds", "head_reserve_after_seconds",
                          "backoff_base_seconds", "backoff_max_seconds"):
                values[name] = reader.as_number(raw, name, low=0, unit="seconds")
            elif name == "head_hold_seconds":
                values[name] = (None if raw is None
                                else reader.as_number(raw, name, low=0, unit="seconds"))
            elif name == "planning":
                values[name] = reader.as_choice(raw, name, PLANNING)
            elif name == "interval_seconds":
                values[name] = reader.as_number(raw, name, low=0.05, unit="seconds")
            elif name == "api_qps":
                values[name] = reader.as_number(raw, name, positive=True)
            elif name in ("bind_timeout_seconds", "ready_timeout_seconds",
                          "ready_timeout_max_seconds"):
                values[name] = reader.as_number(raw, name, low=1, unit="seconds")
            elif name == "requeue_limit":
                values[name] = None if raw is None else reader.as_int(
                    raw, name, low=1,
                    expected="a positive integer (evictions) or null for no limit")
            elif name in ("lease_duration_s", "renew_deadline_s", "retry_period_s",
                          "pod_group_timeout_seconds", "api_burst", "write_workers",
                          "job_workers"):
                values[name] = reader.as_int(raw, name, low=1)
            elif name == "elastic":
                values[name] = ElasticConfig.from_mapping(raw, reader.at(name))
            elif name == "autoscaler":
                section = reader.mapping(raw, name)
                reader.known(section, name, {"node_groups", "status", "nodepools"})
                values["node_groups"] = _node_groups(reader, section.get("node_groups"),
                                                     f"{name}: node_groups", gpu_resources,
                                                     devices)
                if "nodepools" in section:
                    values["nodepools"] = reader.as_bool(section["nodepools"],
                                                         f"{name}: nodepools")
                if "status" in section:
                    values["autoscaler_status"] = _status_reference(
                        reader, section["status"], f"{name}: status")
            else:
                values[name] = reader.as_string(raw, name)
        config = cls(**values)
        if config.ready_timeout_seconds < config.bind_timeout_seconds:
            raise reader.fail(
                "ready_timeout_seconds", f"{config.ready_timeout_seconds:g} is below "
                f"bind_timeout_seconds ({config.bind_timeout_seconds:g}): a gang must be "
                "bound before it can be Ready, so the ready timeout counts from admission too")
        if config.ready_timeout_max_seconds < config.ready_timeout_seconds:
            raise reader.fail(
                "ready_timeout_max_seconds", f"{config.ready_timeout_max_seconds:g} is "
                f"below ready_timeout_seconds ({config.ready_timeout_seconds:g})")
        if not config.lease_duration_s > config.renew_deadline_s > config.retry_period_s:
            raise reader.fail("", "expected lease_duration_s > renew_deadline_s > "
                                  "retry_period_s (a follower must not take over while the "
                                  "leader may still be admitting)")
        return config


def _node_groups(reader: FieldReader, raw: Any, path: str, gpu_resources: tuple[str, ...],
                 devices: DeviceNames | None) -> tuple[NodeGroup, ...]:
    groups = []
    allowed = {"name", "instance_type", "domain", "max_size", "level", "allocatable",
               "labels", "taints"}
    for index, entry in enumerate(reader.as_list(raw, path)):
        at = f"{path}[{index}]"
        entry = reader.mapping(entry, at, optional=False)
        reader.known(entry, at, allowed)
        for required in ("name", "instance_type", "domain"):
            if required not in entry:
                raise reader.fail(f"{at}: {required}", "required")
        max_size = entry.get("max_size")
        if max_size is not None:
            reader.as_int(max_size, f"{at}: max_size", low=0)
        allocatable = None
        if entry.get("allocatable") is not None:
            try:
                allocatable = resources_from_list(
                    entry["allocatable"], gpu_resources, reader.at(f"{at}: allocatable"),
                    devices)
            except InputError as error:
                raise ConfigError(str(error)) from None
        labels = entry.get("labels")
        if labels is not None and (not isinstance(labels, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in labels.items())):
            raise reader.fail(f"{at}: labels", "expected a mapping of strings to strings, "
                                               f"got {labels!r}")
        taints = None
        if entry.get("taints") is not None:
            try:
                taints = node_taints(entry["taints"], reader.at(f"{at}: taints"))
            except InputError as error:
                raise ConfigError(str(error)) from None
        groups.append(NodeGroup(
            reader.as_string(entry["name"], f"{at}: name"),
            reader.as_string(entry["instance_type"], f"{at}: instance_type"),
            reader.as_string(str(entry["domain"]), f"{at}: domain"),
            max_size,
            reader.as_string(entry.get("level", "placement-group"), f"{at}: level"),
            allocatable,
            dict(labels) if labels is not None else None,
            taints,
        ))
    return tuple(groups)


def _status_reference(reader: FieldReader, raw: Any, path: str) -> str:
    if raw == "":
        return ""
    namespace, _, name = reader.as_string(raw, path).partition("/")
    if not namespace or not name or "/" in name:
        raise reader.fail(path, f"expected NAMESPACE/NAME or \"\", got {raw!r}")
    return raw
