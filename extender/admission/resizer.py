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

    def resize(self, owner: ElasticOwner, size: int) -> bool:
        """Set the owner's size; False (logged) when the API refused or failed."""
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
            log.warning("could not resize an elastic job's owner; next round decides again",
                        extra={"owner": owner.where, "size": size, "status": error.status,
                               "error": str(error.reason)})
            return False
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            log.warning("could not resize an elastic job's owner; next round decides again",
                        extra={"owner": owner.where, "size": size,
                               "error": f"{type(error).__name__}: {error}"})
            return False
        return True
