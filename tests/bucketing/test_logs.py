"""One log format for every service: JSON lines by default, text on request."""

from __future__ import annotations

import json
import logging

import pytest

from bucketing.logs import configure_logging
from headstart.cli import build_parser


def emit(capsys, log_format: str) -> str:
    configure_logging(log_format, "info")
    logging.getLogger("headstart.test").warning("tick %d failed", 7, extra={"bucket": "g5"})
    logging.getLogger("headstart.test").debug("not shown at info")
    return capsys.readouterr().err


def test_json_is_one_object_per_line_with_the_extra_fields(capsys) -> None:
    (line,) = emit(capsys, "json").splitlines()
    record = json.loads(line)
    assert {k: record[k] for k in ("level", "logger", "message", "bucket")} == {
        "level": "warning", "logger": "headstart.test", "message": "tick 7 failed",
        "bucket": "g5"}
    assert record["time"].endswith("+00:00")


def test_text_is_for_humans(capsys) -> None:
    (line,) = emit(capsys, "text").splitlines()
    assert line.endswith("WARNING headstart.test: tick 7 failed")


@pytest.mark.parametrize("command", [["extender"], ["overprovisioner", "--config", "x.yaml"]],
                         ids=["extender", "overprovisioner"])
def test_every_service_takes_the_same_log_format_switch(command) -> None:
    parser = build_parser()
    assert parser.parse_args([*command, "--log-format", "text"]).log_format == "text"
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--log-format", "logfmt"])
