"""Placement-group label keys: the configured one first, no duplicates."""

from __future__ import annotations

import pytest

from bucketing.labels import PLACEMENT_GROUP_LABELS, placement_group_labels


@pytest.mark.parametrize(
    "configured, expected",
    [
        ("", PLACEMENT_GROUP_LABELS),
        ("example.com/rack", ("example.com/rack", *PLACEMENT_GROUP_LABELS)),
        ("cloud.google.com/gke-placement-group",
         ("cloud.google.com/gke-placement-group", "headstart.io/placement-group",
          "topology.k8s.aws/network-node-layer-3", "cloud.google.com/gce-topology-block")),
    ],
    ids=["default", "custom-first", "conventional-moved-first"],
)
def test_placement_group_labels(configured, expected) -> None:
    assert placement_group_labels(configured) == expected
