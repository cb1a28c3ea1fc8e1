"""Small builders of the Kubernetes objects the known-demand sources read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(name: str, namespace: str = "team", created: float = NOW - 60, owner: tuple | None = None,
         labels: dict | None = None, annotations: dict | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "namespace": namespace,
                            "creationTimestamp": stamp(created)}
    if owner:
        api_version, kind, owner_name = owner
        body["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": owner_name,
                                    "uid": "u", "controller": True}]
    if labels:
        body["labels"] = labels
    if annotations:
        body["annotations"] = annotations
    return body


def template(cpu: str = "4", memory: str = "16Gi", gpus: int = 1) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}}


def condition(kind: str, since: float = NOW - 60, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": stamp(since)}


def job(name: str, suspend: bool = True, parallelism: int | None = 2,
        completions: int | None = None, succeeded: int = 0, conditions: tuple = (),
        labels: dict | None = None, **shape) -> dict[str, Any]:
    spec: dict[str, Any] = {"suspend": suspend, "template": template(**shape)}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name, labels=labels),
            "spec": spec, "status": {"succeeded": succeeded, "conditions": list(conditions)}}


def pod(name: str, owner: tuple | None = None, labels: dict | None = None,
        annotations: dict | None = None, created: float = NOW - 30, phase: str = "Running",
        node: str | None = "n1", gpus: int = 1) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": meta(name, owner=owner, labels=labels, annotations=annotations,
                             created=created),
            "spec": template(gpus=gpus)["spec"], "status": {"phase": phase}}
    if node:
        body["spec"]["nodeName"] = node
    return body
