"""A job's manifest as `headstart size` and `headstart warm-start` read it: one YAML
document of a Job or a PyTorchJob (the owners headstart sizes), or an error naming the
file.

Must not: interpret the job (the planner's modules do).
"""

from __future__ import annotations

from typing import Any

from common.errors import InputError
from common.yamlfile import load_yaml_file

KINDS = ("Job", "PyTorchJob")


def read_job(path: str) -> tuple[dict[str, Any], str]:
    """(the manifest, its kind)."""
    obj = load_yaml_file(path)
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind not in KINDS:
        raise InputError(f"{path}: expected a Job or a PyTorchJob manifest, got kind "
                         f"{kind!r}")
    return obj, kind
