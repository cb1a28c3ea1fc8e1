"""Kubernetes API errors sorted into temporary (retry) and permanent (report), and the retry loop.

Decides: which failures are worth retrying and how long to wait between attempts.
- temporary: 429, 500, 502, 503, 504, other 5xx, timeouts and connection errors,
  409 Conflict on a stale resourceVersion or AlreadyExists (re-observe and retry);
- permanent: 400, 401, 403, 404 (e.g. a CRD that is not installed), 405, 415, 422, and
  a server-side-apply conflict with another field manager; retrying cannot fix these,
  so they are reported (log + metric) and the tick moves on without crash-looping.

Backoff is exponential with full jitter (wait ~ U(0, min(max, base * 2^attempt))) from
an injected `numpy.random.Generator`, so tests are reproducible; `sleep` is injected too.

Must not: log, or read the clock (the caller's `sleep` is the only way time passes here).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

import numpy as np
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from common.errors import HeadstartError

ErrorClass = Literal["temporary", "permanent"]
TEMPORARY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
T = TypeVar("T")


class ApiCallError(HeadstartError):
    """An API call that failed for good: permanent at once, or temporary after every retry.

    kind: "temporary" | "permanent"; status: the HTTP status (None for transport errors);
    what: the call, e.g. "apply apps/v1 Deployment headstart/headstart-placeholder-g5-xlarge".
    """

    def __init__(self, what: str, kind: ErrorClass, status: int | None, detail: str) -> None:
        super().__init__(f"{what}: {kind} API error"
                         f"{f' {status}' if status is not None else ''}: {detail}")
        self.what = what
        self.kind = kind
        self.status = status
        self.detail = detail


class NotOwnedError(HeadstartError):
    """An object headstart wants to write exists but is not the overprovisioner's
    (no `headstart.io/owner: overprovisioner` annotation, objects.owned_by_overprovisioner).

    Permanent: headstart never modifies or deletes what it did not create. The user must
    rename or delete that object (or change headstart's namespace)."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} exists but is not managed by headstart's overprovisioner (no annotation "
            "headstart.io/owner=overprovisioner); headstart leaves it untouched. Delete or "
            "rename it, or point headstart at another namespace"
        )
        self.what = what
        self.kind: ErrorClass = "permanent"
        self.status: int | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """max_attempts tries in all; waits grow from base_s, doubling, each capped at max_s."""

    max_attempts: int = 4
    base_s: float = 0.5
    max_s: float = 8.0


def status_message(error: ApiException) -> str:
    """The `message` of the Status body an API error carries, else its reason."""
    try:
        body = json.loads(error.body or "")
        if isinstance(body, dict) and body.get("message"):
            return str(body["message"])
    except (ValueError, TypeError):
        pass
    return str(error.reason or "no detail")


def classify(error: BaseException) -> ErrorClass:
    """"temporary" when retrying may help, "permanent" otherwise."""
    if isinstance(error, ApiException):
        status = error.status or 0
        if status == 409:
            # A field-manager conflict of server-side apply stays until someone changes
            # the object; a stale resourceVersion or a create race clears on re-read.
            # A failed delete precondition means the object changed since it was
            # observed: the same request can only fail again.
            message = status_message(error)
            return "permanent" if "Apply failed" in message or "Precondition failed" in \
                message else "temporary"
        if status in TEMPORARY_STATUSES or status >= 500 or status == 0:
            return "temporary"
        return "permanent"
    if isinstance(error, (NotOwnedError,)):
        return "permanent"
    if isinstance(
        error,
        (
            urllib3.exceptions.HTTPError,  # timeouts, connection refused/reset, protocol errors
            TimeoutError,
            ConnectionError,
            socket.timeout,
        ),
    ):
        return "temporary"
    return "permanent"


def call_with_retry(
    what: str,
    call: Callable[[], T],
    policy: RetryPolicy,
    rng: np.random.Generator,
    sleep: Callable[[float], None],
    on_error: Callable[[ErrorClass, BaseException], None] | None = None,
) -> T:
    """Run `call`; retry temporary errors with backoff; raise ApiCallError when it fails for good.

    on_error(kind, error) is told about every failed attempt (for metrics). Errors
    that are not API or transport errors (bugs) propagate unchanged.
    """
    attempt = 0
    while True:
        try:
            return call()
        except (ApiException, urllib3.exceptions.HTTPError, TimeoutError, ConnectionError) as error:
            kind = classify(error)
            if on_error is not None:
                on_error(kind, error)
            status = error.status if isinstance(error, ApiException) else None
            detail = (
                status_message(error) if isinstance(error, ApiException)
                else f"{type(error).__name__}: {error}"
            )
            attempt += 1
            if kind == "permanent" or attempt >= policy.max_attempts:
                raise ApiCallError(what, kind, status, detail) from None
            sleep(float(rng.uniform(0.0, min(policy.max_s, policy.base_s * 2.0 ** (attempt - 1)))))
