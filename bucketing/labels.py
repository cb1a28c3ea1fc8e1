"""Node label keys every headstart component reads the same way (DESIGN.md conventions).

Decides: which node labels name a placement group, in which order (first match wins),
and how an operator's configured key goes in front of the conventional ones. Shared by
the predictor's recorder and the overprovisioner, which must put a node in the same
group, or the forecast is recorded under one group and planned under another.
"""

from __future__ import annotations

PLACEMENT_GROUP_LABELS: tuple[str, ...] = (
    "headstart.io/placement-group",
    "cloud.google.com/gke-placement-group",
    "topology.k8s.aws/network-node-layer-3",
    "cloud.google.com/gce-topology-block",
)
"""EC2 placement groups have no node label of their own: the node group sets headstart's."""

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def placement_group_labels(configured: str = "") -> tuple[str, ...]:
    """The keys to try, in order: `configured` (when set) first, then the conventional ones."""
    return tuple(dict.fromkeys(key for key in (configured, *PLACEMENT_GROUP_LABELS) if key))
