"""PodDisruptionBudgets against a whole gang's eviction, as the Eviction API charges them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import InputError
from locality.admission.budgets import blocking, parse_budget
from tests.locality.builders import make_pod


def budget(allowed, selector=None, policy=None, name="pdb"):
    spec = {"selector": {"matchLabels": {"headstart.io/job": "a"}} if selector is None
            else selector}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    return parse_budget({"metadata": {"name": name, "namespace": "ns"}, "spec": spec,
                         "status": {"disruptionsAllowed": allowed}})


def gang(*states):
    """The gang's pods, each bound and Ready unless its state says otherwise."""
    pods = []
    for index, state in enumerate(states):
        pod = replace(make_pod(f"a-{index}", job="a", gpus=8, node=f"n{index}"), ready=True)
        if state == "pending":
            pod = replace(pod, node_name=None, ready=False)
        elif state == "unready":
            pod = replace(pod, ready=False)
        elif state == "terminating":
            pod = replace(pod, deleting=True)
        pods.append(pod)
    return pods


@pytest.mark.parametrize(("pods", "budgets", "refused"), [
    (gang("run", "run"), [budget(2)], 0),  # 2 allowed, 2 charged
    (gang("run", "run"), [budget(1)], 1),  # the second pod's eviction would get a 429
    (gang("run", "pending"), [budget(1)], 0),  # a pending pod is evicted without a budget
    (gang("run", "terminating"), [budget(1)], 0),
    (gang("run", "unready"), [budget(1, policy="AlwaysAllow")], 0),  # not charged
    (gang("run", "unready"), [budget(1)], 1),  # IfHealthyBudget: counted (stricter)
    (gang("run"), [budget(5), budget(5, name="other")], 1),  # two budgets: always refused
    (gang("run", "run"), [budget(0, selector={"matchLabels": {"app": "web"}})], 0),
    (gang("run", "run"), [budget(0, selector={})], 1),  # empty: every pod of its namespace
    (gang("run", "run"), [budget(0, selector={"matchExpressions": [
        {"key": "headstart.io/job", "operator": "In", "values": ["a", "b"]}]})], 1),
], ids=["enough", "one-short", "pending-free", "terminating-free", "always-allow-unready",
        "if-healthy-unready", "two-budgets", "other-pods", "empty-selector", "expression"])
def test_a_gang_is_evicted_whole_or_not_at_all(pods, budgets, refused):
    # 1 disruption allowed, 2 pods: 2 + 0 = 2 > 1, so the whole set is refused.
    reasons = blocking(pods, budgets)
    assert len(reasons) == refused, reasons


def test_the_reason_names_the_budget_and_the_count():
    (reason,) = blocking(gang("run", "run", "run"), [budget(1)])
    assert reason == ("PodDisruptionBudget ns/pdb allows 1 disruption(s) and 3 of the "
                      "gang's pods are under it")


def test_a_null_selector_selects_nothing():
    none = parse_budget({"metadata": {"name": "p", "namespace": "ns"}, "spec": {},
                         "status": {"disruptionsAllowed": 0}})
    assert blocking(gang("run"), [none]) == []


@pytest.mark.parametrize(("obj", "message"), [
    ({"metadata": {"name": "p"}}, "metadata: name and namespace must be strings"),
    ({"metadata": {"name": "p", "namespace": "ns"}, "status": {"disruptionsAllowed": "1"}},
     "status.disruptionsAllowed: expected an integer"),
    ({"metadata": {"name": "p", "namespace": "ns"},
      "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}},
     r"spec.selector.matchExpressions\[0\]: expected key, operator"),
], ids=["no-namespace", "allowed-a-string", "node-operator"])
def test_a_malformed_budget_is_named(obj, message):
    with pytest.raises(InputError, match=message):
        parse_budget(obj, "podDisruptionBudget")
