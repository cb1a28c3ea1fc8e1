"""Table tests of the dead-man's switch: which placeholder objects expired, and their floor."""

from __future__ import annotations

import pytest

from overprovisioner.service.expiry import expired, shrink_to_floor, valid_until
from overprovisioner.service.objects import format_time

NOW = 1_700_000_100.0
DEPLOY = ("apps/v1", "Deployment")
BUFFER = ("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer")
TEMPLATE = ("v1", "PodTemplate")


def obj(kind=DEPLOY, name="a", instance_type="g5.xlarge", replicas=3, until=None):
    """A placeholder object as listed; `until` seconds from NOW (None: no stamp)."""
    annotations = {} if until is None else {"headstart.io/valid-until": format_time(NOW + until)}
    body = {"metadata": {"name": name, "annotations": annotations,
                         "labels": {"headstart.io/instance-type": instance_type}},
            "spec": {"replicas": replicas}}
    return (kind[0], kind[1], "headstart", name), body


@pytest.mark.parametrize(
    "until, is_expired",
    [(60, False), (0, True), (-60, True), (None, True)],
    ids=["valid-a-minute-more", "expires-now", "expired", "never-stamped"],
)
def test_expired(until, is_expired):
    _, body = obj(until=until)
    assert expired(body, NOW) is is_expired
    assert valid_until(body) == (None if until is None else NOW + until)


def test_an_unreadable_stamp_promises_nothing():
    _, body = obj()
    body["metadata"]["annotations"]["headstart.io/valid-until"] = "tomorrow"
    assert valid_until(body) is None and expired(body, NOW)


@pytest.mark.parametrize(
    "objects, floors, renewed, expected",
    [
        # one expired Deployment at 3, floor 0 -> 0
        ([obj(until=-1)], {}, (), {"a": 0}),
        # still valid for 60 s: untouched
        ([obj(until=60)], {}, (), {}),
        # expired but renewed by this tick's apply: untouched
        ([obj(until=-1)], {}, ("a",), {}),
        # floor (the type's min) 1: a keeps 1 of its 3
        ([obj(until=-1)], {"g5.xlarge": 1}, (), {"a": 1}),
        # min 2 over two expired groups, in name order: a keeps 2 (of 3), b 0 (of 2)
        ([obj(name="a", until=-1), obj(name="b", replicas=2, until=-1)], {"g5.xlarge": 2},
         (), {"a": 2, "b": 0}),
        # min 2, valid b holds 2 already: expired a goes to 2 - 2 = 0
        ([obj(name="a", until=-1), obj(name="b", replicas=2, until=60)], {"g5.xlarge": 2},
         (), {"a": 0}),
        # never scaled up: a at 1 with floor 2 stays (no write)
        ([obj(replicas=1, until=-1)], {"g5.xlarge": 2}, (), {}),
        # floors are per type: p4d's min does not keep a g5 placeholder
        ([obj(until=-1)], {"p4d.24xlarge": 1}, (), {"a": 0}),
        # CapacityBuffers expire too; PodTemplates carry no replicas and are left alone
        ([obj(BUFFER, until=-1), obj(TEMPLATE, name="t", until=-1)], {}, (), {"a": 0}),
    ],
    ids=["to-zero", "valid", "renewed", "floor-1", "floor-over-groups", "valid-holds-floor",
         "never-up", "floor-per-type", "buffers-not-templates"],
)
def test_shrink_to_floor(objects, floors, renewed, expected):
    mapping = dict(objects)
    renewed_keys = frozenset(key for key in mapping if key[3] in renewed)
    result = shrink_to_floor(mapping, NOW, floors, renewed_keys)
    assert {key[3]: replicas for key, replicas in result.items()} == expected
