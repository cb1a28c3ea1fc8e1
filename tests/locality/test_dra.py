"""DRA objects as GPUs: ResourceSlice devices per node, ResourceClaim requests per pod;
PodGroup sizes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import InputError
from locality.config import LocalityConfig
from locality.dra import (
    SliceDevices,
    node_devices,
    parse_resource_claim,
    parse_resource_claim_template,
    parse_resource_slice,
    with_claims,
    with_node_devices,
)
from locality.podgroups import parse_pod_group, with_group_size
from tests.locality.builders import make_node, make_pod

CONFIG = LocalityConfig()
GPU = "nvidia.com/gpu"


def device(name, **attributes):
    return {"name": name, "attributes": {key: {"string": value} if isinstance(value, str)
                                         else {"int": value} for key, value in attributes.items()}}


def resource_slice(devices, node="n1", driver="gpu.nvidia.com", generation=1, **spec):
    return {"metadata": {"name": f"{node or 'fabric'}-{driver}-{generation}"},
            "spec": {"driver": driver, "pool": {"name": node or "fabric", "generation": generation,
                                                "resourceSliceCount": 1},
                     "nodeName": node, "devices": devices, **spec}}


@pytest.mark.parametrize(
    ("obj", "by_node"),
    [
        # NVIDIA's driver: 2 GPUs (type gpu, unqualified or with the driver's domain) and
        # a MIG device (type mig) -> 2 GPUs, 2000 thousandths.
        pytest.param(resource_slice([device("gpu-0", type="gpu"),
                                     device("gpu-1", **{"gpu.nvidia.com/type": "gpu"}),
                                     device("mig-0", type="mig")]),
                     (("n1", ((GPU, 2000),)),), id="gpus-not-mig"),
        pytest.param(resource_slice([device("nic-0", type="gpu")], driver="dra.net"), (),
                     id="other-driver"),
        # Network-attached: a node selector instead of a node name.
        pytest.param(resource_slice([device("gpu-0", type="gpu")], node=None,
                                    nodeSelector={"nodeSelectorTerms": []}), (),
                     id="not-node-local"),
        pytest.param({"metadata": {"name": "s"}, "spec": {
            "driver": "gpu.nvidia.com", "pool": {"name": "p", "generation": 1},
            "perDeviceNodeSelection": True,
            "devices": [{**device("a", type="gpu"), "nodeName": "n2"},
                        {**device("b", type="gpu"), "nodeName": "n3"}]}},
                     (("n2", ((GPU, 1000),)), ("n3", ((GPU, 1000),))), id="per-device-nodes"),
    ],
)
def test_resource_slice(obj, by_node):
    assert parse_resource_slice(obj, CONFIG).devices_by_node == by_node


def test_only_the_newest_generation_of_a_pool_counts():
    old = SliceDevices("a", "gpu.nvidia.com", "n1", 1, (("n1", ((GPU, 8000),)),))
    new = SliceDevices("b", "gpu.nvidia.com", "n1", 2, (("n1", ((GPU, 7000),)),))
    other_pool = SliceDevices("c", "gpu.nvidia.com", "n2", 1, (("n2", ((GPU, 4000),)),))
    assert node_devices([old, new, other_pool]) == {"n1": ((GPU, 7000),), "n2": ((GPU, 4000),)}


def claim(requests):
    return {"metadata": {"name": "c", "namespace": "team"},
            "spec": {"devices": {"requests": requests}}}


@pytest.mark.parametrize(
    ("requests", "devices"),
    [
        pytest.param([{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                "count": 4}}], ((GPU, 4000),), id="exact-count"),
        # count defaults to 1; two requests add up: 1 + 2 = 3 GPUs.
        pytest.param([{"name": "a", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
                      {"name": "b", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                "count": 2}}], ((GPU, 3000),), id="summed"),
        # A prioritized list: the first subrequest is the one the scheduler tries first.
        pytest.param([{"name": "g", "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 8},
            {"name": "small", "deviceClassName": "gpu.nvidia.com", "count": 4}]}],
                     ((GPU, 8000),), id="first-available"),
        pytest.param([{"name": "m", "exactly": {"deviceClassName": "mig.nvidia.com"}},
                      {"name": "n", "exactly": {"deviceClassName": "dranet.net"}}], (),
                     id="other-classes"),
        pytest.param([{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                "allocationMode": "All"}}], ((GPU, 1000),),
                     id="all-counts-one"),
    ],
)
def test_resource_claim(requests, devices):
    assert parse_resource_claim(claim(requests), CONFIG).devices == devices
    template = {"metadata": claim(requests)["metadata"],
                "spec": {"spec": claim(requests)["spec"]}}
    parsed = parse_resource_claim_template(template, CONFIG)
    assert (parsed.kind, parsed.devices) == ("template", devices)


def test_bad_claim_names_the_field():
    with pytest.raises(InputError) as raised:
        parse_resource_claim(claim([{"name": "g", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "count": "four"}}]), CONFIG)
    assert "resourceClaim.spec.devices.requests[0].exactly.count" in str(raised.value)


def test_claims_and_slices_become_gpus_of_pods_and_nodes():
    pod = replace(make_pod("w", cpu=2, namespace="team"),
                  claims=(("claim", "four"), ("template", "two"), ("claim", "unseen")))
    claims = {("team", "claim", "four"): ((GPU, 4000),), ("team", "template", "two"):
              ((GPU, 2000),)}
    resolved = with_claims(pod, claims, CONFIG)
    # 4 + 2 GPUs; the claim not seen yet adds nothing.
    assert (resolved.request.gpu_milli, resolved.request.devices) == (6000, ((GPU, 6000),))
    node = with_node_devices(make_node("n1", gpus=0), ((GPU, 8000),), CONFIG)
    assert (node.allocatable.gpu_milli, node.allocatable.devices) == (8000, ((GPU, 8000),))


@pytest.mark.parametrize(
    ("api_group", "obj", "size"),
    [
        pytest.param("scheduling.volcano.sh",
                     {"metadata": {"name": "g", "namespace": "team"}, "spec": {"minMember": 9}},
                     9, id="volcano"),
        pytest.param("scheduling.x-k8s.io",
                     {"metadata": {"name": "g", "namespace": "team"},
                      "spec": {"minMember": 3, "scheduleTimeoutSeconds": 10}}, 3,
                     id="coscheduling"),
        pytest.param("scheduling.x-k8s.io", {"metadata": {"name": "g", "namespace": "team"}},
                     0, id="no-min-member"),
    ],
)
def test_pod_group(api_group, obj, size):
    group = parse_pod_group(obj, api_group)
    assert (group.key, group.min_member) == ((api_group, "team", "g"), size)
    pod = replace(make_pod("w", namespace="team"), pod_group=(api_group, "g"))
    assert with_group_size(pod, {group.key: size}).group_min_member == size
    other = replace(pod, pod_group=("scheduling.volcano.sh" if api_group != "scheduling."
                                    "volcano.sh" else "scheduling.x-k8s.io", "g"))
    assert with_group_size(other, {group.key: size}).group_min_member is None
