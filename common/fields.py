"""Typed readers for the fields of a parsed document (a YAML config, a request body), with
errors naming the document and the field path: the one field reader of every headstart
config (the extender's, its `locality:` and `admission:` sections, the overprovisioner's)
and of the pod-spec parsers.

Decides: when a value is a string, true or false, an integer, a number, a duration, one
of a set of words, a list or a mapping, and the wording of the error when it is not
(`op.yaml: limits.default.max: expected a non-negative integer, got -1`): one line, the
source, the path, what was expected and what came; unknown fields are errors too
(`known`). The error type is the reader's: `ConfigError` for configs, `InputError` for
request bodies.

Must not: know which fields exist (each parser does), read files or log. Paths are the
caller's: it joins them as its documents are addressed (`a.b[0]`, or `section: field`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from common.durations import duration_seconds
from common.errors import ConfigError, HeadstartError


@dataclass(frozen=True)
class FieldReader:
    """Reads the fields of one document; `source` names it ("" when the paths do)."""

    source: str
    error: type[HeadstartError] = ConfigError
    mapping_noun: str = "a mapping"
    """What a mapping is called in this document: "an object" in JSON."""

    # ------------------------------------------------------------------ errors, paths
    def at(self, path: str) -> str:
        """`source: path` (either may be empty): where a field is, for messages made
        elsewhere."""
        return ": ".join(part for part in (self.source, path) if part)

    def fail(self, path: str, message: str) -> HeadstartError:
        """The error to raise for the field at `path`."""
        where = self.at(path)
        return self.error(f"{where}: {message}" if where else message)

    @staticmethod
    def child(parent: str, key: str) -> str:
        return f"{parent}.{key}" if parent else key

    # ------------------------------------------------------------------ structure
    def mapping(self, raw: Any, path: str, optional: bool = True) -> Mapping:
        """`raw` as a mapping; None is an empty one when `optional` (a section left out)."""
        if raw is None and optional:
            return {}
        if not isinstance(raw, Mapping):
            raise self.fail(path, f"expected {self.mapping_noun}, got {type(raw).__name__}")
        return raw

    def known(self, raw: Mapping, path: str, allowed: Collection[str]) -> None:
        """Every key of `raw` is one of `allowed`; a typo must not fall back to a default."""
        unknown = sorted(str(key) for key in raw if key not in allowed)
        if unknown:
            where = ", ".join(self.child(path, key) for key in unknown)
            raise self.fail(where, f"unknown field (known here: {', '.join(sorted(allowed))})")

    def as_list(self, value: Any, path: str) -> list[Any]:
        """A list (None: empty)."""
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list, got {type(value).__name__}")
        return value

    # ------------------------------------------------------------------ values
    def as_string(self, value: Any, path: str, allow_empty: bool = False) -> str:
        """A string, non-empty unless `allow_empty` (which also reads None as "")."""
        if allow_empty and value is None:
            return ""
        if not isinstance(value, str) or (not value and not allow_empty):
            kind = "a string" if allow_empty else "a non-empty string"
            raise self.fail(path, f"expected {kind}, got {value!r}")
        return value

    def as_strings(self, value: Any, path: str, allow_empty: bool = False,
                   expected: str | None = None) -> tuple[str, ...]:
        """A list of non-empty strings; the list itself non-empty unless `allow_empty`."""
        if not isinstance(value, list | tuple) or (not value and not allow_empty):
            wanted = expected or ("a list of strings" if allow_empty
                                  else "a non-empty list of strings")
            raise self.fail(path, f"expected {wanted}, got {value!r}")
        return tuple(self.as_string(item, f"{path}[{index}]")
                     for index, item in enumerate(value))

    def as_bool(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"expected true or false, got {value!r}")
        return value

    def as_int(self, value: Any, path: str, low: int | None = None, high: int | None = None,
               expected: str | None = None) -> int:
        """A whole number (not a bool, not 2.0) within [low, high]."""
        if (isinstance(value, bool) or not isinstance(value, int)
                or (low is not None and value < low) or (high is not None and value > high)):
            raise self.fail(path, f"expected {expected or _integer(low, high)}, got {value!r}")
        return value

    def as_number(self, value: Any, path: str, low: float | None = None,
                  high: float | None = None, positive: bool = False, unit: str = "") -> float:
        """A finite int or float (not a bool) within [low, high], above 0 when `positive`;
        `unit` words the message ("seconds": "a positive number of seconds")."""
        number = (not isinstance(value, bool) and isinstance(value, int | float)
                  and math.isfinite(value))
        if (not number or (positive and value <= 0) or (low is not None and value < low)
                or (high is not None and value > high)):
            raise self.fail(path, f"expected {_number(low, high, positive, unit)}, "
                                  f"got {value!r}")
        return float(value)

    def as_duration(self, value: Any, path: str, positive: bool = False) -> float:
        """Seconds from a number or a Go-style duration (`90s`, `6m30s`, `24h`;
        `common.durations`)."""
        try:
            seconds = duration_seconds(value)
        except ValueError as error:
            raise self.fail(path, str(error)) from None
        if positive and seconds <= 0:
            raise self.fail(path, "must be longer than zero")
        return seconds

    def as_choice(self, value: Any, path: str, allowed: Collection[str],
                  fold_case: bool = False) -> str:
        """One of `allowed` (compared lower-cased, and returned so, with `fold_case`)."""
        word = value.lower() if fold_case and isinstance(value, str) else value
        if not isinstance(word, str) or word not in allowed:
            raise self.fail(path, f"expected one of {', '.join(allowed)}, got {value!r}")
        return word

    # ------------------------------------------------------------------ fields by key
    # The same readers, for `raw[key]` with a default, the path being `parent.key`.
    def string(self, raw: Mapping, key: str, parent: str, default: str | None,
               allow_empty: bool = False) -> str:
        value = raw.get(key, default)
        if value is None:
            raise self.fail(self.child(parent, key), "required")
        return self.as_string(value, self.child(parent, key), allow_empty)

    def string_list(self, raw: Mapping, key: str, parent: str) -> tuple[str, ...]:
        return self.as_strings(raw.get(key, []), self.child(parent, key), allow_empty=True)

    def boolean(self, raw: Mapping, key: str, parent: str, default: bool) -> bool:
        return self.as_bool(raw.get(key, default), self.child(parent, key))

    def number(self, raw: Mapping, key: str, parent: str, default: float) -> float:
        """A number, at least 0."""
        return self.as_number(raw.get(key, default), self.child(parent, key), low=0)

    def integer(self, raw: Mapping, key: str, parent: str, default: int,
                low: int | None = None, high: int | None = None) -> int:
        return self.as_int(raw.get(key, default), self.child(parent, key), low, high)

    def duration(self, raw: Mapping, key: str, parent: str, default: float,
                 positive: bool = False) -> float:
        return self.as_duration(raw.get(key, default), self.child(parent, key), positive)


def _integer(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"an integer from {low} to {high}"
    if low == 0:
        return "a non-negative integer"
    if low == 1:
        return "a positive integer"
    if low is not None:
        return f"an integer of at least {low}"
    return f"an integer of at most {high}" if high is not None else "an integer"


def _number(low: float | None, high: float | None, positive: bool, unit: str) -> str:
    of = f" of {unit}" if unit else ""
    if positive:
        return f"a positive number{of}"
    if low is not None and high is not None:
        return f"a number{of} from {low:g} to {high:g}"
    if low is not None:
        return f"a number{of}, at least {low:g}"
    if high is not None:
        return f"a number{of}, at most {high:g}"
    return f"a number{of}"
