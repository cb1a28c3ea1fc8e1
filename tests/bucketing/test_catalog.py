"""Instance catalogs: both shipped catalogs load; malformed ones name the field."""

from __future__ import annotations

import copy

import pytest
import yaml

from bucketing.catalog import load_catalog, parse_catalog
from bucketing.resources import Resources
from common.errors import ConfigError

AWS_FAMILIES = ("m5.", "g4dn.", "g5.", "p3.", "p4d.", "p5.")
GCP_FAMILIES = ("n2-", "g2-", "a2-")


@pytest.mark.parametrize(
    "name, families", [("aws", AWS_FAMILIES), ("gcp", GCP_FAMILIES)], ids=["aws", "gcp"]
)
def test_shipped_catalog_loads(name, families):
    catalog = load_catalog(name)
    assert catalog.provider == name
    for family in families:
        assert any(t.name.startswith(family) for t in catalog.instance_types), family
    for instance_type in catalog.instance_types:
        assert instance_type.price_per_hour > 0
        assert instance_type.allocatable.fits_in(instance_type.capacity)
        assert instance_type.placeholder_request.fits_in(instance_type.allocatable)
        assert instance_type.labels["node.kubernetes.io/instance-type"] == instance_type.name


def test_placeholder_request_is_allocatable_less_daemonsets():
    catalog = load_catalog("aws")
    p4d = catalog.get("p4d.24xlarge")
    assert p4d.gpus == 8
    assert p4d.placeholder_request == p4d.allocatable - catalog.daemonset_overhead


def test_subset_keeps_given_order_and_unknown_names_fail():
    catalog = load_catalog("aws")
    assert catalog.subset(["p3.2xlarge", "m5.large"]).names == ("p3.2xlarge", "m5.large")
    with pytest.raises(ConfigError, match="unknown instance type 'p9.huge'"):
        catalog.get("p9.huge")


def good_document() -> dict:
    return {
        "provider": "test",
        "daemonset_overhead": {"cpu": "100m", "memory": "128Mi"},
        "instance_types": [
            {
                "name": "small",
                "vcpu": 4,
                "memory_gib": 16,
                "gpus": 1,
                "price_per_hour": 0.5,
                "allocatable": {"cpu": "3900m", "memory": "14Gi", "gpus": 1},
            }
        ],
    }


def test_good_document_parses():
    catalog = parse_catalog(good_document(), "cat.yaml")
    small = catalog.get("small")
    # allocatable 3900m - 100m overhead = 3800m; 14Gi - 128Mi
    assert small.placeholder_request == Resources(1000, 3800, 14 * 2**30 - 128 * 2**20)


def broken(path: tuple, value) -> dict:
    document = copy.deepcopy(good_document())
    target = document
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


DELETE = object()
MALFORMED = [
    (("provider",), DELETE, "provider", "no-provider"),
    (("instance_types",), [], "instance_types", "no-types"),
    (("instance_types", 0, "vcpu"), "four", "instance_types[0].vcpu", "vcpu-text"),
    (("instance_types", 0, "vcpu"), 2.5, "instance_types[0].vcpu", "vcpu-fraction"),
    (("instance_types", 0, "price_per_hour"), -1, "instance_types[0].price_per_hour", "price"),
    (("instance_types", 0, "name"), "", "instance_types[0].name", "empty-name"),
    (
        ("instance_types", 0, "allocatable", "cpu"),
        "lots",
        "instance_types[0].allocatable.cpu",
        "bad-quantity",
    ),
    (
        ("instance_types", 0, "allocatable", "gpus"),
        2,
        "instance_types[0].allocatable.gpus",
        "more-gpus-than-node",
    ),
    (
        ("instance_types", 0, "allocatable", "disk"),
        "1Gi",
        "instance_types[0].allocatable",
        "unknown-resource",
    ),
    (("instance_types", 0, "labels"), {"a": 1}, "instance_types[0].labels", "label-not-string"),
    # inf used to pass the checks and crash int() with an OverflowError traceback.
    (("instance_types", 0, "vcpu"), float("inf"),
     "instance_types[0].vcpu: expected a positive integer, got inf", "vcpu-infinite"),
    (("instance_types", 0, "price_per_hour"), float("inf"),
     "instance_types[0].price_per_hour: expected a positive number, got inf", "price-infinite"),
    # 4 vCPUs = 4000m < 4100m; 16 GiB < 17Gi: allocatable above capacity is a unit slip.
    (("instance_types", 0, "allocatable", "cpu"), "4100m",
     "instance_types[0].allocatable.cpu: exceeds vcpu (4)", "allocatable-cpu-over-capacity"),
    (("instance_types", 0, "allocatable", "memory"), "17Gi",
     "instance_types[0].allocatable.memory: exceeds memory_gib (16 GiB)",
     "allocatable-memory-over-capacity"),
    (
        ("daemonset_overhead", "cpu"),
        "8",
        "instance_types[0].allocatable",
        "overhead-eats-node",
    ),
]


@pytest.mark.parametrize(
    "path, value, field_path",
    [m[:3] for m in MALFORMED],
    ids=[m[3] for m in MALFORMED],
)
def test_malformed_catalog_names_file_and_field(tmp_path, path, value, field_path):
    file = tmp_path / "catalog.yaml"
    file.write_text(yaml.safe_dump(broken(path, value)))
    with pytest.raises(ConfigError) as raised:
        load_catalog(file)
    message = str(raised.value)
    assert str(file) in message
    assert field_path in message
    assert "\n" not in message


def test_duplicate_instance_type_is_rejected(tmp_path):
    document = good_document()
    document["instance_types"].append(copy.deepcopy(document["instance_types"][0]))
    file = tmp_path / "dup.yaml"
    file.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError, match=r"instance_types\[1\]\.name: 'small' appears twice"):
        load_catalog(file)


@pytest.mark.parametrize(
    "text, expected",
    [("a: [1, 2", "not valid YAML"), ("- 1\n- 2\n", "the top level: expected a mapping, got list")],
    ids=["invalid-yaml", "not-a-mapping"],
)
def test_unreadable_catalog(tmp_path, text, expected):
    file = tmp_path / "bad.yaml"
    file.write_text(text)
    with pytest.raises(ConfigError, match=expected):
        load_catalog(file)


def test_invalid_yaml_is_one_line_with_its_position(tmp_path):
    file = tmp_path / "bad.yaml"
    file.write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(ConfigError) as raised:
        load_catalog(file)
    message = str(raised.value)
    assert "\n" not in message
    assert "line 2, column 2" in message  # the parser stops at "b:" on line 2


def test_unknown_catalog_name_says_who_named_it():
    with pytest.raises(ConfigError, match=r"^--catalog: 'azure' is neither a built-in catalog"):
        load_catalog("azure", "--catalog")
