"""Reading a user's YAML file: one parser, one one-line error for every package.

Decides: how an unreadable or malformed YAML file is reported: a ConfigError naming the
file and, for a syntax error, the line and column, on one line (PyYAML's own message
spans several lines with a caret drawing, which breaks the one-line error rule).

Must not: validate what the document means; callers do that and name the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from common.errors import ConfigError


def load_yaml_file(path: str | Path, context: str = "") -> Any:
    """The parsed document of `path`; `context` (e.g. "config.yaml: buckets_file: ") is put
    before the file name in errors."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{context}{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{context}{path}: not UTF-8 text") from None
    return parse_yaml_text(text, f"{context}{path}")


def parse_yaml_text(text: str, source: str) -> Any:
    """Parse YAML text; a syntax error is one line naming `source`, line and column."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "syntax error"
        raise ConfigError(f"{source}: not valid YAML{where}: {problem}") from None
