"""How a placeholder pinned to a zone and capacity type selects its nodes (pure).

Decides, for a pin (predictor.history.pinning.Pin: the zone and the normalized capacity type
`on-demand`, `spot`, ... that pinned pods required) and the cluster's capacity-type label
key (`placeholders.capacity_type_label`, config_catalog.capacity_type_label):
- which part of the pin a placeholder can select (`selectable_pin`): a zone, as
  `topology.kubernetes.io/zone` (the well-known label every cloud provider's nodes
  carry, and cluster-autoscaler's and Karpenter's node templates with them); a capacity
  type only when the label key can say it: `eks.amazonaws.com/capacityType` has
  `ON_DEMAND`, `SPOT`, `CAPACITY_BLOCK`; `karpenter.sh/capacity-type` has `on-demand`,
  `spot`, `reserved`; `cloud.google.com/gke-spot` has `"true"` on Spot nodes and
  nothing on the others, so it says spot and on-demand only. A part it cannot say (or a
  value that is no valid label value) is dropped: that placeholder stays unpinned on it,
  which costs a pinned pod what it costs today and never makes a node nobody can use;
- the constraints (`pin_constraints`): nodeSelector entries for what a label value
  says, a required node affinity `NotIn ["true"]` for GKE on-demand (a label absent is
  not something a nodeSelector can require; NotIn matches nodes without the label), and
  a toleration of GKE's Spot taint (`cloud.google.com/gke-spot=true:NoSchedule`, which
  Spot node pools may carry) for GKE spot placeholders.

Must not: read the clock, log, call the API, or mutate its inputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from predictor.history.pinning import UNPINNED, Pin

NODE_ZONE = "topology.kubernetes.io/zone"
EKS_CAPACITY = "eks.amazonaws.com/capacityType"
KARPENTER_CAPACITY = "karpenter.sh/capacity-type"
GKE_SPOT = "cloud.google.com/gke-spot"
# Normalized capacity type (predictor.history.pinning.capacity_type) -> the label's value.
_VALUES = {
    EKS_CAPACITY: {"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-block": "CAPACITY_BLOCK"},
    KARPENTER_CAPACITY: {"on-demand": "on-demand", "spot": "spot", "reserved": "reserved"},
    GKE_SPOT: {"spot": "true", "on-demand": None},  # None: the label is absent
}
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


@dataclass(frozen=True)
class PinConstraints:
    """What a pinned placeholder's pod spec adds to its type and group selection."""

    node_selector: dict[str, str] = field(default_factory=dict)
    match_expressions: tuple[dict[str, Any], ...] = ()
    tolerations: tuple[dict[str, str], ...] = ()


def valid_label_value(text: str) -> bool:
    return len(text) <= 63 and bool(_LABEL_VALUE.fullmatch(text))


def selectable_pin(pin: Pin, capacity_label: str) -> Pin:
    """The part of `pin` a placeholder can select with `capacity_label` ("" = none)."""
    zone = pin.zone if pin.zone is not None and valid_label_value(pin.zone) else None
    capacity = pin.capacity_type
    if capacity is not None and (capacity not in _VALUES.get(capacity_label, {})
                                 or not valid_label_value(capacity)):
        capacity = None
    return Pin(zone, capacity) if (zone, capacity) != (None, None) else UNPINNED


def pin_constraints(pin: Pin, capacity_label: str) -> PinConstraints:
    """nodeSelector entries, node-affinity expressions and tolerations for `pin` (already
    `selectable_pin`: a part the label cannot say raises KeyError)."""
    selector: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    tolerations: list[dict[str, str]] = []
    if pin.zone is not None:
        selector[NODE_ZONE] = pin.zone
    if pin.capacity_type is not None:
        value = _VALUES[capacity_label][pin.capacity_type]
        if value is not None:
            selector[capacity_label] = value
        else:
            expressions.append({"key": capacity_label, "operator": "NotIn", "values": ["true"]})
        if capacity_label == GKE_SPOT and value == "true":
            tolerations.append({"key": GKE_SPOT, "operator": "Equal", "value": "true",
                                "effect": "NoSchedule"})
    return PinConstraints(selector, tuple(expressions), tuple(tolerations))
