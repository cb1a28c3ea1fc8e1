"""Placeholder objects of zone- and capacity-type-pinned columns (pinned_plan.PlacedColumn)."""

from __future__ import annotations

import hashlib
import re

import pytest

from common.errors import InputError
from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.config.parse import parse_config
from overprovisioner.planner.pinned_plan import PlacedColumn
from overprovisioner.service.objects import desired_objects, pin_of, placeholder_name
from predictor.history.pinning import Pin

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def make_config(catalog="aws", **placeholders):
    types = ["g5.xlarge"] if catalog == "aws" else ["g2-standard-4"]
    return parse_config({"catalog": catalog, "instance_types": types,
                         "placeholders": {"backend": "deployment", **placeholders}}, "test.yaml")


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


@pytest.mark.parametrize("group, pin, expected", [
    ("", Pin("us-east-1a"),
     f"headstart-placeholder-g5-xlarge-us-east-1a-{digest('g5.xlarge', '', 'us-east-1a', '')}"),
    # 58 characters before the hash: cut to 63 - 9 = 54, then "-" and the 8-digit hash
    ("pg-a", Pin("us-east-1a", "on-demand"),
     "headstart-placeholder-g5-xlarge-pg-a-us-east-1a-on-dem-"
     + digest("g5.xlarge", "pg-a", "us-east-1a", "on-demand")),
    ("", Pin(None, "spot"),
     f"headstart-placeholder-g5-xlarge-spot-{digest('g5.xlarge', '', '', 'spot')}"),
], ids=["zone", "group-zone-capacity", "capacity"])
def test_pinned_names(group, pin, expected) -> None:
    assert placeholder_name("g5.xlarge", group, pin) == expected


def test_pinned_names_never_take_another_buckets_name() -> None:
    # group "pg-us-east-1a" unpinned and group "pg" pinned to us-east-1a read alike but
    # for the hash every pinned name carries.
    unpinned = placeholder_name("g5.xlarge", "pg-us-east-1a")
    pinned = placeholder_name("g5.xlarge", "pg", Pin("us-east-1a"))
    assert unpinned == "headstart-placeholder-g5-xlarge-pg-us-east-1a"
    assert pinned != unpinned and pinned.startswith(unpinned + "-")
    long = placeholder_name("p4d.24xlarge", "placement-group-" + "x" * 40,
                            Pin("ap-southeast-1a", "capacity-block"))
    assert len(long) <= 63 and DNS_LABEL.fullmatch(long)


def test_a_pinned_column_selects_its_zone_and_capacity_type_and_is_labelled() -> None:
    config = make_config()
    columns = [PlacedColumn("g5.xlarge", "", Pin(), 2),
               PlacedColumn("g5.xlarge", "", Pin("us-east-1a", "on-demand"), 1)]
    unpinned, pinned = desired_objects(columns, config, resolve_catalog(config), "deployment")
    assert unpinned.name == "headstart-placeholder-g5-xlarge"
    spec = pinned.body["spec"]["template"]["spec"]
    # aws, capacity_type_label auto: EKS managed node groups' label and values
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "g5.xlarge",
                                    "topology.kubernetes.io/zone": "us-east-1a",
                                    "eks.amazonaws.com/capacityType": "ON_DEMAND"}
    assert "affinity" not in spec
    assert pinned.body["spec"]["replicas"] == 1
    labels = pinned.body["metadata"]["labels"]
    assert labels["headstart.io/zone"] == "us-east-1a"
    assert labels["headstart.io/capacity-type"] == "on-demand"
    assert pin_of(pinned.body) == Pin("us-east-1a", "on-demand")
    assert pin_of(unpinned.body) == Pin()
    assert pinned.body["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] \
        == pinned.name
    assert pinned.body["spec"]["template"]["metadata"]["labels"] == labels


def test_gke_on_demand_is_a_node_affinity_and_spot_a_toleration_too() -> None:
    config = make_config("gcp")
    catalog = resolve_catalog(config)
    od, spot = desired_objects(
        [PlacedColumn("g2-standard-4", "", Pin(None, "on-demand"), 1),
         PlacedColumn("g2-standard-4", "", Pin(None, "spot"), 1)],
        config, catalog, "capacitybuffer")[1::2]
    assert od.kind == spot.kind == "CapacityBuffer"
    od_template, spot_template = desired_objects(
        [PlacedColumn("g2-standard-4", "", Pin(None, "on-demand"), 1),
         PlacedColumn("g2-standard-4", "", Pin(None, "spot"), 1)],
        config, catalog, "capacitybuffer")[0::2]
    od_spec = od_template.body["template"]["spec"]
    assert od_spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] \
        == {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "cloud.google.com/gke-spot", "operator": "NotIn", "values": ["true"]}]}]}
    spot_spec = spot_template.body["template"]["spec"]
    assert spot_spec["nodeSelector"]["cloud.google.com/gke-spot"] == "true"
    # GPU toleration first (as for every GPU placeholder), then GKE's Spot taint
    assert spot_spec["tolerations"][-1] == {"key": "cloud.google.com/gke-spot",
                                            "operator": "Equal", "value": "true",
                                            "effect": "NoSchedule"}
    assert od.body["spec"]["podTemplateRef"]["name"] == od_template.name


def test_the_same_column_twice_is_refused() -> None:
    config = make_config()
    column = PlacedColumn("g5.xlarge", "", Pin("us-east-1a"), 1)
    with pytest.raises(InputError, match="appears twice"):
        desired_objects([column, column], config, resolve_catalog(config), "deployment")
