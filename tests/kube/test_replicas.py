"""Replica counts of training workloads: the one reading the known-demand sources and
the job admitter share."""

from __future__ import annotations

import pytest

from common.errors import InputError
from kube.replicas import (
    job_spec_pods,
    jobset_replicated_jobs,
    kubeflow_replica_specs,
    trainjob_num_nodes,
)


@pytest.mark.parametrize(("spec", "expected"), [
    ({"pytorchReplicaSpecs": {"Master": {}, "Worker": {"replicas": 3}}},
     [("Master", 1), ("Worker", 3)]),  # replicas defaults to 1
    ({}, []),
], ids=["default-one", "none"])
def test_kubeflow_replica_specs(spec, expected) -> None:
    got = kubeflow_replica_specs(spec, "pytorchReplicaSpecs", "job.spec")
    assert [(s.replica_type, s.replicas) for s in got] == expected


@pytest.mark.parametrize(("spec", "pods"), [
    ({}, 1),  # parallelism 1 by default
    ({"parallelism": 4}, 4),
    ({"parallelism": 4, "completions": 2}, 2),  # min(4, 2 - 0)
], ids=["default", "parallelism", "completions-cap"])
def test_job_spec_pods(spec, pods) -> None:
    assert job_spec_pods(spec, 0, "job.spec") == pods


def test_jobset_replicated_jobs_pods_and_dependencies() -> None:
    spec = {"replicatedJobs": [
        {"name": "init", "template": {"spec": {}}},
        {"name": "node", "replicas": 4, "dependsOn": [{"name": "init", "status": "Complete"}],
         "template": {"spec": {"parallelism": 2, "completions": 2}}},
    ]}
    init, node = jobset_replicated_jobs(spec, "js.spec")
    assert (init.pods, init.depends_on) == (1, ())
    assert (node.pods, node.depends_on) == (8, ("init",))  # 4 Jobs x 2 pods


@pytest.mark.parametrize(("spec", "message"), [
    ({"pytorchReplicaSpecs": {"Worker": {"replicas": "4"}}},
     "job.spec.pytorchReplicaSpecs.Worker.replicas: expected a whole number >= 0, got '4'"),
    ({"pytorchReplicaSpecs": {"Worker": {"replicas": -1}}},
     "job.spec.pytorchReplicaSpecs.Worker.replicas: expected a whole number >= 0, got -1"),
], ids=["string", "negative"])
def test_kubeflow_bad_count_names_the_field(spec, message) -> None:
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        kubeflow_replica_specs(spec, "pytorchReplicaSpecs", "job.spec")


def test_trainjob_num_nodes() -> None:
    assert trainjob_num_nodes({"trainer": {"numNodes": 3}}, "tj.spec") == 3
    assert trainjob_num_nodes({}, "tj.spec") is None  # the runtime decides
