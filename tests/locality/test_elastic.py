"""Which owners opted in to resizing, and their bounds (locality.elastic)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.admission.resize import pod_index
from locality.elastic import (
    MAX_SIZE_ANNOTATION,
    MIN_SIZE_ANNOTATION,
    Bounds,
    elastic_owner,
    scale_patch,
)
from locality.owners import INDEX_ANNOTATION
from tests.locality.builders import make_pod


def indexed_job(parallelism=4, completions=4, low="2", high="8", mode="Indexed"):
    annotations = {}
    if low is not None:
        annotations[MIN_SIZE_ANNOTATION] = low
    if high is not None:
        annotations[MAX_SIZE_ANNOTATION] = high
    return {"metadata": {"name": "train", "namespace": "team", "annotations": annotations,
                         "resourceVersion": "41"},
            "spec": {"parallelism": parallelism, "completions": completions,
                     "completionMode": mode}}


def pytorchjob(workers=3, low="2", high="6", policy=None):
    spec = {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": workers}}}
    if policy is not None:
        spec["elasticPolicy"] = policy
    return {"metadata": {"name": "pt", "namespace": "team",
                         "annotations": {MIN_SIZE_ANNOTATION: low, MAX_SIZE_ANNOTATION: high}},
            "spec": spec}


def test_an_indexed_job_with_both_annotations_is_elastic():
    owner = elastic_owner(indexed_job(), "Job")
    assert (owner.size, owner.bounds, owner.problem) == (4, Bounds(2, 8), None)
    assert scale_patch(owner, 6) == {"metadata": {"resourceVersion": "41"},
                                     "spec": {"parallelism": 6, "completions": 6}}


def test_an_owner_without_the_annotations_did_not_opt_in():
    assert elastic_owner(indexed_job(low=None, high=None), "Job") is None
    assert elastic_owner({"metadata": {}, "spec": {}}, "PyTorchJob") is None


@pytest.mark.parametrize("job,problem", [
    (indexed_job(low="5", high="3"), "min-size=5 is above headstart.io/max-size=3"),
    (indexed_job(low="2", high=None), "max-size is missing"),
    (indexed_job(low="two"), "min-size: expected a whole number >= 1, got 'two'"),
    (indexed_job(low="0"), "min-size: expected a whole number >= 1"),
    (indexed_job(parallelism=4, completions=10), "only an Indexed Job with completions equal"),
    (indexed_job(mode="NonIndexed"), "only an Indexed Job"),
    (indexed_job(parallelism=10, completions=10), "its size 10 is outside"),
])
def test_an_owner_that_cannot_be_resized_says_why_and_where(job, problem):
    owner = elastic_owner(job, "Job")
    assert owner.bounds is None
    assert "Job team/train" in owner.problem and problem in owner.problem


def test_a_pytorchjob_resizes_its_workers_within_its_elastic_policy():
    owner = elastic_owner(pytorchjob(policy={"minReplicas": 1, "maxReplicas": 8}), "PyTorchJob")
    assert (owner.size, owner.bounds) == (3, Bounds(2, 6))
    # The Master is no worker but still one of the job's pods: 3 workers + 1 master.
    assert (owner.others, owner.pods(owner.size)) == (1, 4)
    assert scale_patch(owner, 5) == {
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 5}}}}
    outside = elastic_owner(pytorchjob(policy={"minReplicas": 3, "maxReplicas": 4}),
                            "PyTorchJob")
    assert "must lie within its elasticPolicy minReplicas..maxReplicas (3..4)" in outside.problem


def test_a_kind_that_cannot_change_size_is_refused():
    owner = elastic_owner(pytorchjob() | {"spec": {}}, "JobSet")
    assert "a JobSet cannot be resized by headstart" in owner.problem
    with pytest.raises(ValueError):
        scale_patch(owner, 3)


def test_pod_index_reads_the_job_controllers_annotation():
    pod = make_pod("p")
    assert pod_index(pod) is None
    assert pod_index(replace(pod, annotations={INDEX_ANNOTATION: "7"})) == 7
    assert pod_index(replace(pod, labels={"training.kubeflow.org/replica-index": "2"})) == 2
