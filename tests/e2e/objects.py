"""Kubernetes objects the e2e scenarios create: kwok nodes and training pods.

Builds on the extender tests' builders (tests/extender/builders.py) and adds what a
real API server and kwok need: the kwok annotation and taints on nodes; on pods no
client-chosen uid, a scheduler name, tolerations and a node selector.

Must not: talk to the cluster.
"""

from __future__ import annotations

from typing import Any

from tests.extender.builders import make_node, make_pod

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists"}
HEADSTART_SCHEDULER = "headstart-scheduler"


def kwok_node(
    name: str, gpus: int = 8, cpu: str = "96", memory: str = "1152Gi",
    group: str | None = None, labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A Node kwok drives (Ready at once, runs the pods bound to it)."""
    node = make_node(name, gpus=gpus, cpu=cpu, memory=memory, group=group, labels=labels)
    node["metadata"]["annotations"] = {KWOK_ANNOTATION: "fake"}
    if taints is None:
        taints = [GPU_TAINT] if gpus else []
    node["spec"] = {"taints": taints} if taints else {}
    return node


def training_pod(
    name: str, namespace: str, job: str | None = None, role: str | None = None,
    gpus: int = 0, cpu: str = "1", memory: str = "1Gi",
    scheduler: str = HEADSTART_SCHEDULER, annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod of job `job` (headstart.io/job and headstart.io/role labels) for `scheduler`."""
    pod = make_pod(name, namespace=namespace, gpus=gpus, cpu=cpu, memory=memory, job=job,
                   role=role, annotations=annotations)
    del pod["metadata"]["uid"]  # the API server assigns it
    del pod["status"]
    spec = pod["spec"]
    spec["schedulerName"] = scheduler
    spec["terminationGracePeriodSeconds"] = 0
    spec["tolerations"] = [GPU_TOLERATION]
    if node_selector:
        spec["nodeSelector"] = node_selector
    return pod


def bound_node(pod: dict[str, Any] | None) -> str | None:
    return ((pod or {}).get("spec") or {}).get("nodeName")


def phase(pod: dict[str, Any] | None) -> str | None:
    return ((pod or {}).get("status") or {}).get("phase")
