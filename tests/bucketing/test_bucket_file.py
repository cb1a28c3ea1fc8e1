"""The bucket-list file: every accepted shape, and errors naming the field."""

from __future__ import annotations

import pytest

from bucketing.bucket_file import BucketFile, parse_bucket_document
from common.errors import ConfigError


@pytest.mark.parametrize(
    "document, expected",
    [
        ({"buckets": {"catalog": "aws", "instance_types": ["g5.xlarge", "p4d.24xlarge"]}},
         BucketFile(("g5.xlarge", "p4d.24xlarge"), "aws")),
        ({"buckets": ["g5.xlarge"]}, BucketFile(("g5.xlarge",), None)),
        ({"instance_types": ["g5.xlarge"]}, BucketFile(("g5.xlarge",), None)),
        (["g5.xlarge", {"name": "g5.2xlarge"}], BucketFile(("g5.xlarge", "g5.2xlarge"), None)),
    ],
    ids=["tuner-snippet", "buckets-list", "instance-types", "bare-list"],
)
def test_accepted_shapes(document, expected):
    assert parse_bucket_document(document, "b.yaml") == expected


@pytest.mark.parametrize(
    "document, message",
    [
        ({"buckets": {"types": ["g5.xlarge"]}}, "b.yaml: buckets.types: unknown field"),
        ({"bukets": ["g5.xlarge"]}, "b.yaml: bukets: unknown field"),
        ({"buckets": {"instance_types": []}},
         "b.yaml: buckets.instance_types: expected a non-empty"),
        ({"buckets": {"instance_types": ["a", 3]}},
         r"b.yaml: buckets.instance_types\[1\]: expected"),
        (["a", "a"], r"b.yaml: \(top level\)\[1\]: 'a' appears twice"),
        ({"buckets": {"catalog": 5, "instance_types": ["a"]}}, "b.yaml: buckets.catalog"),
        (None, "expected a non-empty list"),
    ],
    ids=["unknown-nested", "unknown-top", "empty", "not-a-name", "duplicate", "bad-catalog",
         "empty-file"],
)
def test_bad_documents_name_the_field(document, message):
    with pytest.raises(ConfigError, match=message):
        parse_bucket_document(document, "b.yaml")


def test_an_overprovisioner_config_given_as_a_bucket_list_points_to_config():
    """The overlay's config names instance_types too, so --buckets on it used to say
    'catalog: unknown field'; it is a config, and --config is where it goes."""
    import yaml

    from tests.manifests import checks

    document = yaml.safe_load((checks.MANIFESTS / "overlays" / "eks" /
                               "overprovisioner-config.yaml").read_text())
    with pytest.raises(ConfigError, match=r"b.yaml: an overprovisioner config \(it has catalog, "
                                          r"forecast, horizon, limits, placeholders, port, "
                                          r"tick\), not a bucket list: `headstart simulate "
                                          r"--config FILE`"):
        parse_bucket_document(document, "b.yaml")
