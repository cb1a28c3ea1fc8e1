"""Instance-type catalogs: what each node type offers and costs, loaded from YAML.

Decides: the shape of a catalog and whether a file is a valid one. Shipped catalogs
live in `bucketing/catalogs/` (`aws`, `gcp`); a path loads a user's own. Every
validation error names the file and the field path (`instance_types[3].allocatable.cpu`).

Must not: fetch prices, or guess a missing field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources as package_files
from pathlib import Path
from typing import Any

from bucketing.resources import DEFAULT_GPU_RESOURCE, Resources, read_resources
from common.errors import ConfigError
from common.fields import FieldReader
from common.yamlfile import load_yaml_file, parse_yaml_text

BUILTIN_CATALOGS = ("aws", "gcp")


@dataclass(frozen=True)
class InstanceType:
    """One node type.

    allocatable: what the scheduler can place on a node of this type (capacity less
        the kubelet's system/kube reservation and eviction threshold).
    placeholder_request: allocatable less the catalog's daemonset overhead: a pod
        requesting this fills exactly one node of the type.
    """

    name: str
    vcpu: int
    memory_gib: float
    gpus: int
    gpu_model: str | None
    price_per_hour: float
    price_source: str
    price_date: str
    allocatable: Resources
    placeholder_request: Resources
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def capacity(self) -> Resources:
        return Resources.of(self.gpus, self.vcpu, self.memory_gib)


@dataclass(frozen=True)
class Catalog:
    """A provider's instance types, in file order, with what they were built from."""

    name: str
    provider: str
    region: str
    gpu_resource: str
    daemonset_overhead: Resources
    instance_types: tuple[InstanceType, ...]

    def get(self, name: str) -> InstanceType:
        for instance_type in self.instance_types:
            if instance_type.name == name:
                return instance_type
        known = ", ".join(t.name for t in self.instance_types)
        raise ConfigError(f"catalog {self.name}: unknown instance type {name!r} (known: {known})")

    def subset(self, names: list[str] | tuple[str, ...]) -> Catalog:
        """The same catalog limited to `names`, in the order given."""
        return Catalog(
            self.name, self.provider, self.region, self.gpu_resource, self.daemonset_overhead,
            tuple(self.get(name) for name in names),
        )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.instance_types)


def load_catalog(ref: str | Path, where: str = "catalog") -> Catalog:
    """Load a catalog by built-in name (`aws`, `gcp`) or by path to a YAML file.

    where: what named it, put first in errors: the option (`--catalog`) or the file and
    field (`config.yaml: catalog`), so a typo points at the line to fix."""
    ref_text = str(ref)
    if ref_text in BUILTIN_CATALOGS:
        text = package_files.files("bucketing.catalogs").joinpath(f"{ref_text}.yaml").read_text()
        return parse_catalog(parse_yaml_text(text, ref_text), ref_text)
    path = Path(ref_text)
    if not path.exists():
        raise ConfigError(
            f"{where}: {ref_text!r} is neither a built-in catalog "
            f"({', '.join(BUILTIN_CATALOGS)}) nor a file"
        )
    return parse_catalog(load_yaml_file(path, f"{where}: "), str(path))


def parse_catalog(document: Any, source: str) -> Catalog:
    """Validate a parsed YAML document into a Catalog; errors name `source` and the field
    (`common.fields.FieldReader`, as every headstart config)."""
    reader = FieldReader(source)
    document = reader.mapping(document, "the top level", optional=False)
    provider = reader.string(document, "provider", "", None)
    region = reader.string(document, "region", "", "", allow_empty=True)
    price_source = reader.string(document, "price_source", "", "", allow_empty=True)
    price_date = str(document.get("price_date", ""))
    gpu_resource = reader.string(document, "gpu_resource", "", DEFAULT_GPU_RESOURCE)
    overhead = read_resources(reader, document.get("daemonset_overhead"),
                              "daemonset_overhead")
    raw_types = document.get("instance_types")
    if not isinstance(raw_types, list) or not raw_types:
        raise reader.fail("instance_types", "expected a non-empty list")
    types: list[InstanceType] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_types):
        path = f"instance_types[{index}]"
        raw = reader.mapping(raw, path, optional=False)
        name = reader.string(raw, "name", path, None)
        if name in seen:
            raise reader.fail(f"{path}.name", f"{name!r} appears twice")
        seen.add(name)
        gpus = reader.as_int(raw.get("gpus"), f"{path}.gpus", low=0)
        if raw.get("allocatable") is None:
            raise reader.fail(f"{path}.allocatable", "required: a mapping with cpu, memory "
                              "and optionally gpus")
        allocatable = read_resources(reader, raw.get("allocatable"), f"{path}.allocatable")
        vcpu = reader.as_int(raw.get("vcpu"), f"{path}.vcpu", low=1)
        memory_gib = reader.as_number(raw.get("memory_gib"), f"{path}.memory_gib",
                                      positive=True)
        if allocatable.gpu_milli > gpus * 1000:
            raise reader.fail(f"{path}.allocatable.gpus", f"exceeds gpus ({gpus})")
        # Allocatable is capacity less reservations; more than the capacity is a unit slip
        # (GB for GiB, cores for millicores) that would make every node look bigger.
        if allocatable.cpu_milli > vcpu * 1000:
            raise reader.fail(f"{path}.allocatable.cpu", f"exceeds vcpu ({vcpu})")
        if allocatable.memory_bytes > round(memory_gib * 2**30):
            raise reader.fail(f"{path}.allocatable.memory",
                              f"exceeds memory_gib ({memory_gib:g} GiB)")
        placeholder = allocatable - overhead
        if min(placeholder.cpu_milli, placeholder.memory_bytes) <= 0:
            raise reader.fail(f"{path}.allocatable",
                              "daemonset_overhead leaves nothing for pods")
        labels = raw.get("labels") or {}
        if not isinstance(labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise reader.fail(f"{path}.labels", "expected a map of strings to strings")
        types.append(
            InstanceType(
                name=name,
                vcpu=vcpu,
                memory_gib=memory_gib,
                gpus=gpus,
                gpu_model=raw.get("gpu_model"),
                price_per_hour=reader.as_number(raw.get("price_per_hour"),
                                                f"{path}.price_per_hour", positive=True),
                price_source=str(raw.get("price_source", price_source)),
                price_date=str(raw.get("price_date", price_date)),
                allocatable=allocatable,
                placeholder_request=placeholder,
                labels=dict(labels),
            )
        )
    return Catalog(source, provider, region, gpu_resource, overhead, tuple(types))
