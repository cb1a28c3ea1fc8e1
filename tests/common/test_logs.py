"""One log format for every service: JSON lines by default, text on request."""

from __future__ import annotations

import json
import logging

import pytest

from common.logs import RATE_BURST, RateLimit, configure_logging
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


def test_a_repeated_line_is_let_through_burst_times_per_window_then_counted():
    now = [0.0]
    limit = RateLimit(window=60, burst=3, clock=lambda: now[0])

    def record(msg="could not lift the gate; next round retries", level=logging.WARNING,
               **extra):
        made = logging.LogRecord("headstart.extender.admitter", level, __file__, 1, msg,
                                 None, None)
        made.__dict__.update(extra)
        return made

    passed = [limit.filter(record(pod=f"team/p-{i}")) for i in range(10)]
    assert passed == [True] * 3 + [False] * 7  # extra fields do not make it another line
    assert limit.filter(record("another message"))  # its own budget
    assert limit.filter(record(level=logging.ERROR))  # errors always pass
    assert limit.filter(record(level=logging.INFO))  # and state changes
    now[0] = 61.0
    first = record()
    assert limit.filter(first) and first.suppressed == 7
    second = record()
    assert limit.filter(second) and not hasattr(second, "suppressed")


def test_configured_logging_rate_limits_what_reaches_stderr(capsys):
    configure_logging("json", "info")
    log = logging.getLogger("headstart.test.flood")
    for index in range(RATE_BURST + 50):
        log.warning("bad request from a client", extra={"n": index})
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [line["n"] for line in lines] == list(range(RATE_BURST))
