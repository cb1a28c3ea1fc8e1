"""What cluster-autoscaler's status ConfigMap says: whether it runs, and per node group
its minimum, maximum and current size.

The ConfigMap (`cluster-autoscaler-status` in CA's namespace, key `status`) is YAML
since cluster-autoscaler 1.30 (kubernetes/autoscaler cluster-autoscaler/clusterstate/
api/types.go `ClusterAutoscalerStatus`): `autoscalerStatus` (Running, Initializing),
`nodeGroups[]` with `name` and `health` {`nodeCounts.registered.total`,
`cloudProviderTarget`, `minSize`, `maxSize`}. The older text format is reported as
unreadable rather than guessed at. Read by the overprovisioner's diagnostics (does CA
run, with node groups?) and the extender's job admitter (how many nodes each group can
still add): one parser for both, below both in the import layers.

Must not: do I/O, log, read the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True)
class GroupSize:
    """One node group as CA reports it. current: the larger of its registered nodes and
    the cloud provider's target (nodes asked for and not registered yet count: they
    are coming)."""

    name: str
    min_size: int
    max_size: int
    registered: int
    target: int

    @property
    def current(self) -> int:
        return max(self.registered, self.target)

    @property
    def headroom(self) -> int:
        """Nodes CA may still add to the group."""
        return max(self.max_size - self.current, 0)


@dataclass(frozen=True)
class AutoscalerStatus:
    """What cluster-autoscaler's status ConfigMap says; `node_groups` None = unknown.
    groups: the node groups whose sizes parse, by name."""

    found: bool = False
    running: bool | None = None
    node_groups: int | None = None
    detail: str = "not read"
    groups: Mapping[str, GroupSize] | None = None


def parse_autoscaler_status(configmap: Mapping[str, Any] | None) -> AutoscalerStatus:
    """Read the status ConfigMap (None = absent: CA not running there, or not named so)."""
    if configmap is None:
        return AutoscalerStatus(detail="no status ConfigMap (cluster-autoscaler not running, "
                                       "or writing it elsewhere)")
    text = ((configmap.get("data") or {}).get("status")) or ""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        document = None
    if not isinstance(document, Mapping) or "autoscalerStatus" not in document:
        return AutoscalerStatus(found=True, detail="status in the text format of "
                                "cluster-autoscaler before 1.30: not read")
    running = document.get("autoscalerStatus") == "Running"
    groups = document.get("nodeGroups") or []
    count = len(groups) if isinstance(groups, list) else None
    sizes = {}
    for entry in groups if isinstance(groups, list) else ():
        size = _group_size(entry)
        if size is not None:
            sizes[size.name] = size
    return AutoscalerStatus(True, running, count,
                            f"autoscalerStatus {document.get('autoscalerStatus')}, "
                            f"{count} node group(s)", sizes)


def _group_size(entry: Any) -> GroupSize | None:
    """A node group's sizes; None when its name or maxSize is missing or not a number."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        return None
    health = entry.get("health")
    health = health if isinstance(health, Mapping) else {}
    counts = health.get("nodeCounts")
    registered = (counts.get("registered") if isinstance(counts, Mapping) else None) or {}
    total = registered.get("total", 0) if isinstance(registered, Mapping) else 0
    numbers = (health.get("maxSize"), health.get("minSize", 0),
               health.get("cloudProviderTarget", 0), total)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return None
    max_size, min_size, target, total = numbers
    return GroupSize(entry["name"], min_size, max_size, total, target)
