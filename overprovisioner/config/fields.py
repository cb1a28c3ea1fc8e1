"""The overprovisioner config's field reader: `common.fields.FieldReader`, the one every
headstart config uses, plus the resource vector of a placeholder's request.

Decides: how a YAML mapping becomes a `Resources` (`cpu`, `memory`, `gpus` quantities),
with errors naming the source and the field path. Used by `config.parse`.

Must not: know which fields exist (`config.parse` does), read files or log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bucketing.resources import Resources, read_resources
from common import fields


@dataclass(frozen=True)
class FieldReader(fields.FieldReader):
    def resources(self, raw: Any, path: str) -> Resources:
        return read_resources(self, raw, path)
