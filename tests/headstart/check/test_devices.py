"""The NVIDIA device plugin on GPU nodes (headstart/check/core/devices.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from headstart.check.core import devices
from headstart.check.core.result import Status
from locality.constraints import Taint
from tests.headstart.check.builders import device_plugin, gpu_node, installed

EVERY_EFFECT = [{"key": "nvidia.com/gpu", "operator": "Exists"}]


@pytest.mark.parametrize(("nodes", "plugins", "status", "words", "fix"), [
    ((gpu_node(),), (device_plugin(),), Status.OK, "on 1 GPU node(s), each advertising", ""),
    ((gpu_node(),), (device_plugin(EVERY_EFFECT),), Status.OK, "each advertising", ""),
    ((gpu_node(),), (), Status.FAIL, "no NVIDIA device plugin DaemonSet, and 1 GPU node(s)",
     "helm upgrade --install nvdp"),
    ((), (), Status.WARN, "the GPU nodes the autoscaler adds will advertise no GPUs",
     "helm upgrade --install nvdp"),
    ((gpu_node(),), (device_plugin([]),), Status.FAIL,
     "cannot run on GPU node ip-10-0-1-7: taint nvidia.com/gpu=present:NoSchedule not "
     "tolerated", "tolerate"),
    ((gpu_node(gpus=0),), (device_plugin(),), Status.FAIL,
     "ip-10-0-1-7 advertise no nvidia.com/gpu 10 min after joining", "kubectl -n kube-system"),
    ((gpu_node(gpus=0, age_s=120),), (device_plugin(),), Status.OK, "each advertising", ""),
    ((gpu_node(),), (device_plugin(ready=1, desired=3),), Status.WARN, "1 of 3 pods ready",
     "describe daemonset nvdp-nvidia-device-plugin"),
    ((gpu_node(gpus=8, labels={}),), (), Status.FAIL, "1 GPU node(s)", "nvdp"),
], ids=["installed", "tolerates-every-effect", "missing", "missing-before-gpu-nodes",
        "taint-not-tolerated", "not-registered", "node-just-joined", "pods-not-ready",
        "unlabelled-gpu-node"])
def test_the_device_plugin_on_gpu_nodes(nodes, plugins, status, words, fix):
    result = devices.device_plugin(installed(nodes=nodes, device_plugins=plugins))
    assert result.status is status and words in result.message, result
    assert fix in result.fix


def test_taints_kubernetes_sets_for_a_moment_are_not_the_setups():
    node = gpu_node()
    taints = (*node.taints, Taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
              Taint("node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"))
    observed = installed(nodes=(replace(node, taints=taints),))
    assert devices.device_plugin(observed).status is Status.OK


def test_the_device_plugin_is_told_by_its_name_or_image():
    assert devices.is_device_plugin(device_plugin())
    from tests.headstart.check.builders import autoscaler
    assert not devices.is_device_plugin(autoscaler())
