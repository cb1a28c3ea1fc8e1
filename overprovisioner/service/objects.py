"""The Kubernetes objects a placeholder plan stands for (pure: plan in, JSON bodies out).

Decides: names, labels and specs of what the overprovisioner writes:
- one balloon Deployment per (instance type, placement group), and one more per zone
  and capacity type its placeholders are pinned to (pinned_plan.PlacedColumn: a bucket
  passed with a `pin` selects it too, pin_selectors.py; named `placeholder_name`, with
  labels `headstart.io/zone` and `headstart.io/capacity-type`): pause containers whose
  requests claim one node of the type (sizing.py: measured on live nodes, else all GPUs
  and a fraction of the catalog's CPU and memory; no GPUs with
  `placeholders.request_gpus` false), scheduled by `placeholders.scheduler_name` (the
  scheduler of the pods meant to preempt them), selecting the type by
  `node.kubernetes.io/instance-type` and the group by the configured placement-group
  label, tolerating the GPU taint on GPU types either way, at the headstart PriorityClass,
  `terminationGracePeriodSeconds: 0` (a preempted placeholder frees its node at once),
  `strategy: Recreate` (a rolling update would surge one extra placeholder, i.e. one
  extra GPU node, every time the template changes);
- or, with the CapacityBuffer backend, a PodTemplate with that same pod spec plus a
  CapacityBuffer (`autoscaling.x-k8s.io/v1beta1`, or v1alpha1 where only that is
  served) referencing it with `replicas`;
- the PriorityClass (`preemptionPolicy: Never`: a placeholder must never evict anyone).

Every object carries headstart's labels (managed-by, part-of, component) and an
annotation `headstart.io/spec-hash` of its own body, so the applier can tell a no-op
from a change without comparing server-defaulted fields. Deployments and
CapacityBuffers also carry `headstart.io/valid-until` (overprovisioner.service.expiry): the
time until which their replica count holds without a renewal.

Ownership (`owned_by_overprovisioner`): an object is the overprovisioner's only when it
carries the annotation `headstart.io/owner: overprovisioner`, which nothing but the
overprovisioner writes. The labels are not proof: the manifests' kustomization stamps
`app.kubernetes.io/managed-by: headstart` on every shipped object (the extender's and
the scheduler's Deployments in the same namespace included). Objects written by older
versions (no owner annotation) are adopted only when they carry all three marks only
those versions wrote together: managed-by=headstart, `headstart.io/placeholder: "true"`
and a spec-hash annotation.

Must not: talk to the cluster, read the clock, log, or mutate its inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from bucketing.catalog import Catalog
from bucketing.resources import Resources
from common.errors import InputError
from kube.labels import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    PLACEMENT_GROUP_LABEL,
    ZONE_LABEL,
)
from kube.labels import OWNER_ANNOTATION as OWNER
from kube.labels import PLACEHOLDER_LABEL as PLACEHOLDER
from kube.labels import SPEC_HASH_ANNOTATION as SPEC_HASH
from kube.labels import VALID_UNTIL_ANNOTATION as VALID_UNTIL
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.catalog import capacity_type_label, placeholder_request
from overprovisioner.planner.pin_selectors import pin_constraints
from predictor.history.pinning import UNPINNED, Pin

MANAGED_BY = "app.kubernetes.io/managed-by"
PART_OF = "app.kubernetes.io/part-of"
COMPONENT = "app.kubernetes.io/component"
INSTANCE = "app.kubernetes.io/instance"
OWNER_VALUE = "overprovisioner"
NODE_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
COMPONENT_NAME = "placeholder"
NAME_PREFIX = "headstart-placeholder"
MAX_NAME = 63  # a DNS-1123 label: names also become label values (app.kubernetes.io/instance)

DEPLOYMENT = ("apps/v1", "Deployment")
POD_TEMPLATE = ("v1", "PodTemplate")
CAPACITY_BUFFER_GROUP = "autoscaling.x-k8s.io"
# Served versions in order of preference: v1beta1 since cluster-autoscaler 1.35 (the
# CRD's storage version), v1alpha1 deprecated (cluster-autoscaler
# apis/config/crd/autoscaling.x-k8s.io_capacitybuffers.yaml).
CAPACITY_BUFFER_VERSIONS = ("v1beta1", "v1alpha1")
CAPACITY_BUFFERS = tuple((f"{CAPACITY_BUFFER_GROUP}/{v}", "CapacityBuffer")
                         for v in CAPACITY_BUFFER_VERSIONS)
CAPACITY_BUFFER = CAPACITY_BUFFERS[0]
PRIORITY_CLASS = ("scheduling.k8s.io/v1", "PriorityClass")
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"


class PlannedPlaceholders(Protocol):
    """What objects.py reads of a planned bucket (`overprovisioner.planner.plan.PlannedBucket`,
    or `pinned_plan.PlacedColumn`, whose `pin` the placeholders select too)."""

    instance_type: str
    placement_group: str
    wanted: int


@dataclass(frozen=True)
class DesiredObject:
    """One object to apply. `body` is the full apply configuration (treat as read-only)."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    body: Mapping[str, Any]

    @property
    def key(self) -> tuple[str, str, str | None, str]:
        return (self.api_version, self.kind, self.namespace, self.name)

    @property
    def spec_hash(self) -> str:
        return self.body["metadata"]["annotations"][SPEC_HASH]


def headstart_labels() -> dict[str, str]:
    """Labels on everything the overprovisioner creates (COMMON conventions)."""
    return {MANAGED_BY: "headstart", PART_OF: "headstart", COMPONENT: COMPONENT_NAME}


def placeholder_selector() -> str:
    """Label selector narrowing the lists to placeholder objects; ownership is then
    decided per object by `owned_by_overprovisioner` (a label can be copied)."""
    return f"{PLACEHOLDER}=true"


def owned_by_overprovisioner(obj: Mapping[str, Any]) -> bool:
    """True for an object the overprovisioner wrote (see the module docstring)."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if annotations.get(OWNER) == OWNER_VALUE:
        return True
    labels = metadata.get("labels") or {}
    return (labels.get(MANAGED_BY) == "headstart" and labels.get(PLACEHOLDER) == "true"
            and bool(annotations.get(SPEC_HASH)))


def bucket_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(instance type, placement group) of a placeholder object, from its labels."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(INSTANCE_TYPE_LABEL, ""), labels.get(PLACEMENT_GROUP_LABEL, "")


def pin_of(obj: Mapping[str, Any]) -> Pin:
    """The zone and capacity type a placeholder object selects, from its labels."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return Pin(labels.get(ZONE_LABEL), labels.get(CAPACITY_TYPE_LABEL))


def _pin(bucket: PlannedPlaceholders) -> Pin:
    return getattr(bucket, "pin", UNPINNED)


def placeholder_name(instance_type: str, placement_group: str, pin: Pin = UNPINNED) -> str:
    """`headstart-placeholder-g5-xlarge-pg-a`: deterministic, DNS-safe, at most 63 chars.

    Characters outside [a-z0-9-] become `-`. When that loses information (upper case,
    `_`, ...) or the name is too long, an 8-hex-digit hash of the exact (type, group)
    is appended so two buckets never share a name. A pinned column's name adds its zone
    and capacity type and always ends in a hash of the exact (type, group, zone,
    capacity type): `headstart-placeholder-g5-xlarge-us-east-1a-spot-<hash>`, so it can
    never be the name of another bucket (group `pg-us-east-1a`, say) or column.
    """
    if pin:
        parts = [placeholder_name(instance_type, placement_group),
                 _dns_part(pin.zone or ""), _dns_part(pin.capacity_type or "")]
        digest = hashlib.sha256(
            "\0".join((instance_type, placement_group, pin.zone or "",
                        pin.capacity_type or "")).encode()).hexdigest()[:8]
        name = "-".join(part for part in parts if part)
        return f"{name[: MAX_NAME - 9].rstrip('-')}-{digest}"
    parts = [NAME_PREFIX, _dns_part(instance_type)]
    if placement_group:
        parts.append(_dns_part(placement_group))
    name = "-".join(part for part in parts if part)
    lossy = _dns_part(instance_type) != instance_type.replace(".", "-") or (
        placement_group and _dns_part(placement_group) != placement_group.replace(".", "-")
    )
    if lossy or len(name) > MAX_NAME:
        digest = hashlib.sha256(f"{instance_type}\0{placement_group}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9].rstrip('-')}-{digest}"
    return name


def _dns_part(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", text.lower())).strip("-")


def desired_objects(
    buckets: Iterable[PlannedPlaceholders],
    config: OverprovisionerConfig,
    catalog: Catalog,
    backend: str,
    requests: Mapping[str, Resources] | None = None,
    buffer_api_version: str | None = None,
    valid_until_s: float | None = None,
) -> tuple[DesiredObject, ...]:
    """The placeholder objects for `buckets` with `backend` ("deployment" | "capacitybuffer").

    requests: per instance type, what one placeholder requests (sizing.py); a type not
    in it gets the fraction rule (`config_catalog.placeholder_request`).
    buffer_api_version: the CapacityBuffer apiVersion the cluster serves (None = the
    preferred one, v1beta1).
    valid_until_s: Unix time until which the replica counts hold without a renewal,
    stamped as `headstart.io/valid-until` on Deployments and CapacityBuffers
    (overprovisioner.service.expiry); None = no stamp. Not part of the spec hash.
    Includes buckets whose `wanted` is 0 (a Deployment at 0 replicas keeps its name and
    history; the applier decides what to prune). Raises InputError if two buckets map to
    one name or a bucket's type is not in the catalog.
    """
    if backend not in ("deployment", "capacitybuffer"):
        raise InputError(f"backend {backend!r}: expected deployment or capacitybuffer")
    buffer_api_version = buffer_api_version or CAPACITY_BUFFER[0]
    if (buffer_api_version, "CapacityBuffer") not in CAPACITY_BUFFERS:
        raise InputError(f"CapacityBuffer apiVersion {buffer_api_version!r}: expected one of "
                         f"{', '.join(gv for gv, _ in CAPACITY_BUFFERS)}")
    requests = requests or {}
    objects: list[DesiredObject] = []
    seen: dict[str, tuple[str, ...]] = {}
    for bucket in buckets:
        if bucket.wanted < 0:
            raise InputError(f"bucket {bucket.instance_type}: wanted {bucket.wanted} < 0")
        pin = _pin(bucket)
        name = placeholder_name(bucket.instance_type, bucket.placement_group, pin)
        identity: tuple[str, ...] = (bucket.instance_type, bucket.placement_group)
        if pin:
            identity += (pin.zone or "", pin.capacity_type or "")
        if name in seen:
            what = "appears twice in the plan" if seen[name] == identity else (
                f"and bucket {seen[name]} both map to the object name {name!r}"
            )
            raise InputError(f"bucket {identity} {what}")
        seen[name] = identity
        template = pod_template(bucket.instance_type, bucket.placement_group, config, catalog,
                                requests.get(bucket.instance_type), pin)
        if backend == "deployment":
            objects.append(_deployment(name, bucket, template, config))
        else:
            objects.append(_pod_template_object(name, bucket, template, config))
            objects.append(_capacity_buffer(name, bucket, config, buffer_api_version))
    if valid_until_s is not None:
        stamp = format_time(valid_until_s)
        objects = [_with_annotation(obj, VALID_UNTIL, stamp) if (obj.api_version, obj.kind)
                   != POD_TEMPLATE else obj for obj in objects]
    return tuple(objects)


def format_time(unix_s: float) -> str:
    """Unix seconds as the API writes times (RFC 3339, UTC, whole seconds)."""
    return datetime.fromtimestamp(math.floor(unix_s), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with_annotation(obj: DesiredObject, key: str, value: str) -> DesiredObject:
    metadata = dict(obj.body["metadata"])
    metadata["annotations"] = {**metadata["annotations"], key: value}
    return DesiredObject(obj.api_version, obj.kind, obj.namespace, obj.name,
                         {**obj.body, "metadata": metadata})


def pod_template(
    instance_type: str, placement_group: str, config: OverprovisionerConfig, catalog: Catalog,
    request: Resources | None = None, pin: Pin = UNPINNED,
) -> dict[str, Any]:
    """The placeholder PodTemplateSpec (metadata + spec) for one bucket; `request` None =
    the fraction rule; `pin` (pin_selectors.selectable_pin already) adds its zone and
    capacity-type selection."""
    if request is None:
        request = placeholder_request(config, catalog, instance_type)
    gpus = catalog.get(instance_type).gpus
    node_selector = {NODE_INSTANCE_TYPE: instance_type}
    if placement_group:
        node_selector[config.placeholders.placement_group_label] = placement_group
    pinned = pin_constraints(pin, capacity_type_label(config))
    node_selector.update(pinned.node_selector)
    container: dict[str, Any] = {
        "name": "pause",
        "image": config.placeholders.pause_image,
        "resources": _resource_requirements(request, catalog.gpu_resource),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 65535,  # the pause image's own nobody user
            "capabilities": {"drop": ["ALL"]},
        },
    }
    spec: dict[str, Any] = {
        "priorityClassName": config.placeholders.priority_class_name,
        "terminationGracePeriodSeconds": 0,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "nodeSelector": node_selector,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
    }
    if config.placeholders.scheduler_name:
        # The scheduler that preempts a placeholder also binds the real pod; another one
        # could put the re-created placeholder back first (kubernetes/kubernetes#130429).
        spec["schedulerName"] = config.placeholders.scheduler_name
    tolerations = list(pinned.tolerations)
    if gpus > 0 and config.placeholders.gpu_tolerations:
        tolerations[:0] = [t.as_json() for t in config.placeholders.gpu_tolerations]
    if tolerations:
        spec["tolerations"] = tolerations
    if pinned.match_expressions:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": list(pinned.match_expressions)}]}}}
    return {
        "metadata": {"labels": _bucket_labels(
            placeholder_name(instance_type, placement_group, pin), instance_type,
            placement_group, pin,
        )},
        "spec": spec,
    }


def priority_class(config: OverprovisionerConfig) -> DesiredObject:
    """The placeholder PriorityClass: low, never preempting, never the default."""
    placeholders = config.placeholders
    body = {
        "apiVersion": PRIORITY_CLASS[0],
        "kind": PRIORITY_CLASS[1],
        "metadata": {"name": placeholders.priority_class_name, "labels": headstart_labels()},
        "value": placeholders.priority_class_value,
        "preemptionPolicy": "Never",
        "globalDefault": False,
        "description": (
            "headstart placeholder pods: low enough that any real pod preempts them, at or "
            f"above cluster-autoscaler's expendable cutoff "
            f"({placeholders.expendable_pods_priority_cutoff}) so they still trigger scale-up."
        ),
    }
    return _finish(PRIORITY_CLASS, None, placeholders.priority_class_name, body)


def _resource_requirements(request: Resources, gpu_resource: str) -> dict[str, Any]:
    # CPU and memory are requests only, never limits: the placeholder stays Burstable, so
    # kubelet's static CPU manager pins no CPUs for it and the static memory manager
    # reserves no NUMA memory (both act on Guaranteed pods only). Its only NUMA-aligned
    # resource is then its GPUs, and with `request_gpus` false it has none.
    requests = {"cpu": f"{request.cpu_milli}m", "memory": str(request.memory_bytes)}
    result: dict[str, Any] = {"requests": requests}
    if request.gpu_milli:
        # Extended resources cannot be overcommitted: the API demands limits == requests.
        gpus = _gpu_quantity(request.gpu_milli)
        requests[gpu_resource] = gpus
        result["limits"] = {gpu_resource: gpus}
    return result


def _gpu_quantity(gpu_milli: int) -> str:
    return str(gpu_milli // 1000) if gpu_milli % 1000 == 0 else f"{gpu_milli}m"


def _bucket_labels(name: str, instance_type: str, placement_group: str,
                   pin: Pin = UNPINNED) -> dict[str, str]:
    labels = headstart_labels()
    labels[INSTANCE] = name
    labels[PLACEHOLDER] = "true"
    labels[INSTANCE_TYPE_LABEL] = instance_type
    if placement_group:
        labels[PLACEMENT_GROUP_LABEL] = placement_group
    if pin.zone is not None:
        labels[ZONE_LABEL] = pin.zone
    if pin.capacity_type is not None:
        labels[CAPACITY_TYPE_LABEL] = pin.capacity_type
    return labels


def _deployment(
    name: str, bucket: PlannedPlaceholders, template: dict[str, Any],
    config: OverprovisionerConfig,
) -> DesiredObject:
    labels = _bucket_labels(name, bucket.instance_type, bucket.placement_group, _pin(bucket))
    body = {
        "apiVersion": DEPLOYMENT[0],
        "kind": DEPLOYMENT[1],
        "metadata": {"name": name, "namespace": config.placeholders.namespace, "labels": labels},
        "spec": {
            "replicas": int(bucket.wanted),
            # Selector is immutable: keep it to the per-bucket instance label.
            "selector": {"matchLabels": {INSTANCE: name, PLACEHOLDER: "true"}},
            "strategy": {"type": "Recreate"},
            "revisionHistoryLimit": 2,
            "template": template,
        },
    }
    return _finish(DEPLOYMENT, config.placeholders.namespace, name, body)


def _pod_template_object(
    name: str, bucket: PlannedPlaceholders, template: dict[str, Any],
    config: OverprovisionerConfig,
) -> DesiredObject:
    labels = _bucket_labels(name, bucket.instance_type, bucket.placement_group, _pin(bucket))
    body = {
        "apiVersion": POD_TEMPLATE[0],
        "kind": POD_TEMPLATE[1],
        "metadata": {"name": name, "namespace": config.placeholders.namespace, "labels": labels},
        "template": template,
    }
    return _finish(POD_TEMPLATE, config.placeholders.namespace, name, body)


def _capacity_buffer(
    name: str, bucket: PlannedPlaceholders, config: OverprovisionerConfig, api_version: str
) -> DesiredObject:
    labels = _bucket_labels(name, bucket.instance_type, bucket.placement_group, _pin(bucket))
    body = {
        "apiVersion": api_version,
        "kind": "CapacityBuffer",
        "metadata": {"name": name, "namespace": config.placeholders.namespace, "labels": labels},
        "spec": {
            "provisioningStrategy": ACTIVE_CAPACITY,
            "podTemplateRef": {"name": name},
            "replicas": int(bucket.wanted),
        },
    }
    return _finish((api_version, "CapacityBuffer"), config.placeholders.namespace, name, body)


def _finish(
    kind: tuple[str, str], namespace: str | None, name: str, body: dict[str, Any]
) -> DesiredObject:
    digest = hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()[:16]
    body["metadata"]["annotations"] = {SPEC_HASH: digest, OWNER: OWNER_VALUE}
    return DesiredObject(kind[0], kind[1], namespace, name, body)
