"""The locality settings: which labels name a job and its role, which annotations set
a job's policy, the defaults, the topology levels and placement-group node labels, the
GPU and device resources (extended resources and DRA), the NUMA defaults.

Decides: the defaults (`pack`, placement group `preferred`, NUMA `preferred`, the
label keys of the Kubeflow, MPI, JobSet and Volcano operators, the EKS, GKE and NVLink
topology labels, NVIDIA's GPU, MIG and DRA names) and how a mapping (a YAML section)
is validated. Where each default label comes from is cited in docs/locality.md.
Must not: read files (the caller loads YAML and passes the mapping and its source name
for error messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from bucketing.resources import DEFAULT_GPU_RESOURCE, DeviceNames
from common.fields import FieldReader
from kube.kinds import JOB_LABELS
from kube.labels import (
    JOB_LABEL,
    JOB_SIZE_ANNOTATION,
    NUMA_ANNOTATION,
    PACKING_ANNOTATION,
    PLACEHOLDER_LABEL,
    PLACEMENT_GROUP_ANNOTATION,
    PLACEMENT_GROUP_LABEL,
    PLACEMENT_GROUP_LABELS,
    ROLE_LABEL,
    TOPOLOGY_LEVEL_ANNOTATION,
)
from locality.model import Locality, Packing
from locality.numa import TopologyManagerPolicy, TopologyManagerScope


@dataclass(frozen=True, slots=True)
class JobLabelKeys:
    """Pod label keys: the one naming the job, and the one(s) naming the role.

    role: one key, or several tried in order (the first present gives the role).
    """

    job: str
    role: str | tuple[str, ...]

    @property
    def roles(self) -> tuple[str, ...]:
        return (self.role,) if isinstance(self.role, str) else self.role


DEFAULT_JOB_LABELS: tuple[JobLabelKeys, ...] = (
    # The training workloads' own (`kube.kinds`): Kubeflow's training operator and
    # mpi-operator, JobSets and Trainer v2 TrainJobs (their JobSet carries the TrainJob's
    # name; replicated jobs `node`, `launcher`, `dataset-initializer`, ...), KubeRay.
    *(JobLabelKeys(job, roles if len(roles) > 1 else roles[0]) for job, roles in JOB_LABELS),
    JobLabelKeys("volcano.sh/job-name", "volcano.sh/task-spec"),
    JobLabelKeys(JOB_LABEL, ROLE_LABEL),
)


@dataclass(frozen=True, slots=True)
class TopologyLevel:
    """One level of the network topology: a name and the node label keys giving a
    node's domain at this level (the first present wins). The level named
    `placement-group` takes its keys from `placement_group_labels`."""

    name: str
    labels: tuple[str, ...] = ()


PLACEMENT_GROUP_LEVEL = "placement-group"

# Widest first. EKS: topology.k8s.aws/network-node-layer-1 is the top of the network
# hierarchy, layer-2 the middle, layer-3 the bottom on most instance types. GKE:
# gce-topology-block > subblock (> host). NVIDIA GPU Feature Discovery: the NVLink
# clique (multi-node NVLink domain such as GB200 NVL72). See docs/locality.md.
DEFAULT_TOPOLOGY_LEVELS: tuple[TopologyLevel, ...] = (
    TopologyLevel(
        "block", ("topology.k8s.aws/network-node-layer-1", "cloud.google.com/gce-topology-block")
    ),
    TopologyLevel(
        "subblock",
        ("topology.k8s.aws/network-node-layer-2", "cloud.google.com/gce-topology-subblock"),
    ),
    TopologyLevel(PLACEMENT_GROUP_LEVEL),
    TopologyLevel("nvlink", ("nvidia.com/gpu.clique",)),
)


@dataclass(frozen=True, slots=True)
class DraGpuSource:
    """GPUs published by a DRA driver as ResourceSlice devices.

    driver: `spec.driver` of the ResourceSlices. attributes: device attributes that
    must equal these values for a device to count (a key without a domain means the
    driver's domain, as in CEL `device.attributes['<driver>'].<key>`). resource: the
    device kind they count as (a GPU resource name: node capacity and pod requests of
    that name meet). device_classes: DeviceClasses whose ResourceClaim requests count
    as GPUs of that kind.
    """

    driver: str
    resource: str
    device_classes: tuple[str, ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()


# NVIDIA's DRA driver: driver gpu.nvidia.com, DeviceClass gpu.nvidia.com selecting
# `device.attributes['gpu.nvidia.com'].type == 'gpu'` with extendedResourceName
# nvidia.com/gpu (MIG devices have type `mig`, class mig.nvidia.com).
DEFAULT_DRA_GPUS: tuple[DraGpuSource, ...] = (
    DraGpuSource("gpu.nvidia.com", "nvidia.com/gpu", ("gpu.nvidia.com",), (("type", "gpu"),)),
)

DEFAULT_PLACEMENT_GROUP_LABELS: tuple[str, ...] = PLACEMENT_GROUP_LABELS

# Taints that keep every ordinary pod off a node: the node lifecycle controller's
# (not ready, unreachable, cordoned, pressure), the cloud provider's, and the scale-down
# taints of cluster-autoscaler and Karpenter (the node is about to be deleted, and
# looks idle, so without this a draining group would attract a job's first pod).
DEFAULT_UNAVAILABLE_NODE_TAINTS: tuple[str, ...] = (
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "node.cloudprovider.kubernetes.io/shutdown",
    "ToBeDeletedByClusterAutoscaler",
    "karpenter.sh/disrupted",
    "karpenter.sh/disruption",
)


@dataclass(frozen=True, slots=True)
class LocalityConfig:
    """Settings of the locality decisions. Every field has a default; see docs/locality.md."""

    job_labels: tuple[JobLabelKeys, ...] = DEFAULT_JOB_LABELS
    """Label pairs (job name, role) tried in order; the first whose job key is on the pod wins."""

    packing_annotation: str = PACKING_ANNOTATION
    """Pod annotation choosing `pack` or `spread`."""

    placement_group_annotation: str = PLACEMENT_GROUP_ANNOTATION
    """Pod annotation choosing placement-group locality `required`, `preferred` or `none`."""

    topology_level_annotation: str = TOPOLOGY_LEVEL_ANNOTATION
    """Pod annotation naming the topology level (`topology_levels`) that a `required`
    placement-group policy holds the job to; absent: the placement-group level."""

    numa_annotation: str = NUMA_ANNOTATION
    """Pod annotation choosing single-NUMA fit `required`, `preferred` or `none` (GPU pods)."""

    job_size_annotation: str = JOB_SIZE_ANNOTATION
    """Pod annotation with the job's total pod count, for jobs whose pods are not all
    created at once; pods the cache has not seen are assumed to request what this pod does."""

    pod_group_annotation: str = "scheduling.k8s.io/group-name"
    """Pod annotation naming its Volcano PodGroup (scheduling.volcano.sh/v1beta1), whose
    `minMember` is the job size when the job-size annotation is absent."""

    pod_group_label: str = "scheduling.x-k8s.io/pod-group"
    """Pod label naming its scheduler-plugins Coscheduling PodGroup
    (scheduling.x-k8s.io/v1alpha1), used the same way."""

    default_packing: Packing = Packing.PACK
    """Packing when the pod has no (valid) packing annotation."""

    default_placement_group: Locality = Locality.PREFERRED
    """Placement-group locality when the pod has no (valid) annotation."""

    default_numa: Locality = Locality.PREFERRED
    """Single-NUMA fit when the pod has no (valid) annotation."""

    placement_group_labels: tuple[str, ...] = DEFAULT_PLACEMENT_GROUP_LABELS
    """Node label keys naming a node's placement group; the first present wins."""

    topology_levels: tuple[TopologyLevel, ...] = DEFAULT_TOPOLOGY_LEVELS
    """Network topology levels, widest first, each with the node label keys of its
    domains; one must be `placement-group` (its keys are `placement_group_labels`)."""

    instance_type_label: str = "node.kubernetes.io/instance-type"
    """Node label with the instance type."""

    placeholder_label: str = PLACEHOLDER_LABEL
    """Pod label marking a headstart placeholder (value "true"), honoured only in
    `placeholder_namespaces`."""

    placeholder_namespaces: tuple[str, ...] = ("headstart",)
    """Namespaces where a pod with `placeholder_label` is a placeholder (the
    overprovisioner's `placeholders.namespace`; tenants cannot create pods there).
    Anywhere else the label is an ordinary pod's: its room is not counted free for
    others, and the placement gate is not skipped for it."""

    placeholder_priority_class: str = "headstart-placeholder"
    """The PriorityClass a placeholder runs at (the overprovisioner's
    `placeholders.priority_class_name`): with the label, a placeholders' namespace and a
    ReplicaSet as its controller, what makes a pod a placeholder (locality.placeholders)."""

    placeholder_group_label: str = PLACEMENT_GROUP_LABEL
    """Placeholder pod label naming the placement group it holds capacity in."""

    unavailable_node_taints: tuple[str, ...] = DEFAULT_UNAVAILABLE_NODE_TAINTS
    """Taint keys (effect NoSchedule or NoExecute) that mean a node takes no new pods:
    its capacity does not count when sizing placement groups for a job's first pod."""

    gpu_resources: tuple[str, ...] = (DEFAULT_GPU_RESOURCE, "amd.com/gpu")
    """Extended-resource names of whole GPUs (in pod requests, node allocatable, NRT
    zones); a node's GPUs are their sum, and each name is also a kind of its own (an
    `amd.com/gpu` pod fits only nodes with `amd.com/gpu`). The key `gpu_resource`
    (one name) is accepted too."""

    device_resource_prefixes: tuple[str, ...] = ("nvidia.com/mig-",)
    """Extended resources that are devices of their own kind but not whole GPUs: MIG
    slices under the device plugin's mixed strategy (`nvidia.com/mig-1g.5gb` ...). A pod
    asking for one fits only nodes advertising that kind."""

    dra_gpus: tuple[DraGpuSource, ...] = DEFAULT_DRA_GPUS
    """GPUs published through DRA: ResourceSlice devices of these drivers count as GPUs
    of the given resource on their node, ResourceClaim requests of these DeviceClasses
    as the pod's GPUs."""

    numa_default_policy: TopologyManagerPolicy = TopologyManagerPolicy.NONE
    """The Topology Manager policy assumed for a node whose NodeResourceTopology
    publishes no `topologyManagerPolicy` attribute (kubelet's default, `none`, as
    scheduler-plugins assumes)."""

    numa_default_scope: TopologyManagerScope = TopologyManagerScope.CONTAINER
    """The scope assumed when the NRT publishes no `topologyManagerScope` (kubelet's
    default, `container`)."""

    assumed_ttl_seconds: float = 90.0
    """How long the extender trusts what it knows before the API shows it: a pod's node
    from its bind call until the watch shows the binding, and a pod it answered for
    until its bind call comes (`extender.inflight`). A bind can come late: a Permit
    plugin holds a gang's pods until the whole gang is placed, up to scheduler-plugins
    Coscheduling's `permitWaitingTimeSeconds` (60 s by default, apis/config/v1/
    defaults.go), and the pods answered first must still count as in flight when the
    last one is placed. 90 s is that 60 s plus a margin for PreBind and the watch; raise
    it with a longer Permit wait. Entries end earlier as soon as the binding shows or
    the bind fails."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, source: str = "config") -> LocalityConfig:
        """Validate a mapping (a YAML section) into a config; errors name `source` and the field.

        Unknown keys are errors (a typo must not silently fall back to a default).
        """
        if data is None:
            return cls()
        reader = FieldReader(source)
        data = reader.mapping(data, "")
        reader.known(data, "", {f.name for f in fields(cls)} | {"gpu_resource"})
        if "gpu_resource" in data and "gpu_resources" in data:
            raise reader.fail("gpu_resource", "give gpu_resources or gpu_resource, not both")
        values: dict[str, Any] = {}
        for name, raw in data.items():
            if name == "job_labels":
                values[name] = _job_labels(reader, raw, name)
            elif name in ("placement_group_labels", "unavailable_node_taints", "gpu_resources",
                          "placeholder_namespaces"):
                values[name] = reader.as_strings(raw, name)
            elif name == "device_resource_prefixes":
                values[name] = reader.as_strings(raw, name, allow_empty=True)
            elif name == "gpu_resource":
                values["gpu_resources"] = (reader.as_string(raw, name),)
            elif name == "topology_levels":
                values[name] = _topology_levels(reader, raw, name)
            elif name == "dra_gpus":
                values[name] = _dra_gpus(reader, raw, name)
            elif name == "numa_default_policy":
                values[name] = _enum(reader, TopologyManagerPolicy, raw, name)
            elif name == "numa_default_scope":
                values[name] = _enum(reader, TopologyManagerScope, raw, name)
            elif name == "default_packing":
                values[name] = _enum(reader, Packing, raw, name)
            elif name in ("default_placement_group", "default_numa"):
                values[name] = _enum(reader, Locality, raw, name)
            elif name == "assumed_ttl_seconds":
                values[name] = reader.as_number(raw, name, positive=True, unit="seconds")
            else:
                values[name] = reader.as_string(raw, name)
        return cls(**values)

    @property
    def gpu_resource(self) -> str:
        """The first whole-GPU resource name (the one placeholders and traces use)."""
        return self.gpu_resources[0]

    @property
    def device_names(self) -> DeviceNames | None:
        """The resource names kept per kind (`bucketing.resources.Resources.devices`);
        None when there is only one kind to count (one GPU name, no MIG prefixes, no
        DRA sources of another name): then the GPU dimension says it all."""
        names = frozenset(self.gpu_resources) | {source.resource for source in self.dra_gpus}
        if len(names) <= 1 and not self.device_resource_prefixes:
            return None
        return DeviceNames(names, self.device_resource_prefixes)

    @property
    def placement_group_level(self) -> int:
        """Index of the `placement-group` level in `topology_levels`."""
        for index, level in enumerate(self.topology_levels):
            if level.name == PLACEMENT_GROUP_LEVEL:
                return index
        raise AssertionError("validated: topology_levels has a placement-group level")

    def level_labels(self, index: int) -> tuple[str, ...]:
        """The node label keys of level `index` (the placement-group level's are
        `placement_group_labels`)."""
        level = self.topology_levels[index]
        return self.placement_group_labels if level.name == PLACEMENT_GROUP_LEVEL else level.labels


def _job_labels(reader: FieldReader, raw: Any, path: str) -> tuple[JobLabelKeys, ...]:
    if not isinstance(raw, list | tuple) or not raw:
        raise reader.fail(path, "expected a non-empty list of {job: ..., role: ...}")
    pairs = []
    for index, item in enumerate(raw):
        at = f"{path}[{index}]"
        if not isinstance(item, Mapping) or set(item) != {"job", "role"}:
            raise reader.fail(at, f"expected exactly the keys job and role, got {item!r}")
        role = item["role"]
        roles = (reader.as_strings(role, f"{at}.role") if isinstance(role, list | tuple)
                 else reader.as_string(role, f"{at}.role"))
        pairs.append(JobLabelKeys(reader.as_string(item["job"], f"{at}.job"), roles))
    return tuple(pairs)


def _topology_levels(reader: FieldReader, raw: Any, path: str) -> tuple[TopologyLevel, ...]:
    if not isinstance(raw, list | tuple) or not raw:
        raise reader.fail(path, "expected a non-empty list of {name: ..., labels: [...]}")
    levels: list[TopologyLevel] = []
    for index, item in enumerate(raw):
        at = f"{path}[{index}]"
        if not isinstance(item, Mapping) or not set(item) <= {"name", "labels"} \
                or "name" not in item:
            raise reader.fail(at, f"expected the keys name and labels, got {item!r}")
        name = reader.as_string(item["name"], f"{at}.name")
        if any(level.name == name for level in levels):
            raise reader.fail(f"{at}.name", f"level {name!r} is listed twice")
        if name == PLACEMENT_GROUP_LEVEL:
            if "labels" in item:
                raise reader.fail(f"{at}.labels", "the placement-group level takes its "
                                                  "labels from placement_group_labels")
            levels.append(TopologyLevel(name))
        else:
            levels.append(TopologyLevel(name, reader.as_strings(item.get("labels"),
                                                                f"{at}.labels")))
    if not any(level.name == PLACEMENT_GROUP_LEVEL for level in levels):
        raise reader.fail(path, f"expected a level named {PLACEMENT_GROUP_LEVEL} (the level "
                                f"of the {PLACEMENT_GROUP_ANNOTATION} policy)")
    return tuple(levels)


def _dra_gpus(reader: FieldReader, raw: Any, path: str) -> tuple[DraGpuSource, ...]:
    if not isinstance(raw, list | tuple):
        raise reader.fail(path, "expected a list of {driver, resource, device_classes, "
                                "attributes}")
    sources = []
    allowed = {"driver", "resource", "device_classes", "attributes"}
    for index, item in enumerate(raw):
        at = f"{path}[{index}]"
        if not isinstance(item, Mapping) or not set(item) <= allowed \
                or not {"driver", "resource"} <= set(item):
            raise reader.fail(at, "expected driver and resource (and optionally "
                                  f"device_classes, attributes), got {item!r}")
        attributes = item.get("attributes") or {}
        if not isinstance(attributes, Mapping):
            raise reader.fail(f"{at}.attributes", "expected a map of attribute to value")
        pairs = []
        for key, value in attributes.items():
            if not isinstance(value, str | int | bool) or isinstance(value, float):
                raise reader.fail(f"{at}.attributes.{key}", "expected a string, integer or "
                                                            f"boolean, got {value!r}")
            pairs.append((reader.as_string(key, f"{at}.attributes"), _attribute_text(value)))
        sources.append(DraGpuSource(
            reader.as_string(item["driver"], f"{at}.driver"),
            reader.as_string(item["resource"], f"{at}.resource"),
            reader.as_strings(item.get("device_classes", []), f"{at}.device_classes",
                              allow_empty=True),
            tuple(sorted(pairs)),
        ))
    return tuple(sources)


def _attribute_text(value: str | int | bool) -> str:
    """An attribute value as compared with a ResourceSlice's (`true`, `8`, `gpu`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _enum(reader: FieldReader, enum_type: Any, raw: Any, path: str) -> Any:
    return enum_type(reader.as_choice(raw, path, [member.value for member in enum_type],
                                      fold_case=True))
