"""The overprovisioner config file as every command that takes one reads it.

Decides: the one path from a `--config FILE` to a config the commands run on: loaded
with its `buckets_file` (`config.load`), checked against its catalog
(`config.catalog.resolve_catalog`: errors name the file and the field), and the lines
of what it allows but can never do (`config.catalog.config_warnings`). `headstart
overprovisioner`, `headstart expire-placeholders` and `headstart simulate --config`
all read it here, so a file one of them runs on the others run on too, with the same
warnings.

Must not: print or log (each command reports the warnings its own way), talk to the
cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bucketing.catalog import Catalog
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.catalog import config_warnings, resolve_catalog
from overprovisioner.config.load import load_config


@dataclass(frozen=True)
class CheckedConfig:
    config: OverprovisionerConfig
    """The file's config, its `buckets_file` read in."""
    catalog: Catalog
    """The catalog limited to the config's instance types, in its order."""
    warnings: tuple[str, ...]
    """What the config allows but can never do, one line each, naming file and field."""


def load_checked_config(path: str | Path) -> CheckedConfig:
    """Read `path` as every command reads it; ConfigError naming file and field."""
    config = load_config(path)
    catalog = resolve_catalog(config)
    return CheckedConfig(config, catalog, config_warnings(config, catalog))
