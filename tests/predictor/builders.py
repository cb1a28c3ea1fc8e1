"""Small shared fixtures for the predictor's tests."""

from __future__ import annotations

from bucketing.catalog import parse_catalog

# Two bucket types with no daemonset overhead, so a bucket holds exactly its allocatable.
CATALOG = parse_catalog(
    {
        "provider": "test",
        "instance_types": [
            {"name": "cpu4", "vcpu": 4, "memory_gib": 16, "gpus": 0, "price_per_hour": 1,
             "allocatable": {"cpu": 4, "memory": "16Gi"}},
            {"name": "gpu1", "vcpu": 8, "memory_gib": 32, "gpus": 1, "price_per_hour": 2,
             "allocatable": {"cpu": 8, "memory": "32Gi", "gpus": 1}},
        ],
    },
    "test-catalog",
)
