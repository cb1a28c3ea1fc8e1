"""The e2e tests' view of a real API server: plain JSON over HTTPS, and polling with a reason.

Decides: how tests read and write objects (dicts in, dicts out, one `KubeError` with the
status and the server's message for any non-2xx answer), and `wait_until`, the only way
tests wait: it polls a probe until the probe returns something truthy and, on timeout,
fails with what was awaited and the last state the probe saw (or the last error it
raised), never a bare "timed out".

Must not: start or stop components (controlplane.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml


class KubeError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status = status


@dataclass(frozen=True)
class NotYet:
    """A probe's "not done", carrying what it saw (shown if the wait times out)."""

    state: Any

    def __bool__(self) -> bool:
        return False


def wait_until(
    what: str,
    probe: Callable[[], Any],
    timeout_s: float,
    interval_s: float = 0.2,
    context: Callable[[], str] | None = None,
) -> Any:
    """Poll `probe` until it returns a truthy value and return that value.

    A probe that raises counts as not done (an API server being restarted refuses
    connections); the error is kept as the last state. On timeout: AssertionError
    naming `what`, the time waited, the last state and `context()` (e.g. log tails).
    """
    started = time.monotonic()
    last: Any = None
    while True:
        try:
            value = probe()
        except (KubeError, requests.RequestException, OSError, ValueError, KeyError) as error:
            value = NotYet(f"{type(error).__name__}: {error}")
        if value:
            return value
        last = value.state if isinstance(value, NotYet) else value
        if time.monotonic() - started > timeout_s:
            message = f"timed out after {timeout_s:.0f} s waiting for {what}; last seen: {last!r}"
            if context is not None:
                message += "\n" + context()
            raise AssertionError(message)
        time.sleep(interval_s)


class Kube:
    """A client-certificate session against one API server."""

    def __init__(self, server: str, ca: Path, cert: Path, key: Path,
                 timeout_s: float = 15.0) -> None:
        self.server = server.rstrip("/")
        self.timeout_s = timeout_s
        self.session = requests.Session()
        # Not the environment's CA bundle or proxies (REQUESTS_CA_BUNDLE would override
        # `verify`): this cluster's own CA, directly.
        self.session.trust_env = False
        self.session.verify = str(ca)
        self.session.cert = (str(cert), str(key))

    def request(
        self, method: str, path: str, body: Any = None,
        params: Mapping[str, Any] | None = None, content_type: str = "application/json",
        timeout_s: float | None = None,
    ) -> Any:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = body if isinstance(body, bytes | str) else json.dumps(body)
        response = self.session.request(
            method, self.server + path, data=data, params=params, headers=headers,
            timeout=timeout_s or self.timeout_s,
        )
        if not 200 <= response.status_code <= 299:
            try:
                message = response.json().get("message", response.text)
            except ValueError:
                message = response.text[:500]
            raise KubeError(method, path, response.status_code, message)
        return response.json() if response.content else {}

    def get(self, path: str, missing_ok: bool = False) -> Any:
        try:
            return self.request("GET", path)
        except KubeError as error:
            if missing_ok and error.status == 404:
                return None
            raise

    def list(self, path: str, label_selector: str | None = None,
             field_selector: str | None = None) -> list[dict[str, Any]]:
        params = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        return self.request("GET", path, params=params).get("items") or []

    def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.request("POST", path, dict(body))

    def patch(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch."""
        return self.request("PATCH", path, dict(body), content_type="application/merge-patch+json")

    def delete(self, path: str, grace_period_s: int | None = None) -> None:
        params = {} if grace_period_s is None else {"gracePeriodSeconds": grace_period_s}
        try:
            self.request("DELETE", path, params=params)
        except KubeError as error:
            if error.status != 404:
                raise

    def create_yaml(self, path: str, documents: Iterable[Any]) -> None:
        """POST each YAML document (a dict or YAML text) to the collection `path`."""
        for document in documents:
            body = yaml.safe_load(document) if isinstance(document, str) else document
            if body:
                self.create(path, body)

    # ---- the few reads every scenario makes ------------------------------------------

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.get(f"/api/v1/namespaces/{namespace}/pods/{name}", missing_ok=True)

    def events(self, namespace: str, name: str, reason: str | None = None) -> list[dict]:
        """Events about object `name` in `namespace` (optionally of one `reason`), oldest first."""
        selector = f"involvedObject.name={name}"
        if reason:
            selector += f",reason={reason}"
        items = self.list(f"/api/v1/namespaces/{namespace}/events", field_selector=selector)
        return sorted(items, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")

    def ensure_namespace(self, name: str, service_account_timeout_s: float | None = 60.0
                         ) -> None:
        """Create namespace `name` unless it exists, then wait (unless the timeout is
        None) for its `default` ServiceAccount: kube-controller-manager makes it seconds
        after the namespace, and until then the ServiceAccount admission plugin refuses
        every pod that names no account (the smoke test failed 2 runs in 3 on a fresh
        cluster without this wait)."""
        try:
            self.create("/api/v1/namespaces", {"metadata": {"name": name}})
        except KubeError as error:
            if error.status != 409:
                raise
        if service_account_timeout_s is None:
            return
        path = f"/api/v1/namespaces/{name}/serviceaccounts/default"
        wait_until(f"ServiceAccount {name}/default (kube-controller-manager makes it)",
                   lambda: self.get(path, missing_ok=True) is not None,
                   service_account_timeout_s)
