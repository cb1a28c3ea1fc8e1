"""The admitter's Events: on pods, on Jobs and other owners, where `kubectl describe`
shows them.

A fault (the API unreachable, a 5xx, a timeout) keeps the Event for the next applied
round, up to `EVENT_TRIES` tries in all, as client-go's event recorder retries; a
refusal (4xx) drops it and counts it (`dropped_total`). Never a failure of the round.

Must not: decide what an Event says (the writer does), raise.
"""

from __future__ import annotations

import collections
from typing import Any

from kubernetes.client.exceptions import ApiException

from kube.client import discard
from locality.admission.record import timestamp
from locality.model import Pod
from locality.suspension import JobSuspension

COMPONENT = "headstart-admitter"
EVENT_TRIES = 12
"""Tries per Event before it is dropped: client-go's event recorder's maxTriesPerEvent
(tools/record/event.go); here one try per applied round."""
UNSENT_EVENTS = 1000
"""Events kept for another try at most (the oldest goes first)."""


class EventRecorder:
    """Creates Events as `identity` of `COMPONENT`. core: a (throttled) CoreV1Api."""

    def __init__(self, core: Any, identity: str) -> None:
        self._core = core
        self.identity = identity
        self.dropped_total = 0
        """Events given up on: refused, out of tries, or pushed out of the queue."""
        self._unsent: collections.deque[tuple[int, dict[str, Any]]] = \
            collections.deque(maxlen=UNSENT_EVENTS)
        """Events the API did not take (a fault, not a refusal): (tries so far, body),
        sent again at the start of each applied round."""

    def on_pod(self, pod: Pod, reason: str, message: str, now: float,
               kind: str = "Normal") -> None:
        self.on({"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                 "namespace": pod.namespace, "uid": pod.uid}, reason, message, now, kind)

    def on(self, involved: dict[str, str], reason: str, message: str, now: float,
           kind: str = "Normal") -> None:
        stamp = timestamp(now)
        namespace = involved["namespace"]
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason, "message": message[:1024], "type": kind,
            "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
            "reportingInstance": self.identity, "firstTimestamp": stamp,
            "lastTimestamp": stamp, "count": 1,
        }
        self._send(body, 0)

    def send_unsent(self) -> None:
        """Another try for each Event a fault kept (start of an applied round)."""
        for _ in range(len(self._unsent)):
            tries, body = self._unsent.popleft()
            self._send(body, tries)

    def _send(self, body: dict[str, Any], tries: int) -> None:
        try:
            # The answer unread into the client's model (milliseconds of CPU per Event).
            discard(self._core.create_namespaced_event(
                body["metadata"]["namespace"], body, _preload_content=False,
                _request_timeout=10))
            return
        except ApiException as error:
            if error.status is not None and 400 <= error.status < 500 and error.status != 429:
                self.dropped_total += 1
                return
        except Exception:  # noqa: BLE001 - transport faults: kept for the next round
            pass
        if tries + 1 >= EVENT_TRIES:
            self.dropped_total += 1
        else:
            if len(self._unsent) == self._unsent.maxlen:
                self.dropped_total += 1  # the oldest goes
            self._unsent.append((tries + 1, body))


def job_reference(job: JobSuspension) -> dict[str, str]:
    """A batch/v1 Job or a JobSet as an Event's involvedObject."""
    return {"apiVersion": job.api_version, "kind": job.kind,
            "name": job.name, "namespace": job.namespace, "uid": job.uid}
