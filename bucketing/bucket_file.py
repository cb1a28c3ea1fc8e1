"""The bucket-list file `headstart buckets tune --out` writes, read the same way everywhere.

Decides: which shapes of the file are accepted (the tuner's
`buckets: {catalog, instance_types: [...]}`, `buckets: [...]`, a top-level
`instance_types: [...]`, or a bare list; each name a string or `{name: ...}`), and the
errors for anything else, naming the file and the field. The backtest, the simulator and
the overprovisioner's `buckets_file` all read it through here.

Must not: look the names up in a catalog (callers do, naming the index on failure).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common.errors import ConfigError
from common.yamlfile import load_yaml_file

SHAPE_HELP = (
    "`buckets: {catalog, instance_types: [...]}` as `headstart buckets tune --out` writes, "
    "`instance_types: [...]`, or a list of instance type names"
)

# Top-level fields of the overprovisioner's config file (docs/overprovisioner.md) that no
# bucket list has: a file with one of them was meant for --config.
CONFIG_FIELDS = frozenset({"catalog", "tick", "horizon", "forecast", "limits", "placeholders",
                           "buckets_file", "headroom", "port"})


@dataclass(frozen=True)
class BucketFile:
    """The instance type names in file order, and the catalog the file names (or None)."""

    names: tuple[str, ...]
    catalog: str | None


def read_bucket_file(path: str | Path, context: str = "") -> BucketFile:
    """Read and check a bucket-list file; ConfigError naming the file and field otherwise."""
    document = load_yaml_file(path, context)
    return parse_bucket_document(document, f"{context}{path}")


def parse_bucket_document(document: Any, source: str) -> BucketFile:
    catalog = None
    field_path = "(top level)"
    if isinstance(document, dict):
        unknown = sorted(str(k) for k in set(document) - {"buckets", "instance_types"})
        config_fields = sorted(set(unknown) & CONFIG_FIELDS)
        if config_fields:
            raise ConfigError(
                f"{source}: an overprovisioner config (it has {', '.join(config_fields)}), not "
                "a bucket list: `headstart simulate --config FILE` reads a config whole; "
                "--buckets takes the file `headstart buckets tune --out` writes, or "
                "`instance_types: [...]`")
        if unknown:
            raise ConfigError(f"{source}: {unknown[0]}: unknown field; expected " + SHAPE_HELP)
        if "buckets" in document:
            document, field_path = document["buckets"], "buckets"
        else:
            document, field_path = document.get("instance_types"), "instance_types"
        if isinstance(document, dict):
            unknown = sorted(str(k) for k in set(document) - {"catalog", "instance_types"})
            if unknown:
                raise ConfigError(f"{source}: buckets.{unknown[0]}: unknown field (known: "
                                  "catalog, instance_types)")
            catalog = document.get("catalog")
            if catalog is not None and (not isinstance(catalog, str) or not catalog):
                raise ConfigError(f"{source}: buckets.catalog: expected a catalog name or path")
            document, field_path = document.get("instance_types"), "buckets.instance_types"
    if not isinstance(document, list) or not document:
        raise ConfigError(f"{source}: {field_path}: expected a non-empty list; use "
                          + SHAPE_HELP)
    names: list[str] = []
    for index, entry in enumerate(document):
        name = entry.get("name") if isinstance(entry, dict) else entry
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{source}: {field_path}[{index}]: expected an instance type name")
        if name in names:
            raise ConfigError(f"{source}: {field_path}[{index}]: {name!r} appears twice")
        names.append(name)
    return BucketFile(tuple(names), catalog)
