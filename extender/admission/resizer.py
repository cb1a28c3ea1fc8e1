"""Writes an elastic job's new size to its owner (`locality.elastic.scale_patch`).

The owner's controller does the rest: the Job controller (or the training operator)
creates the missing indices, which pass the placement gate into the job's domain, or
removes the highest ones. The patch is a JSON merge patch guarded by the owner's
resourceVersion as decided on: an owner changed since (409) is decided again next
round. Only owners that opted in reach here (`locality.elastic`), and the
ValidatingAdmissionPolicy `headstart-extender-owner-edits` lets the extender's account
change nothing else of them.

Must not: decide sizes (`locality.admission.resize` does), retry (the next round does).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from extender.admission.throttle import Throttle, Throttled
from locality.elastic import ElasticOwner, scale_patch

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
        try:
            if owner.kind == "Job":
                self._batch.patch_namespaced_job(
                    owner.name, owner.namespace, body, _content_type=MERGE_PATCH,
                    _request_timeout=10, _preload_content=False).release_conn()
            else:
                self._custom.patch_namespaced_custom_object(
                    "kubeflow.org", "v1", owner.namespace, "pytorchjobs", owner.name, body,
                    _content_type=MERGE_PATCH, _request_timeout=10,
                    _preload_content=False).release_conn()
        except ApiException as error:
            why = f"{error.status} {error.reason}: {_message(error.body)}"
            log.warning("could not resize an elastic job's owner; next round decides again",
                        extra={"owner": owner.where, "size": size, "error": why})
            return why
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            why = f"{type(error).__name__}: {error}"
            log.warning("could not resize an elastic job's owner; next round decides again",
                        extra={"owner": owner.where, "size": size, "error": why})
            return why
        return None


def _message(body: Any) -> str:
    """The API's Status message from an error body (the body itself when not JSON)."""
    try:
        return str(json.loads(body).get("message") or body)
    except (TypeError, ValueError, AttributeError):
        return str(body)
