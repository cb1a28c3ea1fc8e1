"""What a piece of known-ahead demand is, and the object metadata every source reads.

Decides: the `KnownItem` every source produces (one pod shape of one announced
workload: how many pods, when they are expected to need nodes, why); the sources and
their precedence when two of them describe the same workload; the *workload key*
that ties an announcement to the pods it later becomes; and how a pod template's
request is computed (`bucketing.resources.pod_effective_request`, the one function).

Workload keys are `group/Kind/namespace/name` of the object whose pods they are:
- a pod's keys (`pod_ref`): its controller owner (a Job, a PyTorchJob, a Volcano Job),
  the JobSet named by its `jobset.sigs.k8s.io/jobset-name` label (kubernetes-sigs/jobset
  api/jobset/v1alpha2/jobset_types.go `JobSetNameKey`), and its PodGroup: the
  coscheduling label `scheduling.x-k8s.io/pod-group` (scheduler-plugins
  apis/scheduling/v1alpha1/types.go `PodGroupLabel`) or Volcano's annotation
  `scheduling.k8s.io/group-name` / `scheduling.volcano.sh/group-name`
  (volcano-sh/apis pkg/apis/scheduling/v1beta1/labels.go);
- an item's key: the workload itself, or its controller owner when it has one (a
  Workload's key is its job's, a PodGroup's its training job's), so that one workload
  seen by two sources is counted once (`SOURCES` order wins).

Must not: do I/O, read the clock, or log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bucketing.resources import Resources, pod_effective_request
from common.errors import InputError
from kube.kinds import PART_LABELS
from kube.kinds.jobset import JOBSET as JOBSET_KIND
from kube.labels import KUEUE_QUEUE_LABEL, SUSPENDED_LABEL
from kube.replicas import mapping as mapping  # re-exported: the sources read fields with it
from kube.replicas import whole as whole

# Precedence, first wins, when two sources describe one workload: Kueue knows when a
# queued job will be admitted; a JobSet describes all of a TrainJob's pods; a suspended
# child Job is only part of its JobSet; a PodGroup is only a minimum. Gated pods are
# keyed by the pod itself, which no other source uses for pods that exist.
SOURCES: tuple[str, ...] = ("kueue", "gated", "jobsets", "kubeflow", "rayjobs", "jobs",
                            "podgroups", "cronjobs")

# Sources whose items are pods that exist already (so never announced work, rule 4 of
# predictor.known.combine).
EXISTING_POD_SOURCES = frozenset({"gated"})

# Kueue keeps a job with its queue label (`KUEUE_QUEUE_LABEL`) suspended until its
# Workload is admitted, so only the Workload says when.
HEADSTART_SUSPENDED_LABEL = SUSPENDED_LABEL
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# Stamped on every object headstart's manifests install (manifests/base/kustomization.yaml).
PART_OF_LABEL = "app.kubernetes.io/part-of"
VOLCANO_GROUP_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
COSCHEDULING_POD_GROUP = "scheduling.x-k8s.io/PodGroup"
VOLCANO_POD_GROUP = "scheduling.volcano.sh/PodGroup"
JOBSET = f"{JOBSET_KIND.group}/{JOBSET_KIND.kind}"


@dataclass(frozen=True)
class KnownItem:
    """Pods of one shape that an announced workload will create.

    source: one of SOURCES. kind, namespace, name: the object that announced them.
    key: the workload key (see the module docstring). pods: how many pods of this shape
    do not exist yet. request: one pod's effective request. expected_s: when they are
    expected to need nodes (Unix seconds; at or before now = as soon as possible), or
    None when nobody can tell (a queue without room). reason: why, for humans.
    covered: cluster-autoscaler already provisions for these pods (a Kueue
    ProvisioningRequest): listed and announced, never counted, so its nodes are not
    asked for twice.
    """

    source: str
    kind: str
    namespace: str
    name: str
    key: str
    pods: int
    request: Resources
    expected_s: float | None
    reason: str
    covered: bool = False


@dataclass(frozen=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    controller: bool


@dataclass(frozen=True)
class Meta:
    """The metadata every source reads, typed."""

    namespace: str
    name: str
    created_s: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owners: tuple[OwnerRef, ...] = ()

    @property
    def controller(self) -> OwnerRef | None:
        return next((o for o in self.owners if o.controller), None)


@dataclass(frozen=True)
class PodRef:
    """What the known-demand sources need of an existing pod: the workload keys it
    belongs to, its role inside the workload, and when it was created."""

    namespace: str
    keys: frozenset[str]
    role: str = ""
    created_s: float | None = None


def group_of(api_version: str) -> str:
    """`batch/v1` -> `batch`; `v1` (the core group) -> ``."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def workload_key(group: str, kind: str, namespace: str, name: str) -> str:
    return f"{group}/{kind}/{namespace}/{name}"


def owner_key(owner: OwnerRef, namespace: str) -> str:
    return workload_key(group_of(owner.api_version), owner.kind, namespace, owner.name)


def item_key(meta: Meta, api_version: str, kind: str) -> str:
    """The key of an item announced by this object: its controller owner's, else its own."""
    owner = meta.controller
    if owner is not None:
        return owner_key(owner, meta.namespace)
    return workload_key(group_of(api_version), kind, meta.namespace, meta.name)


def parse_time(value: Any, where: str) -> float | None:
    """Unix seconds of an RFC 3339 time as the API writes it; None when absent."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: expected an RFC 3339 time, got {value!r}")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{where}: {value!r} is not an RFC 3339 time") from None


def parse_meta(obj: Mapping[str, Any], where: str) -> Meta:
    metadata = mapping(obj.get("metadata"), f"{where}.metadata")
    owners = []
    for index, ref in enumerate(metadata.get("ownerReferences") or []):
        ref = mapping(ref, f"{where}.metadata.ownerReferences[{index}]")
        owners.append(OwnerRef(str(ref.get("apiVersion", "")), str(ref.get("kind", "")),
                               str(ref.get("name", "")), ref.get("controller") is True))
    return Meta(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        created_s=parse_time(metadata.get("creationTimestamp"),
                             f"{where}.metadata.creationTimestamp"),
        labels=dict(mapping(metadata.get("labels"), f"{where}.metadata.labels")),
        annotations=dict(mapping(metadata.get("annotations"), f"{where}.metadata.annotations")),
        owners=tuple(owners),
    )


def headstart_own(meta: Meta) -> bool:
    """True for an object headstart's manifests installed (`app.kubernetes.io/part-of:
    headstart`): its own maintenance work (the placeholder-expiry CronJob) runs on the
    nodes headstart itself runs on and is never training demand. A tenant who forges the
    label on their own work only withholds its known demand from their own placeholders."""
    return meta.labels.get(PART_OF_LABEL) == "headstart"


def open_object(obj: Mapping[str, Any], kind: str
                ) -> tuple[Meta, str, Mapping[str, Any], Mapping[str, Any]]:
    """What every source parser starts from: the typed metadata, the object's name for
    messages (`kind namespace/name`), and its spec and status maps."""
    meta = parse_meta(obj, kind.lower())
    where = f"{kind} {meta.namespace}/{meta.name}" if meta.namespace else f"{kind} {meta.name}"
    return (meta, where, mapping(obj.get("spec"), f"{where}.spec"),
            mapping(obj.get("status"), f"{where}.status"))


def template_request(template: Any, gpu_resource: str, where: str) -> Resources:
    """One pod's effective request from a PodTemplateSpec (`{metadata, spec}`)."""
    body = mapping(template, where)
    try:
        return pod_effective_request({"spec": body.get("spec")}, gpu_resource)
    except InputError as error:
        raise InputError(f"{where}: {error}") from None


def condition_true(status: Mapping[str, Any], kind: str) -> bool:
    """True when status.conditions has `kind` with status "True"."""
    return any(isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


def condition_since(status: Mapping[str, Any], kind: str, where: str) -> float | None:
    """lastTransitionTime of a True condition `kind`, or None."""
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind and (
            condition.get("status") == "True"
        ):
            return parse_time(condition.get("lastTransitionTime"),
                              f"{where}.status.conditions[{kind}].lastTransitionTime")
    return None


def pod_ref(pod: Mapping[str, Any]) -> PodRef:
    """The workload keys and role of a Pod (JSON)."""
    meta = parse_meta(pod, "pod")
    keys = set()
    if meta.controller is not None:
        keys.add(owner_key(meta.controller, meta.namespace))
    if meta.labels.get(JOBSET_KIND.pod_label):
        keys.add(f"{JOBSET}/{meta.namespace}/{meta.labels[JOBSET_KIND.pod_label]}")
    if meta.labels.get(COSCHEDULING_POD_GROUP_LABEL):
        keys.add(f"{COSCHEDULING_POD_GROUP}/{meta.namespace}/"
                 f"{meta.labels[COSCHEDULING_POD_GROUP_LABEL]}")
    for annotation in VOLCANO_GROUP_ANNOTATIONS:
        if meta.annotations.get(annotation):
            keys.add(f"{VOLCANO_POD_GROUP}/{meta.namespace}/{meta.annotations[annotation]}")
    role = next((meta.labels[label] for label in PART_LABELS if meta.labels.get(label)), "")
    return PodRef(meta.namespace, frozenset(keys), role.lower(), meta.created_s)


@dataclass(frozen=True)
class PodCounts:
    """Existing pods counted per workload key and per (key, role), built once per tick."""

    by_key: Mapping[str, int]
    by_role: Mapping[tuple[str, str], int]

    def of(self, key: str, role: str | None = None) -> int:
        """How many existing pods belong to workload `key` (with `role`, when given)."""
        if role is None:
            return self.by_key.get(key, 0)
        return self.by_role.get((key, role), 0)


def count_pods(pods: Iterable[PodRef]) -> PodCounts:
    by_key: Counter[str] = Counter()
    by_role: Counter[tuple[str, str]] = Counter()
    for pod in pods:
        for key in pod.keys:
            by_key[key] += 1
            by_role[(key, pod.role)] += 1
    return PodCounts(dict(by_key), dict(by_role))


def queued_in_kueue(meta: Meta) -> bool:
    """Whether Kueue holds this job (its queue-name label): then its Workload announces it,
    and the job's own source does not, whether or not the Workload can be read."""
    return bool(meta.labels.get(KUEUE_QUEUE_LABEL))


def suspended_expected(meta: Meta, since_s: float | None, now_s: float, window_s: float
                       ) -> tuple[float | None, str]:
    """When suspended work is expected: now while it has been suspended for at most
    `window_s` (a queue controller resumes it soon), else never (parked by a person).

    Work Kueue suspended (`queued_in_kueue`) is never expected here: Kueue resumes it when
    its Workload is admitted, maybe hours later, and the kueue source estimates when from
    the queue. It is counted through its Workload (same workload key, and kueue wins), and
    not at all while the kueue source is stale, absent or off: an unknown time is better
    than a made-up "now"."""
    if queued_in_kueue(meta):
        return None, (f"queued in Kueue (LocalQueue {meta.labels[KUEUE_QUEUE_LABEL]}): "
                      "counted through its Workload only")
    if since_s is None or now_s - since_s <= window_s:
        return now_s, "suspended recently: expected as soon as it is resumed"
    return None, f"suspended for {(now_s - since_s) / 60:.0f} min: parked, not counted"


def headstart_resume_time(meta: Meta) -> float | None:
    """When headstart's admitter resumes the object it suspended (its
    `HEADSTART_SUSPENDED_LABEL`); None: headstart did not suspend it."""
    mark = meta.labels.get(HEADSTART_SUSPENDED_LABEL)
    return float(mark) if mark is not None and mark.isdigit() else None


def suspended_until(meta: Meta, kind: str, since_s: float | None, resumed_at_s: float | None,
                    now_s: float, window_s: float) -> tuple[float | None, str]:
    """When a suspended `kind` is expected: when headstart resumes it, where headstart
    suspended it (`resumed_at_s`), else as `suspended_expected` says."""
    if resumed_at_s is not None:
        return max(now_s, resumed_at_s), ("suspended by headstart's admitter to evict its "
                                          f"gang whole: expected when it resumes the {kind}")
    return suspended_expected(meta, since_s, now_s, window_s)
