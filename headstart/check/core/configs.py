"""The configs headstart's three Deployments run with, read from the ConfigMaps they mount.

Decides: which file each process reads (its `--config` argument), which ConfigMap key
holds it (the volume mounted at that path), and what it says, validated by the same
parsers the processes run at start-up (`extender.config`, `overprovisioner.config`), so a
config that would crash-loop a process is a failed check here. Of the scheduler's
KubeSchedulerConfiguration only what the checks need: whether a profile enables
Coscheduling, the extender's host and the TLS files it names.

Must not: call the API, log, read files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import yaml

from bucketing.bucket_file import parse_bucket_document
from common.errors import HeadstartError
from extender.config import ExtenderConfig, config_from_mapping
from headstart.check.core.observed import FileSource, Observed, Workload, config_file, flag
from overprovisioner.config import OverprovisionerConfig
from overprovisioner.config.load import with_buckets
from overprovisioner.config.parse import parse_config

T = TypeVar("T")
COMPONENTS = ("scheduler", "extender", "overprovisioner")


@dataclass(frozen=True)
class Loaded(Generic[T]):
    """One process's config: its value, or why there is none."""

    source: str
    """Where it was read ("ConfigMap headstart-extender-config-5h2c (config.yaml)")."""
    value: T | None = None
    error: str = ""


@dataclass(frozen=True)
class SchedulerConfig:
    coscheduling: bool
    """A profile enables the Coscheduling plugin (scheduler-plugins' image only)."""
    extender_host: str
    """The host of the extender's urlPrefix ("" when no extender is configured)."""
    tls_files: Mapping[str, str] = field(default_factory=dict)
    """tlsConfig's certFile, keyFile, caFile -> path."""


@dataclass(frozen=True)
class Installed:
    """headstart's Deployments and their configs."""

    workloads: Mapping[str, Workload | None]
    scheduler: Loaded[SchedulerConfig]
    extender: Loaded[ExtenderConfig]
    overprovisioner: Loaded[OverprovisionerConfig]
    gate_tls_dir: str = ""
    """The folder of the gate webhook's certificate (the extender's
    `--gate-webhook-tls-dir`, or its config's file's folder); "" without the webhook."""


def installed(observed: Observed) -> Installed:
    workloads = {name: observed.headstart.get(name) for name in COMPONENTS}
    extender = _load(workloads["extender"], observed, _extender)
    argv = workloads["extender"].argv() if workloads["extender"] else ()
    gate_dir = (flag(argv, "gate-webhook-tls-dir") or [""])[-1]
    if not gate_dir and extender.value is not None and extender.value.gate_webhook_cert_file:
        gate_dir = posixpath.dirname(extender.value.gate_webhook_cert_file)
    return Installed(workloads, _load(workloads["scheduler"], observed, scheduler_config),
                     extender, _load(workloads["overprovisioner"], observed, _overprovisioner),
                     gate_dir)


def _load(workload: Workload | None, observed: Observed, parse: Any) -> Loaded:
    if workload is None:
        return Loaded("", error="its Deployment is missing")
    path = config_file(workload.argv())
    if path is None:
        return Loaded(str(workload), error=f"{workload} passes no --config")
    source = workload.file_source(path)
    if source is None or source.kind != "configMap":
        return Loaded(str(workload), error=f"no ConfigMap is mounted at {path} in {workload}")
    data = observed.config_maps.get(source.name)
    if data is None:
        return Loaded(str(source), error=f"ConfigMap {source.name} (mounted by {workload}) "
                                         "is missing")
    if source.key not in data:
        return Loaded(str(source), error=f"ConfigMap {source.name} has no key {source.key}")
    try:
        document = yaml.safe_load(data[source.key])
        return Loaded(str(source), parse(document, str(source), data))
    except yaml.YAMLError as error:
        return Loaded(str(source), error=f"{source}: not valid YAML: "
                                         f"{' '.join(str(error).split())[:200]}")
    except HeadstartError as error:
        return Loaded(str(source), error=str(error))


def _extender(document: Any, source: str, data: Mapping[str, str]) -> ExtenderConfig:
    return config_from_mapping(document, source)


def _overprovisioner(document: Any, source: str, data: Mapping[str, str]
                     ) -> OverprovisionerConfig:
    config = parse_config(document if document is not None else {}, source)
    if config.buckets_file:
        key = posixpath.basename(config.buckets_file)
        if key not in data:
            raise HeadstartError(f"{source}: buckets_file {config.buckets_file}: the ConfigMap "
                                 f"has no key {key}")
        buckets = parse_bucket_document(yaml.safe_load(data[key]), f"{source} {key}")
        config = with_buckets(config, buckets)
    return config


def scheduler_config(document: Any, source: str = "", data: Any = None) -> SchedulerConfig:
    """The parts of a KubeSchedulerConfiguration the checks read."""
    if not isinstance(document, Mapping):
        raise HeadstartError(f"{source}: not a KubeSchedulerConfiguration")
    profiles = document.get("profiles") or []
    coscheduling = any(_names_plugin(profile.get("plugins"), "Coscheduling")
                       for profile in profiles if isinstance(profile, Mapping))
    extenders = [e for e in document.get("extenders") or [] if isinstance(e, Mapping)]
    host, tls = "", {}
    if extenders:
        host = url_host(str(extenders[0].get("urlPrefix", "")))
        tls = {k: str(v) for k, v in (extenders[0].get("tlsConfig") or {}).items()
               if k in ("certFile", "keyFile", "caFile") and v}
    return SchedulerConfig(coscheduling, host, tls)


def url_host(url: str) -> str:
    """The host of an http(s) URL ("" when it has none)."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    authority = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    if authority.startswith("["):  # an IPv6 literal
        return authority[1:].split("]", 1)[0]
    return authority.split(":", 1)[0]


def _names_plugin(plugins: Any, name: str) -> bool:
    """Whether any extension point's `enabled` list names plugin `name`."""
    if not isinstance(plugins, Mapping):
        return False
    return any(isinstance(point, Mapping) and any(
        isinstance(p, Mapping) and p.get("name") == name for p in point.get("enabled") or [])
        for point in plugins.values())


def source_of(installed: Installed, component: str, path: str | None) -> FileSource | None:
    """Where file `path` of `component`'s container comes from."""
    workload = installed.workloads.get(component)
    return workload.file_source(path) if workload is not None and path else None
