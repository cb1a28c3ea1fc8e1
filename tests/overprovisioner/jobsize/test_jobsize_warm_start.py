"""`headstart size warm-start`: the same answer from a JSON Lines history as from the
store holding the same jobs, the same as `headstart warm-start` and as
`job_profile.warm_start_plan`; the shipped sample history is in the store's format; a
malformed history or flag is one line and exit 2."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from headstart.cli import main
from locality.elastic import elastic_owner
from overprovisioner.jobsize.history import read_profiles
from overprovisioner.planner.job_profile import profile_json, profile_of, warm_start_plan
from predictor.live.store import HistoryStore
from predictor.models.warm_start import WarmStartConfig
from tests.overprovisioner.planner.test_job_profile import indexed_job

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "docs" / "examples"


def past_jobs():
    return [indexed_job(f"past-{i}", size, finished=f"2026-11-2{i}T10:00:00Z")
            for i, size in enumerate((8, 12, 6))]


def histories(tmp_path):
    """The same finished jobs as a store and as JSON Lines."""
    store = tmp_path / "history.sqlite"
    lines = ["# made up", ""]
    with HistoryStore(store, 300.0) as history:
        for i, job in enumerate(past_jobs()):
            body = profile_json(profile_of(job, "Job"))
            history.remember_job(f"u{i}", body["finished"], body)
            lines.append(json.dumps(body))
    jsonl = tmp_path / "history.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    return store, jsonl


def manifest(tmp_path, job):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return str(path)


def answer(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_both_formats_both_names_and_the_library_agree(tmp_path, capsys):
    store, jsonl = histories(tmp_path)
    job = indexed_job("new", 2, **{"headstart.io/max-size": "9"})
    path = manifest(tmp_path, job)
    code, out = answer(capsys, "size", "warm-start", "--history", str(jsonl), path)
    assert code == 0
    assert answer(capsys, "size", "warm-start", "--history", str(store), path) == (0, out)
    assert answer(capsys, "warm-start", "--history", str(jsonl), path) == (0, out)
    owner = elastic_owner(job, "Job")
    plan, found = warm_start_plan(owner, profile_of(job, "Job"), read_profiles(str(store)),
                                  WarmStartConfig(), 0.0, 0.0)
    # most recent first: 6, 12, 8 workers; smoothed from the least similar, alpha 0.5
    assert out["based_on"] == [{"job": n, "similarity": s} for n, s in found.based_on]
    assert out["roles"]["worker"]["pods"] == found.roles["worker"].pods
    assert (out["plan_size"], out["plan_reason"]) == (plan.size, plan.reason)
    assert out["elastic"] is True and out["history"] == 3 and out["reason"] == ""
    for argv in (["size", "warm-start"], ["warm-start"]):
        assert main([*argv, "--history", str(jsonl), path]) == 0
        assert f"plan: {plan.size} ({plan.reason})" in capsys.readouterr().out


def test_nothing_alike_is_exit_1_with_the_reason(tmp_path, capsys):
    _, jsonl = histories(tmp_path)
    job = indexed_job("new", 2, image="other:v1", gpus="0", cpu="64")
    job["metadata"]["namespace"] = "elsewhere"
    code, out = answer(capsys, "size", "warm-start", "--history", str(jsonl),
                       manifest(tmp_path, job))
    assert code == 1 and out["roles"] == {} and out["plan_size"] is None
    assert "no past job is at least 0.5 alike among 3" in out["reason"]


def test_the_shipped_history_is_what_the_store_keeps_and_is_labelled_synthetic():
    path = EXAMPLES / "warm-start-history.jsonl"
    text = path.read_text()
    assert "Synthetic" in text.splitlines()[0] and len(text) < 4096
    bodies = [json.loads(line) for line in text.splitlines()
              if line.strip() and not line.startswith("#")]
    profiles = read_profiles(str(path))
    assert [profile_json(p) for p in profiles] == bodies
    job = yaml.safe_load((EXAMPLES / "warm-start-job.yaml").read_text())
    assert "Synthetic" in (EXAMPLES / "warm-start-job.yaml").read_text().splitlines()[0]
    assert profile_of(job, "Job").name not in {p.name for p in profiles}


BAD_LINES = [
    ('{"name": "a"', ":3: not JSON (Expecting ',' delimiter, column 13)"),
    ('["a"]', ":3: expected a JSON object, got list"),
    ('{"image": "x"}', ":3: name: expected a non-empty string, got None"),
    ('{"name": "a", "roles": {"worker": [1, 2]}}',
     ":3: roles.worker: expected [pods, cpu, memory_gib, gpus], numbers >= 0, got [1, 2]"),
    ('{"name": "a", "roles": {"worker": [1.5, 2, 3, 0]}}',
     ":3: roles.worker: pods: expected a whole number, got 1.5"),
    ('{"name": "a", "roles": {"worker": [1, -2, 3, 0]}}',
     ":3: roles.worker: expected [pods, cpu, memory_gib, gpus], numbers >= 0, got [1, -2, 3, 0]"),
    ('{"name": "a", "roles": [1]}', ":3: roles: expected an object, got [1]"),
    ('{"name": "a", "labels": {"team": 1}}',
     ":3: labels: expected an object of strings, got {'team': 1}"),
    ('{"name": "a", "finished": "yesterday"}',
     ":3: finished: expected Unix seconds, got 'yesterday'"),
    ('{"name": "a", "image": 7}', ":3: image: expected a string, got 7"),
]


@pytest.mark.parametrize("line, message", BAD_LINES,
                         ids=["json", "array", "name", "short-role", "fraction-pods",
                              "negative", "roles", "labels", "finished", "image"])
def test_a_malformed_history_line_names_the_file_line_and_field(line, message, tmp_path,
                                                               capsys):
    good = json.dumps(profile_json(profile_of(past_jobs()[0], "Job")))
    path = tmp_path / "history.jsonl"
    path.write_text(f"# made up\n{good}\n{line}\n")
    job = manifest(tmp_path, indexed_job("new", 2))
    assert main(["size", "warm-start", "--history", str(path), job]) == 2
    err = capsys.readouterr().err
    assert err == f"headstart size warm-start: error: {path}{message}\n"


def test_unreadable_histories_and_bad_flags_are_one_line(tmp_path, capsys):
    job = manifest(tmp_path, indexed_job("new", 2))
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00")
    foreign = tmp_path / "foreign.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    _, jsonl = histories(tmp_path)
    cases = [
        ([str(tmp_path / "none.jsonl")], "none.jsonl: no such history file"),
        ([str(binary)], "neither a SQLite history store nor UTF-8 JSON Lines"),
        ([str(foreign)], "not a headstart history"),
        ([str(jsonl), "--k", "0"], "--k: expected a whole number >= 1, got '0'"),
        ([str(jsonl), "--alpha", "x"], "--alpha: expected a number, got 'x'"),
        ([str(jsonl), "--alpha", "2"], "warm start alpha: expected a number in (0, 1]"),
        ([str(jsonl), "--min-similarity", "1.5"],
         "warm start min_similarity: expected a number in [0, 1]"),
    ]
    for (history, *flags), message in cases:
        assert main(["size", "warm-start", "--history", history, job, *flags]) == 2, message
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_an_owner_that_opted_in_wrongly_is_an_error_not_a_silent_non_elastic_job(
        tmp_path, capsys):
    _, jsonl = histories(tmp_path)
    job = indexed_job("new", 2, **{"headstart.io/min-size": "5", "headstart.io/max-size": "3"})
    assert main(["size", "warm-start", "--history", str(jsonl), manifest(tmp_path, job)]) == 2
    assert "headstart.io/min-size=5 is above headstart.io/max-size=3" in \
        capsys.readouterr().err
