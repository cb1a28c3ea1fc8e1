"""The gang record: its name, body and parse, which records reserve room, and when one
becomes Running or is deleted."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import InputError
from locality.admission.model import Domain
from locality.admission.record import (
    GangRecord,
    GangState,
    gang_body,
    orphaned,
    parse_gang,
    record_name,
    reservations,
    whole,
)
from locality.model import JobKey
from locality.suspension import SUSPENDABLE_KINDS
from tests.locality.builders import make_pod

GATE = "headstart.io/placement"
JOB = JobKey("ns", "a")
PG_A = Domain("placement-group", "pg-a")


@pytest.mark.parametrize(("job", "expected"), [
    ("train-1", "train-1"),
    ("Train_1", "train-1-"),  # capitals and _ are label-legal, not name-legal: cleaned + hash
    ("_", "job-"),
], ids=["a-name-already", "cleaned", "nothing-left"])
def test_record_name(job, expected):
    name = record_name(job)
    assert name.startswith(expected)
    if name != job:
        assert len(name) == len(expected) + 8  # the hash keeps cleaned names apart
        assert record_name(job) == name and record_name(job + "x") != name


def test_body_and_parse_round_trip():
    body = gang_body(JOB, GangState.ADMITTED, size=4, level="placement-group",
                     policy="required", domain=PG_A, label_key="headstart.io/placement-group",
                     new_nodes=2, reason="Admitted", message="fits", now=0.0)
    assert body["status"] == {"state": "Admitted", "reason": "Admitted", "message": "fits",
                              "lastTransitionTime": "1970-01-01T00:00:00Z",
                              "domain": "placement-group=pg-a",
                              "labelKey": "headstart.io/placement-group", "newNodes": 2}
    body["metadata"]["uid"] = "u1"
    assert parse_gang(body) == GangRecord(JOB, GangState.ADMITTED, PG_A,
                                          "headstart.io/placement-group", 4, "Admitted",
                                          "fits", "a", "u1")
    waiting = gang_body(JOB, GangState.WAITING, size=None, level="placement-group",
                        policy="preferred", reason="no_fit", message="m", now=0.0)
    assert "domain" not in waiting["status"] and "size" not in waiting["spec"]


def test_the_jobs_an_eviction_suspended_round_trip():
    body = gang_body(JOB, GangState.EVICTED, size=2, level="placement-group",
                     policy="required", now=0.0, evictions=1, requeue_at=60.0,
                     suspended_jobs=(("Job", "a", "uid-a"), ("JobSet", "s", "uid-s")))
    assert body["status"]["suspendedJobs"] == [{"kind": "Job", "name": "a", "uid": "uid-a"},
                                               {"kind": "JobSet", "name": "s", "uid": "uid-s"}]
    record = parse_gang(body)
    assert record.suspended_jobs == (("Job", "a", "uid-a"), ("JobSet", "s", "uid-s")) \
        and record.requeue_at == 60.0
    plain = gang_body(JOB, GangState.EVICTED, size=2, level="placement-group",
                      policy="required", now=0.0, requeue_at=60.0)
    assert "suspendedJobs" not in plain["status"]
    assert parse_gang(plain).suspended_jobs == ()


@pytest.mark.parametrize(("change", "field"), [
    ({"status": {"state": "Lost"}}, "gang.status.state"),
    ({"status": {"suspendedJobs": [{"name": "a"}]}}, "gang.status.suspendedJobs"),
    ({"spec": {"job": "a", "size": "4"}}, "gang.spec.size"),
    ({"spec": []}, "gang: metadata, spec and status"),
], ids=["unknown-state", "suspended-job-without-uid", "size-not-an-integer",
        "spec-not-an-object"])
def test_malformed_record_names_the_field(change, field):
    body = {"metadata": {"name": "a", "namespace": "ns"}, "spec": {"job": "a"}, **change}
    with pytest.raises(InputError, match=field):
        parse_gang(body)


def pod(name, node=None, gated=False, **changes):
    made = make_pod(name, job="a", gpus=8, node=node)
    return replace(made, scheduling_gates=(GATE,) if gated else (), **changes)


def test_only_admitted_records_reserve_their_unbound_ungated_pods():
    pods = [pod("a-0"), pod("a-1", node="n1"), pod("a-2", gated=True),
            pod("a-3", deleting=True), pod("a-4", terminal=True)]
    admitted = GangRecord(JOB, GangState.ADMITTED, PG_A)
    (reservation,) = reservations([admitted], lambda key: pods, GATE)
    assert reservation.domain == PG_A
    assert [count for _, _, count in reservation.demand] == [1]  # a-0 alone
    waiting = GangRecord(JOB, GangState.WAITING)
    assert reservations([waiting], lambda key: pods, GATE) == ()


@pytest.mark.parametrize(("pods", "size", "running"), [
    ([pod("a-0", node="n1"), pod("a-1", node="n2")], 2, True),
    ([pod("a-0", node="n1"), pod("a-1")], 2, False),
    ([pod("a-0", node="n1"), pod("a-1", node="n2", deleting=True)], 2, False),
    ([pod("a-0", node="n1")], None, True),
    ([], None, False),
], ids=["all-bound", "one-pending", "terminating-is-no-member", "no-size-all-bound",
        "no-pods"])
def test_whole(pods, size, running):
    record = GangRecord(JOB, GangState.ADMITTED, PG_A, size=size)
    assert whole(record, pods) is running


def test_orphaned_records_are_those_without_pods():
    kept = GangRecord(JOB, GangState.RUNNING, PG_A)
    gone = GangRecord(JobKey("ns", "b"), GangState.WAITING)
    evicted = GangRecord(JobKey("ns", "c"), GangState.EVICTED, requeue_at=100.0)
    pods = {JOB: [pod("a-0", node="n1")]}
    # The evicted record outlives its pods until 300 s after its requeueAt (the owner
    # recreates them once the evicted ones have ended).
    assert orphaned([kept, gone, evicted], lambda key: pods.get(key, []), 399.0) == [gone]
    assert orphaned([kept, gone, evicted], lambda key: pods.get(key, []), 400.0) == [
        gone, evicted]


def test_the_lifecycle_diagram_covers_every_state_and_is_the_one_the_docs_show():
    from pathlib import Path

    from locality.admission.lifecycle import TRANSITIONS, mermaid

    named = {name for source, target, _ in TRANSITIONS for name in (source, target)}
    assert {state.value for state in GangState} <= named
    page = (Path(__file__).resolve().parents[3] / "docs" / "extender.md").read_text()
    shown = page.split("<!-- lifecycle -->\n```mermaid\n")[1].split("```\n<!-- /lifecycle -->")[0]
    assert shown == mermaid(), "run python -m locality.admission.lifecycle and paste it"


def _schema_fields(schema, prefix=()):
    """Every field path the CRD's structural schema keeps (the API server prunes others)."""
    paths = {prefix}
    for name, child in (schema.get("properties") or {}).items():
        paths |= _schema_fields(child, (*prefix, name))
    return paths


def _body_fields(body, prefix=()):
    paths = {prefix}
    if isinstance(body, dict):
        for name, child in body.items():
            paths |= _body_fields(child, (*prefix, name))
    return paths


@pytest.mark.parametrize("state", list(GangState), ids=lambda s: s.value)
def test_every_record_the_admitter_writes_is_valid_for_the_shipped_crd(state):
    # kube-apiserver refuses (422) what the CRD's schema does not allow, and silently
    # prunes fields it does not declare: each state, with every optional field set and
    # every kind headstart suspends in suspendedJobs (a kind the enum lacked made the
    # RayJob's record a 422, found by tests/e2e/test_rayjob.py).
    from pathlib import Path

    import jsonschema
    import yaml

    crd = yaml.safe_load((Path(__file__).resolve().parents[3] / "manifests" / "base" / "crds"
                          / "gangs.headstart.io.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    body = gang_body(JOB, state, size=4, level="placement-group", policy="required",
                     domain=PG_A, label_key="headstart.io/placement-group", new_nodes=1,
                     reason="r", message="m" * 2000, now=0.0, evictions=2, requeue_at=60.0,
                     suspended_jobs=tuple((kind, f"n-{index}", f"uid-{index}")
                                          for index, kind in enumerate(SUSPENDABLE_KINDS)))
    jsonschema.validate(body, schema)
    kept = _schema_fields(schema)
    pruned = {path for path in _body_fields(body) if path[:1] != ("metadata",)} - kept
    assert pruned == set(), f"fields the API server would drop: {pruned}"
