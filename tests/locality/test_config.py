"""LocalityConfig: documented defaults, validation errors that name the field."""

from __future__ import annotations

import pytest

from common.errors import ConfigError
from locality.config import JobLabelKeys, LocalityConfig
from locality.model import Locality, Packing


def test_defaults_match_the_docs():
    config = LocalityConfig.from_mapping(None)
    assert config == LocalityConfig()
    assert config.default_packing is Packing.PACK
    assert config.default_placement_group is Locality.PREFERRED
    assert config.placement_group_labels[0] == "headstart.io/placement-group"
    assert JobLabelKeys(
        "training.kubeflow.org/job-name",
        ("training.kubeflow.org/replica-type", "training.kubeflow.org/job-role"),
    ) in config.job_labels
    assert JobLabelKeys("ray.io/cluster", "ray.io/node-type") in config.job_labels
    assert [level.name for level in config.topology_levels] == [
        "block", "subblock", "placement-group", "nvlink"]
    assert config.gpu_resources == ("nvidia.com/gpu", "amd.com/gpu")
    # 90 s: outlasts Coscheduling's default Permit wait (60 s) for a gang's binds.
    assert (config.gpu_resource, config.assumed_ttl_seconds) == ("nvidia.com/gpu", 90.0)
    assert "ToBeDeletedByClusterAutoscaler" in config.unavailable_node_taints


def test_from_mapping_reads_every_kind_of_field():
    config = LocalityConfig.from_mapping(
        {
            "job_labels": [{"job": "example.com/job", "role": "example.com/role"}],
            "placement_group_labels": ["example.com/placement-group"],
            "default_packing": "Spread",
            "default_placement_group": "required",
            "assumed_ttl_seconds": 20,
            "gpu_resource": "amd.com/gpu",
            "unavailable_node_taints": ["example.com/draining"],
        },
        "extender.yaml: locality",
    )
    assert config.job_labels == (JobLabelKeys("example.com/job", "example.com/role"),)
    assert config.placement_group_labels == ("example.com/placement-group",)
    assert config.default_packing is Packing.SPREAD
    assert config.default_placement_group is Locality.REQUIRED
    assert config.assumed_ttl_seconds == 20.0
    assert config.gpu_resource == "amd.com/gpu"
    assert config.unavailable_node_taints == ("example.com/draining",)


def test_from_mapping_reads_the_topology_device_and_numa_fields():
    config = LocalityConfig.from_mapping(
        {
            "job_labels": [{"job": "example.com/job", "role": ["example.com/a", "example.com/b"]}],
            "topology_levels": [{"name": "rack", "labels": ["example.com/rack"]},
                                {"name": "placement-group"}],
            "gpu_resources": ["nvidia.com/gpu"],
            "device_resource_prefixes": [],
            "dra_gpus": [{"driver": "gpu.example.com", "resource": "example.com/gpu",
                          "device_classes": ["gpu.example.com"],
                          "attributes": {"kind": "full", "fast": True}}],
            "numa_default_policy": "single-numa-node",
            "numa_default_scope": "pod",
        },
        "extender.yaml: locality",
    )
    assert config.job_labels[0].roles == ("example.com/a", "example.com/b")
    assert (config.placement_group_level, config.level_labels(0)) == (1, ("example.com/rack",))
    assert config.device_names.names == frozenset({"nvidia.com/gpu", "example.com/gpu"})
    assert config.dra_gpus[0].attributes == (("fast", "true"), ("kind", "full"))
    assert (config.numa_default_policy.value, config.numa_default_scope.value) == (
        "single-numa-node", "pod")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param([], "f.yaml: expected a mapping, got list", id="not-mapping"),
        pytest.param({"packing": "pack"}, "f.yaml: packing: unknown field", id="unknown"),
        pytest.param({"default_packing": "tight"},
                     "f.yaml: default_packing: expected one of pack, spread, got 'tight'",
                     id="bad-enum"),
        pytest.param({"assumed_ttl_seconds": 0},
                     "f.yaml: assumed_ttl_seconds: expected a positive number", id="ttl-zero"),
        pytest.param({"assumed_ttl_seconds": True},
                     "f.yaml: assumed_ttl_seconds: expected a positive number", id="ttl-bool"),
        pytest.param({"job_labels": [{"job": "a"}]},
                     "f.yaml: job_labels[0]: expected exactly the keys job and role",
                     id="job-labels-missing-role"),
        pytest.param({"job_labels": [{"job": "a", "role": ""}]},
                     "f.yaml: job_labels[0].role: expected a non-empty string",
                     id="job-labels-empty-role"),
        pytest.param({"placement_group_labels": ["ok", 3]},
                     "f.yaml: placement_group_labels[1]: expected a non-empty string",
                     id="group-label-not-string"),
        pytest.param({"unavailable_node_taints": "ToBeDeletedByClusterAutoscaler"},
                     "f.yaml: unavailable_node_taints: expected a non-empty list of strings",
                     id="taints-not-a-list"),
        pytest.param({"gpu_resource": None},
                     "f.yaml: gpu_resource: expected a non-empty string", id="gpu-none"),
        pytest.param({"gpu_resource": "a", "gpu_resources": ["b"]},
                     "f.yaml: gpu_resource: give gpu_resources or gpu_resource, not both",
                     id="gpu-both-spellings"),
        pytest.param({"job_labels": [{"job": "a", "role": ["r", ""]}]},
                     "f.yaml: job_labels[0].role[1]: expected a non-empty string",
                     id="job-labels-empty-role-in-list"),
        pytest.param({"topology_levels": [{"name": "placement-group", "labels": ["x"]}]},
                     "f.yaml: topology_levels[0].labels: the placement-group level takes its "
                     "labels from placement_group_labels", id="placement-group-level-labels"),
        pytest.param({"topology_levels": [{"name": "placement-group"},
                                          {"name": "rack", "labels": ["a"]},
                                          {"name": "rack", "labels": ["b"]}]},
                     "f.yaml: topology_levels[2].name: level 'rack' is listed twice",
                     id="level-twice"),
        pytest.param({"dra_gpus": [{"driver": "d", "resource": "r", "attributes": {"t": 1.5}}]},
                     "f.yaml: dra_gpus[0].attributes.t: expected a string, integer or boolean",
                     id="dra-attribute-float"),
    ],
)
def test_errors_name_source_and_field(data, message):
    with pytest.raises(ConfigError) as raised:
        LocalityConfig.from_mapping(data, "f.yaml")
    assert message in str(raised.value)
