"""Raw JSON requests through the user's Kubernetes client, with the check's view of errors.

Decides: a request that gets no HTTP answer (refused, DNS, timeout, TLS:
`kube.reachability.unreachable_reason`) ends the command with one line naming the
server, as does a 401 (the credentials are refused); 404 reads as "absent"; any other
non-2xx answer is an `ApiRefused` that the reader records against the input it was
reading (a 403 means the user may not read it), so the checks that need it are skipped.

Must not: decide any check.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from common.errors import HeadstartError
from kube.reachability import unreachable_reason


class ApiRefused(Exception):
    """The API server answered, but not with the object."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"HTTP {status} {reason}".strip())
        self.status = status


class Api:
    def __init__(self, api_client: Any, timeout_s: float) -> None:
        self.api_client = api_client
        self.timeout_s = timeout_s
        self.server = api_client.configuration.host

    def get(self, path: str, query: Sequence[tuple[str, str]] = ()) -> dict[str, Any] | None:
        """The object at `path`, None when it does not exist (404)."""
        return self.request("GET", path, query)

    def items(self, path: str, query: Sequence[tuple[str, str]] = ()) -> list[dict[str, Any]]:
        """A list's items (a resource that is not served lists nothing)."""
        return list((self.get(path, query) or {}).get("items") or [])

    def request(self, method: str, path: str, query: Sequence[tuple[str, str]] = (),
                body: Any = None) -> dict[str, Any] | None:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        try:
            method, url, headers, body, post = self.api_client.param_serialize(
                method=method, resource_path=path, query_params=list(query),
                header_params=headers, body=body, auth_settings=["BearerToken"])
            response = self.api_client.call_api(method, url, headers, body, post,
                                                _request_timeout=self.timeout_s)
            data = response.read()
        except Exception as error:
            reason = unreachable_reason(error)
            if reason is None:
                raise
            raise HeadstartError(f"cannot reach the Kubernetes API server {self.server}: "
                                 f"{reason}") from None
        if response.status == 404:
            return None
        if response.status == 401:
            raise HeadstartError(f"the Kubernetes API server {self.server} refused the "
                                 "kubeconfig's credentials (401 Unauthorized)")
        if not 200 <= response.status <= 299:
            raise ApiRefused(response.status, _message(data) or str(response.reason or ""))
        try:
            return json.loads(data) if data else {}
        except ValueError:
            raise ApiRefused(response.status, "the answer is not JSON") from None


def _message(data: bytes) -> str:
    try:
        return str(json.loads(data).get("message", ""))[:200]
    except (ValueError, AttributeError):
        return data[:200].decode("utf-8", "replace")
