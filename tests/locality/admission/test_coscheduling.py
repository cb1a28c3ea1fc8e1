"""The PodGroup of an admitted gang: its name (a label value), its body, whose it is."""

from __future__ import annotations

import re

import pytest

from locality.admission.coscheduling import is_ours, pod_group_body, pod_group_name
from locality.model import JobKey

LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@pytest.mark.parametrize(("job", "expected"), [
    ("bert", "bert"),
    ("Bert_Large", None),  # not a DNS name: cleaned, with a hash of the original
    ("x" * 63, "x" * 63),
    ("x" * 64, None),  # one over a label value's 63: cut, with a hash
    ("a." + "b" * 80, None),
])
def test_the_name_is_an_object_name_and_a_label_value(job, expected):
    name = pod_group_name(job)
    assert len(name) <= 63 and LABEL_VALUE.match(name) and DNS_SUBDOMAIN.match(name)
    if expected is not None:
        assert name == expected
    assert pod_group_name(job) == name  # stable: every round labels pods the same
    assert pod_group_name(job + "y") != name


def test_two_long_names_sharing_a_prefix_differ():
    assert pod_group_name("p" * 70 + "1") != pod_group_name("p" * 70 + "2")


def test_the_body_is_owned_by_the_gang_and_sized_by_it():
    body = pod_group_body(JobKey("team", "bert"), 4, 300, "gang-uid")
    assert body["spec"] == {"minMember": 4, "scheduleTimeoutSeconds": 300}
    assert body["metadata"]["namespace"] == "team"
    assert body["metadata"]["ownerReferences"] == [{
        "apiVersion": "headstart.io/v1alpha1", "kind": "Gang", "name": "bert",
        "uid": "gang-uid", "controller": True}]
    assert is_ours(body, JobKey("team", "bert"))


@pytest.mark.parametrize("metadata", [
    {"labels": {"app.kubernetes.io/managed-by": "headstart"},
     "annotations": {"headstart.io/job": "other"}},  # ours, another job's
    {"labels": {}, "annotations": {"headstart.io/job": "bert"}},  # a tenant's copy
    {},
])
def test_a_pod_group_headstart_did_not_create_for_the_job_is_not_ours(metadata):
    assert not is_ours({"metadata": metadata}, JobKey("team", "bert"))
