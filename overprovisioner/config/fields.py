"""Typed readers for the fields of a YAML config, with errors naming the source and field path.

Decides: how a YAML value becomes a string, number, duration, list or resource vector,
and the wording of the errors (`op.yaml: limits.default.max: must be at least 0, got -1`).
Unknown fields are errors too (`known`). Used by `config.parse`.

Must not: know which fields exist (`config.parse` does), read files or log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, parse_resource_quantity
from common.durations import duration_seconds
from common.errors import ConfigError, InputError


def parse_duration(value: Any) -> float:
    """Seconds from a number or a Go-style duration: `90s`, `5m`, `6m30s`, `24h`, `35d`
    (`common.durations`, the one syntax every headstart command reads)."""
    return duration_seconds(value)


@dataclass(frozen=True)
class FieldReader:
    source: str

    def fail(self, path: str, message: str) -> ConfigError:
        return ConfigError(f"{self.source}: {path or '(top level)'}: {message}")

    def mapping(self, raw: Any, path: str) -> Mapping:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise self.fail(path, f"expected a mapping, got {type(raw).__name__}")
        return raw

    def known(self, raw: Mapping, path: str, allowed: set[str]) -> None:
        unknown = sorted(str(key) for key in raw if key not in allowed)
        if unknown:
            where = ", ".join(f"{path}.{key}" if path else key for key in unknown)
            raise self.fail(
                where, f"unknown field (known here: {', '.join(sorted(allowed))})"
            )

    def _path(self, parent: str, key: str) -> str:
        return f"{parent}.{key}" if parent else key

    def string(
        self, raw: Mapping, key: str, parent: str, default: str | None, allow_empty: bool = False
    ) -> str:
        path = self._path(parent, key)
        value = raw.get(key, default)
        if value is None:
            raise self.fail(path, "required")
        if not isinstance(value, str) or (not value and not allow_empty):
            raise self.fail(path, f"expected a non-empty string, got {value!r}")
        return value

    def string_list(self, raw: Mapping, key: str, parent: str) -> tuple[str, ...]:
        path = self._path(parent, key)
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(path, "expected a list of names")
        return tuple(value)

    def boolean(self, raw: Mapping, key: str, parent: str, default: bool) -> bool:
        value = raw.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(self._path(parent, key), f"expected true or false, got {value!r}")
        return value

    def number(self, raw: Mapping, key: str, parent: str, default: float) -> float:
        path = self._path(parent, key)
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise self.fail(path, f"expected a number, got {value!r}")
        if value < 0:
            raise self.fail(path, f"must not be negative, got {value}")
        return float(value)

    def integer(
        self, raw: Mapping, key: str, parent: str, default: int,
        low: int | None = None, high: int | None = None,
    ) -> int:
        path = self._path(parent, key)
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"expected a whole number, got {value!r}")
        if low is not None and value < low:
            raise self.fail(path, f"must be at least {low}, got {value}")
        if high is not None and value > high:
            raise self.fail(path, f"must be at most {high}, got {value}")
        return value

    def duration(
        self, raw: Mapping, key: str, parent: str, default: float, positive: bool = False
    ) -> float:
        path = self._path(parent, key)
        try:
            seconds = parse_duration(raw.get(key, default))
        except ValueError as error:
            raise self.fail(path, str(error)) from None
        if positive and seconds <= 0:
            raise self.fail(path, "must be longer than zero")
        return seconds

    def resources(self, raw: Any, path: str) -> Resources:
        body = self.mapping(raw, path)
        self.known(body, path, {"cpu", "memory", "gpus"})
        try:
            cpu = parse_resource_quantity(body.get("cpu", 0), f"{path}.cpu")
            memory = parse_resource_quantity(body.get("memory", 0), f"{path}.memory")
            gpus = parse_resource_quantity(body.get("gpus", 0), f"{path}.gpus")
        except InputError as error:
            raise ConfigError(f"{self.source}: {error}") from None
        return Resources(int(gpus * 1000), int(cpu * 1000), int(memory))
