"""What `headstart check` observed in the cluster, typed once at the edge.

Decides: how the raw objects the reader fetched become the frozen values the checks read
(the control plane's version, the API resources served, workloads with their containers,
mounted files and readiness, nodes, the placement gate's webhook), and where a file a
process reads comes from (`file_source`: the ConfigMap or Secret key mounted at its
path), so the checks find each Secret and config by following the Deployments and their
configs, never by a second copy of the manifests' names.

Must not: call the API, read the clock (`now_s` comes in with the observation), log.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from common.errors import InputError
from headstart.check.core.rights import AccountRights
from kube.autoscaler_status import AutoscalerStatus
from locality.constraints import NO_CONSTRAINTS, PodConstraints, Taint
from locality.parse_constraints import node_taints, pod_constraints

GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class Version:
    minor: int
    git_version: str

    def __str__(self) -> str:
        return f"1.{self.minor} ({self.git_version})" if self.git_version else f"1.{self.minor}"


def parse_version(raw: Mapping[str, Any]) -> Version:
    """`/version`'s answer; EKS and GKE put a `+` after the minor ("33+")."""
    match = re.match(r"\d+", str(raw.get("minor", "")))
    if str(raw.get("major")) != "1" or match is None:
        raise InputError(f"the API server's /version is not Kubernetes 1.x: {dict(raw)}")
    return Version(int(match.group()), str(raw.get("gitVersion", "")))


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    argv: tuple[str, ...]
    """command then args, as the container runs them."""
    mounts: Mapping[str, str] = field(default_factory=dict)
    """mountPath -> volume name."""


@dataclass(frozen=True)
class Volume:
    kind: str
    """"configMap", "secret" or "other"."""
    name: str
    """The ConfigMap's or Secret's name ("" for other kinds)."""
    items: Mapping[str, str] = field(default_factory=dict)
    """Path in the volume -> key, when the volume lists `items`."""


@dataclass(frozen=True)
class FileSource:
    kind: str
    name: str
    key: str

    def __str__(self) -> str:
        return f"{'ConfigMap' if self.kind == 'configMap' else 'Secret'} {self.name} ({self.key})"


@dataclass(frozen=True)
class Workload:
    """A Deployment or DaemonSet: what it runs and whether it is up."""

    kind: str
    namespace: str
    name: str
    containers: tuple[Container, ...]
    volumes: Mapping[str, Volume]
    constraints: PodConstraints
    """Its pods' node selector, required affinity and tolerations."""
    desired: int
    ready: int
    available: bool
    problem: str = ""
    """Why it is not available (its condition's message), "" when it is."""
    waiting: tuple[str, ...] = ()
    """Why its pods are not ready (container waiting reasons, pod conditions), read only
    for a workload that is not available."""

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    def argv(self) -> tuple[str, ...]:
        return tuple(arg for container in self.containers for arg in container.argv)

    def file_source(self, path: str) -> FileSource | None:
        """The ConfigMap or Secret key mounted at file `path` in one of its containers."""
        for container in self.containers:
            for mount_path, volume_name in container.mounts.items():
                prefix = mount_path.rstrip("/") + "/"
                volume = self.volumes.get(volume_name)
                if volume is None or volume.kind == "other" or not path.startswith(prefix):
                    continue
                relative = path[len(prefix):]
                key = volume.items.get(relative, "" if volume.items else relative)
                if key and "/" not in key:
                    return FileSource(volume.kind, volume.name, key)
        return None

    def mounted(self, kind: str) -> tuple[str, ...]:
        """The names of the ConfigMaps or Secrets its volumes hold."""
        return tuple(sorted({v.name for v in self.volumes.values() if v.kind == kind}))


def parse_workload(obj: Mapping[str, Any]) -> Workload:
    """A Deployment or DaemonSet as the API returns it (apps/v1)."""
    kind = str(obj.get("kind") or "Deployment")
    meta = obj.get("metadata") or {}
    template = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = tuple(_container(raw) for raw in template.get("containers") or ())
    volumes = {str(raw.get("name")): _volume(raw) for raw in template.get("volumes") or ()}
    try:
        constraints = pod_constraints(template, "spec.template.spec")
    except InputError:  # the API server validated it; a hand-written fixture may not be
        constraints = NO_CONSTRAINTS
    status = obj.get("status") or {}
    if kind == "DaemonSet":
        desired = int(status.get("desiredNumberScheduled") or 0)
        ready = int(status.get("numberReady") or 0)
        available, problem = ready >= desired, ""
    else:
        desired = int((obj.get("spec") or {}).get("replicas", 1) or 0)
        ready = int(status.get("readyReplicas") or 0)
        condition = next((c for c in status.get("conditions") or ()
                          if c.get("type") == "Available"), None)
        available = condition is not None and condition.get("status") == "True"
        problem = "" if available else str(
            (condition or {}).get("message") or "no Available condition yet")
    return Workload(kind, str(meta.get("namespace", "")), str(meta.get("name", "")),
                    containers, volumes, constraints, desired, ready, available, problem)


def _container(raw: Mapping[str, Any]) -> Container:
    argv = tuple(str(a) for a in (raw.get("command") or ())) + \
        tuple(str(a) for a in (raw.get("args") or ()))
    mounts = {str(m.get("mountPath")): str(m.get("name"))
              for m in raw.get("volumeMounts") or () if not m.get("subPath")}
    return Container(str(raw.get("name", "")), str(raw.get("image", "")), argv, mounts)


def _volume(raw: Mapping[str, Any]) -> Volume:
    for kind, name_field in (("configMap", "name"), ("secret", "secretName")):
        source = raw.get(kind)
        if isinstance(source, Mapping):
            items = {str(i.get("path")): str(i.get("key")) for i in source.get("items") or ()}
            return Volume(kind, str(source.get(name_field, "")), items)
    return Volume("other", "")


def flag(argv: tuple[str, ...], name: str) -> list[str]:
    """Every value given to `--name` (as `--name=V` or `--name V`; a bare boolean flag
    gives "true"), in order."""
    values = []
    for index, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            values.append(arg.split("=", 1)[1])
        elif arg == f"--{name}":
            following = argv[index + 1] if index + 1 < len(argv) else ""
            values.append("true" if not following or following.startswith("--") else following)
    return values


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    gpus: int
    """Allocatable `nvidia.com/gpu`: what the device plugin registered."""
    created_s: float | None
    ready: bool


def parse_node(obj: Mapping[str, Any]) -> Node:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    try:
        taints = node_taints((obj.get("spec") or {}).get("taints"), "spec.taints")
    except InputError:
        taints = ()
    raw_gpus = str((status.get("allocatable") or {}).get(GPU_RESOURCE, "0"))
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or ())
    return Node(str(meta.get("name", "")), dict(meta.get("labels") or {}), taints,
                int(raw_gpus) if raw_gpus.isdigit() else 0,
                timestamp(meta.get("creationTimestamp")), ready)


def timestamp(value: Any) -> float | None:
    """An RFC 3339 time as the API writes it, in seconds since the epoch."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class Webhook:
    """The placement gate's MutatingWebhookConfiguration (its first webhook)."""

    name: str
    ca_bundle: bytes
    service: str
    """The Service's DNS name, `NAME.NAMESPACE.svc` ("" for a URL webhook)."""


def parse_webhook(obj: Mapping[str, Any]) -> Webhook:
    hooks = obj.get("webhooks") or [{}]
    client = hooks[0].get("clientConfig") or {}
    service = client.get("service") or {}
    try:
        bundle = base64.b64decode(client.get("caBundle") or "", validate=True)
    except (binascii.Error, ValueError):
        bundle = b""
    dns = f"{service['name']}.{service['namespace']}.svc" if service.get("name") else ""
    return Webhook(str((obj.get("metadata") or {}).get("name", "")), bundle, dns)


@dataclass(frozen=True)
class PriorityClass:
    value: int
    preemption_policy: str


def parse_priority_class(obj: Mapping[str, Any]) -> PriorityClass:
    return PriorityClass(int(obj.get("value") or 0),
                         str(obj.get("preemptionPolicy") or "PreemptLowerPriority"))


def secret_data(obj: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's keys, decoded (a key that is not base64 is left out)."""
    data = {}
    for key, value in (obj.get("data") or {}).items():
        try:
            data[str(key)] = base64.b64decode(value or "", validate=True)
        except (binascii.Error, ValueError):
            continue
    return data


def config_file(argv: tuple[str, ...]) -> str | None:
    """The file a headstart process or kube-scheduler reads its config from (`--config`)."""
    values = flag(argv, "config")
    return values[-1] if values else None


def parent(path: str) -> str:
    return posixpath.dirname(path.rstrip("/"))


@dataclass(frozen=True)
class Observed:
    """Everything the checks read, as observed at `now_s`."""

    server: str
    version: Version
    served: Mapping[str, frozenset[str]]
    """group/version ("v1" for the core group) -> the resources it serves; a group
    version that is not served is absent."""
    namespace: str
    """headstart's namespace."""
    now_s: float
    headstart: Mapping[str, Workload | None] = field(default_factory=dict)
    """"scheduler", "extender", "overprovisioner" -> its Deployment (None: absent)."""
    config_maps: Mapping[str, Mapping[str, str] | None] = field(default_factory=dict)
    """The ConfigMaps those Deployments mount, by name (None: absent)."""
    secrets: Mapping[str, Mapping[str, bytes] | None] = field(default_factory=dict)
    """The Secrets they mount, by name, decoded (None: absent)."""
    gate_policy: bool = False
    gate_policy_binding: bool = False
    webhook: Webhook | None = None
    priority_classes: Mapping[str, PriorityClass] = field(default_factory=dict)
    autoscalers: tuple[Workload, ...] = ()
    """cluster-autoscaler Deployments, anywhere."""
    autoscaler_status: AutoscalerStatus = AutoscalerStatus()
    nodepools: tuple[Mapping[str, Any], ...] | None = None
    """Karpenter's NodePools; None when karpenter.sh/v1 is not served."""
    nodes: tuple[Node, ...] = ()
    device_plugins: tuple[Workload, ...] = ()
    """DaemonSets of the NVIDIA device plugin, anywhere."""
    rights: tuple[AccountRights, ...] = ()
    """The shipped rights of each ServiceAccount and the cluster's answers."""
    unread: Mapping[str, str] = field(default_factory=dict)
    """What could not be read (an input's name, as the suite names it) -> why."""

    def serves(self, group_version: str, resource: str) -> bool:
        return resource in self.served.get(group_version, frozenset())
