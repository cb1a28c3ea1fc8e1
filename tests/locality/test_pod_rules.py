"""Inter-pod rules: modelled as pods per node, or named at once."""

from __future__ import annotations

import pytest

from common.errors import InputError
from locality.pod_rules import NO_RULES, PodRules, pod_rules

OWN = {"headstart.io/job": "a"}
OTHER = {"app": "web"}


def anti(selector, key="kubernetes.io/hostname", **extra):
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": selector}, "topologyKey": key, **extra}]}}}


def spread(selector, key="kubernetes.io/hostname", skew=1, when="DoNotSchedule"):
    return {"topologySpreadConstraints": [{"maxSkew": skew, "topologyKey": key,
                                           "whenUnsatisfiable": when,
                                           "labelSelector": {"matchLabels": selector}}]}


PORT = {"containers": [{"name": "w", "ports": [{"containerPort": 29500, "hostPort": 29500}]}]}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, NO_RULES),
    (anti(OWN), PodRules(1)),  # one of the job's pods per node
    (PORT, PodRules(1)),  # two pods of the job cannot share a host port
    (spread(OWN, skew=2), PodRules(2)),
    ({**spread(OWN, skew=2), **anti(OWN)}, PodRules(1)),  # the tightest
    (spread(OWN, when="ScheduleAnyway"), NO_RULES),  # only steers
    ({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "x"}}]}}}, NO_RULES),
], ids=["none", "own-anti-affinity", "host-port", "own-hostname-spread", "tightest",
        "schedule-anyway", "preferred-only"])
def test_rules_about_the_jobs_own_pods_on_a_node_are_modelled(spec, expected):
    assert pod_rules(spec, OWN, "pod.spec") == expected


@pytest.mark.parametrize(("spec", "named"), [
    (anti(OTHER), "pod.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnored"
                  "DuringExecution[0]: pod anti-affinity: its labelSelector does not select"),
    (anti(OWN, key="topology.kubernetes.io/zone"), "topologyKey 'topology.kubernetes.io/zone'"),
    (anti(OWN, namespaces=["x"]), "namespaces is set"),
    (spread(OWN, key="topology.kubernetes.io/zone"),
     "pod.spec.topologySpreadConstraints[0]: topology spread: topologyKey"),
    ({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": OWN}, "topologyKey": "kubernetes.io/hostname"}]}}},
     "pod.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"),
], ids=["anti-affinity-to-others", "zone-anti-affinity", "other-namespaces", "zone-spread",
        "pod-affinity"])
def test_any_other_rule_is_named_by_its_field(spec, named):
    rules = pod_rules(spec, OWN, "pod.spec")
    assert rules.per_node is None and named in rules.unmodelled


def test_a_malformed_rule_is_an_input_error():
    with pytest.raises(InputError, match=r"topologySpreadConstraints\[0\].maxSkew"):
        pod_rules(spread(OWN, skew=0), OWN, "pod.spec")
