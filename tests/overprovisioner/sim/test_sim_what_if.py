"""The known-ahead what-if options: parsing, their combinations and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from jobtraces.jobtable import known_at
from overprovisioner.sim.what_if import WhatIf, parse_curve, parse_lead, parse_what_if
from tests.overprovisioner.simbuild import pod, table


@pytest.mark.parametrize(
    "text, seconds",
    [("0", 0.0), ("0s", 0.0), ("90s", 90.0), ("10m", 600.0), ("6m30s", 390.0),
     ("1h", 3600.0), (" 2m ", 120.0)],
    ids=["bare-zero", "zero-seconds", "seconds", "minutes", "combined", "hour", "spaces"],
)
def test_lead_parses(text, seconds):
    assert parse_lead(text) == seconds


@pytest.mark.parametrize(
    "text, message",
    [("10", "--lead: '10' has no unit"),
     ("-5m", "--lead: '-5m' is negative; a duration is positive"),
     ("soon", "--lead: 'soon' is not a duration"), ("", "--lead: '' is not a duration")],
    ids=["no-unit", "negative", "words", "empty"],
)
def test_bad_lead_names_the_option(text, message):
    with pytest.raises(InputError, match="^" + message):
        parse_lead(text)


@pytest.mark.parametrize(
    "text, leads",
    [("0,2m,5m,10m,20m", (0.0, 120.0, 300.0, 600.0, 1200.0)),
     ("10m,0", (0.0, 600.0)),  # sorted
     ("5m", (300.0,))],
    ids=["brief-example", "sorted", "one"],
)
def test_curve_parses(text, leads):
    assert parse_curve(text) == leads


@pytest.mark.parametrize(
    "text, message",
    [("0,,5m", "expected leads separated by commas"), ("", "expected leads"),
     ("2m,120s", "a lead appears twice"), ("0,5", "--lead-curve: '5': '5' has no unit")],
    ids=["empty-item", "empty", "repeat", "no-unit"],
)
def test_bad_curve(text, message):
    with pytest.raises(InputError, match=message):
        parse_curve(text)


@pytest.mark.parametrize(
    "share, lead, curve, expected",
    [(None, None, None, None),
     ("0.5", "10m", None, WhatIf(0.5, (600.0,), 7)),
     ("1", None, "0,10m", WhatIf(1.0, (0.0, 600.0), 7, curve=True)),
     ("0", "5m", None, WhatIf(0.0, (300.0,), 7))],
    ids=["none", "one-lead", "curve", "share-zero"],
)
def test_what_if_from_options(share, lead, curve, expected):
    assert parse_what_if(share, lead, curve, seed=7) == expected


@pytest.mark.parametrize(
    "share, lead, curve, message",
    [("1.5", "10m", None, "--lead-share: must be within 0-1, got '1.5'"),
     ("-0.1", "10m", None, "--lead-share: must be within 0-1"),
     ("half", "10m", None, "--lead-share: expected a number within 0-1, got 'half'"),
     ("nan", "10m", None, "--lead-share: must be within 0-1"),
     (None, "10m", None, "--lead: needs --lead-share"),
     (None, None, "0,5m", "--lead-curve: needs --lead-share"),
     ("0.5", None, None, "--lead-share: needs --lead DURATION or --lead-curve"),
     ("0.5", "10m", "0,5m", "--lead and --lead-curve: give one or the other")],
    ids=["share-above-1", "share-negative", "share-words", "share-nan", "lead-alone",
         "curve-alone", "share-alone", "both-leads"],
)
def test_bad_combinations(share, lead, curve, message):
    with pytest.raises(InputError, match="^" + message):
        parse_what_if(share, lead, curve)


def test_apply_marks_the_same_jobs_at_every_lead():
    rows = [pod(f"j{j}-{i}", 1000.0 + 100 * j, 60, job=f"j{j}") for j in range(20)
            for i in range(2)]
    trace = table(rows)
    what_if = WhatIf(0.5, (120.0, 600.0), seed=3, curve=True)
    early, late = (known_at(what_if.apply(trace, lead)) for lead in what_if.leads)
    np.testing.assert_array_equal(np.isnan(early), np.isnan(late))  # one draw of jobs
    marked = ~np.isnan(late)
    submit = trace.frame["submit_s"].to_numpy()
    assert (submit[marked] - late[marked] == 600.0).all()
    assert (submit[marked] - early[marked] == 120.0).all()
    assert 0 < marked.sum() < len(rows)
