"""Who wrote what, and when, from the kube-apiserver's audit log.

controlplane.py's default audit policy logs every write (create, update, patch, delete)
by a client in the group "headstart", and each headstart process has its own client
certificate, so an event's `user.username` names the process. These helpers turn the
log into `Write` values the scenarios reason about.

Must not: start anything, or assert.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Write:
    """One successful write seen by the API server."""

    time: float
    """When the API server answered (Unix seconds, the same clock as time.time())."""
    user: str
    verb: str
    resource: str
    api_version: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return (f"{self.time:.2f} {self.user} {self.verb} {self.resource}"
                f"({self.api_version}) {self.namespace}/{self.name}")


def writes(events: Iterable[dict[str, Any]]) -> list[Write]:
    """The successful (2xx) writes among audit `events`, in time order."""
    result = []
    for event in events:
        code = (event.get("responseStatus") or {}).get("code", 0)
        if event.get("stage") != "ResponseComplete" or not 200 <= code <= 299:
            continue
        ref = event.get("objectRef") or {}
        group = ref.get("apiGroup")
        version = ref.get("apiVersion", "")
        result.append(Write(
            time=datetime.fromisoformat(event["stageTimestamp"]).timestamp(),
            user=event["user"]["username"],
            verb=event["verb"],
            resource=ref.get("resource", "") + (f"/{ref['subresource']}"
                                                if ref.get("subresource") else ""),
            api_version=f"{group}/{version}" if group else version,
            namespace=ref.get("namespace", ""),
            name=ref.get("name", ""),
        ))
    return sorted(result, key=lambda write: write.time)
