"""Lifts the placement gate of an admitted job's pods, for the admitter's writer.

For one admission: the gang's PodGroup first, when Coscheduling is used
(`admission.pod_groups`: created and owned by its Gang, `extender.admission.podgroups`),
then every member labelled for it before any is ungated (`patch.label_patch` says why),
then each pod patched, `write_workers` pods at once (domain affinity, domain annotation
and gate removal in one JSON patch guarded by `test`s: `patch.ungate_patch`), computed
from the pod as the label patch answered it (else read fresh); an Event on each once
the round's gates are all lifted (`send_events`: the members, and the next jobs',
reach kube-scheduler sooner; Coscheduling turns away a member whose siblings are still
gated). A failed patch (422: the pod changed; 404: gone; any API fault) is left for the
next round, which plans again from the cache; the lease is asked again before each pod,
so a replica that lost it stops between two pods.

Must not: decide admissions (the core does), touch the cache (the pods it ungated are
listed in `ungated` for the admitter to assume on the event loop).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.client.exceptions import ApiException

from extender.admission.events import EventRecorder
from extender.admission.patch import label_patch, ungate_patch
from extender.admission.planning_process import JobFacts
from extender.admission.podgroups import Outcome as PodGroupOutcome
from extender.admission.podgroups import PodGroupWriter
from locality.admission.config import AdmissionConfig
from locality.admission.coscheduling import POD_GROUP_LABEL, pod_group_body
from locality.admission.model import Admission
from locality.admission.recovery import ready_timeout_of
from locality.model import Locality, Pod

log = logging.getLogger("headstart.extender.admitter")


class GatePatcher:
    """core: a (throttled) CoreV1Api; pod_groups: None when Coscheduling is not used."""

    def __init__(self, core: Any, config: AdmissionConfig, is_leader: Callable[[], bool],
                 events: EventRecorder, pod_groups: PodGroupWriter | None) -> None:
        self._core = core
        self.config = config
        self.is_leader = is_leader
        self._events = events
        self.pod_groups = pod_groups
        self._workers = ThreadPoolExecutor(config.write_workers,
                                           thread_name_prefix="headstart-admitter-write")
        self.ungated: list[Pod] = []
        """Pods whose gate this round lifted (the admitter assumes them)."""
        self._events_due: list[tuple[Pod, str, str, float, str]] = []
        """Their Events, sent by `send_events` (pod, reason, message, time, type)."""

    def pod_group(self, admission: Admission, gang_uid: str, facts: JobFacts | None
                  ) -> tuple[dict[str, str], str] | None:
        """(the labels that put the gang's pods in its PodGroup, created first and owned
        by its Gang: `locality.admission.coscheduling`; the PodGroup's uid); no labels
        for none (off, not served, pods naming their own, the name taken); None to
        retry next round. facts: what the round gathered of the job."""
        if not self.config.pod_groups or self.pod_groups is None or any(
                POD_GROUP_LABEL in pod.labels for pod in admission.pods):
            return {}, ""
        # A later stage's PodGroup counts only live pods: an earlier stage's Succeeded
        # ones are gone from kube-scheduler's view, and Coscheduling would wait for them.
        size = (facts.live_size if facts is not None else None) or len(admission.pods)
        body = pod_group_body(admission.job, size, self.config.pod_group_timeout_seconds,
                              gang_uid)
        outcome, uid = self.pod_groups.ensure(admission.job, body)
        if outcome is PodGroupOutcome.RETRY:
            return None
        if outcome is PodGroupOutcome.NONE:
            return {}, ""
        return {POD_GROUP_LABEL: body["metadata"]["name"]}, uid

    def admit(self, admission: Admission, now: float,
              labels: dict[str, str] | None = None) -> tuple[int, int]:
        """Label (for the PodGroup, when `labels`) and ungate the admission's pods: (pods
        ungated, pods left for the next round)."""
        domain = None
        if admission.domain is not None and admission.label_key is not None:
            domain = (admission.label_key, admission.domain.value, str(admission.domain))
        message = (f"admitted with its job {admission.job} ({len(admission.pods)} pods): "
                   f"{admission.note}")
        # Released without known room: said where people look (kubectl describe pod).
        reason, kind = ("HeadstartRoomUnknown", "Warning") if admission.room_unknown \
            else ("HeadstartAdmitted", "Normal")

        def one(pod: Pod) -> bool:
            if not self.is_leader():
                return False  # the lease is lost mid-apply: the new leader completes it
            return self.ungate(pod, domain, admission.locality, labels, labelled.get(pod.uid))

        # Every member carries the gang's PodGroup label before any is ungated
        # (`patch.label_patch` says why); then the pods at once (`write_workers`), paced
        # by the throttle, each patch computed from the label patch's answer. A member
        # not labelled leaves the job to the next round.
        labelled: dict[str, dict[str, Any]] = {}
        if labels:
            answers = list(self._workers.map(lambda pod: self._patch_pod(
                pod, lambda current: label_patch(current, self.config.gate, labels)),
                admission.pods))
            if any(answer is None for answer in answers):
                return 0, len(admission.pods)
            labelled = {pod.uid: answer for pod, answer in zip(admission.pods, answers,
                                                               strict=True)}
        ungated = [pod for pod, done in zip(admission.pods,
                                            self._workers.map(one, admission.pods),
                                            strict=True) if done]
        self.ungated.extend(ungated)
        self._events_due.extend((pod, reason, message, now, kind) for pod in ungated)
        _, ignored = ready_timeout_of(admission.pods, self.config)
        if ungated and ignored is not None:  # said once, on the job's first pod
            self._events_due.append((admission.pods[0], "HeadstartReadyTimeoutIgnored",
                                     ignored, now, "Warning"))
        return len(ungated), len(admission.pods) - len(ungated)

    def send_events(self) -> None:
        """The Events of the pods admitted since the last call, `write_workers` at once:
        sent once the round's gates are lifted, so the next jobs' pods are not paced
        behind them by the API rate limit."""
        due, self._events_due = self._events_due, []
        list(self._workers.map(lambda event: self._events.on_pod(*event), due))

    def ungate(self, pod: Pod, domain: tuple[str, str, str] | None,
               locality: Locality, labels: dict[str, str] | None = None,
               current: dict[str, Any] | None = None) -> bool:
        """Lift the pod's gate (with its domain, when one), computed from `current` (the
        pod as an earlier patch answered it) or read now: whether it was done."""
        return self._patch_pod(pod, lambda seen: ungate_patch(
            seen, self.config.gate, domain, locality, self.config.domain_annotation,
            labels), current) is not None

    def _patch_pod(self, pod: Pod, operations: Callable[[dict[str, Any]], Any],
                   current: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Apply the JSON patch `operations` makes of the pod (None: nothing to do), from
        `current` (as an earlier patch answered) or read now: the pod as the API server
        last showed it; None when it failed or the pod was replaced (the next round
        retries)."""
        core = self._core
        try:
            if current is None:
                current = _json(core.read_namespaced_pod(
                    pod.name, pod.namespace, _preload_content=False, _request_timeout=10))
            if (current.get("metadata") or {}).get("uid") != pod.uid:
                return None  # replaced by a pod of the same name: plan it afresh
            ops = operations(current)
            if ops is None:
                return current  # nothing left to do (someone lifted the gate already)
            # The answer read raw: the client's model of a Pod costs milliseconds of
            # CPU per pod, which a gang of hundreds pays on the extender's cores.
            return _json(core.patch_namespaced_pod(
                pod.name, pod.namespace, ops, _content_type="application/json-patch+json",
                _preload_content=False, _request_timeout=10))
        except ApiException as error:
            level = logging.DEBUG if error.status in (404, 409, 422) else logging.WARNING
            log.log(level, "could not patch the pod (label or gate); next round retries",
                    extra={"pod": pod.full_name, "status": error.status,
                           "error": str(error.reason)})
            return None
        except Exception as error:  # noqa: BLE001 - transport faults: next round retries
            log.warning("could not patch the pod (label or gate); next round retries",
                        extra={"pod": pod.full_name, "error": f"{type(error).__name__}: {error}"})
            return None


def _json(response: Any) -> dict[str, Any]:
    """The body of a response made with `_preload_content=False`, its connection given
    back to the pool."""
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()
