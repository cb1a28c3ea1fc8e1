"""The one field reader of every config: what it accepts, and one-line errors that name
the document, the field path, what was expected and what came."""

from __future__ import annotations

import pytest

from common.errors import ConfigError, InputError
from common.fields import FieldReader

READER = FieldReader("x.yaml")


@pytest.mark.parametrize("read, message", [
    (lambda r: r.as_int(True, "port", 1, 65535),
     "port: expected an integer from 1 to 65535, got True"),
    (lambda r: r.as_int(70000, "port", 1, 65535),
     "port: expected an integer from 1 to 65535, got 70000"),
    (lambda r: r.as_int(-1, "max", low=0), "max: expected a non-negative integer, got -1"),
    (lambda r: r.as_int(0, "burst", low=1), "burst: expected a positive integer, got 0"),
    (lambda r: r.as_int(2, "k", low=3), "k: expected an integer of at least 3, got 2"),
    (lambda r: r.as_int(2.0, "k"), "k: expected an integer, got 2.0"),
    (lambda r: r.as_int(0, "limit", low=1, expected="a positive integer or null"),
     "limit: expected a positive integer or null, got 0"),
    (lambda r: r.as_number(0, "ttl", positive=True, unit="seconds"),
     "ttl: expected a positive number of seconds, got 0"),
    (lambda r: r.as_number(3, "wait", low=0, high=2, unit="seconds"),
     "wait: expected a number of seconds from 0 to 2, got 3"),
    (lambda r: r.as_number(0.01, "every", low=0.05, unit="seconds"),
     "every: expected a number of seconds, at least 0.05, got 0.01"),
    (lambda r: r.as_number(float("nan"), "q"), "q: expected a number, got nan"),
    (lambda r: r.as_number("1", "q"), "q: expected a number, got '1'"),
    (lambda r: r.as_bool("yes", "on"), "on: expected true or false, got 'yes'"),
    (lambda r: r.as_string("", "host"), "host: expected a non-empty string, got ''"),
    (lambda r: r.as_string(3, "file", allow_empty=True), "file: expected a string, got 3"),
    (lambda r: r.as_strings("a", "names"), "names: expected a non-empty list of strings, got 'a'"),
    (lambda r: r.as_strings(["a", ""], "names"), "names[1]: expected a non-empty string, got ''"),
    (lambda r: r.as_choice("Tight", "packing", ("pack", "spread"), fold_case=True),
     "packing: expected one of pack, spread, got 'Tight'"),
    (lambda r: r.as_choice(["pack"], "packing", {"pack"}),
     "packing: expected one of pack, got ['pack']"),
    (lambda r: r.as_duration("soon", "tick"), "tick: "),
    (lambda r: r.as_duration("0s", "tick", positive=True), "tick: must be longer than zero"),
    (lambda r: r.mapping([], ""), "expected a mapping, got list"),  # the top: no path
    (lambda r: r.mapping(None, "groups[0]", optional=False),
     "groups[0]: expected a mapping, got NoneType"),
    (lambda r: r.known({"tik": 1, "tick": 2, "horizn": 3}, "", {"tick", "horizon"}),
     "horizn, tik: unknown field (known here: horizon, tick)"),
    (lambda r: r.known({"maxx": 1}, "limits.default", {"max", "min"}),
     "limits.default.maxx: unknown field (known here: max, min)"),
    (lambda r: r.as_list({}, "items"), "items: expected a list, got dict"),
    (lambda r: r.integer({}, "port", "", 0, 1, 65535),
     "port: expected an integer from 1 to 65535, got 0"),
    (lambda r: r.number({"q": -1}, "q", "forecast", 0.9),
     "forecast.q: expected a number, at least 0, got -1"),
    (lambda r: r.string({"name": None}, "name", "a", "x"), "a.name: required"),
], ids=lambda value: "" if callable(value) else value[:48])
def test_errors_name_the_file_the_field_and_what_was_expected(read, message):
    with pytest.raises(ConfigError) as raised:
        read(READER)
    assert str(raised.value).startswith(f"x.yaml: {message}"), str(raised.value)


def test_values_that_fit_come_back_typed():
    assert READER.as_int(8888, "port", 1, 65535) == 8888
    assert READER.as_number(2, "wait", low=0, high=2) == 2.0
    assert READER.as_string(None, "value", allow_empty=True) == ""
    assert READER.as_strings([], "names", allow_empty=True) == ()
    assert READER.as_choice("JSON", "format", ("json", "text"), fold_case=True) == "json"
    assert READER.as_duration("6m30s", "tick") == 390.0
    assert READER.as_list(None, "items") == [] and READER.mapping(None, "section") == {}
    assert READER.integer({}, "k", "", 4, low=1) == 4  # the default, checked too


def test_a_request_body_reader_raises_input_errors_in_json_words():
    body = FieldReader("", InputError, mapping_noun="an object")
    with pytest.raises(InputError, match=r"^pod.spec.tolerations\[0\]: expected an object, "
                                         r"got str$"):
        body.mapping("x", "pod.spec.tolerations[0]", optional=False)
    assert body.at("pod.spec") == "pod.spec" and FieldReader("f.yaml").at("") == "f.yaml"
