"""Writes and deletes gang records (`headstart.io/v1alpha1` Gangs) for the admitter.

Server-side apply with the field manager `headstart-admitter` and `force` (the record is
headstart's alone: RBAC lets no one else write it); delete with the record's uid and
resourceVersion as preconditions, so only the object headstart read, unchanged since,
is removed (a record rewritten meanwhile, for a job whose pods the cache has seen go
before the new record, is kept: 409). Runs in the admitter's
worker thread; every call has a 10 s timeout and returns whether it worked, logging why
not (the next round retries).

Must not: decide what a record says (`locality.admission.record` does).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from extender.admission.throttle import Throttle, Throttled
from locality.admission.record import GROUP, PLURAL, VERSION, GangRecord

log = logging.getLogger("headstart.extender.admitter")

FIELD_MANAGER = "headstart-admitter"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"


class RecordWriter:
    def __init__(self, api_client: Any, throttle: Throttle | None = None) -> None:
        custom = k8s.CustomObjectsApi(api_client)
        self._custom = Throttled(custom, throttle) if throttle is not None else custom
        self._missing_logged = False

    def apply(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The record as the API server holds it once applied, None when it could not
        be."""
        metadata = body["metadata"]
        try:
            raw = self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, metadata["namespace"], PLURAL, metadata["name"], body,
                field_manager=FIELD_MANAGER, force=True, _content_type=APPLY_CONTENT_TYPE,
                _request_timeout=10, _preload_content=False)
            try:
                applied = json.loads(raw.data)
            finally:
                raw.release_conn()
            return applied if isinstance(applied, dict) else None
        except ApiException as error:
            if error.status == 404 and not self._missing_logged:
                self._missing_logged = True
                log.error("the Gang CRD (gangs.headstart.io) is not served: no job is "
                          "admitted until it is installed (kubectl apply -k manifests/...)")
            elif error.status != 404:
                log.warning("could not write the gang record; next round retries",
                            extra={"gang": f"{metadata['namespace']}/{metadata['name']}",
                                   "status": error.status, "error": str(error.reason)})
            return None
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            _transport_fault("write", f"{metadata['namespace']}/{metadata['name']}", error)
            return None

    def delete(self, record: GangRecord) -> bool:
        options = k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(
            uid=record.uid or None, resource_version=record.resource_version or None))
        try:
            self._custom.delete_namespaced_custom_object(
                GROUP, VERSION, record.job.namespace, PLURAL, record.name, body=options,
                _request_timeout=10)
            return True
        except ApiException as error:
            if error.status == 404:
                return True
            if error.status == 409:  # rewritten since it was read: not an orphan's any more
                return False
            log.warning("could not delete the gang record; next round retries",
                        extra={"gang": f"{record.job.namespace}/{record.name}",
                               "status": error.status})
            return False
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            _transport_fault("delete", f"{record.job.namespace}/{record.name}", error)
            return False


def _transport_fault(what: str, gang: str, error: Exception) -> None:
    log.warning(f"could not {what} the gang record; next round retries",
                extra={"gang": gang, "error": f"{type(error).__name__}: {error}"})
