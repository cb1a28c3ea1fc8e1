"""pod_effective_request: containers summed, init max, sidecars, overhead, limits, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from bucketing.resources import GIB, DeviceNames, Resources, pod_effective_request
from common.errors import InputError


def container(cpu=None, memory=None, gpu=None, limits=None, restart_policy=None) -> dict:
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpu is not None:
        requests["nvidia.com/gpu"] = gpu
    spec: dict = {"name": "c", "resources": {"requests": requests}}
    if limits is not None:
        spec["resources"]["limits"] = limits
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return spec


def make_pod(containers=(), init_containers=(), overhead=None, pod_level=None) -> dict:
    spec: dict = {"containers": list(containers)}
    if pod_level is not None:
        spec["resources"] = pod_level
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if overhead is not None:
        spec["overhead"] = overhead
    return {"metadata": {"name": "p"}, "spec": spec}


CASES = [
    (
        make_pod([container("500m", "1Gi")]),
        Resources(0, 500, GIB),
        "one-container",
    ),
    (
        # 500m + 1500m = 2000m CPU; 1Gi + 2Gi = 3Gi; GPUs 1 + 2 = 3
        make_pod([container("500m", "1Gi", 1), container("1500m", "2Gi", 2)]),
        Resources(3000, 2000, 3 * GIB),
        "containers-summed",
    ),
    (
        # app 1 CPU / 1Gi; init 4 CPU / 512Mi -> max per dimension: 4 CPU, 1Gi
        make_pod([container("1", "1Gi")], [container("4", "512Mi")]),
        Resources(0, 4000, GIB),
        "init-max-per-dimension",
    ),
    (
        # two init containers run one after another: max(2, 3) = 3 CPU, not 5
        make_pod([container("1", "1Gi")], [container("2", "1Gi"), container("3", "1Gi")]),
        Resources(0, 3000, GIB),
        "init-containers-not-summed",
    ),
    (
        # sidecar 1 CPU keeps running: app 2 + sidecar 1 = 3 CPU; memory 1Gi + 1Gi = 2Gi
        make_pod([container("2", "1Gi")], [container("1", "1Gi", restart_policy="Always")]),
        Resources(0, 3000, 2 * GIB),
        "native-sidecar-adds",
    ),
    (
        # sidecar 1 CPU then a plain init of 4 CPU: 1 + 4 = 5 > app 2 + 1 = 3
        make_pod(
            [container("2", "1Gi")],
            [container("1", "1Gi", restart_policy="Always"), container("4", "1Gi")],
        ),
        Resources(0, 5000, 2 * GIB),
        "init-after-sidecar-counts-sidecar",
    ),
    (
        # app 1 CPU / 1Gi plus overhead 250m / 128Mi
        make_pod([container("1", "1Gi")], overhead={"cpu": "250m", "memory": "128Mi"}),
        Resources(0, 1250, GIB + 128 * 2**20),
        "overhead-added",
    ),
    (
        # no requests: the limits stand in (2 CPU, 4Gi, 1 GPU)
        make_pod([container(limits={"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"})]),
        Resources(1000, 2000, 4 * GIB),
        "limits-as-requests",
    ),
    (
        # request cpu given, memory only as a limit: request 1 CPU, memory from limit 2Gi
        make_pod([container("1", limits={"cpu": "4", "memory": "2Gi"})]),
        Resources(0, 1000, 2 * GIB),
        "limit-fills-only-missing-request",
    ),
    (
        # pod-level requests 8 CPU / 16Gi replace the containers' 1 + 2 = 3 CPU / 2Gi; the
        # GPU (1) still comes from the containers; overhead 250m on top: 8250m
        make_pod(
            [container("1", "1Gi", 1), container("2", "1Gi")],
            overhead={"cpu": "250m"},
            pod_level={"requests": {"cpu": "8", "memory": "16Gi"}},
        ),
        Resources(1000, 8250, 16 * GIB),
        "pod-level-resources-replace-containers",
    ),
    (
        # pod-level sets only a memory limit (4Gi, which defaults the request): CPU stays
        # the containers' 1 + 2 = 3
        make_pod(
            [container("1", "1Gi"), container("2", "1Gi")],
            pod_level={"limits": {"memory": "4Gi"}},
        ),
        Resources(0, 3000, 4 * GIB),
        "pod-level-memory-only",
    ),
    (make_pod([{"name": "c"}]), Resources(0, 0, 0), "no-resources-is-zero"),
    (
        # 0.1 CPU = 100m; 1G = 10**9 bytes (decimal suffix)
        make_pod([container("0.1", "1G")]),
        Resources(0, 100, 10**9),
        "decimal-quantities",
    ),
]


@pytest.mark.parametrize("pod, expected", [c[:2] for c in CASES], ids=[c[2] for c in CASES])
def test_pod_effective_request(pod, expected):
    assert pod_effective_request(pod) == expected


def test_gpu_resource_name_is_configurable():
    pod = make_pod([{"name": "c", "resources": {"requests": {"amd.com/gpu": "2"}}}])
    # 2 devices of the configured resource = 2000 thousandths; the default name sees none
    assert pod_effective_request(pod, gpu_resource="amd.com/gpu").gpu_milli == 2000
    assert pod_effective_request(pod).gpu_milli == 0


BAD = [
    (make_pod([container("lots")]), "pod.spec.containers[0].resources.requests.cpu", "bad-cpu"),
    (
        make_pod([container("1"), container(memory="-1Gi")]),
        "pod.spec.containers[1].resources.requests.memory",
        "negative-memory",
    ),
    (
        make_pod([container("1")], [container(gpu="two")]),
        "pod.spec.initContainers[0].resources.requests.nvidia.com/gpu",
        "bad-init-gpu",
    ),
    (
        make_pod([container("1")], overhead={"cpu": "x"}),
        "pod.spec.overhead.cpu",
        "bad-overhead",
    ),
    (
        make_pod([container(limits={"memory": "1Qi"})]),
        "pod.spec.containers[0].resources.limits.memory",
        "bad-limit",
    ),
    ({"spec": {"containers": ["nginx"]}}, "pod.spec.containers[0]", "container-not-an-object"),
    (make_pod([container("1")], pod_level={"requests": {"cpu": "x"}}),
     "pod.spec.resources.requests.cpu", "bad-pod-level"),
    (make_pod([container("1")], pod_level=["cpu"]), "pod.spec.resources", "pod-level-list"),
    (make_pod([container(float("inf"))]), "pod.spec.containers[0].resources.requests.cpu",
     "infinite-cpu"),
    (make_pod([container("1", memory=float("nan"))]),
     "pod.spec.containers[0].resources.requests.memory", "nan-memory"),
    ({"metadata": {}}, "pod.spec", "no-spec"),
    ("not a pod", "pod", "not-an-object"),
]


@pytest.mark.parametrize("pod, field_path", [b[:2] for b in BAD], ids=[b[2] for b in BAD])
def test_bad_quantities_name_the_field(pod, field_path):
    with pytest.raises(InputError) as raised:
        pod_effective_request(pod)
    assert field_path in str(raised.value)
    assert "\n" not in str(raised.value)


def test_resources_arithmetic_and_vector():
    a = Resources.of(gpus=1, cpu=2, memory_gib=4)
    b = Resources.of(gpus=0.5, cpu=3, memory_gib=1)
    assert a + b == Resources(1500, 5000, 5 * GIB)
    assert a.max(b) == Resources(1000, 3000, 4 * GIB)
    assert b.fits_in(a) is False  # 3 CPUs do not fit in 2
    np.testing.assert_array_equal(a.as_vector(), [1.0, 2.0, 4.0])


DEVICES = DeviceNames(frozenset({"nvidia.com/gpu", "amd.com/gpu"}), ("nvidia.com/mig-",))
GPUS = ("nvidia.com/gpu", "amd.com/gpu")


def device_container(requests, limits=None):
    return {"name": "c", "resources": {"requests": requests, "limits": limits or {}}}


@pytest.mark.parametrize(
    ("pod", "gpu_milli", "devices"),
    [
        # MIG slices are devices of their own kind, never whole GPUs.
        pytest.param(make_pod([device_container({"nvidia.com/mig-1g.5gb": "2"})]),
                     0, (("nvidia.com/mig-1g.5gb", 2000),), id="mig-is-not-a-gpu"),
        # Both vendors' GPUs are GPUs (1 + 2 = 3) and stay apart as kinds.
        pytest.param(make_pod([device_container({"nvidia.com/gpu": "1"}),
                               device_container({"amd.com/gpu": "2"})]),
                     3000, (("amd.com/gpu", 2000), ("nvidia.com/gpu", 1000)),
                     id="vendors-summed-and-apart"),
        # Per kind the same walk: app containers summed (1 + 1 = 2 slices), max with an
        # init container's 3; a limit stands in for a missing request.
        pytest.param(make_pod([device_container({"nvidia.com/mig-2g.10gb": "1"})] * 2,
                              [device_container({}, {"nvidia.com/mig-2g.10gb": "3"})]),
                     0, (("nvidia.com/mig-2g.10gb", 3000),), id="init-max-per-kind"),
        pytest.param(make_pod([device_container({"example.com/fpga": "1", "cpu": "1"})]),
                     0, (), id="other-extended-resources-ignored"),
    ],
)
def test_device_kinds(pod, gpu_milli, devices):
    request = pod_effective_request(pod, GPUS, DEVICES)
    assert (request.gpu_milli, request.devices) == (gpu_milli, devices)
    # Without DeviceNames the request has no kinds at all (bucketing's, predictor's view).
    assert pod_effective_request(pod, GPUS).devices == ()


def test_device_arithmetic():
    a = Resources(1000, 0, 0, (("nvidia.com/gpu", 1000),))
    b = Resources(0, 0, 0, (("nvidia.com/mig-1g.5gb", 2000),))
    assert (a + b).devices == (("nvidia.com/gpu", 1000), ("nvidia.com/mig-1g.5gb", 2000))
    assert (a + b - b) == a  # zero amounts drop out: equal and same hash
    assert b.fits_in(Resources(0, 0, 0, (("nvidia.com/mig-1g.5gb", 7000),)))
    assert not b.fits_in(Resources(8000, 96000, 0, (("nvidia.com/gpu", 8000),)))
