"""The patch that writes a domain into a gated pod: its shape for each affinity a pod
may already have (the API server's rules for gated pods: tests/fakekube.py and
test_admitter.py apply them)."""

from __future__ import annotations

import pytest

from extender.admission.patch import PREFERRED, REQUIRED, ungate_patch
from locality.model import Locality

GATE = "headstart.io/placement"
DOMAIN = ("pg-label", "pg-a", "placement-group=pg-a")
EXPR = {"key": "pg-label", "operator": "In", "values": ["pg-a"]}
GUARDS = [{"op": "test", "path": "/metadata/uid", "value": "u"},
          {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}]


def pod(gates=(GATE,), affinity=None, annotations=None):
    spec = {"schedulingGates": [{"name": g} for g in gates]}
    if affinity is not None:
        spec["affinity"] = affinity
    metadata = {"uid": "u", "resourceVersion": "7"}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": spec}


ANNOTATE_NEW = {"op": "add", "path": "/metadata/annotations",
                "value": {"headstart.io/domain": "placement-group=pg-a"}}


@pytest.mark.parametrize("raw, locality, tail", [
    # No affinity: the whole required term is set.
    (pod(), Locality.REQUIRED, [ANNOTATE_NEW, {"op": "add", "path": "/spec/affinity", "value": {
        "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [EXPR]}]}}}}]),
    # Two required terms (ORed): the expression is appended to each.
    (pod(affinity={"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}}},
        annotations={}),
     Locality.REQUIRED,
     [{"op": "add", "path": "/metadata/annotations/headstart.io~1domain",
       "value": "placement-group=pg-a"},
      {"op": "add", "path": f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms/0/"
                            "matchExpressions/-", "value": EXPR},
      {"op": "add", "path": f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms/1/"
                            "matchExpressions", "value": [EXPR]}]),
    # preferred, with a podAntiAffinity already there: only nodeAffinity is added.
    (pod(affinity={"podAntiAffinity": {}}), Locality.PREFERRED,
     [ANNOTATE_NEW, {"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {
         PREFERRED: [{"weight": 100, "preference": {"matchExpressions": [EXPR]}}]}}]),
], ids=["no-affinity", "required-terms-narrowed", "preferred-beside-pod-affinity"])
def test_patch_shapes(raw, locality, tail):
    ops = ungate_patch(raw, GATE, DOMAIN, locality)
    gate_ops = [{"op": "test", "path": "/spec/schedulingGates/0/name", "value": GATE},
                {"op": "remove", "path": "/spec/schedulingGates/0"}]
    assert ops == GUARDS + gate_ops + tail


def test_only_our_gate_is_removed_and_none_when_it_is_gone():
    ops = ungate_patch(pod(gates=("other", GATE)), GATE)
    assert ops[-2:] == [{"op": "test", "path": "/spec/schedulingGates/1/name", "value": GATE},
                        {"op": "remove", "path": "/spec/schedulingGates/1"}]
    assert ungate_patch(pod(gates=("other",)), GATE) is None


PG_LABEL = "scheduling.x-k8s.io/pod-group"


@pytest.mark.parametrize(("labels", "expected"), [
    # No labels at all: the map is created.
    (None, [{"op": "add", "path": "/metadata/labels", "value": {PG_LABEL: "a"}}]),
    # Other labels: the key is added (its "/" escaped).
    ({"app": "x"}, [{"op": "add", "path": "/metadata/labels/scheduling.x-k8s.io~1pod-group",
                     "value": "a"}]),
    # The pod names a PodGroup already: its value is never changed.
    ({PG_LABEL: "theirs"}, []),
])
def test_the_gangs_pod_group_label_is_added_never_changed(labels, expected):
    raw = pod()
    if labels is not None:
        raw["metadata"]["labels"] = labels
    ops = ungate_patch(raw, GATE, labels={PG_LABEL: "a"})
    assert ops[4:] == expected


def test_the_label_pass_adds_only_missing_labels_and_keeps_the_gate():
    from extender.admission.patch import label_patch

    pod = {"metadata": {"uid": "u", "resourceVersion": "7", "labels": {"team": "a"}},
           "spec": {"schedulingGates": [{"name": "headstart.io/placement"}]}}
    ops = label_patch(pod, "headstart.io/placement", {"scheduling.x-k8s.io/pod-group": "g"})
    assert ops == [{"op": "test", "path": "/metadata/uid", "value": "u"},
                   {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                   {"op": "add", "path": "/metadata/labels/scheduling.x-k8s.io~1pod-group",
                    "value": "g"}]
    labelled = {**pod, "metadata": {**pod["metadata"], "labels": {
        "scheduling.x-k8s.io/pod-group": "g"}}}
    assert label_patch(labelled, "headstart.io/placement",
                       {"scheduling.x-k8s.io/pod-group": "g"}) is None  # nothing to add
    ungated = {**pod, "spec": {}}
    assert label_patch(ungated, "headstart.io/placement",
                       {"scheduling.x-k8s.io/pod-group": "g"}) is None  # too late: left alone
