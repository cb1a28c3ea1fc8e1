"""DLRover-RM's warm start applied to owners: a finished job's profile, and the plan a
job that opts in starts from."""

from __future__ import annotations

import pytest

from locality.elastic import elastic_owner
from overprovisioner.planner.job_profile import (
    WARM_START,
    finished_s,
    not_started,
    profile_from_json,
    profile_json,
    profile_of,
    warm_start_plan,
)
from predictor.models.warm_start import WarmStartConfig

NOW = 1_800_000_000.0


def indexed_job(name, size, image="registry.example/train:v1", gpus="1", cpu="4",
                finished=None, ready=0, **annotations):
    status = {"ready": ready}
    if finished:
        status["conditions"] = [{"type": "Complete", "status": "True",
                                 "lastTransitionTime": finished}]
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ml", "uid": f"{name}-uid",
                         "labels": {"team": "rec"},
                         "annotations": {"headstart.io/min-size": "1",
                                         "headstart.io/max-size": "16", **annotations}},
            "spec": {"parallelism": size, "completions": size, "completionMode": "Indexed",
                     "template": {"spec": {"containers": [{
                         "name": "w", "image": image, "resources": {"requests": {
                             "cpu": cpu, "memory": "16Gi", "nvidia.com/gpu": gpus}}}]}}},
            "status": status}


def pytorch_job(name, workers):
    template = {"spec": {"containers": [{"name": "pytorch", "image": "pt:2", "resources": {
        "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "8"}}}]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template},
                "Worker": {"replicas": workers, "template": template}}},
            "status": {"conditions": [{"type": "Succeeded", "status": "True",
                                       "lastTransitionTime": "2026-11-28T10:00:00Z"}]}}


def test_a_jobs_profile_is_its_image_labels_and_roles():
    profile = profile_of(indexed_job("a", 6), "Job")
    assert (profile.name, profile.image, profile.namespace) == (
        "Job/ml/a", "registry.example/train:v1", "ml")
    assert profile.labels == {"team": "rec"}
    worker = profile.final["worker"]
    assert (worker.pods, worker.cpu, worker.memory_gib, worker.gpus) == (6, 4.0, 16.0, 1.0)
    assert profile_from_json(profile_json(profile)) == profile
    torch = profile_of(pytorch_job("p", 3), "PyTorchJob")
    assert {role: s.pods for role, s in torch.final.items()} == {"Worker": 3, "Master": 1}
    assert torch.finished_at == finished_s(pytorch_job("p", 3), "PyTorchJob") > 0


def test_only_a_success_is_a_finish_and_a_running_job_has_started():
    assert finished_s(indexed_job("a", 2), "Job") is None
    assert finished_s(indexed_job("a", 2, finished="2026-11-28T10:00:00Z"), "Job") == \
        1_795_860_000.0  # 2026-11-28T10:00:00Z
    failed = indexed_job("a", 2)
    failed["status"]["conditions"] = [{"type": "Failed", "status": "True"}]
    assert finished_s(failed, "Job") is None
    assert not_started(indexed_job("a", 2), "Job")
    assert not not_started(indexed_job("a", 2, ready=1), "Job")
    assert not not_started(indexed_job("a", 2, finished="2026-11-28T10:00:00Z"), "Job")


HISTORY = [profile_of(indexed_job(f"past-{i}", size, finished=f"2026-11-2{i}T10:00:00Z"),
                      "Job") for i, size in enumerate((8, 8, 12))]


@pytest.mark.parametrize("size, bounds, expected", [
    # the three past jobs equally alike (same image, namespace, labels, shape) ended with
    # 8, 8 and (the most recent) 12 workers; smoothed from the least to the most similar,
    # equal scores oldest first: 8 -> 0.5*8 + 0.5*8 = 8 -> 0.5*12 + 0.5*8 = 10
    (2, ("1", "16"), 10),
    (2, ("1", "6"), 6),      # kept within its max-size
], ids=["from-similar-jobs", "within-bounds"])
def test_a_job_that_asks_starts_from_its_similar_finished_jobs(size, bounds, expected):
    obj = indexed_job("new", size, **{WARM_START: "true", "headstart.io/min-size": bounds[0],
                                      "headstart.io/max-size": bounds[1]})
    owner = elastic_owner(obj, "Job")
    plan, found = warm_start_plan(owner, profile_of(obj, "Job"), HISTORY, WarmStartConfig(),
                                  NOW, 900.0)
    assert found.roles["worker"].pods == 10
    assert (plan.size, plan.planned, plan.uid) == (expected, expected, "new-uid")
    assert plan.valid_until_s == NOW + 900.0
    assert "DLRover-RM warm start: 10 workers from 3 similar finished job(s)" in plan.reason


def test_no_similar_job_gives_no_plan_and_says_why():
    obj = indexed_job("new", 2, image="other/image:v9", gpus="0", cpu="64",
                      **{WARM_START: "true"})
    obj["metadata"]["namespace"] = "elsewhere"
    plan, found = warm_start_plan(elastic_owner(obj, "Job"), profile_of(obj, "Job"),
                                  HISTORY, WarmStartConfig(), NOW, 900.0)
    assert plan is None and "no past job is at least 0.5 alike" in found.reason
