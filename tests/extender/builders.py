"""Small builders of Kubernetes JSON and extender requests for the extender tests."""

from __future__ import annotations

import json
from typing import Any

PG_LABEL = "headstart.io/placement-group"
JOB_LABEL = "headstart.io/job"
ROLE_LABEL = "headstart.io/role"


def make_node(
    name: str,
    gpus: int = 8,
    cpu: str = "96",
    memory: str = "1152Gi",
    group: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    all_labels = {"kubernetes.io/hostname": name, **(labels or {})}
    if group is not None:
        all_labels[PG_LABEL] = group
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def make_pod(
    name: str,
    namespace: str = "team",
    gpus: int = 0,
    cpu: str = "1",
    memory: str = "1Gi",
    job: str | None = None,
    role: str | None = None,
    node: str | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    phase: str = "Pending",
    uid: str | None = None,
    guaranteed: bool = False,
) -> dict[str, Any]:
    """A pod JSON; `guaranteed` sets limits equal to requests (Guaranteed QoS, so kubelet's
    static CPU manager pins whole CPUs), otherwise only the GPUs have limits (Burstable)."""
    all_labels = dict(labels or {})
    if job is not None:
        all_labels[JOB_LABEL] = job
    if role is not None:
        all_labels[ROLE_LABEL] = role
    requests = {"cpu": cpu, "memory": memory}
    limits: dict[str, str] = {}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
        limits["nvidia.com/gpu"] = str(gpus)
    if guaranteed:
        limits = dict(requests)
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "x", "resources": {"requests": requests,
                                                                    "limits": limits}}],
        "schedulerName": "headstart-scheduler",
    }
    if node is not None:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": all_labels,
    }
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": phase},
    }


def make_nrt(node: str, zones: list[tuple[int, int]], policy: str = "single-numa-node",
             scope: str = "container") -> dict[str, Any]:
    """A NodeResourceTopology with (free CPUs, free GPUs) per NUMA zone, as NFD's
    topology updater publishes it (attributes and the deprecated topologyPolicies)."""
    legacy = {"single-numa-node": "SingleNUMANode", "restricted": "Restricted",
              "best-effort": "BestEffort"}.get(policy)
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "attributes": [{"name": "topologyManagerPolicy", "value": policy},
                       {"name": "topologyManagerScope", "value": scope}],
        "topologyPolicies": [f"{legacy}{scope.capitalize()}Level" if legacy else "None"],
        "zones": [
            {
                "name": f"node-{index}",
                "type": "Node",
                "resources": [
                    {"name": "cpu", "capacity": str(cpus), "allocatable": str(cpus),
                     "available": str(cpus)},
                    {"name": "nvidia.com/gpu", "capacity": str(gpus), "allocatable": str(gpus),
                     "available": str(gpus)},
                ],
            }
            for index, (cpus, gpus) in enumerate(zones)
        ],
    }


def args_body(pod: dict[str, Any], names: list[str] | None = None,
              nodes: list[dict[str, Any]] | None = None) -> bytes:
    """An ExtenderArgs body as kube-scheduler sends it (PascalCase keys)."""
    return json.dumps({
        "Pod": pod,
        "Nodes": {"items": nodes} if nodes is not None else None,
        "NodeNames": names,
    }).encode()


JSON_HEADERS = {"Content-Type": "application/json"}
