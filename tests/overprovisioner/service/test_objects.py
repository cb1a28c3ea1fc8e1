"""Plan -> placeholder objects: names, labels, sizing, selectors, backends, PriorityClass."""

from __future__ import annotations

import re

import pytest

from bucketing.resources import Resources
from common.errors import InputError
from overprovisioner.config.catalog import resolve_catalog
from overprovisioner.config.parse import parse_config
from overprovisioner.planner.plan import PlannedBucket
from overprovisioner.service.objects import (
    SPEC_HASH,
    desired_objects,
    placeholder_name,
    priority_class,
)

HEADSTART_LABELS = {
    "app.kubernetes.io/managed-by": "headstart",
    "app.kubernetes.io/part-of": "headstart",
    "app.kubernetes.io/component": "placeholder",
    "headstart.io/placeholder": "true",
}


def make_config(**placeholders):
    return parse_config(
        {"instance_types": ["m5.large", "g5.xlarge", "p4d.24xlarge"], "placeholders": placeholders},
        "test.yaml",
    )


def bucket(instance_type="g5.xlarge", group="", wanted=1) -> PlannedBucket:
    return PlannedBucket(instance_type, group, float(wanted), 0, 0, 0, 0, wanted, None, "test")


@pytest.mark.parametrize(
    "instance_type, group, expected",
    [
        ("g5.xlarge", "", "headstart-placeholder-g5-xlarge"),
        ("g5.xlarge", "pg-a", "headstart-placeholder-g5-xlarge-pg-a"),
        ("p4d.24xlarge", "rack.7", "headstart-placeholder-p4d-24xlarge-rack-7"),
        ("n2-standard-8", "", "headstart-placeholder-n2-standard-8"),
    ],
    ids=["no-group", "group", "dots-in-group", "gcp-name"],
)
def test_placeholder_names(instance_type, group, expected) -> None:
    assert placeholder_name(instance_type, group) == expected


@pytest.mark.parametrize(
    "instance_type, group",
    [("g5.xlarge", "PG_A"), ("g5.xlarge", "x" * 80), ("a" * 70, "")],
    ids=["lossy-characters", "long-group", "long-type"],
)
def test_names_that_need_a_hash_stay_dns_labels(instance_type, group) -> None:
    name = placeholder_name(instance_type, group)
    assert len(name) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)
    assert re.search(r"-[0-9a-f]{8}$", name)


def test_groups_that_sanitize_alike_get_distinct_names() -> None:
    # "PG_A" and "pg-a" both sanitize to "pg-a"; the hash keeps them apart.
    assert placeholder_name("g5.xlarge", "PG_A") != placeholder_name("g5.xlarge", "pg-a")


def test_deployment_claims_one_node_of_its_type_in_its_group() -> None:
    config = make_config()
    catalog = resolve_catalog(config)
    (deployment,) = desired_objects([bucket("g5.xlarge", "pg-a", 3)], config, catalog, "deployment")
    body = deployment.body
    assert (deployment.api_version, deployment.kind) == ("apps/v1", "Deployment")
    assert deployment.namespace == "headstart"
    assert body["spec"]["replicas"] == 3
    assert body["spec"]["strategy"] == {"type": "Recreate"}
    pod = body["spec"]["template"]
    for labels in (body["metadata"]["labels"], pod["metadata"]["labels"]):
        assert HEADSTART_LABELS.items() <= labels.items()
        assert labels["headstart.io/instance-type"] == "g5.xlarge"
        assert labels["headstart.io/placement-group"] == "pg-a"
    assert body["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    spec = pod["spec"]
    assert spec["nodeSelector"] == {
        "node.kubernetes.io/instance-type": "g5.xlarge",
        "headstart.io/placement-group": "pg-a",
    }
    assert spec["priorityClassName"] == "headstart-placeholder"
    # The scheduler of the training pods, so the one that preempts it binds the real pod.
    assert spec["schedulerName"] == "headstart-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 0
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    (container,) = spec["containers"]
    assert container["image"] == "registry.k8s.io/pause:3.10"
    # No live node given: the fraction rule. g5.xlarge allocatable 3920m CPU / 14819Mi,
    # less the aws catalog's daemonset overhead 300m / 512Mi = 3620m and 14307Mi; x 0.8
    # (gpu_type_fraction) = 2896m and 11445.6Mi, rounded down to 11445Mi; all 1 GPU.
    assert container["resources"]["requests"] == {
        "cpu": "2896m", "memory": str(11445 * 1024**2), "nvidia.com/gpu": "1",
    }
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}


def test_cpu_type_without_group_has_no_gpu_and_no_group_label() -> None:
    config = make_config()
    (deployment,) = desired_objects([bucket("m5.large", "", 0)], config, resolve_catalog(config),
                                    "deployment")
    spec = deployment.body["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "m5.large"}
    assert "tolerations" not in spec
    assert "headstart.io/placement-group" not in deployment.body["metadata"]["labels"]
    # m5.large allocatable 1930m / 6627Mi less 300m / 512Mi = 1630m, 6115Mi; x 0.9
    # (cpu_type_fraction) = 1467m and 5503.5Mi -> 5503Mi. No GPU.
    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "1467m", "memory": str(5503 * 1024**2)}}
    assert deployment.body["spec"]["replicas"] == 0


def test_a_measured_request_replaces_the_fraction_rule() -> None:
    config = make_config()
    measured = {"g5.xlarge": Resources(1000, 3500, 14000 * 1024**2)}
    (deployment,) = desired_objects([bucket("g5.xlarge")], config, resolve_catalog(config),
                                    "deployment", measured)
    (container,) = deployment.body["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["requests"] == {
        "cpu": "3500m", "memory": str(14000 * 1024**2), "nvidia.com/gpu": "1"}


def test_an_empty_scheduler_name_leaves_the_default_scheduler() -> None:
    config = make_config(scheduler_name="")
    (deployment,) = desired_objects([bucket()], config, resolve_catalog(config), "deployment")
    assert "schedulerName" not in deployment.body["spec"]["template"]["spec"]


@pytest.mark.parametrize("api_version", ["autoscaling.x-k8s.io/v1beta1",
                                         "autoscaling.x-k8s.io/v1alpha1"])
def test_capacity_buffer_references_its_pod_template(api_version) -> None:
    config = make_config(placement_group_label="cloud.google.com/gke-placement-group")
    template, buffer = desired_objects([bucket("p4d.24xlarge", "pg-b", 2)], config,
                                       resolve_catalog(config), "capacitybuffer",
                                       buffer_api_version=api_version)
    assert (template.api_version, template.kind) == ("v1", "PodTemplate")
    assert (buffer.api_version, buffer.kind) == (api_version, "CapacityBuffer")
    assert buffer.body["apiVersion"] == api_version
    assert template.body["template"]["spec"]["schedulerName"] == "headstart-scheduler"
    assert buffer.body["spec"]["podTemplateRef"] == {"name": template.name}
    assert buffer.body["spec"]["replicas"] == 2
    selector = template.body["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/gke-placement-group"] == "pg-b"
    for obj in (template, buffer):
        assert HEADSTART_LABELS.items() <= obj.body["metadata"]["labels"].items()


def test_spec_hash_changes_with_the_spec_only() -> None:
    config = make_config()
    catalog = resolve_catalog(config)
    one = desired_objects([bucket(wanted=1)], config, catalog, "deployment")[0]
    again = desired_objects([bucket(wanted=1)], config, catalog, "deployment")[0]
    two = desired_objects([bucket(wanted=2)], config, catalog, "deployment")[0]
    assert one.body["metadata"]["annotations"][SPEC_HASH] == again.spec_hash
    assert one.spec_hash != two.spec_hash


def test_duplicate_bucket_is_refused() -> None:
    config = make_config()
    with pytest.raises(InputError, match="twice"):
        desired_objects([bucket(), bucket()], config, resolve_catalog(config), "deployment")


def test_priority_class() -> None:
    pc = priority_class(make_config(priority_class_value=-7))
    assert pc.namespace is None
    assert pc.body["value"] == -7
    assert pc.body["preemptionPolicy"] == "Never"
    assert pc.body["globalDefault"] is False
    assert pc.body["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "headstart"
    assert "-10" in pc.body["description"]


def test_inputs_are_not_mutated() -> None:
    config = make_config()
    planned = [bucket("g5.xlarge", "pg-a", 2)]
    before = repr(planned)
    desired_objects(planned, config, resolve_catalog(config), "deployment")
    assert repr(planned) == before


def all_resources(body):
    """Every `resources` block anywhere in an object body (containers of any template)."""
    if isinstance(body, dict):
        for key, value in body.items():
            if key == "resources":
                yield value
            else:
                yield from all_resources(value)
    elif isinstance(body, list):
        for item in body:
            yield from all_resources(item)


@pytest.mark.parametrize("backend", ["deployment", "capacitybuffer"])
def test_request_gpus_false_drops_every_gpu_request_and_keeps_the_rest(backend) -> None:
    config = make_config(request_gpus=False)
    objects = desired_objects([bucket("p4d.24xlarge", "pg-a", 2)], config,
                              resolve_catalog(config), backend)
    templates = [obj.body["spec"]["template"] if obj.kind == "Deployment"
                 else obj.body["template"] for obj in objects if obj.kind != "CapacityBuffer"]
    assert len(templates) == 1
    blocks = [block for obj in objects for block in all_resources(obj.body)]
    # p4d.24xlarge allocatable 95690m CPU / 1178083Mi, less the aws catalog's daemonset
    # overhead 300m / 512Mi: 95390m and 1177571Mi; x 0.8 = 76312m and 942056.8Mi ->
    # 942056Mi; no GPUs, no limits at all.
    assert blocks == [{"requests": {"cpu": "76312m", "memory": str(942056 * 1024**2)}}]
    spec = templates[0]["spec"]
    # The node still carries the GPU taint, so the toleration stays.
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert spec["nodeSelector"]["node.kubernetes.io/instance-type"] == "p4d.24xlarge"


@pytest.mark.parametrize("request_gpus", [True, False], ids=["gpus", "no-gpus"])
@pytest.mark.parametrize("instance_type", ["m5.large", "g5.xlarge", "p4d.24xlarge"])
def test_placeholders_set_no_cpu_or_memory_limits(instance_type, request_gpus) -> None:
    # Requests without CPU/memory limits keep the pod Burstable: kubelet's static CPU and
    # memory managers (Guaranteed pods only) then give it no NUMA hint to align.
    config = make_config(request_gpus=request_gpus)
    (deployment,) = desired_objects([bucket(instance_type)], config, resolve_catalog(config),
                                    "deployment")
    (container,) = deployment.body["spec"]["template"]["spec"]["containers"]
    limits = container["resources"].get("limits", {})
    assert not {"cpu", "memory"} & limits.keys()
    assert set(container["resources"]["requests"]) >= {"cpu", "memory"}


def test_flipping_request_gpus_changes_the_spec_hash() -> None:
    # So the applier rewrites existing placeholder objects when the setting changes.
    with_gpus, without = (
        desired_objects([bucket("p4d.24xlarge")], config, resolve_catalog(config), "deployment")[0]
        for config in (make_config(), make_config(request_gpus=False))
    )
    assert with_gpus.spec_hash != without.spec_hash


def test_request_gpus_true_keeps_gpu_requests_and_limits() -> None:
    config = make_config(request_gpus=True)
    (deployment,) = desired_objects([bucket("p4d.24xlarge")], config, resolve_catalog(config),
                                    "deployment")
    (container,) = deployment.body["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "8"
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
