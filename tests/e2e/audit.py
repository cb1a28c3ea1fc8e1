"""Who wrote what, and when, and which API requests each identity made, from the
kube-apiserver's audit log.

controlplane.py's default audit policy logs every request by headstart's processes:
each runs with its own ServiceAccount token (installed.py) or, in older scenarios, its
own client certificate in the group "headstart". A token's credential id names the
process (`ControlPlane.credential_names`), so replicas sharing an account stay apart.
These helpers turn the log into `Write` and `Access` values the scenarios reason about.

Must not: start anything, or assert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"


def writes(events: Iterable[dict[str, Any]],
           credential_names: Mapping[str, str] | None = None) -> list[Write]:
    """The successful (2xx) writes among audit `events`, in time order. A write made
    with a token whose credential id ("JTI=...") `credential_names` knows is
    attributed to that process: replicas sharing a ServiceAccount differ only there."""
    result = []
    for event in events:
        code = (event.get("responseStatus") or {}).get("code", 0)
        if event.get("stage") != "ResponseComplete" or not 200 <= code <= 299:
            continue
        if event.get("verb") not in WRITE_VERBS:
            continue
        ref = event.get("objectRef") or {}
        group = ref.get("apiGroup")
        version = ref.get("apiVersion", "")
        result.append(Write(
            time=datetime.fromisoformat(event["stageTimestamp"]).timestamp(),
            user=user_of(event, credential_names or {}),
            verb=event["verb"],
            resource=ref.get("resource", "") + (f"/{ref['subresource']}"
                                                if ref.get("subresource") else ""),
            api_version=f"{group}/{version}" if group else version,
            namespace=ref.get("namespace", ""),
            name=ref.get("name", ""),
        ))
    return sorted(result, key=lambda write: write.time)


def user_of(event: Mapping[str, Any], credential_names: Mapping[str, str]) -> str:
    """The process behind an audit event: its token's name in `credential_names`, else
    the authenticated user name."""
    user = event.get("user") or {}
    for credential in (user.get("extra") or {}).get(CREDENTIAL_ID) or []:
        if credential in credential_names:
            return credential_names[credential]
    return user.get("username", "")


@dataclass(frozen=True)
class Access:
    """One request as RBAC saw it: who, which verb on which resource, and the answer."""

    time: float
    user: str
    verb: str
    api_group: str
    resource: str
    namespace: str
    name: str
    code: int

    def __str__(self) -> str:
        return (f"{self.time:.2f} {self.user} {self.verb} {self.api_group or 'core'}/"
                f"{self.resource} {self.namespace}/{self.name} -> {self.code}")

    def rbac(self) -> tuple[str, str, str]:
        """(apiGroup, resource[/subresource], verb): what a Role rule must grant."""
        return self.api_group, self.resource, self.verb


def accesses(events: Iterable[dict[str, Any]],
             credential_names: Mapping[str, str] | None = None) -> list[Access]:
    """Every completed resource request among `events` (discovery and other non-resource
    paths left out), allowed or not."""
    result = []
    for event in events:
        ref = event.get("objectRef")
        if event.get("stage") != "ResponseComplete" or not ref or not ref.get("resource"):
            continue
        result.append(Access(
            time=datetime.fromisoformat(event["stageTimestamp"]).timestamp(),
            user=user_of(event, credential_names or {}),
            verb=event["verb"],
            api_group=ref.get("apiGroup", ""),
            resource=ref["resource"] + (f"/{ref['subresource']}"
                                        if ref.get("subresource") else ""),
            namespace=ref.get("namespace", ""),
            name=ref.get("name", ""),
            code=(event.get("responseStatus") or {}).get("code", 0),
        ))
    return result
