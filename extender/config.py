"""The extender service's settings, loaded once from YAML and validated at start-up.

Decides: the defaults (port 8888, `nodeCacheCapable` true, bind off, 64 MiB body
limit, JSON logs) and the validation of every field, with errors naming the file and
the field path. The `locality:` section is validated by `locality.config.LocalityConfig`.

Must not: start anything, talk to the API, or read any file other than the one named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from bucketing.errors import ConfigError
from bucketing.yamlfile import load_yaml_file
from locality.config import LocalityConfig

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """Settings of `headstart extender`. Every field has a default; see docs/extender.md."""

    host: str = "0.0.0.0"
    """Address to listen on."""

    port: int = 8888
    """TCP port for /filter, /prioritize, /bind and the probes."""

    node_cache_capable: bool = True
    """Must equal `nodeCacheCapable` in the KubeSchedulerConfiguration: true answers
    `NodeNames` (and takes nodes from the cache), false answers `Nodes`."""

    bind_enabled: bool = False
    """Serve POST /bind: create the Binding ourselves and record the placement at once.
    Register `bindVerb: bind` only when this is true (one extender per scheduler may bind)."""

    max_body_bytes: int = 64 * MIB
    """Largest request body accepted (413 above). With nodeCacheCapable false every
    Node object travels in the body: about 5-15 KiB each."""

    tls_cert_file: str | None = None
    """PEM certificate; with `tls_key_file` the service speaks HTTPS (use `enableHTTPS`)."""

    tls_key_file: str | None = None
    """PEM private key for `tls_cert_file`."""

    log_format: str = "json"
    """`json` (one object per line, for log pipelines) or `text`."""

    log_level: str = "info"
    """`debug`, `info`, `warning` or `error`."""

    shutdown_timeout_seconds: float = 10.0
    """On SIGTERM, how long in-flight requests may finish. Keep it below the pod's
    terminationGracePeriodSeconds (30 s by default)."""

    watch_timeout_seconds: int = 300
    """Server-side timeout of each watch call; the watch is then resumed from its
    last resourceVersion (a relist only on 410 Gone)."""

    backoff_initial_seconds: float = 0.5
    """First retry delay after a failed list or watch; doubles per failure."""

    backoff_max_seconds: float = 30.0
    """Cap of the retry delay."""

    stale_after_seconds: float = 120.0
    """/readyz turns 503 when a watch has been failing for longer than this (a stale
    cache steers pods onto nodes that filled up meanwhile)."""

    watch_topology: bool = True
    """Watch NodeResourceTopology objects (topology.node.k8s.io/v1alpha2) for NUMA data;
    a cluster without the CRD simply has no NUMA data."""

    watch_dra: bool = True
    """Watch ResourceSlices, ResourceClaims and ResourceClaimTemplates
    (resource.k8s.io/v1, Kubernetes 1.34+) so that GPUs published through DRA count
    (`locality.dra_gpus`); a cluster that does not serve the API has no DRA GPUs."""

    watch_pod_groups: bool = True
    """Watch Volcano (scheduling.volcano.sh/v1beta1) and Coscheduling
    (scheduling.x-k8s.io/v1alpha1) PodGroups: their minMember is the job size; a
    cluster without the CRD has none."""

    locality: LocalityConfig = field(default_factory=LocalityConfig)
    """Job labels, policy annotations and defaults; see docs/locality.md."""

    def with_overrides(self, port: int | None = None) -> ExtenderConfig:
        """This config with command-line overrides applied (validated like the file's)."""
        if port is None:
            return self
        if not 1 <= port <= 65535:
            raise ConfigError(f"--port: expected an integer from 1 to 65535, got {port}")
        return replace(self, port=port)


_LOG_FORMATS = ("json", "text")
_LOG_LEVELS = ("debug", "info", "warning", "error")


def load_config(path: str | Path | None) -> ExtenderConfig:
    """Read and validate a YAML file; None gives the documented defaults."""
    if path is None:
        return ExtenderConfig()
    return config_from_mapping(load_yaml_file(path), str(path))


def config_from_mapping(data: Any, source: str = "config") -> ExtenderConfig:
    """Validate a mapping into an ExtenderConfig; errors name `source` and the field."""
    if data is None:
        return ExtenderConfig()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    known = {f.name for f in fields(ExtenderConfig)}
    unknown = sorted(str(key) for key in set(data) - known)
    if unknown:
        raise ConfigError(
            f"{source}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    values: dict[str, Any] = {}
    for name, raw in data.items():
        where = f"{source}: {name}"
        if name == "locality":
            values[name] = LocalityConfig.from_mapping(raw, f"{source}: locality")
        elif name in ("node_cache_capable", "bind_enabled", "watch_topology", "watch_dra",
                      "watch_pod_groups"):
            values[name] = _bool(raw, where)
        elif name == "port":
            values[name] = _int(raw, where, 1, 65535)
        elif name == "max_body_bytes":
            values[name] = _int(raw, where, 1024, 2**40)
        elif name == "watch_timeout_seconds":
            values[name] = _int(raw, where, 1, 3600)
        elif name in (
            "shutdown_timeout_seconds", "backoff_initial_seconds", "backoff_max_seconds",
            "stale_after_seconds",
        ):
            values[name] = _positive_float(raw, where)
        elif name == "log_format":
            values[name] = _choice(raw, where, _LOG_FORMATS)
        elif name == "log_level":
            values[name] = _choice(raw, where, _LOG_LEVELS)
        elif name in ("tls_cert_file", "tls_key_file"):
            values[name] = None if raw is None else _string(raw, where)
        else:  # host
            values[name] = _string(raw, where)
    config = ExtenderConfig(**values)
    if (config.tls_cert_file is None) != (config.tls_key_file is None):
        raise ConfigError(f"{source}: tls_cert_file and tls_key_file must be set together")
    if config.backoff_max_seconds < config.backoff_initial_seconds:
        raise ConfigError(
            f"{source}: backoff_max_seconds must be at least backoff_initial_seconds"
        )
    return config


def _bool(raw: Any, where: str) -> bool:
    if not isinstance(raw, bool):
        raise ConfigError(f"{where}: expected true or false, got {raw!r}")
    return raw


def _int(raw: Any, where: str, low: int, high: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
        raise ConfigError(f"{where}: expected an integer from {low} to {high}, got {raw!r}")
    return raw


def _positive_float(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
        raise ConfigError(f"{where}: expected a positive number, got {raw!r}")
    return float(raw)


def _string(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{where}: expected a non-empty string, got {raw!r}")
    return raw


def _choice(raw: Any, where: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(raw, str) or raw.lower() not in allowed:
        raise ConfigError(f"{where}: expected one of {', '.join(allowed)}, got {raw!r}")
    return raw.lower()
