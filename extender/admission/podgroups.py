"""Creates the PodGroup of an admitted gang (`locality.admission.coscheduling`).

Create, and once the gang's pods are patched mark it admitted (`touch`, guarded by its
uid); set its minMember to an elastic gang's new size (`resize`); never any other change.
A PodGroup of that name that exists already is used only when it is headstart's own for
the same job (`is_ours`), and its minMember is first set to the size being admitted: it
outlives an attempt (owned by the Gang, which an eviction or a preemption keeps), and a
job admitted again at another size (an elastic job resized while it waited) would
otherwise wait in Coscheduling for members it no longer has. Anyone else's is left
alone and the gang's pods get no label. Runs in the admitter's worker thread; every call has a 10 s
timeout.

Outcomes, with the PodGroup's uid: `OURS` (label the pods, then `touch` it), `NONE`
(no PodGroup to use: the API is not served, creating is forbidden, or the name is
taken; the pods are admitted without one, as before Coscheduling, and the reason is
logged once), `RETRY` (a transient fault: the admission waits for the next round, so a
gang never binds half because of a 500).

Must not: decide what a PodGroup says.
"""

from __future__ import annotations

import enum
import json
import logging
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from extender.admission.patch import pointer_token
from extender.admission.throttle import Throttle, Throttled
from kube.client import discard
from locality.admission.coscheduling import GROUP, PLURAL, VERSION, is_ours
from locality.admission.record import JOB_ANNOTATION, MANAGED_BY
from locality.model import JobKey

log = logging.getLogger("headstart.extender.admitter")


class Outcome(enum.Enum):
    OURS = "ours"
    NONE = "none"
    RETRY = "retry"


class PodGroupWriter:
    def __init__(self, api_client: Any, throttle: Throttle | None = None) -> None:
        custom = k8s.CustomObjectsApi(api_client)
        self._custom = Throttled(custom, throttle) if throttle is not None else custom
        self._logged: set[int] = set()

    def ensure(self, job: JobKey, body: dict[str, Any]) -> tuple[Outcome, str]:
        """(the outcome, the PodGroup's uid when it is ours)."""
        metadata = body["metadata"]
        name, namespace = metadata["name"], metadata["namespace"]
        try:
            created = self._custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, body, _request_timeout=10,
                _preload_content=False)
            try:
                uid = str((json.loads(created.data).get("metadata") or {}).get("uid") or "")
            finally:
                created.release_conn()
            return Outcome.OURS, uid
        except ApiException as error:
            if error.status == 409:
                return self._existing(job, namespace, name, body["spec"]["minMember"])
            if error.status in (403, 404):
                self._once(error.status, (
                    "PodGroups (scheduling.x-k8s.io/v1alpha1) are not served: gangs are "
                    "admitted without one, so Coscheduling does not bind them all or "
                    "nothing (install scheduler-plugins' PodGroup CRD, or set "
                    "admission.pod_groups: false)") if error.status == 404 else (
                    "the extender may not create PodGroups (its ClusterRole lacks "
                    "scheduling.x-k8s.io podgroups create): gangs are admitted without one"))
                return Outcome.NONE, ""
            log.warning("could not create the gang's PodGroup; next round retries",
                        extra={"podgroup": f"{namespace}/{name}", "status": error.status,
                               "error": str(error.reason)})
            return Outcome.RETRY, ""
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            log.warning("could not create the gang's PodGroup; next round retries",
                        extra={"podgroup": f"{namespace}/{name}",
                               "error": f"{type(error).__name__}: {error}"})
            return Outcome.RETRY, ""

    def touch(self, namespace: str, name: str, uid: str, stamp: str) -> None:
        """Mark the gang's PodGroup admitted at `stamp` (an annotation; the uid a `test`
        precondition, so only the object headstart created is changed). The update is
        an event Coscheduling requeues on: pods it turned away while their siblings
        were still gated or unlabelled are tried again at once, not after
        kube-scheduler's 5-minute flush. Best effort: a failure is logged."""
        ops = [{"op": "test", "path": "/metadata/uid", "value": uid},
               {"op": "add", "path": "/metadata/annotations/headstart.io~1admitted-at",
                "value": stamp}]
        try:
            discard(self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, ops,
                _content_type="application/json-patch+json", _preload_content=False,
                _request_timeout=10))
        except Exception as error:  # noqa: BLE001 - best effort: the gang still binds
            log.warning("could not mark the gang's PodGroup admitted; its pods that "
                        "Coscheduling turned away wait for kube-scheduler's next retry",
                        extra={"podgroup": f"{namespace}/{name}", "error": str(error)})

    def resize(self, job: JobKey, name: str, size: int) -> None:
        """Set the gang's PodGroup's minMember to its new size (an elastic job resized),
        only if it is headstart's for `job` (`test`s on its managed-by label and job
        annotation). Coscheduling otherwise holds a shrunk gang's replacement pods for
        members that no longer exist. None there (404) or not ours (422): nothing to do;
        other faults are logged and the next admission's `ensure` sets the size."""
        status, error = self._set_min_member(job, name, size)
        if error is not None and status not in (404, 422):
            log.warning("could not set the gang's PodGroup minMember to its new size",
                        extra={"podgroup": f"{job.namespace}/{name}", "size": size,
                               "status": status, "error": error})

    def _set_min_member(self, job: JobKey, name: str, size: int
                        ) -> tuple[int | None, str | None]:
        """(the API's status on a refusal, the fault; None, None when set), only if the
        PodGroup is headstart's for `job` (`test`s on its managed-by label and job
        annotation)."""
        ops: list[dict[str, Any]] = [
            {"op": "test", "path": f"/metadata/labels/{pointer_token(key)}", "value": value}
            for key, value in MANAGED_BY.items()]
        ops += [{"op": "test", "path": f"/metadata/annotations/{pointer_token(JOB_ANNOTATION)}",
                 "value": job.name},
                {"op": "replace", "path": "/spec/minMember", "value": size}]
        try:
            discard(self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, job.namespace, PLURAL, name, ops,
                _content_type="application/json-patch+json", _preload_content=False,
                _request_timeout=10))
        except ApiException as error:
            return error.status, str(error.reason)
        except Exception as error:  # noqa: BLE001 - the caller logs it
            return None, f"{type(error).__name__}: {error}"
        return None, None

    def _existing(self, job: JobKey, namespace: str, name: str, size: int
                  ) -> tuple[Outcome, str]:
        try:
            raw = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, _preload_content=False,
                _request_timeout=10)
            try:
                found = json.loads(raw.data)
            finally:
                raw.release_conn()
        except Exception as error:  # noqa: BLE001 - API or transport fault: next round
            log.warning("could not read the gang's PodGroup; next round retries",
                        extra={"podgroup": f"{namespace}/{name}", "error": str(error)})
            return Outcome.RETRY, ""
        if is_ours(found, job):
            if (found.get("spec") or {}).get("minMember") != size:
                status, error = self._set_min_member(job, name, size)
                if error is not None:
                    log.warning("could not set the gang's PodGroup minMember to the size "
                                "admitted; next round retries",
                                extra={"podgroup": f"{namespace}/{name}", "size": size,
                                       "status": status, "error": error})
                    return Outcome.RETRY, ""
            return Outcome.OURS, str((found.get("metadata") or {}).get("uid") or "")
        log.warning("a PodGroup of the gang's name exists and is not headstart's: its pods "
                    "are admitted without one (rename it, or label the pods with it)",
                    extra={"podgroup": f"{namespace}/{name}", "job": str(job)})
        return Outcome.NONE, ""

    def _once(self, status: int, message: str) -> None:
        if status not in self._logged:
            self._logged.add(status)
            log.error(message)

