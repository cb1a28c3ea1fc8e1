"""The locality settings: which labels name a job and its role, which annotations set
a job's policy, the defaults, the placement-group node labels, the GPU resource.

Decides: the defaults (`pack`, placement group `preferred`, NUMA `preferred`) and how a
mapping (a YAML section) is validated. Must not: read files (the caller loads YAML and
passes the mapping and its source name for error messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from bucketing.errors import ConfigError
from bucketing.labels import PLACEMENT_GROUP_LABELS
from bucketing.resources import DEFAULT_GPU_RESOURCE
from locality.model import Locality, Packing


@dataclass(frozen=True, slots=True)
class JobLabelKeys:
    """A pair of pod label keys: the one naming the job and the one naming the role."""

    job: str
    role: str


DEFAULT_JOB_LABELS: tuple[JobLabelKeys, ...] = (
    JobLabelKeys("training.kubeflow.org/job-name", "training.kubeflow.org/replica-type"),
    JobLabelKeys("volcano.sh/job-name", "volcano.sh/task-spec"),
    JobLabelKeys("headstart.io/job", "headstart.io/role"),
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

    packing_annotation: str = "headstart.io/packing"
    """Pod annotation choosing `pack` or `spread`."""

    placement_group_annotation: str = "headstart.io/placement-group"
    """Pod annotation choosing placement-group locality `required`, `preferred` or `none`."""

    numa_annotation: str = "headstart.io/numa"
    """Pod annotation choosing single-NUMA fit `required`, `preferred` or `none` (GPU pods)."""

    job_size_annotation: str = "headstart.io/job-size"
    """Pod annotation with the job's total pod count, for jobs whose pods are not all
    created at once; pods the cache has not seen are assumed to request what this pod does."""

    default_packing: Packing = Packing.PACK
    """Packing when the pod has no (valid) packing annotation."""

    default_placement_group: Locality = Locality.PREFERRED
    """Placement-group locality when the pod has no (valid) annotation."""

    default_numa: Locality = Locality.PREFERRED
    """Single-NUMA fit when the pod has no (valid) annotation."""

    placement_group_labels: tuple[str, ...] = DEFAULT_PLACEMENT_GROUP_LABELS
    """Node label keys naming a node's placement group; the first present wins."""

    instance_type_label: str = "node.kubernetes.io/instance-type"
    """Node label with the instance type."""

    placeholder_label: str = "headstart.io/placeholder"
    """Pod label marking a headstart placeholder (value "true")."""

    placeholder_group_label: str = "headstart.io/placement-group"
    """Placeholder pod label naming the placement group it holds capacity in."""

    unavailable_node_taints: tuple[str, ...] = DEFAULT_UNAVAILABLE_NODE_TAINTS
    """Taint keys (effect NoSchedule or NoExecute) that mean a node takes no new pods:
    its capacity does not count when sizing placement groups for a job's first pod."""

    gpu_resource: str = DEFAULT_GPU_RESOURCE
    """Extended-resource name of a GPU, in pod requests, node allocatable and NRT zones."""

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
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a mapping, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"{source}: unknown field(s) {', '.join(map(str, unknown))}; "
                f"known: {', '.join(sorted(known))}"
            )
        values: dict[str, Any] = {}
        for name, raw in data.items():
            where = f"{source}: {name}"
            if name == "job_labels":
                values[name] = _job_labels(raw, where)
            elif name in ("placement_group_labels", "unavailable_node_taints"):
                values[name] = _string_tuple(raw, where)
            elif name == "default_packing":
                values[name] = _enum(Packing, raw, where)
            elif name in ("default_placement_group", "default_numa"):
                values[name] = _enum(Locality, raw, where)
            elif name == "assumed_ttl_seconds":
                if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
                    raise ConfigError(
                        f"{where}: expected a positive number of seconds, got {raw!r}"
                    )
                values[name] = float(raw)
            else:
                values[name] = _string(raw, where)
        return cls(**values)


def _string(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{where}: expected a non-empty string, got {raw!r}")
    return raw


def _string_tuple(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list | tuple) or not raw:
        raise ConfigError(f"{where}: expected a non-empty list of strings, got {raw!r}")
    return tuple(_string(item, f"{where}[{index}]") for index, item in enumerate(raw))


def _job_labels(raw: Any, where: str) -> tuple[JobLabelKeys, ...]:
    if not isinstance(raw, list | tuple) or not raw:
        raise ConfigError(f"{where}: expected a non-empty list of {{job: ..., role: ...}}")
    pairs = []
    for index, item in enumerate(raw):
        item_where = f"{where}[{index}]"
        if not isinstance(item, Mapping) or set(item) != {"job", "role"}:
            raise ConfigError(f"{item_where}: expected exactly the keys job and role, got {item!r}")
        pairs.append(
            JobLabelKeys(_string(item["job"], f"{item_where}.job"),
                         _string(item["role"], f"{item_where}.role"))
        )
    return tuple(pairs)


def _enum(enum_type: Any, raw: Any, where: str) -> Any:
    allowed = [member.value for member in enum_type]
    if not isinstance(raw, str) or raw.lower() not in allowed:
        raise ConfigError(f"{where}: expected one of {', '.join(allowed)}, got {raw!r}")
    return enum_type(raw.lower())
