"""The overprovisioner config's field reader: `common.fields.FieldReader`, the one every
headstart config uses, plus the resource vector of a placeholder's request.

Decides: how a YAML mapping becomes a `Resources` (`cpu`, `memory`, `gpus` quantities),
with errors naming the source and the field path. Used by `config.parse`.

Must not: know which fields exist (`config.parse` does), read files or log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, parse_resource_quantity
from common import fields
from common.errors import ConfigError, InputError


@dataclass(frozen=True)
class FieldReader(fields.FieldReader):
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
