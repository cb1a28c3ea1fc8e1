"""Writes to the owners of gangs' pods: an elastic job's new size
(`locality.elastic.scale_patch`), and a batch/v1 Job's or a JobSet's suspension and
release (`locality.suspension`, decided by `locality.admission.suspend_owners`).

The owner's controller does the rest: the Job controller (or the training operator)
creates the missing indices, which pass the placement gate into the job's domain, or
removes the highest ones. The patch is a JSON merge patch guarded by the owner's
resourceVersion as decided on: an owner changed since (409) is decided again next
round. Only owners that opted in reach here (`locality.elastic`), and the
ValidatingAdmissionPolicies of manifests/base/admission/owner-resize.yaml let the
extender's account change nothing else of them. A suspension or release is guarded by
the object's uid instead: the Job controller updates a running Job's status often (the
JobSet controller a JobSet's), and a stale resourceVersion would refuse most of them.

Must not: decide sizes or suspensions (`locality.admission` does), retry (the next
round does).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from extender.admission.throttle import Throttle, Throttled
from kube.client import discard
from kube.kinds import BY_KIND
from locality.elastic import ElasticOwner, scale_patch
from locality.suspension import (
    SUSPENDABLE,
    JobSuspension,
    release_patch,
    suspend_patch,
)

log = logging.getLogger("headstart.extender.admitter")

MERGE_PATCH = "application/merge-patch+json"


class OwnerResizer:
    def __init__(self, api_client: Any, throttle: Throttle) -> None:
        self._batch = Throttled(k8s.BatchV1Api(api_client), throttle)
        self._custom = Throttled(k8s.CustomObjectsApi(api_client), throttle)

    def resize(self, owner: ElasticOwner, size: int) -> str | None:
        """Set the owner's size: None when done, else why not (the API's refusal, or the
        fault; logged)."""
        body = scale_patch(owner, size)
        if owner.kind == "Job":
            return self._job(owner.namespace, owner.name, body,
                             "could not resize an elastic job's owner", size=size)
        kind = BY_KIND[owner.kind]
        return self._send(lambda: self._custom.patch_namespaced_custom_object(
            kind.group, kind.versions[0], owner.namespace, kind.plural, owner.name, body,
            _content_type=MERGE_PATCH, _request_timeout=10, _preload_content=False),
            "could not resize an elastic job's owner", owner=owner.where, size=size)

    def suspend(self, job: JobSuspension, resume_at: float | None) -> str | None:
        """Suspend the Job or JobSet until `resume_at` (None: for good; its pods go,
        counted as no failure): None when done, else why not (logged)."""
        return self._patch(job, suspend_patch(job, resume_at),
                           f"could not suspend a gang's {job.kind}; its pods are evicted "
                           "instead")

    def release(self, job: JobSuspension) -> str | None:
        """Resume a Job or JobSet headstart suspended and remove its mark: None when
        done, else why not (logged; the next round tries again)."""
        return self._patch(job, release_patch(job),
                           f"could not resume a {job.kind} headstart suspended; next round "
                           "retries")

    def _patch(self, job: JobSuspension, body: dict[str, Any], failed: str) -> str | None:
        if job.kind == "Job":
            return self._job(job.namespace, job.name, body, failed)
        kind = SUSPENDABLE[job.kind]
        return self._send(lambda: self._custom.patch_namespaced_custom_object(
            kind.group, job.version, job.namespace, kind.plural, job.name, body,
            _content_type=MERGE_PATCH, _request_timeout=10, _preload_content=False),
            failed, owner=job.where)

    def _job(self, namespace: str, name: str, body: dict[str, Any], failed: str,
             **extra: Any) -> str | None:
        return self._send(lambda: self._batch.patch_namespaced_job(
            name, namespace, body, _content_type=MERGE_PATCH, _request_timeout=10,
            _preload_content=False), failed, owner=f"Job {namespace}/{name}", **extra)

    @staticmethod
    def _send(call: Callable[[], Any], failed: str, **extra: Any) -> str | None:
        try:
            discard(call())
        except ApiException as error:
            why = f"{error.status} {error.reason}: {_message(error.body)}"
            log.warning(failed, extra={**extra, "error": why})
            return why
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            why = f"{type(error).__name__}: {error}"
            log.warning(failed, extra={**extra, "error": why})
            return why
        return None


def _message(body: Any) -> str:
    """The API's Status message from an error body (the body itself when not JSON)."""
    try:
        return str(json.loads(body).get("message") or body)
    except (TypeError, ValueError, AttributeError):
        return str(body)
