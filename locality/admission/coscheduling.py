"""A scheduler-plugins PodGroup per admitted gang, so kube-scheduler binds it all or nothing.

Why: admission lifts a gang's gates only when one domain holds all of it, but between
then and binding the room can shrink (a node lost, another scheduler's pods, a host port
or inter-pod rule the admitter does not model). Without a gang rule in the scheduler,
the pods that still fit bind and hold their GPUs while the rest pend. The shipped
headstart-scheduler runs scheduler-plugins' Coscheduling plugin: a pod labelled
`scheduling.x-k8s.io/pod-group: NAME` waits in Permit, assumed on its node, until
`minMember` pods of that PodGroup are; after `scheduleTimeoutSeconds` (or as soon as a
member fails to fit: PostFilter) every waiting pod is rejected, none bound, and retried.

Decides: the PodGroup's name (the gang record's name when it is a valid label value,
else cut to 54 characters with a hash of the whole name; a label value holds at most
63), its body (minMember = the gang's size, scheduleTimeoutSeconds, owned by the Gang
so the garbage collector removes it with the record), and whether a PodGroup found
under that name is headstart's (its managed-by label and job annotation): one that is
not is never changed, and the pods are then left without the label.

Must not: talk to the API, read the clock, log.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from locality.admission.record import API_VERSION as GANG_API_VERSION
from locality.admission.record import JOB_ANNOTATION, KIND, MANAGED_BY, record_name
from locality.model import JobKey

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
PLURAL = "podgroups"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MAX_LABEL_VALUE = 63
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def pod_group_name(job_name: str) -> str:
    """The PodGroup's name: a DNS subdomain that is also a label value."""
    name = record_name(job_name)
    if len(name) <= MAX_LABEL_VALUE and _LABEL_VALUE.match(name):
        return name
    digest = hashlib.sha256(job_name.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-.')}-{digest}"


def pod_group_body(job: JobKey, size: int, timeout_seconds: int, gang_uid: str
                   ) -> dict[str, Any]:
    """The PodGroup headstart creates for `job`, owned by its Gang (uid `gang_uid`)."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup",
        "metadata": {
            "name": pod_group_name(job.name), "namespace": job.namespace,
            "labels": dict(MANAGED_BY), "annotations": {JOB_ANNOTATION: job.name},
            "ownerReferences": [{"apiVersion": GANG_API_VERSION, "kind": KIND,
                                 "name": record_name(job.name), "uid": gang_uid,
                                 "controller": True}],
        },
        "spec": {"minMember": size, "scheduleTimeoutSeconds": timeout_seconds},
    }


def is_ours(obj: Mapping[str, Any], job: JobKey) -> bool:
    """A PodGroup headstart created for `job` (never change or use another)."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    return all(labels.get(key) == value for key, value in MANAGED_BY.items()) and \
        annotations.get(JOB_ANNOTATION) == job.name
