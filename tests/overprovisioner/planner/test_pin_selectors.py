"""How a pinned placeholder selects its zone and capacity type (pure core)."""

from __future__ import annotations

import pytest

from overprovisioner.planner.pin_selectors import PinConstraints, pin_constraints, selectable_pin
from predictor.history.pinning import UNPINNED, Pin

EKS = "eks.amazonaws.com/capacityType"
KARPENTER = "karpenter.sh/capacity-type"
GKE = "cloud.google.com/gke-spot"
ZONE = "topology.kubernetes.io/zone"
GKE_SPOT_TOLERATION = {"key": GKE, "operator": "Equal", "value": "true",
                       "effect": "NoSchedule"}

CONSTRAINTS = [
    (Pin("us-east-1a"), EKS, PinConstraints({ZONE: "us-east-1a"}), "zone"),
    (Pin(None, "on-demand"), EKS, PinConstraints({EKS: "ON_DEMAND"}), "eks-on-demand"),
    (Pin("us-east-1a", "spot"), EKS, PinConstraints({ZONE: "us-east-1a", EKS: "SPOT"}),
     "eks-zone-and-spot"),
    (Pin(None, "capacity-block"), EKS, PinConstraints({EKS: "CAPACITY_BLOCK"}), "eks-block"),
    (Pin(None, "on-demand"), KARPENTER, PinConstraints({KARPENTER: "on-demand"}),
     "karpenter"),
    (Pin(None, "spot"), GKE, PinConstraints({GKE: "true"}, (), (GKE_SPOT_TOLERATION,)),
     "gke-spot"),
    # GKE's on-demand nodes carry no gke-spot label: NotIn ["true"] matches them
    (Pin("us-central1-a", "on-demand"), GKE, PinConstraints(
        {ZONE: "us-central1-a"}, ({"key": GKE, "operator": "NotIn", "values": ["true"]},)),
     "gke-on-demand"),
]


@pytest.mark.parametrize("pin, label, expected", [c[:3] for c in CONSTRAINTS],
                         ids=[c[3] for c in CONSTRAINTS])
def test_pin_constraints(pin, label, expected):
    assert selectable_pin(pin, label) == pin
    assert pin_constraints(pin, label) == expected


SELECTABLE = [
    (Pin("us-east-1a", "spot"), "", Pin("us-east-1a"), "no-label-zone-only"),
    (Pin(None, "spot"), "", UNPINNED, "no-label-nothing"),
    (Pin(None, "reserved"), EKS, UNPINNED, "eks-has-no-reserved"),
    (Pin(None, "reserved"), GKE, UNPINNED, "gke-has-no-reserved"),
    (Pin("a zone!", "spot"), KARPENTER, Pin(None, "spot"), "invalid-zone-value"),
]


@pytest.mark.parametrize("pin, label, expected", [c[:3] for c in SELECTABLE],
                         ids=[c[3] for c in SELECTABLE])
def test_what_cannot_be_selected_stays_unpinned(pin, label, expected):
    assert selectable_pin(pin, label) == expected
