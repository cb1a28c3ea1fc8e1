"""Job identity and role from labels, policy from annotations."""

from __future__ import annotations

from dataclasses import replace

import pytest

from locality.config import JobLabelKeys, LocalityConfig
from locality.jobs import identify, job_key_of, job_policy, parse_role
from locality.model import JobIdentity, JobKey, JobPolicy, Locality, Packing, Role
from tests.locality.builders import make_pod

CONFIG = LocalityConfig()
BASE = make_pod("p", namespace="team")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param({"training.kubeflow.org/job-name": "mnist",
                      "training.kubeflow.org/replica-type": "PS"},
                     JobIdentity(JobKey("team", "mnist"), Role.PS), id="kubeflow-PS"),
        pytest.param({"training.kubeflow.org/job-name": "mnist",
                      "training.kubeflow.org/replica-type": "worker"},
                     JobIdentity(JobKey("team", "mnist"), Role.WORKER), id="kubeflow-worker"),
        pytest.param({"volcano.sh/job-name": "v", "volcano.sh/task-spec": "Worker"},
                     JobIdentity(JobKey("team", "v"), Role.WORKER), id="volcano-Worker"),
        pytest.param({"headstart.io/job": "h", "headstart.io/role": "Chief"},
                     JobIdentity(JobKey("team", "h"), Role.CHIEF), id="headstart-chief"),
        pytest.param({"headstart.io/job": "h"},
                     JobIdentity(JobKey("team", "h"), Role.OTHER), id="no-role-label"),
        pytest.param({"training.kubeflow.org/job-name": "k", "headstart.io/job": "h",
                      "headstart.io/role": "ps"},
                     JobIdentity(JobKey("team", "k"), Role.OTHER),
                     id="first-pair-wins-with-its-own-role-key"),
        # mpi-operator v2: job-role only (no replica-type label on its pods).
        pytest.param({"training.kubeflow.org/job-name": "allreduce",
                      "training.kubeflow.org/job-role": "launcher"},
                     JobIdentity(JobKey("team", "allreduce"), Role.LAUNCHER),
                     id="mpijob-v2-launcher"),
        pytest.param({"training.kubeflow.org/job-name": "allreduce",
                      "training.kubeflow.org/job-role": "worker"},
                     JobIdentity(JobKey("team", "allreduce"), Role.WORKER),
                     id="mpijob-v2-worker"),
        # training-operator v1 PyTorchJob master: replica-type master, job-role master.
        pytest.param({"training.kubeflow.org/job-name": "ddp",
                      "training.kubeflow.org/replica-type": "master",
                      "training.kubeflow.org/job-role": "master"},
                     JobIdentity(JobKey("team", "ddp"), Role.CHIEF), id="pytorchjob-master"),
        # replica-type first: a TFJob chief carries job-role master too.
        pytest.param({"training.kubeflow.org/job-name": "tf",
                      "training.kubeflow.org/replica-type": "worker",
                      "training.kubeflow.org/job-role": "launcher"},
                     JobIdentity(JobKey("team", "tf"), Role.WORKER),
                     id="replica-type-before-job-role"),
        pytest.param({"jobset.sigs.k8s.io/jobset-name": "llama",
                      "jobset.sigs.k8s.io/replicatedjob-name": "workers"},
                     JobIdentity(JobKey("team", "llama"), Role.WORKER), id="jobset-workers"),
        pytest.param({"jobset.sigs.k8s.io/jobset-name": "llama",
                      "jobset.sigs.k8s.io/replicatedjob-name": "driver"},
                     JobIdentity(JobKey("team", "llama"), Role.CHIEF), id="jobset-driver"),
        # Kubeflow Trainer v2: the TrainJob's JobSet, replicated job `node`.
        pytest.param({"jobset.sigs.k8s.io/jobset-name": "fine-tune",
                      "jobset.sigs.k8s.io/replicatedjob-name": "node",
                      "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"},
                     JobIdentity(JobKey("team", "fine-tune"), Role.WORKER), id="trainjob-node"),
        pytest.param({"jobset.sigs.k8s.io/jobset-name": "fine-tune",
                      "jobset.sigs.k8s.io/replicatedjob-name": "dataset-initializer"},
                     JobIdentity(JobKey("team", "fine-tune"), Role.OTHER),
                     id="trainjob-initializer"),
        pytest.param({"app": "web"}, None, id="no-job"),
        pytest.param({"headstart.io/job": ""}, None, id="empty-job-name"),
        pytest.param({"headstart.io/job": "h", "headstart.io/placeholder": "true"}, None,
                     id="placeholder-is-never-a-job"),
    ],
)
def test_identify(labels, expected):
    pod = replace(BASE, labels=labels, is_placeholder="headstart.io/placeholder" in labels)
    assert identify(pod, CONFIG) == expected
    assert job_key_of(pod, CONFIG) == (expected.key if expected else None)


@pytest.mark.parametrize(
    ("value", "role"),
    [("ps", Role.PS), ("PS", Role.PS), ("ParameterServer", Role.PS), ("worker", Role.WORKER),
     (" Worker ", Role.WORKER), ("Master", Role.CHIEF), ("launcher", Role.LAUNCHER),
     ("node", Role.WORKER), ("Leader", Role.CHIEF), ("driver", Role.CHIEF),
     ("evaluator", Role.OTHER), ("", Role.OTHER), (None, Role.OTHER)],
    ids=lambda value: repr(value),
)
def test_roles_are_case_insensitive(value, role):
    assert parse_role(value) is role


def test_configured_label_keys():
    config = LocalityConfig(job_labels=(JobLabelKeys("example.com/job", "example.com/role"),))
    pod = replace(BASE, labels={"example.com/job": "x", "example.com/role": "ps",
                                "headstart.io/job": "ignored"})
    assert identify(pod, config) == JobIdentity(JobKey("team", "x"), Role.PS)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({}, JobPolicy(Packing.PACK, Locality.PREFERRED, Locality.PREFERRED),
                     id="defaults"),
        pytest.param({"headstart.io/packing": "Spread",
                      "headstart.io/placement-group": "REQUIRED",
                      "headstart.io/numa": "none", "headstart.io/job-size": "17"},
                     JobPolicy(Packing.SPREAD, Locality.REQUIRED, Locality.NONE, 17),
                     id="all-set"),
        pytest.param({"headstart.io/packing": "tight", "headstart.io/job-size": "-2"},
                     JobPolicy(Packing.PACK, Locality.PREFERRED, Locality.PREFERRED, None, (
                         "annotation headstart.io/packing='tight' is not pack or spread; "
                         "using pack",
                         "annotation headstart.io/job-size='-2' is not a positive integer; "
                         "ignored",
                     )),
                     id="invalid-values-fall-back-with-a-reason"),
        pytest.param({"headstart.io/placement-group": "always"},
                     JobPolicy(Packing.PACK, Locality.PREFERRED, Locality.PREFERRED, None, (
                         "annotation headstart.io/placement-group='always' is not required, "
                         "preferred or none; using preferred",
                     )),
                     id="invalid-group-policy"),
    ],
)
def test_job_policy(annotations, expected):
    assert job_policy(replace(BASE, annotations=annotations), CONFIG) == expected


@pytest.mark.parametrize(
    ("annotations", "min_member", "expected"),
    [
        # A PodGroup's minMember is the job size when the pod does not say otherwise.
        pytest.param({}, 16, JobPolicy(job_size=16), id="podgroup-min-member"),
        pytest.param({"headstart.io/job-size": "20"}, 16, JobPolicy(job_size=20),
                     id="annotation-wins-over-podgroup"),
        pytest.param({}, None, JobPolicy(), id="podgroup-not-seen-yet"),
        # Levels: block 0, subblock 1, placement-group 2 (the default: None), nvlink 3.
        pytest.param({"headstart.io/topology-level": "NVLink"}, None,
                     JobPolicy(topology_level=3), id="level-by-name"),
        pytest.param({"headstart.io/topology-level": "placement-group"}, None, JobPolicy(),
                     id="placement-group-level-is-the-default"),
        pytest.param({"headstart.io/topology-level": "rack"}, None,
                     JobPolicy(problems=(
                         "annotation headstart.io/topology-level='rack' is not one of block, "
                         "subblock, placement-group, nvlink; using placement-group",)),
                     id="unknown-level"),
    ],
)
def test_job_size_and_topology_level(annotations, min_member, expected):
    pod = replace(BASE, annotations=annotations, group_min_member=min_member)
    assert job_policy(pod, CONFIG) == expected


def test_policy_defaults_come_from_config():
    config = LocalityConfig(default_packing=Packing.SPREAD, default_numa=Locality.REQUIRED)
    policy = job_policy(BASE, config)
    assert (policy.packing, policy.numa) == (Packing.SPREAD, Locality.REQUIRED)


INDEX = {"batch.kubernetes.io/job-completion-index": "2"}


@pytest.mark.parametrize(("labels", "annotations", "controller", "expected"), [
    # An Indexed Job's pod, no headstart label: its Job is its job, it is a worker.
    ({"batch.kubernetes.io/job-name": "train"}, INDEX, ("Job", "train"),
     JobIdentity(JobKey("ns", "train"), Role.WORKER)),
    # A job label wins (a JobSet's child Job, or headstart.io/job set by hand).
    ({"headstart.io/job": "bert", "headstart.io/role": "ps"}, INDEX, ("Job", "train"),
     JobIdentity(JobKey("ns", "bert"), Role.PS)),
    # A NonIndexed Job's pod (no index), or an index under another controller: no job.
    ({"batch.kubernetes.io/job-name": "train"}, {}, ("Job", "train"), None),
    ({}, INDEX, ("ReplicaSet", "web-1"), None),
], ids=["indexed-job", "label-wins", "non-indexed", "not-a-job-controller"])
def test_an_indexed_job_is_a_job_without_labels(labels, annotations, controller, expected):
    pod = replace(make_pod("p"), labels=labels, annotations=annotations, controller=controller)
    assert identify(pod, LocalityConfig()) == expected
