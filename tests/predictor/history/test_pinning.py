"""A pod's required zone and capacity type, and the pinned-demand series names."""

from __future__ import annotations

import pytest

from predictor.history.pinning import UNPINNED, Pin, pinned_column, pod_pin, split_pinned_column

ZONE = "topology.kubernetes.io/zone"


def pod(node_selector=None, terms=None):
    spec = {"containers": [{"name": "c"}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if terms is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}}
    return {"spec": spec}


def expr(key, *values, operator="In"):
    return {"key": key, "operator": operator, "values": list(values)}


PINS = [
    (pod(), UNPINNED, "none"),
    (pod({ZONE: "us-east-1a"}), Pin("us-east-1a"), "zone-node-selector"),
    (pod({"failure-domain.beta.kubernetes.io/zone": "us-east-1b"}), Pin("us-east-1b"),
     "deprecated-zone-label"),
    # an EBS volume's PV affinity, copied into the pod: one term, In one zone
    (pod(terms=[[expr(ZONE, "us-east-1a")]]), Pin("us-east-1a"), "zone-affinity"),
    # terms are ORed: both must require the same zone
    (pod(terms=[[expr(ZONE, "us-east-1a")], [expr(ZONE, "us-east-1a"),
                                            expr("x", "y")]]), Pin("us-east-1a"),
     "every-term-same-zone"),
    (pod(terms=[[expr(ZONE, "us-east-1a")], [expr(ZONE, "us-east-1b")]]), UNPINNED,
     "terms-allow-two-zones"),
    (pod(terms=[[expr(ZONE, "us-east-1a")], [expr("x", "y")]]), UNPINNED,
     "a-term-without-zone"),
    (pod(terms=[[expr(ZONE, "us-east-1a", "us-east-1b")]]), UNPINNED, "in-two-zones"),
    (pod(terms=[[expr(ZONE, "us-east-1a", operator="NotIn")]]), UNPINNED, "not-in"),
    (pod({"karpenter.sh/capacity-type": "on-demand"}), Pin(None, "on-demand"), "karpenter"),
    (pod({"eks.amazonaws.com/capacityType": "ON_DEMAND"}), Pin(None, "on-demand"),
     "eks-on-demand"),
    (pod(terms=[[expr("eks.amazonaws.com/capacityType", "SPOT")]]), Pin(None, "spot"),
     "eks-spot-affinity"),
    (pod({"cloud.google.com/gke-spot": "true"}), Pin(None, "spot"), "gke-spot"),
    (pod({"cloud.google.com/gke-spot": "false"}), UNPINNED, "gke-spot-false"),
    # Karpenter and EKS spell it differently in two terms; both mean on-demand
    (pod(terms=[[expr("karpenter.sh/capacity-type", "on-demand")],
                [expr("eks.amazonaws.com/capacityType", "ON_DEMAND")]]),
     Pin(None, "on-demand"), "two-spellings-one-type"),
    (pod({ZONE: "europe-west4-a", "cloud.google.com/gke-spot": "true"}),
     Pin("europe-west4-a", "spot"), "zone-and-capacity"),
]


@pytest.mark.parametrize("obj, expected", [p[:2] for p in PINS], ids=[p[2] for p in PINS])
def test_pod_pin(obj, expected):
    assert pod_pin(obj) == expected


@pytest.mark.parametrize(
    "bucket, group, pin, column",
    [("g5.xlarge", None, Pin("us-east-1a"), "pinned:g5.xlarge/zone=us-east-1a"),
     ("g5.xlarge", "pg-a", Pin(None, "spot"), "pinned:g5.xlarge@pg-a/capacity=spot"),
     ("p4d.24xlarge", "pg-b", Pin("us-east-1c", "on-demand"),
      "pinned:p4d.24xlarge@pg-b/zone=us-east-1c/capacity=on-demand")],
    ids=["zone", "group-capacity", "both"],
)
def test_pinned_columns_round_trip(bucket, group, pin, column):
    assert pinned_column(bucket, group, pin) == column
    assert split_pinned_column(column) == (bucket, group, pin)
