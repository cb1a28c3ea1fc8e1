"""Check of the NVIDIA device plugin: without it a GPU node advertises no `nvidia.com/gpu`
and no GPU pod, placeholder or job, ever fits on it.

Decides:
- which DaemonSets are the device plugin: an NVIDIA one whose name or image says
  device-plugin (the Helm chart's `nvdp-nvidia-device-plugin`, the GPU operator's
  `nvidia-device-plugin-daemonset`, GKE's `nvidia-gpu-device-plugin`);
- which nodes are GPU nodes: those that carry an autoscaler's GPU label
  (`overprovisioner.planner.sizing.GPU_NODE_LABELS`) or advertise GPUs;
- fail when GPU nodes exist without a plugin, when the plugin's pods cannot run on a GPU
  node (its taints, the pods' selector and affinity: kube-scheduler's own rule,
  `locality.constraints`; taints Kubernetes itself sets and lifts, `node.kubernetes.io/...`
  for a node's conditions and `node.cloudprovider.kubernetes.io/uninitialized`, describe
  a moment, not the setup, and the DaemonSet controller tolerates most of them), or when
  a GPU node Ready for `SETTLE_S` advertises no GPU (the plugin did not register there);
  warn when no GPU node exists yet and no plugin is
  installed (the first node the autoscaler adds would have no GPUs), or when some of the
  plugin's pods are not ready.

Must not: call the API, log, read the clock (`now_s` comes in).
"""

from __future__ import annotations

from collections.abc import Sequence

from headstart.check.core.observed import Node, Observed, Workload
from headstart.check.core.result import Result, fail, ok, warn
from locality.constraints import Taint
from overprovisioner.planner.sizing import GPU_NODE_LABELS

TRANSIENT_TAINTS = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
SETTLE_S = 600.0
"""A GPU node this long after its creation should have its GPUs registered: the device
plugin takes about 90 s after the node is Ready (docs/install-eks.md step 1)."""
HELM = ("helm upgrade --install nvdp nvdp/nvidia-device-plugin -n kube-system --set-json "
        "'tolerations=[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
        "\"NoSchedule\"}]' (docs/install-eks.md step 2)")


def is_device_plugin(workload: Workload) -> bool:
    texts = [workload.name, *(c.image for c in workload.containers)]
    return any("nvidia" in t.lower() and "device-plugin" in t.lower() for t in texts)


def is_gpu_node(node: Node) -> bool:
    return node.gpus > 0 or any(label in node.labels for label in GPU_NODE_LABELS)


def _set_by_kubernetes(taint: Taint) -> bool:
    return taint.key.startswith(TRANSIENT_TAINTS)


def device_plugin(observed: Observed) -> Result:
    name = "device-plugin"
    gpu_nodes = [n for n in observed.nodes if is_gpu_node(n)]
    plugins: Sequence[Workload] = observed.device_plugins
    if not plugins:
        if gpu_nodes:
            return fail(name, f"no NVIDIA device plugin DaemonSet, and {len(gpu_nodes)} GPU "
                              f"node(s) ({gpu_nodes[0].name}, ...) advertise no usable GPUs",
                        f"install it: {HELM}")
        return warn(name, "no NVIDIA device plugin DaemonSet: the GPU nodes the autoscaler "
                          "adds will advertise no GPUs", f"install it: {HELM}")
    for node in gpu_nodes:
        taints = tuple(t for t in node.taints if not _set_by_kubernetes(t))
        refusals = [p.constraints.refusal(node.name, node.labels, taints) for p in plugins]
        if all(refusals):
            return fail(name, f"{plugins[0]} cannot run on GPU node {node.name}: {refusals[0]}",
                        "let its pods tolerate the GPU nodes' taints and select them: "
                        f"{HELM}")
    silent = [n.name for n in gpu_nodes if n.ready and n.gpus == 0 and n.created_s is not None
              and observed.now_s - n.created_s >= SETTLE_S]
    if silent:
        return fail(name, f"GPU node(s) {', '.join(silent[:4])} advertise no nvidia.com/gpu "
                          f"{SETTLE_S / 60:.0f} min after joining: the device plugin did not "
                          "register there",
                    f"kubectl -n {plugins[0].namespace} get pods -o wide | grep "
                    f"{plugins[0].name}, then read the log of its pod on that node")
    behind = [p for p in plugins if p.ready < p.desired]
    if behind:
        return warn(name, f"{behind[0]}: {behind[0].ready} of {behind[0].desired} "
                          "pods ready", f"kubectl -n {behind[0].namespace} describe daemonset "
                                        f"{behind[0].name}")
    return ok(name, f"{', '.join(str(p) for p in plugins)} on {len(gpu_nodes)} GPU "
                    "node(s), each advertising nvidia.com/gpu")
