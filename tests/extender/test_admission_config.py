"""The `admission:` section of the extender's config: defaults, node groups, and errors
that name the file and the field."""

from __future__ import annotations

from dataclasses import astuple

import pytest

from bucketing.resources import Resources
from common.errors import ConfigError
from extender.config import config_from_mapping


def test_defaults_and_a_node_group():
    config = config_from_mapping({"admission": {"autoscaler": {"node_groups": [
        {"name": "p4d-a", "instance_type": "p4d.24xlarge", "domain": "pg-a", "max_size": 8,
         "allocatable": {"cpu": "95", "memory": "1100Gi", "nvidia.com/gpu": "8"}}]}}}, "x.yaml")
    assert config.admission.enabled and config.admission.gate == "headstart.io/placement"
    (group,) = config.admission.node_groups
    assert (group.domain, group.max_size, group.level) == ("pg-a", 8, "placement-group")
    # Read as a Node's allocatable is: with the GPUs per device kind too, which the
    # packer compares a pod's GPUs against (without them no GPU pod fitted a new node).
    assert (group.allocatable.gpu_milli, group.allocatable.cpu_milli,
            group.allocatable.memory_bytes) == astuple(Resources.of(8, 95, 1100))[:3]
    assert group.allocatable.device("nvidia.com/gpu") == 8000
    assert config_from_mapping({}, "x.yaml").admission.node_groups == ()


def test_a_node_group_template_is_read():
    config = config_from_mapping({"admission": {"autoscaler": {"node_groups": [
        {"name": "g", "instance_type": "p4d.24xlarge", "domain": "pg-a",
         "labels": {"gpu.model": "a100"},
         "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
                    {"key": "soft", "effect": "PreferNoSchedule"}]}]}}}, "x.yaml")
    (group,) = config.admission.node_groups
    assert group.labels == {"gpu.model": "a100"}
    assert [str(taint) for taint in group.taints] == ["dedicated=ml:NoSchedule"]


@pytest.mark.parametrize("admission, message", [
    ({"gates": "x"}, "x.yaml: admission: gates: unknown field"),
    ({"enabled": "yes"}, "x.yaml: admission: enabled: expected true or false"),
    ({"settle_seconds": -1}, "x.yaml: admission: settle_seconds: expected a number"),
    ({"autoscaler": {"node_groups": [{"name": "g", "instance_type": "t", "max_size": 3}]}},
     "x.yaml: admission: autoscaler: node_groups[0]: domain: required"),
    ({"autoscaler": {"status": "cluster-autoscaler-status"}},
     "x.yaml: admission: autoscaler: status: expected NAMESPACE/NAME"),
    ({"autoscaler": {"node_groups": [{"name": "g", "instance_type": "t", "domain": "d",
                                      "max_size": 2, "level": "rack"}]}},
     "x.yaml: admission: autoscaler: node_groups[0]: level: 'rack' is not one of"),
    ({"lease_duration_s": 5, "renew_deadline_s": 10},
     "x.yaml: admission: expected lease_duration_s > renew_deadline_s"),
    ({"bind_timeout_seconds": 0},
     "x.yaml: admission: bind_timeout_seconds: expected a number of seconds, at least 1"),
    ({"head_hold_seconds": "10m"}, "x.yaml: admission: head_hold_seconds: expected a number"),
    ({"ready_timeout_seconds": 600},  # the default bind timeout is 900 s
     "x.yaml: admission: ready_timeout_seconds: 600 is below bind_timeout_seconds (900)"),
    ({"ready_timeout_max_seconds": 1000},
     "x.yaml: admission: ready_timeout_max_seconds: 1000 is below ready_timeout_seconds"),
    ({"backoff_base_seconds": -60},
     "x.yaml: admission: backoff_base_seconds: expected a number of seconds, at least 0"),
    ({"requeue_limit": 0}, "x.yaml: admission: requeue_limit: expected a positive integer"),
    ({"requeue_limit": "3"}, "x.yaml: admission: requeue_limit: expected a positive integer"),
    ({"autoscaler": {"node_groups": [{"name": "g", "instance_type": "t", "domain": "d",
                                      "labels": {"gpu": 1}}]}},
     "x.yaml: admission: autoscaler: node_groups[0]: labels: expected a mapping of strings"),
    ({"autoscaler": {"node_groups": [{"name": "g", "instance_type": "t", "domain": "d",
                                      "taints": [{"effect": "NoSchedule"}]}]}},
     "x.yaml: admission: autoscaler: node_groups[0]: taints[0].key: expected a non-empty"),
], ids=["unknown-field", "not-a-bool", "negative-seconds", "missing-domain",
    "status-without-namespace", "unknown-level",
        "lease-timing", "zero-bind-timeout", "hold-not-a-number", "ready-below-bind",
        "ready-max-below-ready", "negative-backoff", "zero-requeue-limit",
        "requeue-limit-a-string", "label-not-a-string",
        "taint-without-key"])
def test_errors_name_the_file_and_the_field(admission, message):
    with pytest.raises(ConfigError) as error:
        config_from_mapping({"admission": admission}, "x.yaml")
    assert str(error.value).startswith(message), str(error.value)


def test_node_group_max_size_may_come_from_the_autoscaler_status_alone():
    config = config_from_mapping({"admission": {"autoscaler": {
        "status": "ca/status", "node_groups": [
            {"name": "p4d-a", "instance_type": "p4d.24xlarge", "domain": "pg-a"}]}}})
    (group,) = config.admission.node_groups
    assert (group.max_size, config.admission.autoscaler_status) == (None, "ca/status")


def test_readiness_defaults_and_bounds():
    admission = config_from_mapping({}, "x.yaml").admission
    # Kueue's waitForPodsReady, counted from admission: binding (900 s) comes first.
    assert (admission.bind_timeout_seconds, admission.ready_timeout_seconds,
            admission.ready_timeout_max_seconds, admission.requeue_limit) == \
        (900.0, 1200.0, 3600.0, None)
    set_ = config_from_mapping({"admission": {"bind_timeout_seconds": 60,
                                              "ready_timeout_seconds": 60,
                                              "requeue_limit": 3}}, "x.yaml").admission
    assert (set_.ready_timeout_seconds, set_.requeue_limit) == (60.0, 3)
