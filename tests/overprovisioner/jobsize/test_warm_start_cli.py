"""`headstart warm-start`: the recommendation for a manifest, from a real history file."""

from __future__ import annotations

import json

import yaml

from headstart.cli import main
from overprovisioner.planner.job_profile import profile_json, profile_of
from predictor.live.store import HistoryStore
from tests.overprovisioner.planner.test_job_profile import indexed_job


def history_file(tmp_path, sizes=(8, 12)):
    path = tmp_path / "history.sqlite"
    with HistoryStore(path, 300.0) as store:
        for i, size in enumerate(sizes):
            job = indexed_job(f"past-{i}", size, finished=f"2026-11-2{i}T10:00:00Z")
            store.remember_job(f"u{i}", 1_800_000_000 + i, profile_json(profile_of(job, "Job")))
    return path


def manifest(tmp_path, job):
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def test_it_prints_the_shape_and_the_plan_an_elastic_job_would_get(tmp_path, capsys):
    history = history_file(tmp_path)
    job = manifest(tmp_path, indexed_job("new", 2, **{"headstart.io/max-size": "6"}))
    assert main(["warm-start", "--history", str(history), str(job), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # 8 then (more recent) 12, smoothed: 0.5 * 12 + 0.5 * 8 = 10, planned within max 6
    assert out["roles"]["worker"]["pods"] == 10 and out["plan_size"] == 6
    assert [b["job"] for b in out["based_on"]] == ["Job/ml/past-1", "Job/ml/past-0"]
    assert main(["warm-start", "--history", str(history), str(job)]) == 0
    text = capsys.readouterr().out
    assert "worker: 10 pod(s) of 4 CPU, 16 GiB, 1 GPU" in text and "plan: 6" in text


def test_no_similar_job_exits_1_with_the_reason(tmp_path, capsys):
    history = history_file(tmp_path)
    job = indexed_job("new", 2, image="other:v1", gpus="0", cpu="64")
    job["metadata"]["namespace"] = "elsewhere"
    assert main(["warm-start", "--history", str(history), str(manifest(tmp_path, job))]) == 1
    assert "no past job is at least 0.5 alike among 2" in capsys.readouterr().out


def test_a_manifest_of_another_kind_or_a_missing_history_is_one_line(tmp_path, capsys):
    deployment = manifest(tmp_path, {"kind": "Deployment", "metadata": {"name": "x"}})
    assert main(["warm-start", "--history", str(history_file(tmp_path)),
                 str(deployment)]) == 2
    assert "expected a Job or a PyTorchJob manifest, got kind 'Deployment'" in \
        capsys.readouterr().err
    job = manifest(tmp_path, indexed_job("new", 2))
    assert main(["warm-start", "--history", str(tmp_path / "none.sqlite"), str(job)]) == 2
    assert "no such history file" in capsys.readouterr().err
