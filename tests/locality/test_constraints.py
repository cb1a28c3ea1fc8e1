"""Which nodes a pod may use: kube-scheduler's NodeAffinity and TaintToleration rules as
tables, and their parsing from Kubernetes JSON with errors that name the field."""

from __future__ import annotations

import pytest

from common.errors import InputError
from locality.constraints import PodConstraints, Requirement, Taint, Term, Toleration
from locality.parse import parse_node, parse_pod
from locality.parse_constraints import node_taints, pod_constraints
from tests.locality.builders import CONFIG

GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")
A100 = {"gpu.model": "a100", "zone": "z1", "cores": "96"}


@pytest.mark.parametrize(("requirement", "labels", "expected"), [
    (Requirement("gpu.model", "In", ("a100", "h100")), A100, True),
    (Requirement("gpu.model", "In", ("h100",)), A100, False),
    (Requirement("gpu.model", "In", ("a100",)), {}, False),
    (Requirement("gpu.model", "NotIn", ("h100",)), A100, True),
    (Requirement("gpu.model", "NotIn", ("a100",)), A100, False),
    (Requirement("gpu.model", "NotIn", ("a100",)), {}, True),  # absent label: not in
    (Requirement("zone", "Exists"), A100, True),
    (Requirement("zone", "Exists"), {}, False),
    (Requirement("zone", "DoesNotExist"), {}, True),
    (Requirement("zone", "DoesNotExist"), A100, False),
    (Requirement("cores", "Gt", ("64",)), A100, True),  # 96 > 64
    (Requirement("cores", "Gt", ("96",)), A100, False),  # 96 > 96 is false
    (Requirement("cores", "Lt", ("128",)), A100, True),
    (Requirement("zone", "Gt", ("1",)), A100, False),  # "z1" is no integer
    (Requirement("cores", "Gt", ("64",)), {}, False),
], ids=["in", "in-other", "in-absent", "notin", "notin-listed", "notin-absent", "exists",
        "exists-absent", "doesnotexist", "doesnotexist-present", "gt", "gt-equal", "lt",
        "gt-not-integer", "gt-absent"])
def test_requirement(requirement, labels, expected):
    assert requirement.matches(labels) is expected


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    (Toleration("nvidia.com/gpu", "Exists"), GPU_TAINT, True),
    (Toleration("nvidia.com/gpu", "Equal", "present"), GPU_TAINT, True),
    (Toleration("nvidia.com/gpu", "Equal", "absent"), GPU_TAINT, False),
    (Toleration("nvidia.com/gpu", "Exists", effect="NoExecute"), GPU_TAINT, False),
    (Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule"), GPU_TAINT, True),
    (Toleration("", "Exists"), GPU_TAINT, True),  # empty key, Exists: every taint
    (Toleration("other", "Exists"), GPU_TAINT, False),
], ids=["exists", "equal", "equal-other-value", "other-effect", "same-effect",
        "tolerate-everything", "other-key"])
def test_toleration(toleration, taint, expected):
    assert toleration.tolerates(taint) is expected


TOLERATES_GPU = (Toleration("nvidia.com/gpu", "Exists"),)


@pytest.mark.parametrize(("constraints", "name", "labels", "taints", "refused"), [
    (PodConstraints(), "n", A100, (), None),
    (PodConstraints(), "n", A100, (GPU_TAINT,), "taint nvidia.com/gpu=present:NoSchedule"),
    (PodConstraints(tolerations=TOLERATES_GPU), "n", A100, (GPU_TAINT,), None),
    (PodConstraints((("gpu.model", "a100"),)), "n", A100, (), None),
    (PodConstraints((("gpu.model", "h100"),)), "n", A100, (), "nodeSelector gpu.model=h100"),
    # Terms are ORed: the second matches.
    (PodConstraints(terms=(Term((Requirement("gpu.model", "In", ("h100",)),)),
                           Term((Requirement("zone", "In", ("z1",)),)))),
     "n", A100, (), None),
    # Expressions in one term are ANDed: the second fails.
    (PodConstraints(terms=(Term((Requirement("gpu.model", "In", ("a100",)),
                                 Requirement("zone", "In", ("z2",)))),)),
     "n", A100, (), "required node affinity"),
    # An empty term matches nothing.
    (PodConstraints(terms=(Term(),)), "n", A100, (), "required node affinity"),
    (PodConstraints(terms=(Term(fields=(Requirement("metadata.name", "In", ("n",)),)),)),
     "n", A100, (), None),
    (PodConstraints(terms=(Term(fields=(Requirement("metadata.name", "In", ("m",)),)),)),
     "n", A100, (), "required node affinity"),
], ids=["nothing-asked", "untolerated-taint", "tolerated-taint", "selector", "selector-other",
        "terms-ored", "expressions-anded", "empty-term", "match-fields", "match-fields-other"])
def test_refusal(constraints, name, labels, taints, refused):
    reason = constraints.refusal(name, labels, taints)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason


def pod(spec):
    return {"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}], **spec}}


def test_pod_constraints_parsed_from_the_spec():
    parsed = parse_pod(pod({
        "nodeSelector": {"gpu.model": "a100"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["z1", "z2"]}]}]}}},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                         "effect": "NoSchedule"}],
    }), CONFIG)
    assert parsed.constraints == PodConstraints(
        (("gpu.model", "a100"),),
        (Term((Requirement("zone", "In", ("z1", "z2")),)),),
        (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),))
    assert not parsed.deleting
    assert parse_pod({**pod({}), "metadata": {"name": "p", "deletionTimestamp":
                                              "2026-01-01T00:00:00Z"}}, CONFIG).deleting


def test_preferred_affinity_alone_constrains_nothing():
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}}
    assert parse_pod(pod(spec), CONFIG).constraints.terms is None


def test_node_taints_keep_the_hard_effects():
    node = parse_node({"metadata": {"name": "n"}, "spec": {"taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "soft", "effect": "PreferNoSchedule"},
        {"key": "gone", "effect": "NoExecute"}]}}, CONFIG)
    assert node.taints == (GPU_TAINT, Taint("gone", "", "NoExecute"))


@pytest.mark.parametrize(("spec", "path"), [
    ({"nodeSelector": ["a"]}, "pod.spec.nodeSelector"),
    ({"tolerations": [{"key": "a", "operator": "Maybe"}]}, "pod.spec.tolerations[0].operator"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]}}}},
     "nodeSelectorTerms[0].matchExpressions[0].operator"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.uid", "operator": "In",
                                                "values": ["x"]}]}]}}}},
     "nodeSelectorTerms[0].matchFields[0].key"),
], ids=["selector-not-a-map", "toleration-operator", "expression-operator", "field-key"])
def test_malformed_constraints_name_the_field(spec, path):
    with pytest.raises(InputError, match=path.replace("[", r"\[").replace("]", r"\]")):
        pod_constraints(spec, "pod.spec")


def test_malformed_taint_names_the_field():
    with pytest.raises(InputError, match=r"node.spec.taints\[0\].key"):
        node_taints([{"effect": "NoSchedule"}], "node.spec.taints")
