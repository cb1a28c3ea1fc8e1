"""Read the overprovisioner config file once at start-up, with its `buckets_file`.

Decides: where the config comes from: the YAML file, then the buckets file it names
(relative to the config file), whose catalog and instance types replace the config's.
Errors name the file and the field.

Must not: validate fields itself (`config.parse`), look up the catalog
(`config.catalog`), talk to the cluster, read the clock, or log.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bucketing.bucket_file import BucketFile, read_bucket_file
from common.yamlfile import load_yaml_file
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.parse import parse_config


def load_config(path: str | Path) -> OverprovisionerConfig:
    """Read and validate a YAML config file; raises ConfigError naming file and field."""
    path = Path(path)
    document = load_yaml_file(path)
    config = parse_config(document if document is not None else {}, str(path))
    if config.buckets_file:
        bucket_path = Path(config.buckets_file)
        if not bucket_path.is_absolute():
            bucket_path = path.parent / bucket_path
        config = _with_buckets_file(config, bucket_path)
    return config


def _with_buckets_file(config: OverprovisionerConfig, path: Path) -> OverprovisionerConfig:
    return with_buckets(config, read_bucket_file(path, f"{config.source}: buckets_file: "))


def with_buckets(config: OverprovisionerConfig, buckets: BucketFile) -> OverprovisionerConfig:
    """`config` with the bucket file's catalog (when it names one) and instance types in
    place of its own (also `headstart check`, which reads both from the ConfigMap)."""
    return replace(config, catalog=buckets.catalog or config.catalog,
                   instance_types=buckets.names)
