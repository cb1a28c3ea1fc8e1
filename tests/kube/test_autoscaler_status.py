"""cluster-autoscaler's status ConfigMap: node groups' sizes (the admitter's headroom)."""

from __future__ import annotations

import pytest

from kube.autoscaler_status import GroupSize, parse_autoscaler_status


def configmap(groups: str) -> dict:
    return {"data": {"status": "autoscalerStatus: Running\nnodeGroups:\n" + groups}}


GROUP = """- name: {name}
  health:
    nodeCounts: {{registered: {{total: {registered}}}}}
    cloudProviderTarget: {target}
    minSize: 0
    maxSize: {max}
"""


@pytest.mark.parametrize(("fields", "size", "headroom"), [
    # max 10, 3 registered, target 3: 10 - 3 = 7 more.
    ({"name": "g", "registered": 3, "target": 3, "max": 10}, GroupSize("g", 0, 10, 3, 3), 7),
    # Launching: target 6 > 3 registered: 10 - 6 = 4 more.
    ({"name": "g", "registered": 3, "target": 6, "max": 10}, GroupSize("g", 0, 10, 3, 6), 4),
    # Above max (max lowered after scale-up): none, never negative.
    ({"name": "g", "registered": 5, "target": 5, "max": 4}, GroupSize("g", 0, 4, 5, 5), 0),
], ids=["idle", "launching", "over-max"])
def test_group_sizes(fields, size, headroom) -> None:
    status = parse_autoscaler_status(configmap(GROUP.format(**fields)))
    assert status.groups == {"g": size}
    assert status.groups["g"].headroom == headroom


def test_group_without_a_max_size_is_left_out_not_guessed() -> None:
    text = "- name: g\n  health: {cloudProviderTarget: 1}\n"
    status = parse_autoscaler_status(configmap(text))
    assert (status.node_groups, status.groups) == (1, {})


def test_text_format_before_1_30_has_no_groups() -> None:
    status = parse_autoscaler_status({"data": {"status": "Cluster-autoscaler status at ..."}})
    assert status.found and status.groups is None
